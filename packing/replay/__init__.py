"""Replay a cluster's history through the engines (issue 21): `replay` runs the provisioning and disruption
engines in event time with the configuration in force and with a proposed change, beside what actually happened
(packing.replay.replay); the simulation of one run is packing.replay.world, its timing packing.replay.config."""

from __future__ import annotations

from packing.replay.config import Configuration, Timing, change_manifests
from packing.replay.metrics import RunMetrics, Sample, percentile
from packing.replay.replay import ReplayCancelled, ReplayResult, actual_metrics, replay

__all__ = [
    "Configuration",
    "ReplayCancelled",
    "ReplayResult",
    "RunMetrics",
    "Sample",
    "Timing",
    "actual_metrics",
    "change_manifests",
    "percentile",
    "replay",
]
