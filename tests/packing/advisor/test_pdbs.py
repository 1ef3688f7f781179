from __future__ import annotations

from tests.packing.advisor.helpers import codes, node, nodepool, one, patch_of, pdb, pod, run

NODES = nodepool() + node("n1") + node("n2")
PODS = pod("web-1", "n1") + pod("web-2", "n2")


def test_min_available_at_replicas_pins_the_nodes_and_their_cost():
    f = one(run(NODES + PODS + pdb("web", "web", min_available="2")), "LM121")
    assert f.objects == ("poddisruptionbudget/default/web",)
    assert f.evidence["pinned_nodes"] == ["n1", "n2"]
    assert f.evidence["pinned_cost_per_hour"] == 0.384  # two m-4x on-demand at $0.192
    assert f.evidence["pinned_cost_per_month"] == round(0.384 * 730, 2)
    assert patch_of(f) == {"spec": {"minAvailable": None, "maxUnavailable": 1}}
    assert "-  minAvailable: 2" in f.fix.diff and "+  maxUnavailable: 1" in f.fix.diff


def test_min_available_as_a_percent_and_below_replicas():
    assert "LM121" in codes(run(NODES + PODS + pdb("web", "web", min_available="'100%'")))
    assert "LM121" not in codes(run(NODES + PODS + pdb("web", "web", min_available="1")))


def test_max_unavailable_zero():
    f = one(run(NODES + PODS + pdb("web", "web", max_unavailable="0")), "LM122")
    assert f.evidence["max_unavailable"] == "0"
    assert "LM122" not in codes(run(NODES + PODS + pdb("web", "web", max_unavailable="1")))


def test_a_pdb_selecting_no_pod():
    f = one(run(NODES + PODS + pdb("ghost", "nothing", max_unavailable="1")), "LM123")
    assert f.fix is None


def test_a_pdb_selecting_several_workloads():
    text = NODES + PODS + pod("api-1", "n1", app="api") + pdb("both", "web", max_unavailable="1")
    assert "LM124" not in codes(run(text))
    wide = text.replace("selector: {matchLabels: {app: web}}", "selector: {}")
    f = one(run(wide), "LM124")
    assert f.evidence["workloads"] == ["ReplicaSet/api", "ReplicaSet/web"]


def test_pods_covered_by_several_pdbs_cannot_be_evicted():
    text = NODES + PODS + pdb("a", "web", max_unavailable="1") + pdb("b", "web", max_unavailable="1")
    f = one(run(text), "LM125")
    assert f.objects == ("poddisruptionbudget/default/a", "poddisruptionbudget/default/b")
    assert f.evidence["pods"] == 2 and f.evidence["pinned_nodes"] == ["n1", "n2"]
    assert f.evidence["pinned_cost_per_hour"] == 0.384
    assert "LM125" not in codes(run(NODES + PODS + pdb("a", "web", max_unavailable="1")))
