"""NodePool policies that follow the clock: windows (cron + duration, as disruption budgets) that change a pool's
limits, its consolidation policy or its static replicas while they are open.

Loadmaster's own, so a Karpenter manifest stays valid: the windows are a YAML (or JSON) list in the NodePool's
annotation `loadmaster.dev/schedules`:

    metadata:
      annotations:
        loadmaster.dev/schedules: |
          - name: business-hours
            schedule: "0 8 * * mon-fri"
            duration: 10h
            limits: {cpu: "2000"}
            consolidationPolicy: WhenEmpty

A window opens at each fire of its schedule and stays open for its duration (packing.cron, the same reading as
budgets'). While it is open each field it sets replaces the pool's; where open windows set the same field the
later one in the list wins. `replicas` is for static NodePools only and a static pool's window may limit only
`nodes`, as the CRD rules the pool itself (a window never turns a pool static or dynamic).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import yaml

from packing.cron import CronError, CronSchedule
from packing.fields import FieldError, as_int, as_object, as_str, duration, quantities
from packing.nodepool import CONSOLIDATION_POLICIES, STATIC_LIMIT_KEYS, NodePool
from packing.yamlinput import brief, load_one

if TYPE_CHECKING:
    from packing.disruption.model import Cluster

__all__ = [
    "MAX_WINDOWS",
    "SCHEDULES_ANNOTATION",
    "cluster_at",
    "OpenWindow",
    "PoolWindow",
    "open_windows",
    "parse_windows",
    "describe",
    "pools_at",
    "policy_at",
]

SCHEDULES_ANNOTATION = "loadmaster.dev/schedules"
MAX_WINDOWS = 20
_INT64_MAX = 2**63 - 1  # spec.replicas is an int64 in Karpenter's CRD
_KEYS = ("name", "schedule", "duration", "limits", "consolidationPolicy", "replicas")


@dataclass(frozen=True)
class PoolWindow:
    index: int
    name: str
    schedule: CronSchedule
    duration: timedelta
    limits: Mapping[str, int] | None = None
    consolidation_policy: str | None = None
    replicas: int | None = None
    limits_written: Mapping[str, str] | None = None  # as the annotation spells them, for reports

    def window(self, at: datetime) -> tuple[datetime, datetime] | None:
        """[start, end) of this window if it is open at `at`."""
        return self.schedule.active_window(at, self.duration)

    def changes(self) -> dict[str, Any]:
        """What it sets, in the manifest's spelling."""
        out: dict[str, Any] = {}
        if self.limits_written is not None:
            out["limits"] = dict(self.limits_written)
        if self.consolidation_policy is not None:
            out["consolidationPolicy"] = self.consolidation_policy
        if self.replicas is not None:
            out["replicas"] = self.replicas
        return out


@dataclass(frozen=True)
class OpenWindow:
    """A window open at the time a plan or a consolidation run was made for, and what it changed there."""

    nodepool: str
    name: str
    start: datetime
    end: datetime
    changes: Mapping[str, Any]

    def as_json(self) -> dict[str, Any]:
        return {"nodepool": self.nodepool, "window": self.name, "from": _iso(self.start), "until": _iso(self.end),
                **self.changes}


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_windows(text: Any, *, static: bool, path: str) -> tuple[PoolWindow, ...]:
    """The annotation's windows; FieldError naming `path` and the item's field when one is bad."""
    if not isinstance(text, str):
        raise FieldError(path, f"must be a string holding a YAML list of windows, got {type(text).__name__}")
    try:
        raw = load_one(text) if text.strip() else []
    except yaml.YAMLError as e:
        raise FieldError(path, f"is not YAML: {' '.join(str(e).split())}") from None
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise FieldError(path, f"must be a list of windows, got {type(raw).__name__}")
    if len(raw) > MAX_WINDOWS:
        raise FieldError(path, f"at most {MAX_WINDOWS} windows, got {len(raw)}")
    out = []
    names: set[str] = set()
    for i, item in enumerate(raw):
        w = _window(item, i, static=static, path=f"{path}[{i}]")
        if w.name in names:
            raise FieldError(f"{path}[{i}].name", f"{brief(w.name)} is the name of an earlier window")
        names.add(w.name)
        out.append(w)
    return tuple(out)


