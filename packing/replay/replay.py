"""A replay: what actually happened over a window of a history, and two runs of the engines over it — with the
configuration in force (the history's revisions) and with a proposed change laid over it — side by side."""

from __future__ import annotations

import multiprocessing
import sys
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from packing.history.events import (
    ManifestKind,
    NodeInterrupted,
    NodeLaunched,
    NodeTerminated,
    PodArrived,
    PodBound,
    PodDeparted,
)
from packing.history.jsonl import History, format_time
from packing.replay.config import Configuration, Timing
from packing.replay.metrics import RunMetrics, Sample
from packing.replay.world import DAEMONSET, ReplayRun, initial_state

__all__ = ["ReplayCancelled", "ReplayResult", "actual_metrics", "replay"]


class ReplayCancelled(Exception):
    """Raised by a progress callback to stop a replay at its next report (the console's Cancel); replay() lets
    it through."""


@dataclass
class ReplayResult:
    start: datetime
    end: datetime
    actual: RunMetrics
    current: RunMetrics
    changed: RunMetrics | None
    seconds: float
    change: list[str]

    def as_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "window": {"from": format_time(self.start), "until": format_time(self.end),
                       "hours": round((self.end - self.start).total_seconds() / 3600, 3)},
            "change": self.change,
            "actual": self.actual.as_json(),
            "current": self.current.as_json(),
            "changed": None if self.changed is None else self.changed.as_json(),
            "difference": None if self.changed is None else difference(self.current, self.changed),
            "replay_seconds": round(self.seconds, 3),
        }
        return doc


def difference(current: RunMetrics, changed: RunMetrics) -> dict[str, Any]:
    """changed − current: the cost (and per day, so an operator sees which days it comes from), node-hours,
    evictions, pending time."""
    days = sorted(set(current.cost_by_day) | set(changed.cost_by_day))
    a, b = current.as_json(), changed.as_json()
    return {
        "cost": round(changed.cost - current.cost, 4),
        "cost_percent": None if current.cost == 0 else round(100 * (changed.cost - current.cost) / current.cost, 2),
        "cost_by_day": {d: round(changed.cost_by_day.get(d, 0.0) - current.cost_by_day.get(d, 0.0), 4) for d in days},
        "node_hours": {k: round(changed.node_hours.get(k, 0.0) - current.node_hours.get(k, 0.0), 3)
                       for k in sorted(set(current.node_hours) | set(changed.node_hours))},
        "evictions": sum(changed.evictions.values()) - sum(current.evictions.values()),
        "nodes_disrupted": sum(changed.nodes_disrupted.values()) - sum(current.nodes_disrupted.values()),
        "pending_p95_seconds": _minus(b["pending_seconds"]["p95"], a["pending_seconds"]["p95"]),
        "never_scheduled": changed.never_scheduled - current.never_scheduled,
    }


def _minus(x: float | None, y: float | None) -> float | None:
    return None if x is None or y is None else round(x - y, 1)


def actual_metrics(history: History, start: datetime, end: datetime, sample_every: timedelta) -> RunMetrics:
    """What the recorded cluster did over [start, end): its nodes' cost, node-hours, pending episodes (arrival to
    binding), interruptions; DaemonSet pods are not counted as pending."""
    m = RunMetrics()
    state = initial_state(history, start)
    nodes: dict[str, tuple[datetime, float | None, str]] = {
        n.name: (start, n.price, n.capacity_type) for n in state.nodes.values()}
    pending: dict[str, datetime] = {k: start for k, (a, node) in state.pods.items()
                                    if not node and a.owner_kind != DAEMONSET}
    next_sample = start
    events = history.events
    for e in events[state.next_index:]:
        if e.at >= end:
            break
        while next_sample <= e.at:
            live = [v for v in nodes.values()]
            m.samples.append(Sample(next_sample, sum(p or 0.0 for _, p, _ in live), len(live), len(pending)))
            next_sample += sample_every
        if isinstance(e, NodeLaunched):
            nodes[e.name] = (e.at, e.price, e.capacity_type)
            m.nodes_launched += 1
        elif isinstance(e, NodeTerminated):
            alive = nodes.pop(e.name, None)
            if alive is not None:
                m.add_node_time(alive[0], e.at, alive[1], alive[2])
        elif isinstance(e, NodeInterrupted):
            m.interruptions += 1
            m.interruptions_absorbed += 1
        elif isinstance(e, PodArrived):
            if not e.node and e.owner_kind != DAEMONSET:
                pending[e.key] = e.at
        elif isinstance(e, PodBound):
            since = pending.pop(e.key, None)
            if since is not None:
                m.pending_seconds.append((e.at - since).total_seconds())
        elif isinstance(e, PodDeparted):
            if pending.pop(e.key, None) is not None:
                m.never_scheduled += 1
    while next_sample < end:
        live = [v for v in nodes.values()]
        m.samples.append(Sample(next_sample, sum(p or 0.0 for _, p, _ in live), len(live), len(pending)))
        next_sample += sample_every
    for began, price, ct in nodes.values():
        m.add_node_time(began, end, price, ct)
    m.never_scheduled += len(pending)
    return m


