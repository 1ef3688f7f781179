"""A compact but equivalent picture of the cluster for a solve in which only room decides where pods go.

When no pod to place has a topology spread, a pod (anti-)affinity or a host port, and no running pod has an
anti-affinity or a host port, a running pod affects the solve only through the room it takes: it can be folded
into its node's allocatable instead of being listed, and a node on which none of the pods fits can take no part
and can be left out. What the nodes left out of a pool with limits count toward those limits is kept by one
stand-in node per pool that holds their capacity and can take no pod (no allocatable, and a taint); a pool that
limits its number of nodes keeps its nodes instead. The solve then places every pod where it would have placed it
in the full picture; only the names of new NodeClaims may differ (they avoid the names of the nodes it is shown).

A DaemonSet's running pods stay listed: the Scheduler reserves the room of every DaemonSet whose pod it does not
see on a node that the DaemonSet runs on, so a folded one would take its room twice.

Used by the disruption simulation's what-ifs (packing.disruption.simulation) and the replay's provisioning
(packing.replay.world): on a large cluster most nodes are full, and a solve's cost grows with the nodes and pods
it is shown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from packing.nodepool import HOSTNAME_LABEL, NODEPOOL_LABEL, ExistingNodeSpec, NodePool
from packing.pods import Pod
from packing.resources import Resources
from packing.taints import Taint

__all__ = [
    "LIMIT_USAGE_TAINT",
    "ONE_NODE",
    "compact_nodes",
    "folded_spec",
    "limit_stand_in",
    "request_rows",
    "room_only",
    "rows_fit",
]

LIMIT_USAGE_TAINT = Taint("loadmaster.dev/limit-usage", "", "NoSchedule")
ONE_NODE = Resources({"nodes": 1000})  # how limits count nodes
DAEMONSET = "DaemonSet"


def room_only(pods: Iterable[Pod], running: Iterable[Pod]) -> bool:
    """True when only room can decide where `pods` go among nodes running `running` (see the module)."""
    if any(p.has_topology_rules or p.host_ports for p in pods):
        return False
    return not any(p.anti_affinity or p.host_ports for p in running)


def folded_spec(spec: ExistingNodeSpec, used: Resources) -> ExistingNodeSpec:
    """The node with `used` taken out of its allocatable; its capacity (what limits count) stays."""
    if not used:
        return spec
    return dataclasses.replace(spec, allocatable=spec.allocatable - used, capacity=spec.capacity or spec.allocatable)


def limit_stand_in(pool: str, capacity: Resources) -> ExistingNodeSpec:
    """A node that counts `capacity` toward the pool's limits and can take no pod."""
    name = f"loadmaster.dev/limit-usage-{pool}"
    return ExistingNodeSpec(
        name, {NODEPOOL_LABEL: pool, HOSTNAME_LABEL: name}, Resources(), (LIMIT_USAGE_TAINT,), True, "Node",
        capacity=capacity,
    )


def request_rows(pods: Sequence[Pod]) -> tuple[tuple[str, ...], npt.NDArray[np.int64]]:
    """The resource keys the pods request and their distinct request vectors over them, one row each."""
    keys = tuple(sorted({k for p in pods for k in p.requests}))
    rows = np.array([[p.requests.get(k, 0) for k in keys] for p in pods], dtype=np.int64).reshape(len(pods), len(keys))
    return keys, np.unique(rows, axis=0)


def rows_fit(free: npt.NDArray[np.int64], reqs: npt.NDArray[np.int64]) -> list[bool]:
    """For each row of `free` (a node's room over the keys of `reqs`), whether some request row fits in it."""
    if not len(free):
        return []
    if not len(reqs):
        return [False] * len(free)
    return [bool(x) for x in np.any(np.all(free[:, None, :] >= reqs[None, :, :], axis=2), axis=1)]


def compact_nodes(
    candidates: Iterable[tuple[ExistingNodeSpec, bool]], pools: Sequence[NodePool]
) -> list[ExistingNodeSpec]:
    """The nodes (compact specs, in order) marked as able to take a pod, every node of a pool that limits its
    number of nodes, and then one stand-in per other pool with limits for the capacity of its nodes left out."""
    limits_nodes = {p.name: "nodes" in p.limits for p in pools if p.limits}
    keep: list[ExistingNodeSpec] = []
    usage: dict[str, Resources] = {}
    for spec, fits in candidates:
        pool = spec.nodepool or ""
        if fits or limits_nodes.get(pool):
            keep.append(spec)
        elif pool in limits_nodes:
            usage[pool] = usage.get(pool, Resources()) + (spec.capacity or spec.allocatable)
    keep.extend(limit_stand_in(pool, cap) for pool, cap in sorted(usage.items()))
    return keep