def _window(item: Any, i: int, *, static: bool, path: str) -> PoolWindow:
    d = as_object(item, path)
    unknown = sorted(str(k) for k in d if k not in _KEYS)
    if unknown:
        raise FieldError(f"{path}.{unknown[0]}", f"unknown field (a window has {', '.join(_KEYS)})")
    name = as_str(d.get("name"), f"{path}.name", default=f"window-{i + 1}")
    sched_text = as_str(d.get("schedule"), f"{path}.schedule", required=True)
    try:
        sched = CronSchedule.parse(sched_text)
    except CronError as e:
        raise FieldError(f"{path}.schedule", str(e)) from None
    if d.get("duration") is None:
        raise FieldError(f"{path}.duration", "is required with a schedule (how long each window stays open)")
    dur = duration(d.get("duration"), f"{path}.duration", None)
    if dur is None or dur <= timedelta(0):
        raise FieldError(f"{path}.duration", f"must be a positive duration such as '8h', got {brief(d.get('duration'))}")
    limits = quantities(d["limits"], f"{path}.limits") if d.get("limits") is not None else None
    policy = d.get("consolidationPolicy")
    if policy is not None and policy not in CONSOLIDATION_POLICIES:
        raise FieldError(f"{path}.consolidationPolicy",
                         f"must be one of {', '.join(CONSOLIDATION_POLICIES)}, got {brief(policy)}")
    replicas = None if d.get("replicas") is None else as_int(d["replicas"], f"{path}.replicas", 0, lo=0, hi=_INT64_MAX)
    if static:
        other = sorted(set(limits or {}) - STATIC_LIMIT_KEYS)
        if other:
            raise FieldError(f"{path}.limits", f"a static NodePool's window may limit only nodes (got {', '.join(other)})")
    elif replicas is not None:
        raise FieldError(f"{path}.replicas", "only a static NodePool (spec.replicas set) has replicas to change")
    if limits is None and policy is None and replicas is None:
        raise FieldError(path, "changes nothing: set limits, consolidationPolicy or replicas")
    written = {str(k): str(v) for k, v in as_object(d["limits"], f"{path}.limits").items()} if limits is not None else None
    return PoolWindow(i, name, sched, dur, limits, None if policy is None else str(policy), replicas, written)


def open_windows(pool: NodePool, at: datetime) -> list[OpenWindow]:
    out = []
    for w in pool.windows:
        span = w.window(at)
        if span is not None:
            out.append(OpenWindow(pool.name, w.name, span[0], span[1], w.changes()))
    return out


def pools_at(pools: Iterable[NodePool], at: datetime) -> tuple[list[NodePool], list[OpenWindow]]:
    """The pools as they are at `at`: each open window's limits and replicas in force (later windows win), with
    the windows that were open. Pools without windows are returned as they are."""
    result: list[NodePool] = []
    opened: list[OpenWindow] = []
    for pool in pools:
        here = open_windows(pool, at)
        opened.extend(here)
        limits, replicas = pool.limits, pool.replicas
        for w in (pool.windows[i] for i in _open_indexes(pool, at)):
            if w.limits is not None:
                limits = w.limits
            if w.replicas is not None:
                replicas = w.replicas
        changed = limits is not pool.limits or replicas != pool.replicas
        result.append(dataclasses.replace(pool, limits=limits, replicas=replicas) if changed else pool)
    return result, opened


def _open_indexes(pool: NodePool, at: datetime) -> list[int]:
    return [i for i, w in enumerate(pool.windows) if w.window(at) is not None]


def policy_at(pool: NodePool, policy: str, at: datetime) -> str:
    """The consolidation policy in force at `at`: the last open window's that sets one, else `policy`."""
    for i in reversed(_open_indexes(pool, at)):
        found = pool.windows[i].consolidation_policy
        if found is not None:
            return found
    return policy


def cluster_at(cluster: Cluster, at: datetime) -> tuple[Cluster, list[OpenWindow]]:
    """A disruption run's cluster as its pools are at `at`: limits and replicas (pools_at) and each pool's
    consolidation policy (policy_at) in force. `cluster` itself when no pool has a window."""
    if not any(p.windows for p in cluster.nodepools):
        return cluster, []
    pools, opened = pools_at(cluster.nodepools, at)
    settings = dict(cluster.settings)
    for pool in cluster.nodepools:
        current = cluster.settings_for(pool.name)
        policy = policy_at(pool, current.policy, at)
        if policy != current.policy:
            settings[pool.name] = dataclasses.replace(current, policy=policy)
    return dataclasses.replace(cluster, nodepools=pools, settings=settings), opened


def describe(opened: Sequence[OpenWindow]) -> list[str]:
    """One line per open window, for text output and the ledger."""
    lines = []
    for w in opened:
        what = ", ".join(f"{k} {v}" for k, v in w.changes.items())
        lines.append(f"nodepool {w.nodepool}: window {w.name} open {_iso(w.start)} to {_iso(w.end)} ({what})")
    return lines
