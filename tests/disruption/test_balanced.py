"""consolidationPolicy Balanced (Karpenter v1.14): a consolidation move goes ahead only when its savings, as a fraction
of its NodePool's cost, are at least half its disruption, as a fraction of the NodePool's disruption cost."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from packing.disruption import PodMeta, consolidate
from packing.disruption.balanced import THRESHOLD, Score, pod_disruption_cost
from packing.disruption.cli import main
from packing.disruption.model import DELETION_COST, MoveDecision, NotDisruptedCategory, Report
from packing.disruption.output import render_json, render_text
from tests.disruption.test_cli import cluster_files, node_doc, pod_doc
from tests.engine_builders import (
    AT,
    bound_pod,
    cluster,
    disruption_settings,
    node,
    on_demand_pool,
    small_catalog,
)

CAT = {it.name: it for it in small_catalog()}
M4, M2, M16, C1 = CAT["m-4x"], CAT["m-2x"], CAT["m-16x"], CAT["c-1x"]
TOP_PRIORITY = 2**31 - 1


def run(policy: str, nodes: list, pods: list, meta: dict[str, PodMeta] | None = None, **kw: object) -> Report:
    c = cluster(
        nodes, pods, pools=[on_demand_pool()], pool_settings={"default": disruption_settings(policy=policy)}, meta=meta
    )
    return consolidate(c, AT, **kw)  # type: ignore[arg-type]


def spared(r: Report) -> dict[str, object]:
    return {n.node: n for n in r.not_disrupted}


def test_pod_disruption_cost_is_karpenters_eviction_cost() -> None:
    assert pod_disruption_cost({}, 0) == 1.0
    assert pod_disruption_cost({DELETION_COST: str(2**27)}, 0) == 2.0
    assert pod_disruption_cost({}, 2**25) == 2.0
    assert pod_disruption_cost({DELETION_COST: "2147483647"}, TOP_PRIORITY) == 10.0  # clamped
    assert pod_disruption_cost({}, -(2**31)) == -10.0
    assert pod_disruption_cost({DELETION_COST: "lots"}, 0) == 1.0  # unparsable: ignored, as Karpenter logs and goes on


def test_score_of_the_designs_worked_examples() -> None:
    # designs/balanced-consolidation.md: the oversized node, the marginal move, and the uniform pool's boundary
    assert Score("p", 7.26 / 58.08, 3 / 80).value == pytest.approx(3.33, abs=0.01)
    assert not Score("p", 2.42 / 58.08, 8 / 80).approved
    assert Score("p", 0.25, 0.5).value == THRESHOLD and Score("p", 0.25, 0.5).approved  # exactly 1/k passes
    assert Score("p", 0.0, 0.1).value == 0.0 and not Score("p", -0.1, 0.1).approved  # no saving never passes


def four_nodes(priority: int) -> tuple[list, list, dict[str, PodMeta]]:
    """n1 (an m-2x, $0.1) runs a small pod that fits beside the big pod of any of n2..n4 (m-4x, $0.2)."""
    nodes = [node("n1", M2)] + [node(f"n{i}", M4) for i in range(2, 5)]
    pods = [bound_pod("small", "n1", "500m")] + [bound_pod(f"big{i}", f"n{i}", "3", "12Gi") for i in range(2, 5)]
    return nodes, pods, {"default/small": PodMeta({}, None, priority)}


def test_a_costly_pod_keeps_its_node_that_a_plain_pool_would_delete() -> None:
    nodes, pods, meta = four_nodes(TOP_PRIORITY)
    plain = run("WhenEmptyOrUnderutilized", nodes, pods, meta)
    assert [(a.type, a.nodes, a.score) for a in plain.actions] == [("delete", ["n1"], None)]

    balanced = run("Balanced", nodes, pods, meta)
    assert not balanced.actions
    # 1/7 of the pool's cost for 11 of its 17 disruption (n1 is 1 + 10, the others 1 + 1 each)
    n1 = spared(balanced)["n1"]
    assert n1.category is NotDisruptedCategory.BELOW_SCORE_THRESHOLD  # type: ignore[attr-defined]
    assert n1.score == pytest.approx((0.1 / 0.7) / (11 / 17))  # type: ignore[attr-defined]
    # single-node's best-case filter finds it without a simulation; the multi-node moves tried were all rejected
    assert "even deleting it outright: score 0.22 < threshold 0.50" in n1.text  # type: ignore[attr-defined]
    assert {(o.policy, o.decision) for o in balanced.score_observations} == {("Balanced", MoveDecision.REJECTED)}


def test_default_pods_score_as_pod_counts_and_pass() -> None:
    nodes, pods, meta = four_nodes(0)
    r = run("Balanced", nodes, pods, meta)
    assert [(a.type, a.nodes) for a in r.actions] == [("delete", ["n1"])]
    assert r.actions[0].score == pytest.approx((0.1 / 0.7) / (2 / 8))
    assert [(o.nodepool, o.policy, o.decision) for o in r.score_observations] == [
        ("default", "Balanced", MoveDecision.APPROVED)
    ]


def test_a_replacement_at_half_price_passes_and_one_more_pod_fails() -> None:
    # n1's pod needs a new m-2x ($0.1) in place of its m-4x ($0.2): a quarter of the pool's $0.4; n2 is full
    full = bound_pod("full", "n2", "4", "16Gi")
    one = [bound_pod("a", "n1", "1500m", "5Gi"), full]
    r = run("Balanced", [node("n1", M4), node("n2", M4)], one)
    assert [(a.type, a.nodes, a.replacements[0]["instance_type"]) for a in r.actions] == [("replace", ["n1"], "m-2x")]
    assert r.actions[0].score == THRESHOLD  # 0.25 / (2 / 4): exactly 1/k, compared exactly as Karpenter does

    two = [bound_pod("a", "n1", "1", "3Gi"), bound_pod("b", "n1", "500m", "2Gi"), full]
    r = run("Balanced", [node("n1", M4), node("n2", M4)], two)
    assert not r.actions
    n1 = spared(r)["n1"]
    # the outright delete would pass (0.5 / 0.6), so the replacement is simulated and scored: 0.25 / (3 / 5)
    assert n1.category is NotDisruptedCategory.BELOW_SCORE_THRESHOLD  # type: ignore[attr-defined]
    assert n1.score == pytest.approx(0.25 / 0.6)  # type: ignore[attr-defined]
    assert n1.text.startswith("Balanced consolidation, the move: score 0.42 < threshold 0.50")  # type: ignore[attr-defined]
    seen = [(o.score, o.decision) for o in r.score_observations]
    assert (pytest.approx(0.25 / 0.6), MoveDecision.REJECTED) in seen
    assert {d for _, d in seen} == {MoveDecision.REJECTED}
    # the same cluster under WhenEmptyOrUnderutilized replaces it
    assert [a.type for a in run("WhenEmptyOrUnderutilized", [node("n1", M4), node("n2", M4)], two).actions] == ["replace"]


def test_repack_is_scored_too() -> None:
    nodes, pods, meta = four_nodes(TOP_PRIORITY)
    for repack in (True, False):
        r = run("Balanced", nodes, pods, meta, repack=repack)
        assert all(a.score is not None and a.score >= THRESHOLD for a in r.actions)


def test_empty_deletes_are_not_gated_but_show_their_score() -> None:
    # Karpenter's emptiness never scores: a cheap empty node goes even though its score is below 1/k
    r = run("Balanced", [node("e", C1), node("n", M16)], [bound_pod("a", "n", "15")])
    assert [(a.reason, a.nodes) for a in r.actions] == [("empty", ["e"])]
    assert r.actions[0].score == pytest.approx((0.04 / 0.84) / (1 / 3))
    assert all(o.decision is MoveDecision.REJECTED for o in r.score_observations)  # the delete is not counted


def test_json_and_text_show_the_score_and_the_threshold() -> None:
    nodes, pods, meta = four_nodes(0)
    r = run("Balanced", nodes, pods, meta)
    doc = render_json(r)
    assert (doc["actions"][0]["score"], doc["actions"][0]["score_threshold"]) == (round(4 / 7, 6), 0.5)
    n3 = next(n for n in doc["not_disrupted"] if n["node"] == "n3")
    assert (n3["score"], n3["score_threshold"]) == (None, None)
    out = io.StringIO()
    render_text(r, out)
    assert "(score 0.57, threshold 0.50)" in out.getvalue()

    nodes, pods, meta = four_nodes(TOP_PRIORITY)
    r = run("Balanced", nodes, pods, meta)
    n1 = next(n for n in render_json(r)["not_disrupted"] if n["node"] == "n1")
    assert (n1["category"], n1["score"], n1["score_threshold"]) == (
        "below-score-threshold", round((0.1 / 0.7) / (11 / 17), 6), 0.5)
    out = io.StringIO()
    render_text(r, out)
    assert "n1  Balanced consolidation, even deleting it outright: score 0.22 < threshold 0.50" in out.getvalue()


def test_cli_reads_balanced_from_the_nodepool(tmp_path: Path) -> None:
    files = cluster_files(tmp_path, node_doc("n1"), node_doc("n2"), pod_doc("web-1", "n1", "500m"),
                          pod_doc("web-2", "n2", "3"))
    objs = Path(files[0])
    objs.write_text(objs.read_text().replace(
        "consolidationPolicy: WhenEmptyOrUnderutilized", "consolidationPolicy: Balanced"))
    out, err = io.StringIO(), io.StringIO()
    assert main([*files, "--at", "2026-11-30T12:00:00Z"], stdout=out, stderr=err) == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    assert doc["actions"] and all(a["score"] is not None for a in doc["actions"])
