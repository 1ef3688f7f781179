"""Candidates and exclusions: each reason a node is spared, and the pods that never keep a node alive."""

from __future__ import annotations

from datetime import timedelta

from packing.disruption import PodMeta, consolidate
from packing.disruption.model import DO_NOT_DISRUPT, LAST_POD_EVENT, MIRROR_ANNOTATION
from tests.engine_builders import (
    AT,
    OLD,
    bound_pod,
    cluster,
    disruption_settings,
    node,
    pdb,
    small_catalog,
)

CAT = {it.name: it for it in small_catalog()}
M4 = CAT["m-4x"]


def reasons(report: object) -> dict[str, str]:
    return {n.node: n.reason for n in report.not_disrupted}  # type: ignore[attr-defined]


def disrupted(report: object) -> set[str]:
    return {n for a in report.actions for n in a.nodes}  # type: ignore[attr-defined]


def test_unmanaged_node_is_never_touched() -> None:
    r = consolidate(cluster([node("u1", M4, pool_name=None), node("n1", M4)], []), AT)
    assert disrupted(r) == {"n1"}
    assert "not managed" in reasons(r)["u1"]


def test_unknown_pool_and_uninitialized_and_deleting_nodes_are_not_candidates() -> None:
    nodes = [
        node("x1", M4, pool_name="ghost"),
        node("x2", M4, initialized=False),
        node("x3", M4, deleting=True),
    ]
    r = consolidate(cluster(nodes, []), AT)
    assert not r.actions
    why = reasons(r)
    assert "nodepool ghost not found" in why["x1"]
    assert "not initialized" in why["x2"]
    assert "already being disrupted" in why["x3"]


def test_node_do_not_disrupt() -> None:
    r = consolidate(cluster([node("n1", M4, annotations={DO_NOT_DISRUPT: "true"})], []), AT)
    assert not r.actions
    assert reasons(r)["n1"] == "node n1 has do-not-disrupt"


def test_node_do_not_disrupt_duration_running_passed_and_unreadable() -> None:
    # As for pods: a duration protects the node for that long after its creation (Karpenter v1.14).
    nodes = [
        node("n1", M4, created=AT - timedelta(minutes=10), annotations={DO_NOT_DISRUPT: "30m"}),  # still running
        node("n2", M4, created=AT - timedelta(hours=1), annotations={DO_NOT_DISRUPT: "30m"}),     # passed
        node("n3", M4, annotations={DO_NOT_DISRUPT: "soon"}),                                    # taken as true
        node("n4", M4, annotations={DO_NOT_DISRUPT: "false"}),
    ]
    r = consolidate(cluster(nodes, []), AT)
    assert disrupted(r) == {"n2", "n4"}
    assert reasons(r)["n1"] == "node n1 has do-not-disrupt until 2026-11-30T12:20:00Z"
    assert reasons(r)["n3"] == "node n3 has do-not-disrupt 'soon', which is neither true nor a duration (treated as true)"


def test_pod_do_not_disrupt_true_blocks_its_node() -> None:
    pods = [bound_pod("batch-1", "n1", "1"), bound_pod("web-1", "n2", "1")]
    meta = {"default/batch-1": PodMeta({DO_NOT_DISRUPT: "true"})}
    r = consolidate(cluster([node("n1", M4), node("n2", M4)], pods, meta=meta), AT)
    assert "n1" not in disrupted(r)
    assert "n2" in disrupted(r)
    assert reasons(r)["n1"] == "pod default/batch-1 has do-not-disrupt"


def test_pod_do_not_disrupt_duration_running_and_passed() -> None:
    pods = [bound_pod("a", "n1", "1"), bound_pod("b", "n2", "1"), bound_pod("c", "n3", "3")]
    meta = {
        "default/a": PodMeta({DO_NOT_DISRUPT: "2h"}, created=AT - timedelta(hours=1)),  # still running
        "default/b": PodMeta({DO_NOT_DISRUPT: "2h"}, created=AT - timedelta(hours=3)),  # passed
    }
    r = consolidate(cluster([node("n1", M4), node("n2", M4), node("n3", M4)], pods, meta=meta), AT)
    assert "n1" not in disrupted(r)
    assert "n2" in disrupted(r)
    assert reasons(r)["n1"] == "pod default/a has do-not-disrupt until 2026-11-30T13:00:00Z"


