"""Each disruption method: emptiness, drift, expiration, multi- and single-node consolidation, min-savings."""

from __future__ import annotations

from datetime import timedelta

from packing.disruption import MinSavings, consolidate
from packing.nodepool import NodePool
from packing.requirements import Requirement, Requirements
from packing.resources import Resources
from packing.taints import Taint
from tests.engine_builders import (
    AT,
    CT,
    OLD,
    bound_pod,
    cluster,
    disruption_settings,
    many_spot_types,
    mixed_capacity_pool,
    node,
    pod,
    pool,
    small_catalog,
    small_catalog_type,
)

CAT = {it.name: it for it in small_catalog()}
M4, M8, C2, M2, M16 = CAT["m-4x"], CAT["m-8x"], CAT["c-2x"], CAT["m-2x"], CAT["m-16x"]


def reasons(report: object) -> dict[str, str]:
    return {n.node: n.reason for n in report.not_disrupted}  # type: ignore[attr-defined]


def test_emptiness_deletes_all_empty_nodes_in_one_action() -> None:
    nodes = [node("n1", M4), node("n2", M8), node("n3", M4)]
    r = consolidate(cluster(nodes, [bound_pod("a", "n3", "3500m")]), AT)
    a = r.actions[0]
    assert (a.type, a.reason, sorted(a.nodes), a.replacements, a.moves) == ("delete", "empty", ["n1", "n2"], [], {})
    assert a.savings_per_hour == round(M4.offerings[0].price + M8.offerings[0].price, 6)  # type: ignore[operator]
    assert len([x for x in r.actions if x.reason == "empty"]) == 1


def test_drift_on_requirement_replaces_and_keeps_pods_placed() -> None:
    # the pool now wants arm64; the amd64 node has drifted, its pod must move to a new (arm64) node
    arm = small_catalog_type("a-4x", 4, 16, 0.15, arch="arm64")
    p = mixed_capacity_pool("default", Requirement.new("kubernetes.io/arch", "In", ["arm64"]))
    r = consolidate(cluster([node("n1", M4)], [bound_pod("a", "n1", "3")], pools=[p], cat=[*small_catalog(), arm]), AT)
    a = r.actions[0]
    assert (a.type, a.reason) == ("replace", "drifted")
    assert "kubernetes.io/arch" in a.why
    assert a.replacements[0]["labels"]["kubernetes.io/arch"] == "arm64"
    assert a.moves == {"default/a": a.replacements[0]["name"]}


def test_drift_on_template_label_and_taint_and_gone_type() -> None:
    base = mixed_capacity_pool("default")
    labelled = NodePool("default", base.requirements, labels={"team": "web"})
    r = consolidate(cluster([node("n1", M4)], [], pools=[labelled]), AT)
    assert r.actions[0].reason == "empty"  # emptiness comes first in Karpenter's order
    r = consolidate(cluster([node("n1", M4), node("n2", M4)], [bound_pod("a", "n1", "3"), bound_pod("b", "n2", "3")], pools=[labelled]), AT)
    assert [a.reason for a in r.actions][:1] == ["drifted"]
    assert "label team of the nodepool template is missing" in r.actions[0].why
    tainted = NodePool("default", base.requirements, taints=(Taint("dedicated", "x"),))
    r = consolidate(cluster([node("n1", M4)], [bound_pod("a", "n1", "3", tolerations=())], pools=[tainted]), AT)
    assert "taints differ" in reasons(r)["n1"]  # drifted, but its pod tolerates no new node
    gone = [it for it in small_catalog() if it.name != "m-4x"]
    r = consolidate(cluster([node("n1", M4)], [bound_pod("a", "n1", "3")], cat=gone), AT)
    assert r.actions[0].reason == "drifted"
    assert "no longer in the catalog" in r.actions[0].why


