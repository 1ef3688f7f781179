"""Blocked moves carry their price: a node spared by a PDB, do-not-disrupt or a budget says which rule spares it and
what consolidating it would save were the rule lifted, judged exactly as single-node consolidation judges a move."""

from __future__ import annotations

import pytest

from packing.disruption import Budget, NotDisrupted, PodMeta, Report, consolidate
from packing.disruption.model import DO_NOT_DISRUPT
from packing.requirements import Requirement
from tests.engine_builders import (
    AT,
    CT,
    bound_pod,
    cluster,
    disruption_settings,
    node,
    pdb,
    pool,
    small_catalog,
)

CAT = {it.name: it for it in small_catalog()}
M4, M16, C1 = CAT["m-4x"], CAT["m-16x"], CAT["c-1x"]


def on_demand_price(name: str) -> float:
    return min(o.price for o in CAT[name].offerings if o.capacity_type == "on-demand" and o.price is not None)


def spared(report: Report) -> dict[str, NotDisrupted]:
    return {n.node: n for n in report.not_disrupted}


def test_pdb_blocked_node_whose_pods_fit_elsewhere_would_save_its_price() -> None:
    pods = [bound_pod("web-1", "n1", "1", labels={"app": "web"}), bound_pod("x", "n2", "1")]
    nodes = [node("n1", M4), node("n2", M4, annotations={DO_NOT_DISRUPT: "true"})]
    r = consolidate(cluster(nodes, pods, pdbs=[pdb("web", min_available="1", app="web")]), AT)
    assert not r.actions
    n1 = spared(r)["n1"]
    assert (n1.reason, n1.blocked_by) == ("pdb default/web blocks eviction of default/web-1", "pdb")
    assert n1.savings_per_hour == pytest.approx(on_demand_price("m-4x"))
    n2 = spared(r)["n2"]
    assert n2.blocked_by == "do-not-disrupt"
    assert n2.savings_per_hour == pytest.approx(on_demand_price("m-4x"))


def test_do_not_disrupt_pod_with_no_room_elsewhere_reports_the_replacement_saving() -> None:
    pods = [bound_pod("batch-1", "n1", "2")]
    blocked = cluster([node("n1", M16)], pods, meta={"default/batch-1": PodMeta({DO_NOT_DISRUPT: "true"})})
    r = consolidate(blocked, AT)
    assert not r.actions
    n1 = spared(r)["n1"]
    assert (n1.reason, n1.blocked_by) == ("pod default/batch-1 has do-not-disrupt", "do-not-disrupt")
    # the same cluster without the annotation: single-node consolidation replaces the node, saving exactly that
    free = consolidate(cluster([node("n1", M16)], pods), AT)
    assert [(a.type, a.nodes) for a in free.actions] == [("replace", ["n1"])]
    assert n1.savings_per_hour is not None
    assert n1.savings_per_hour == pytest.approx(free.actions[0].savings_per_hour)
    assert 0 < n1.savings_per_hour < on_demand_price("m-16x")


def test_do_not_disrupt_node_with_no_cheaper_option_has_no_saving() -> None:
    on_demand = pool("default", Requirement.new(CT, "In", ["on-demand"]))
    pods = [bound_pod("a", "n1", "500m", "512Mi")]
    r = consolidate(cluster([node("n1", C1, annotations={DO_NOT_DISRUPT: "true"})], pods, pools=[on_demand]), AT)
    n1 = spared(r)["n1"]
    assert (n1.blocked_by, n1.savings_per_hour) == ("do-not-disrupt", None)


def test_budget_blocked_nodes_report_what_their_move_would_save() -> None:
    pods = [bound_pod("a", "n1", "1"), bound_pod("b", "n2", "1")]
    nodes = [node("n1", M4), node("n2", M4)]
    zero = consolidate(cluster(nodes, pods, pool_settings={"default": disruption_settings(Budget(nodes="0"))}), AT)
    assert not zero.actions
    for name in ("n1", "n2"):
        x = spared(zero)[name]
        assert x.blocked_by == "budget" and x.reason.startswith("budget")
        assert x.savings_per_hour == pytest.approx(on_demand_price("m-4x"))  # its pod fits on the other node
    lifted = consolidate(cluster(nodes, pods), AT)  # without the budget, consolidation does act on them
    assert {n for a in lifted.actions for n in a.nodes} & {"n1", "n2"}


def test_a_budget_that_has_been_used_up_blocks_the_rest_with_their_saving() -> None:
    pods = [bound_pod("a", "n1", "1"), bound_pod("b", "n2", "1"), bound_pod("c", "n3", "1")]
    nodes = [node("n1", M4), node("n2", M4), node("n3", M4)]
    r = consolidate(cluster(nodes, pods, pool_settings={"default": disruption_settings(Budget(nodes="1"))}), AT)
    assert sum(len(a.nodes) for a in r.actions) == 1
    left = [x for x in r.not_disrupted]
    assert len(left) == 2 and all(x.blocked_by == "budget" for x in left)
    # after the first node went, each of the others could still be deleted: its pod fits on the last one
    assert all(x.savings_per_hour == pytest.approx(on_demand_price("m-4x")) for x in left)


def test_nodes_spared_for_other_reasons_are_not_blocked() -> None:
    pods = [bound_pod("big", "n1", "3500m")]
    r = consolidate(cluster([node("n1", M4, pool_name=None), node("n2", M4, initialized=False)], pods), AT)
    for x in r.not_disrupted:
        assert (x.blocked_by, x.savings_per_hour) == (None, None), x
    on_demand = pool("default", Requirement.new(CT, "In", ["on-demand"]))
    r = consolidate(cluster([node("n1", C1)], [bound_pod("a", "n1", "500m", "512Mi")], pools=[on_demand]), AT)
    x = spared(r)["n1"]
    assert x.reason.startswith("no cheaper replacement") or x.reason.startswith("no cheaper arrangement")
    assert (x.blocked_by, x.savings_per_hour) == (None, None)


def test_min_savings_does_not_hide_a_blocked_saving() -> None:
    from packing.disruption import MinSavings

    pods = [bound_pod("web-1", "n1", "1", labels={"app": "web"}), bound_pod("x", "n2", "1")]
    nodes = [node("n1", M4), node("n2", M4, annotations={DO_NOT_DISRUPT: "true"})]
    c = cluster(nodes, pods, pdbs=[pdb("web", min_available="1", app="web")])
    r = consolidate(c, AT, min_savings=MinSavings.parse("$100"))
    assert spared(r)["n1"].savings_per_hour == pytest.approx(on_demand_price("m-4x"))


def test_the_estimate_respects_the_simulation_limit() -> None:
    pods = [bound_pod("batch-1", "n1", "2")]
    c = cluster([node("n1", M16)], pods, meta={"default/batch-1": PodMeta({DO_NOT_DISRUPT: "true"})})
    r = consolidate(c, AT, max_solves=0)
    assert r.solves == 0
    assert spared(r)["n1"].blocked_by == "do-not-disrupt" and spared(r)["n1"].savings_per_hour is None