def test_pdb_with_no_disruption_allowed_blocks() -> None:
    pods = [bound_pod(f"web-{i}", f"n{i}", "1", labels={"app": "web"}) for i in range(1, 4)]
    budgets = [pdb("web", min_available="3", app="web")]
    r = consolidate(cluster([node(f"n{i}", M4) for i in range(1, 4)], pods, pdbs=budgets), AT)
    assert not r.actions
    assert reasons(r)["n1"] == "pdb default/web blocks eviction of default/web-1"


def test_pdb_allowing_one_eviction_lets_one_node_go_at_a_time() -> None:
    pods = [bound_pod(f"web-{i}", f"n{i}", "1", labels={"app": "web"}) for i in range(1, 4)]
    budgets = [pdb("web", max_unavailable="1", app="web")]
    r = consolidate(cluster([node(f"n{i}", M4) for i in range(1, 4)], pods, pdbs=budgets), AT)
    assert r.actions
    for a in r.actions:
        assert sum(1 for p in a.moves if p.startswith("default/web-")) <= 1


def test_pod_covered_by_several_pdbs_blocks() -> None:
    pods = [bound_pod("web-1", "n1", "1", labels={"app": "web", "tier": "x"}), bound_pod("o", "n2", "1")]
    budgets = [pdb("a", max_unavailable="5", app="web"), pdb("b", max_unavailable="5", tier="x")]
    r = consolidate(cluster([node("n1", M4), node("n2", M4)], pods, pdbs=budgets), AT)
    assert "n1" not in disrupted(r)
    assert "covered by several PDBs (default/a, default/b)" in reasons(r)["n1"]


def test_consolidate_after_counts_from_newest_pod() -> None:
    pods = [bound_pod("a", "n1", "1"), bound_pod("b", "n2", "1")]
    meta = {"default/a": PodMeta(created=AT - timedelta(minutes=2)), "default/b": PodMeta(created=OLD)}
    st = {"default": disruption_settings(after=timedelta(minutes=5))}
    r = consolidate(cluster([node("n1", M4), node("n2", M4)], pods, meta=meta, pool_settings=st), AT)
    assert "n1" not in disrupted(r)
    assert "consolidateAfter 5m has not passed" in reasons(r)["n1"]
    assert "n2" in disrupted(r)


def test_consolidate_after_uses_last_pod_event_annotation() -> None:
    recent = (AT - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    nodes = [node("n1", M4, annotations={LAST_POD_EVENT: recent}), node("n2", M4)]
    st = {"default": disruption_settings(after=timedelta(minutes=5))}
    r = consolidate(cluster(nodes, [bound_pod("a", "n1"), bound_pod("b", "n2")], pool_settings=st), AT)
    assert "n1" not in disrupted(r)
    assert "since the last pod change at" in reasons(r)["n1"]


def test_consolidate_after_never() -> None:
    st = {"default": disruption_settings(after=None)}
    r = consolidate(cluster([node("n1", M4)], [], pool_settings=st), AT)
    assert not r.actions
    assert reasons(r)["n1"] == "nodepool default has consolidateAfter Never"


def test_when_empty_policy_spares_nodes_with_pods_but_deletes_empty_ones() -> None:
    st = {"default": disruption_settings(policy="WhenEmpty")}
    nodes = [node("n1", M4), node("n2", M4), node("n3", M4)]
    r = consolidate(cluster(nodes, [bound_pod("a", "n1"), bound_pod("b", "n2")], pool_settings=st), AT)
    assert disrupted(r) == {"n3"}
    assert "WhenEmpty" in reasons(r)["n1"]


def test_daemonset_and_mirror_pods_do_not_keep_a_node_alive() -> None:
    pods = [
        bound_pod("ds-1", "n1", "100m", owner_kind="DaemonSet", owner_name="ds"),
        bound_pod("static-1", "n1", "100m"),
    ]
    meta = {"default/static-1": PodMeta({MIRROR_ANNOTATION: "abc"})}
    r = consolidate(cluster([node("n1", M4)], pods, meta=meta), AT)
    assert [(a.type, a.reason, a.nodes) for a in r.actions] == [("delete", "empty", ["n1"])]
    assert r.actions[0].moves == {}