def test_drift_takes_empty_nodes_first_then_the_oldest() -> None:
    p = mixed_capacity_pool("default", Requirement.new("karpenter.k8s.aws/instance-family", "In", ["c"]))
    nodes = [
        node("young", M4, created=AT - timedelta(days=1)),
        node("old", M4, created=AT - timedelta(days=5)),
    ]
    pods = [bound_pod("a", "young", "3"), bound_pod("b", "old", "3")]
    st = {"default": disruption_settings(policy="WhenEmpty", after=None)}  # keep consolidation out of the way
    r = consolidate(cluster(nodes, pods, pools=[p], pool_settings=st), AT)
    assert [a.nodes for a in r.actions if a.reason == "drifted"] == [["old"], ["young"]]


def test_expiration_replaces_old_nodes_and_is_not_budgeted() -> None:
    from packing.disruption import Budget

    st = {"default": disruption_settings(Budget(nodes="0"), expire=timedelta(days=2), after=None)}
    nodes = [node("n1", M4, created=AT - timedelta(days=3)), node("n2", M4, created=AT - timedelta(hours=1))]
    r = consolidate(cluster(nodes, [bound_pod("a", "n1", "3"), bound_pod("b", "n2", "3")], pool_settings=st), AT)
    assert [(a.reason, a.nodes) for a in r.actions] == [("expired", ["n1"])]
    assert "expireAfter 48h" in r.actions[0].why


def test_multi_node_consolidation_deletes_several_nodes_at_once() -> None:
    nodes = [node(f"n{i}", M8) for i in range(1, 5)]
    pods = [bound_pod(f"p{i}", f"n{i}", "1") for i in range(1, 4)] + [bound_pod("big", "n4", "4")]
    r = consolidate(cluster(nodes, pods), AT)
    first = r.actions[0]
    assert first.reason == "underutilized" and len(first.nodes) >= 2
    assert first.savings_per_hour > 0


def test_multi_node_replacement_is_one_node_strictly_cheaper_than_the_sum() -> None:
    nodes = [node(f"n{i}", M4) for i in range(1, 4)]
    pods = [bound_pod(f"p{i}", f"n{i}", "1500m", "2Gi") for i in range(1, 4)]
    # Karpenter's methods alone: with repack on, a delete (one pod into another node's room) comes first
    r = consolidate(cluster(nodes, pods), AT, repack=False)
    a = r.actions[0]
    assert a.type == "replace" and len(a.nodes) >= 2 and a.method == "multi-node"
    assert len(a.replacements) == 1
    assert a.replacements[0]["price_per_hour"] < sum(M4.offerings[0].price for _ in a.nodes)  # type: ignore[misc]


def test_single_node_delete_when_pods_fit_elsewhere() -> None:
    from packing.disruption import PodMeta
    from packing.disruption.model import DO_NOT_DISRUPT

    nodes = [node("n1", M4), node("n2", M4)]
    meta = {"default/b": PodMeta({DO_NOT_DISRUPT: "true"})}  # n2 stays, so only one candidate: single-node
    r = consolidate(cluster(nodes, [bound_pod("a", "n1", "1"), bound_pod("b", "n2", "2")], meta=meta), AT)
    assert len(r.actions) == 1
    a = r.actions[0]
    assert (a.type, a.reason, a.nodes, a.moves, a.replacements) == ("delete", "underutilized", ["n1"], {"default/a": "n2"}, [])


def test_single_node_replace_with_cheaper_on_demand() -> None:
    p = pool("default", Requirement.new(CT, "In", ["on-demand"]))
    r = consolidate(cluster([node("n1", M8)], [bound_pod("a", "n1", "1")], pools=[p]), AT)
    a = r.actions[0]
    assert (a.type, a.reason) == ("replace", "underutilized")
    assert a.replacements[0]["capacity_type"] == "on-demand"
    assert a.replacements[0]["price_per_hour"] < M8.offerings[0].price  # type: ignore[operator]
    # the nodeclaim is exactly plan's shape
    assert set(a.replacements[0]) >= {
        "name", "nodepool", "instance_type", "instance_type_options", "capacity_type", "zone", "price_per_hour",
        "labels", "taints", "pods", "requests", "allocatable",
    }


def test_on_demand_to_spot_replacement_is_pinned_to_spot() -> None:
    r = consolidate(cluster([node("n1", M8)], [bound_pod("a", "n1", "1")]), AT)
    a = r.actions[0]
    assert a.replacements[0]["capacity_type"] == "spot"
    assert a.replacements[0]["labels"][CT] == "spot"
    assert "pinned to spot" in a.why


