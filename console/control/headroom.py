"""What the CapacityBuffers' headroom costs: a plan of their virtual pods alone over the live cluster, made by the
metrics loop each minute (console.control.metrics) so the cost page never runs one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from console import adapters
from console.backends.base import ClusterBackend
from console.buffers.models import CapacityBuffer
from console.fleet.models import EC2NodeClass, NodePool
from packing import api


@dataclass(frozen=True)
class Headroom:
    """What the CapacityBuffers' room costs per hour: on the live nodes that hold it now (`held_per_hour`),
    and with the nodes a plan for the buffers alone would launch (`total_per_hour`); per buffer in `buffers`."""

    buffers: list[api.BufferReport]
    held_per_hour: float
    total_per_hour: float


def buffer_headroom(*, cluster: ClusterBackend, pods: Sequence[Mapping[str, Any]] | None = None,
                    nodes: Sequence[Mapping[str, Any]] | None = None) -> Headroom:
    """A plan of the buffers' virtual pods alone over the live cluster and the fleet (the cluster's pending pods
    left out, so the figure is the headroom's own): each node's price times the share of its allocatable (the
    larger of cpu and memory) the virtual pods held there take (packing.buffers.BufferReport). `pods` and
    `nodes` are the cluster's lists when the caller has them already (the metrics loop), else listed here."""
    rows = list(CapacityBuffer.objects.all())
    if not rows:
        return Headroom([], 0.0, 0.0)
    if pods is None:
        pods = cluster.list_pods()[0]
    if nodes is None:
        nodes = cluster.list_nodes()[0]
    pools, classes = list(NodePool.objects.all()), list(EC2NodeClass.objects.all())
    inputs = adapters.cluster_inputs(pods=pods, nodes=nodes, daemonsets=cluster.list_daemonsets(), nodepools=pools,
                                     nodeclasses=classes, buffers=rows,
                                     pod_templates=adapters.buffer_pod_templates(cluster=cluster, buffers=rows))
    api.expand_workloads(inputs)
    inputs.pending = []
    results = api.plan(inputs, adapters.engine_catalog(pools=pools, nodeclasses=classes), lower_bound=False)
    reports = list(results.buffers)
    return Headroom(reports, sum(b.held_cost_per_hour for b in reports), sum(b.cost_per_hour for b in reports))