# what both runs of the replay in progress read (a forked child inherits it): history, timing, start, end, seed, region
_SHARED: tuple[History, Timing, datetime, datetime, int, str, bool] | None = None


def _run(overrides: dict[tuple[ManifestKind, str], Mapping[str, Any]], prefix: str,
         progress: Callable[[float], None] | None = None) -> RunMetrics:
    assert _SHARED is not None
    history, timing, start, end, seed, region, repack = _SHARED
    config = Configuration(region, overrides=overrides)
    return ReplayRun(history, config, timing, start, end, seed=seed, prefix=prefix, progress=progress,
                     repack=repack).run()


def _scaled(progress: Callable[[float], None] | None, lo: float, hi: float) -> Callable[[float], None] | None:
    """A run's own progress (0..1) as its share [lo, hi] of the whole replay's."""
    if progress is None:
        return None
    report = progress
    return lambda share: report(lo + (hi - lo) * share)


def _can_fork() -> bool:
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def replay(history: History, *, change: Mapping[tuple[ManifestKind, str], Mapping[str, Any]] | None = None,
           start: datetime | None = None, end: datetime | None = None, region: str = "us-east-1", seed: int = 0,
           timing: Timing | None = None, progress: Callable[[float], None] | None = None,
           parallel: bool = True, repack: bool = True) -> ReplayResult:
    """Replay [start, end) of `history` (default: all of it) with the configuration in force, and with `change`
    (NodePools / EC2NodeClasses by (kind, name), in force for the whole window) when one is given. Deterministic:
    the same history, change and seed give the same numbers. With `parallel` (and a platform that forks) the two
    runs use two processes; the numbers are the same either way. `repack`: consolidation's repack move, as the
    console's LOADMASTER_CONSOLIDATION_REPACK."""
    started = time.perf_counter()
    timing = timing or Timing()
    events = history.events
    start = start or history.header.start or (events[0].at if events else datetime.now().astimezone())
    end = end or history.header.end or (events[-1].at if events else start)
    if end <= start:
        end = start + timedelta(seconds=1)
    actual = actual_metrics(history, start, end, timing.sample_every)
    if progress:
        progress(0.05)

    global _SHARED
    _SHARED = (history, timing, start, end, seed, region, repack)
    changed = None
    try:
        if change and parallel and _can_fork():
            # the two runs share nothing but the history: the changed one runs in a forked child (which inherits
            # the history through _SHARED, so only its totals cross back), the current one here, a core each
            with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork")) as pool:
                future = pool.submit(_run, dict(change), "changed")
                current = _run({}, "current")
                if progress:
                    progress(0.5)
                changed = future.result()
        else:
            current = _run({}, "current", _scaled(progress, 0.05, 0.5 if change else 0.95))
            if progress:
                progress(0.5 if change else 0.95)
            if change:
                changed = _run(dict(change), "changed", _scaled(progress, 0.5, 0.95))
    finally:
        _SHARED = None
    if progress:
        progress(1.0)
    names = [f"{k.value}/{n}" for k, n in sorted(change or {}, key=lambda kn: (kn[0].value, kn[1]))]
    return ReplayResult(start, end, actual, current, changed, time.perf_counter() - started, names)
