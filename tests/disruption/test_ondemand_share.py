"""Consolidation never breaks a workload's on-demand share: a move that would leave fewer replicas on on-demand
nodes than the contract requires is refused (category on-demand-share) naming the workload and the numbers."""

from __future__ import annotations

from packing.disruption import Cluster, NotDisruptedCategory, PodMeta, consolidate
from packing.disruption.model import DO_NOT_DISRUPT
from packing.ondemandshare import OnDemandShare
from packing.pods import Pod
from tests.engine_builders import AT, bound_pod, cluster, node, small_catalog, with_on_demand_shares

CAT = {it.name: it for it in small_catalog()}
M4 = CAT["m-4x"]
WEB = ("Deployment", "default", "web")


def _web(name: str, node_name: str) -> Pod:
    return bound_pod(name, node_name, "1", owner_kind="Deployment", owner_name="web")


def _cluster(base: int | None) -> Cluster:
    # od-1 (on-demand) holds two web pods that fit in the free room of spot-1, which do-not-disrupt keeps
    pods = [_web("web-1", "od-1"), _web("web-2", "od-1"), _web("web-3", "spot-1"), bound_pod("pinned", "spot-1", "1")]
    c = cluster([node("od-1", M4), node("spot-1", M4, ct="spot")], pods,
                meta={"default/pinned": PodMeta({DO_NOT_DISRUPT: "true"})})
    return c if base is None else with_on_demand_shares(c, {WEB: OnDemandShare(base, 0)})


def test_without_a_share_the_on_demand_node_is_consolidated_onto_spot() -> None:
    r = consolidate(_cluster(None), AT)
    assert [(a.type, a.nodes) for a in r.actions] == [("delete", ["od-1"])]


def test_a_move_that_would_break_the_share_is_refused_naming_the_workload_and_the_numbers() -> None:
    r = consolidate(_cluster(2), AT)
    assert r.actions == []
    [spared] = [n for n in r.not_disrupted if n.node == "od-1"]
    assert spared.category is NotDisruptedCategory.ON_DEMAND_SHARE
    assert spared.text == (
        "the on-demand share of Deployment default/web (Deployment default/web: base 2, 0% above it) needs 2 of its "
        "3 replicas on on-demand nodes; the move would leave 0 (now 2)"
    )


def test_a_move_that_keeps_the_share_goes_ahead() -> None:
    # base 0: nothing is required on on-demand, so the move is made as without a share
    r = consolidate(_cluster(0), AT)
    assert [(a.type, a.nodes) for a in r.actions] == [("delete", ["od-1"])]