def test_spot_to_spot_needs_fifteen_cheaper_spot_types() -> None:
    # the small catalog has too few cheaper spot types
    r = consolidate(cluster([node("n1", M8, ct="spot")], [bound_pod("a", "n1", "1")]), AT)
    assert not r.actions
    assert "spot-to-spot replacement needs at least 15 cheaper spot instance types" in reasons(r)["n1"]
    cat = many_spot_types()
    big = next(it for it in cat if it.name == "big-8x")
    r = consolidate(cluster([node("n1", big, ct="spot")], [bound_pod("a", "n1", "1")], cat=cat), AT)
    a = r.actions[0]
    assert a.type == "replace" and a.replacements[0]["capacity_type"] == "spot"
    assert len(a.replacements[0]["instance_type_options"]) == 15


def test_no_cheaper_replacement_reason() -> None:
    p = pool("default", Requirement.new(CT, "In", ["on-demand"]))
    r = consolidate(cluster([node("n1", C2)], [bound_pod("a", "n1", "1500m", "3Gi")], pools=[p]), AT)
    assert not r.actions
    assert reasons(r)["n1"].startswith("no cheaper replacement: cheapest fitting option c-2x on-demand at $0.080/h")


def test_pending_pods_compete_for_the_room() -> None:
    nodes = [node("n1", M4), node("n2", M4)]
    pods = [bound_pod("a", "n1", "1"), bound_pod("b", "n2", "1"), pod("pending", "2500m")]
    p = pool("default", Requirement.new(CT, "In", ["on-demand"]),
             Requirement.new("karpenter.k8s.aws/instance-family", "In", ["m"]),
             Requirement.new("node.kubernetes.io/instance-type", "In", ["m-4x"]))
    r = consolidate(cluster(nodes, pods, pools=[p]), AT)
    # a's node could take b (or the reverse) only if the pending pod did not need that room
    assert all(len(a.nodes) == 1 for a in r.actions)
    for a in r.actions:
        assert a.savings_per_hour <= M4.offerings[0].price  # type: ignore[operator]


def test_min_savings_in_dollars_and_percent() -> None:
    nodes = [node("n1", M4), node("n2", M4)]
    pods = [bound_pod("a", "n1", "1"), bound_pod("b", "n2", "2")]
    assert consolidate(cluster(nodes, pods), AT, min_savings=MinSavings.parse("0.1")).actions
    r = consolidate(cluster(nodes, pods), AT, min_savings=MinSavings.parse("$0.5/h"))
    assert not r.actions
    assert "below --min-savings $0.500/h" in reasons(r)["n1"] + reasons(r)["n2"]
    assert consolidate(cluster(nodes, pods), AT, min_savings=MinSavings.parse("100%")).actions  # a delete saves 100%
    p = pool("default", Requirement.new(CT, "In", ["on-demand"]))
    one = [node("n1", M8)]
    assert consolidate(cluster(one, [bound_pod("a", "n1", "1")], pools=[p]), AT, min_savings=MinSavings.parse("50%")).actions
    assert not consolidate(cluster(one, [bound_pod("a", "n1", "1")], pools=[p]), AT, min_savings=MinSavings.parse("95%")).actions


def test_methods_run_in_karpenter_order() -> None:
    p = mixed_capacity_pool("default", Requirement.new("karpenter.k8s.aws/instance-family", "In", ["m"]))
    nodes = [
        node("empty", M4),
        node("drift", C2),
        node("expired", M4, created=AT - timedelta(days=40)),
        node("under", M8),
        node("keep", M8),
    ]
    pods = [bound_pod("d", "drift", "1"), bound_pod("e", "expired", "3"), bound_pod("u", "under", "1"), bound_pod("k", "keep", "7")]
    r = consolidate(cluster(nodes, pods, pools=[p]), AT)
    order = [a.reason for a in r.actions]
    assert order[:3] == ["empty", "drifted", "expired"]
    assert "underutilized" in order[3:]


