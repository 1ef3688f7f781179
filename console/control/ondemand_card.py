"""The NodePool page's "On-demand share" card, read from the live cluster through the adapters (the fleet app
does not import them: it registers no card of its own; console.control's AppConfig registers this one)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from console import adapters
from console.backends.factory import cluster_backend
from console.fleet.models import NodePool
from packing import api


@dataclass
class OnDemandShareView:
    """The NodePool page's "On-demand share" card: each workload whose contract the pool's first-admitting rule
    gives to this pool, as the cluster runs now (None rows: the cluster could not be read, `error` says why)."""

    rows: list[Any] | None
    error: str = ""


def nodepool_on_demand_share(*, nodepool: NodePool, cluster: Any) -> OnDemandShareView:
    """Each workload the pool serves with an on-demand share (its own annotations or the pool's), split as the
    cluster's pods run now: required on on-demand, on on-demand, on spot, pending (packing.api.on_demand_now)."""
    try:
        pods, _ = cluster.list_pods()
        nodes, _ = cluster.list_nodes()
        inputs = adapters.cluster_inputs(pods=pods, nodes=nodes, nodepools=list(NodePool.objects.all()))
        rows = api.on_demand_now(inputs)
    except Exception as exc:  # noqa: BLE001 - a page shows what it can; the cluster may be unreachable
        return OnDemandShareView(None, f"{type(exc).__name__}: {exc}"[:300])
    return OnDemandShareView([r for r in rows if r.pool == nodepool.name])


def on_demand_card(pool: NodePool) -> OnDemandShareView:
    return nodepool_on_demand_share(nodepool=pool, cluster=cluster_backend())
