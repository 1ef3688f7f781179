"""Loadmaster's disruption engine: emptiness, drift, expiration and consolidation, with budgets and PDBs.

    report = consolidate(cluster, at, min_savings=MinSavings.parse("5%"))

Every what-if runs through the provisioning engine's Scheduler (packing.scheduling); pure Python, no Django.
"""

from __future__ import annotations

from packing.disruption.engine import consolidate
from packing.disruption.formatting import parse_time
from packing.disruption.model import (
    Action,
    BlockedBy,
    Budget,
    CheapestOption,
    Cluster,
    DisruptionSettings,
    MinSavings,
    NodeInfo,
    NotDisrupted,
    NotDisruptedCategory,
    PodMeta,
    Report,
)

__all__ = [
    "Action",
    "BlockedBy",
    "Budget",
    "CheapestOption",
    "Cluster",
    "DisruptionSettings",
    "MinSavings",
    "NodeInfo",
    "NotDisrupted",
    "NotDisruptedCategory",
    "PodMeta",
    "Report",
    "consolidate",
    "parse_time",
]