def test_requirements_helper_sanity() -> None:
    assert Requirements([Requirement.new(CT, "In", ["spot"])]).matches({CT: "spot"})
    assert OLD < AT


def test_pods_may_move_to_an_in_flight_nodeclaim_but_never_to_a_deleting_node() -> None:
    import dataclasses

    from packing.nodepool import ExistingNodeSpec

    claim_spec = node("claim-1", M4).spec
    claim = ExistingNodeSpec("claim-1", dict(claim_spec.labels), claim_spec.allocatable, kind="NodeClaim", initialized=False)
    c = cluster([node("n1", M4), node("gone", M4, deleting=True)], [bound_pod("a", "n1", "1")])
    c = dataclasses.replace(c, inflight=[claim])
    r = consolidate(c, AT)
    a = r.actions[0]
    assert (a.type, a.nodes, a.moves) == ("delete", ["n1"], {"default/a": "claim-1"})
    c2 = cluster([node("n1", M4), node("gone", M4, deleting=True)], [bound_pod("a", "n1", "1")])
    for act in consolidate(c2, AT).actions:
        assert "gone" not in act.moves.values() and "gone" not in act.nodes


def test_node_with_unknown_price_is_reported() -> None:
    r = consolidate(cluster([node("n1", M4, zone="us-east-1z"), node("n2", M8)], [bound_pod("a", "n1", "1"), bound_pod("b", "n2", "5")]), AT)
    assert "n1" not in {x for a in r.actions for x in a.nodes}
    assert {x.node: x.reason for x in r.not_disrupted}["n1"].startswith("its price is unknown")


def test_a_move_never_takes_the_room_a_pending_pod_is_bound_for() -> None:
    # n2 has room for n1's pod or for the pending pod, not both: n1 stays, whatever it would save
    p = pool("default", Requirement.new(CT, "In", ["on-demand"]),
             Requirement.new("node.kubernetes.io/instance-type", "In", ["m-4x"]))
    nodes = [node("n1", M4), node("n2", M4)]
    pods = [bound_pod("a", "n1", "3"), bound_pod("b", "n2", "1"), pod("pending", "3")]
    r = consolidate(cluster(nodes, pods, pools=[p]), AT)
    assert not r.actions
    # without the pending pod, one node's worth is saved (n1's pod moves to n2, or both go to one new node)
    r = consolidate(cluster(nodes, pods[:2], pools=[p]), AT)
    assert sum(a.savings_per_hour for a in r.actions) >= M4.offerings[0].price - 1e-9  # type: ignore[operator]


def test_pending_pods_bound_for_a_removed_node_move_with_its_pods() -> None:
    # the pending pod would schedule on n1; consolidating n1 must find it a place too (here: the replacement)
    p = pool("default", Requirement.new(CT, "In", ["on-demand"]))
    nodes = [node("n1", M16)]
    pods = [bound_pod("a", "n1", "1"), pod("pending", "1")]
    r = consolidate(cluster(nodes, pods, pools=[p]), AT, repack=False)  # Karpenter's single-node move
    assert [(a.type, a.nodes) for a in r.actions] == [("replace", ["n1"])]
    a = r.actions[0]
    assert a.moves == {"default/a": a.replacements[0]["name"]}  # moves list evicted pods only
    assert "default/pending" in a.replacements[0]["pods"]
    assert "1 pending pod that would have scheduled on it" in a.why or "all 1 of its pods" in a.why
    # the replacement holds both: it is at least as big as both pods need
    assert a.savings_per_hour < M16.offerings[0].price  # type: ignore[operator]


def test_pool_limits_hold_for_replacements() -> None:
    big = node("n1", CAT["m-8x"])
    pods = [bound_pod("a", "n1", "3"), bound_pod("b", "n2", "3500m")]
    nodes = [big, node("n2", M4)]
    on_demand = Requirement.new(CT, "In", ["on-demand"])
    free = consolidate(cluster(nodes, pods, pools=[pool("default", on_demand)]), AT)
    assert any(a.type == "replace" and "n1" in a.nodes for a in free.actions)
    # 12 cpu used and a limit of 12: n1 (8 cpu) may go only for a replacement of at most 8 cpu
    roomy = consolidate(cluster(nodes, pods, pools=[pool("default", on_demand, limits=Resources.parse({"cpu": "1000"}))]), AT)
    assert [(a.type, a.nodes, a.savings_per_hour) for a in roomy.actions] == [
        (a.type, a.nodes, a.savings_per_hour) for a in free.actions
    ]
    tight = consolidate(cluster(nodes, pods, pools=[pool("default", on_demand, limits=Resources.parse({"cpu": "7"}))]), AT)
    for a in tight.actions:
        assert not a.replacements, a  # 4 cpu stay on n2 or 8 on n1: any new node would pass 7 cpu


def test_a_node_count_limit_counts_the_replacement() -> None:
    from packing.disruption.model import DO_NOT_DISRUPT

    nodes = [node("n1", M16), node("n2", M4, annotations={DO_NOT_DISRUPT: "true"})]  # n2 stays either way
    pods = [bound_pod("a", "n1", "3"), bound_pod("b", "n2", "3500m")]
    on_demand = Requirement.new(CT, "In", ["on-demand"])
    two = consolidate(cluster(nodes, pods, pools=[pool("default", on_demand, limits=Resources.parse({"nodes": "2"}))]), AT)
    assert [(a.type, a.nodes) for a in two.actions] == [("replace", ["n1"])]  # n1 out, one in: still 2 nodes
    one = consolidate(cluster(nodes, pods, pools=[pool("default", on_demand, limits=Resources.parse({"nodes": "1"}))]), AT)
    assert not one.actions
    assert "every nodepool has reached its limits" in reasons(one)["n1"]


def _blocked_by_pdb_and_do_not_disrupt(grace: timedelta | None) -> object:
    from packing.disruption import Budget, PodMeta
    from packing.disruption.model import DO_NOT_DISRUPT
    from tests.engine_builders import pdb

    # n1 is past expireAfter, n2 has drifted (a template label the pool now sets), n3 is merely underused:
    # a PDB that allows no eviction covers n1's and n3's pods, a do-not-disrupt pod runs on n2.
    p = mixed_capacity_pool("default", labels={"team": "a"})
    st = {"default": disruption_settings(Budget(nodes="100%"), expire=timedelta(days=2), grace=grace)}
    young = AT - timedelta(hours=1)
    nodes = [node("n1", M4, created=AT - timedelta(days=3), labels={"team": "a"}), node("n2", M4, created=young),
             node("n3", M8, created=young, labels={"team": "a"})]
    pods = [bound_pod("web-1", "n1", "1", labels={"app": "web"}), bound_pod("job", "n2", "1"),
            bound_pod("web-2", "n3", "1", labels={"app": "web"})]
    meta = {"default/job": PodMeta({DO_NOT_DISRUPT: "true"})}
    return consolidate(cluster(nodes, pods, pools=[p], pool_settings=st, meta=meta,
                               pdbs=[pdb("web", min_available="2", app="web")]), AT)


def test_termination_grace_period_lets_drift_and_expiration_take_blocked_nodes() -> None:
    # As in Karpenter: with terminationGracePeriod the drain waits for such pods, bounded by it; consolidation
    # still spares the node.
    r = _blocked_by_pdb_and_do_not_disrupt(timedelta(hours=1))
    assert sorted((a.reason, tuple(a.nodes)) for a in r.actions) == [("drifted", ("n2",)), ("expired", ("n1",))]
    # (n2's do-not-disrupt pod moved onto n3 in the simulation; either blocker spares it)
    assert reasons(r)["n3"] in ("pdb default/web blocks eviction of default/web-2", "pod default/job has do-not-disrupt")


def test_without_termination_grace_period_pdbs_and_do_not_disrupt_spare_drifted_and_expired_nodes() -> None:
    r = _blocked_by_pdb_and_do_not_disrupt(None)
    assert not r.actions  # type: ignore[attr-defined]
    why = reasons(r)
    assert "pdb default/web blocks eviction of default/web-1" in why["n1"]
    assert why["n2"] == "pod default/job has do-not-disrupt"
