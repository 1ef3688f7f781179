"""Repack, Loadmaster's move beyond Karpenter: a group of nodes re-planned onto new nodes only, possibly more of them.

The scenario: two m-8x nodes ($0.40/h) each hold three pods of 1.5 CPU and 10 GiB. Memory fills each node while
half its CPU idles, no pod fits in the other node's free room, and no single type is cheaper than one node (for
three pods) or both (for six): Karpenter's methods find nothing. Three s-4x nodes (4 CPU, 24 GiB, $0.10/h) hold
the six pods two by two for $0.30/h.
"""

from __future__ import annotations

import dataclasses
import io
from datetime import timedelta
from typing import Any

import pytest

from packing.disruption import Budget, MinSavings, consolidate
from packing.disruption import cli as disruption_cli
from packing.disruption.engine import REPACK_MIN_DOLLARS, REPACK_MIN_FRACTION
from packing.requirements import Requirement
from packing.resources import Resources
from tests.engine_builders import (
    AT,
    CT,
    ZONE,
    bound_pod,
    cluster,
    disruption_settings,
    node,
    pdb,
    pool,
    small_catalog,
    small_catalog_type,
    spread,
)

SMALL = small_catalog_type("s-4x", 4, 24, 0.10)
CAT = [*small_catalog(), SMALL]
M8 = next(it for it in CAT if it.name == "m-8x")
ON_DEMAND = Requirement.new(CT, "In", ["on-demand"])


def fragmented(n_nodes: int = 2, **pod_kw: Any) -> tuple[list[Any], list[Any]]:
    nodes = [node(f"n{i}", M8) for i in range(1, n_nodes + 1)]
    pods = [
        bound_pod(f"p{i}-{j}", f"n{i}", "1500m", "10Gi", labels={"app": f"a{i}"}, **pod_kw)
        for i in range(1, n_nodes + 1)
        for j in range(3)
    ]
    return nodes, pods


def run(nodes: list[Any], pods: list[Any], **kw: Any) -> Any:
    repack = kw.pop("repack", True)
    min_savings = kw.pop("min_savings", None)
    kw.setdefault("pools", [pool("default", ON_DEMAND)])
    kw.setdefault("cat", CAT)
    return consolidate(cluster(nodes, pods, **kw), AT, repack=repack, min_savings=min_savings)


def test_karpenter_methods_find_nothing_here() -> None:
    r = run(*fragmented(), repack=False)
    assert r.actions == []
    assert {x.node for x in r.not_disrupted} == {"n1", "n2"}


def test_repack_replaces_two_half_empty_nodes_with_three_small_ones() -> None:
    r = run(*fragmented())
    assert len(r.actions) == 1
    a = r.actions[0]
    assert (a.type, a.reason, a.method, sorted(a.nodes)) == ("replace", "underutilized", "repack", ["n1", "n2"])
    assert [c["instance_type"] for c in a.replacements] == ["s-4x"] * 3
    names = {c["name"] for c in a.replacements}
    assert set(a.moves) == {f"default/p{i}-{j}" for i in (1, 2) for j in range(3)}
    assert set(a.moves.values()) == names
    for c in a.replacements:
        assert sum(1 for t in a.moves.values() if t == c["name"]) == 2
        assert c["instance_type_options"][0] == "s-4x"
    assert a.savings_per_hour == pytest.approx(0.80 - 0.30)
    assert "repack" in a.why and "2 nodes" in a.why and "3 new nodes" in a.why and "$0.500/h" in a.why
    assert r.cost_after == pytest.approx(0.30)


def test_the_largest_group_that_clears_the_margin_goes_in_one_action() -> None:
    # all three nodes' nine pods fit five s-4x: $0.70/h saved at once (a node alone would save $0.20)
    r = run(*fragmented(3))
    assert [(a.method, len(a.nodes), len(a.replacements)) for a in r.actions] == [("repack", 3, 5)]
    assert r.actions[0].savings_per_hour == pytest.approx(1.20 - 0.50)


def test_a_group_shrinks_when_its_pods_cannot_all_move() -> None:
    # n3 also runs a pod that only a node labelled team=x could take, and no pool launches such a node: the group
    # of three fails, so the search halves it; n3 never goes
    nodes, pods = fragmented(3)
    pods.append(bound_pod("pinned", "n3", "250m", "256Mi", node_selector={"team": "x"}))
    r = run(nodes, pods)
    assert r.actions[0].method == "repack" and r.actions[0].nodes == ["n1"]
    assert all("n3" not in a.nodes for a in r.actions)
    assert "n3" in {x.node for x in r.not_disrupted}


def test_no_repack_gives_karpenters_result() -> None:
    nodes, pods = fragmented()
    with_, without = run(nodes, pods), run(nodes, pods, repack=False)
    assert [a.method for a in with_.actions] == ["repack"]
    assert without.actions == [] and without.cost_after == without.cost_before


def test_a_delete_comes_before_a_repack() -> None:
    # n2's one small pod fits in n1's free room: deleting n2 launches nothing and saves its whole price, so it is
    # taken first (a repack of both would evict every pod and launch nodes for a similar saving)
    nodes = [node("n1", M8), node("n2", M8)]
    pods = [
        *(bound_pod(f"p1-{j}", "n1", "1500m", "10Gi") for j in range(3)),
        bound_pod("small", "n2", "500m", "1Gi"),
    ]
    r = run(nodes, pods)
    first = r.actions[0]
    assert (first.type, first.reason, first.nodes) == ("delete", "underutilized", ["n2"])
    assert first.method in ("multi-node", "single-node")
    assert first.moves == {"default/small": "n1"}


def test_repack_comes_before_karpenters_replacements() -> None:
    # four m-4x ($0.20/h) each run one 2.5-CPU pod, which no other node has room for. Karpenter's multi-node move
    # replaces the four with one 16-CPU node ($0.64/h); repacked, each pod gets its own s-4x ($0.10/h)
    m4 = next(it for it in CAT if it.name == "m-4x")
    nodes = [node(f"n{i}", m4) for i in range(1, 5)]
    pods = [bound_pod(f"p{i}", f"n{i}", "2500m", "4Gi") for i in range(1, 5)]
    karpenter = run(nodes, pods, repack=False)
    assert [a.method for a in karpenter.actions] == ["multi-node"]
    assert karpenter.cost_after == pytest.approx(0.64)
    r = run(nodes, pods)
    assert [(a.method, len(a.nodes), len(a.replacements)) for a in r.actions] == [("repack", 4, 4)]
    assert {c["instance_type"] for c in r.actions[0].replacements} == {"s-4x"}
    assert r.cost_after == pytest.approx(0.40)


def test_a_pdb_blocked_node_never_joins_a_group() -> None:
    nodes, pods = fragmented(3)
    pods = [dataclasses.replace(p, labels={"app": "db"}) if p.node_name == "n3" else p for p in pods]
    r = run(nodes, pods, pdbs=[pdb("db", max_unavailable="0", app="db")])
    assert [sorted(a.nodes) for a in r.actions] == [["n1", "n2"]]
    spared = {x.node: x for x in r.not_disrupted}
    assert spared["n3"].blocked_by == "pdb"


def test_pdbs_hold_for_the_group_as_a_whole() -> None:
    # one web pod on each node and at most one web pod down at a time: each node may go, never both at once
    nodes, pods = fragmented()
    pods = [dataclasses.replace(p, labels={"app": "web"}) if p.name.endswith("-0") else p for p in pods]
    r = run(nodes, pods, pdbs=[pdb("web", max_unavailable="1", app="web")])
    assert r.actions and all(len(a.nodes) == 1 for a in r.actions)
    # the first node is repacked alone (three pods onto two s-4x); the second then too, one of its pods into the
    # room left on the first repack's nodes (which stay: they are new) and two onto one more s-4x
    assert [a.method for a in r.actions] == ["repack", "repack"]
    first, second = r.actions
    assert [len(a.replacements) for a in r.actions] == [2, 1]
    into_room = [k for k, v in second.moves.items() if v in {c["name"] for c in first.replacements}]
    assert len(into_room) == 1
    assert "2 of their 3 pods, the rest in room left on nodes that stay" in second.why
    assert second.savings_per_hour == pytest.approx(0.40 - 0.10)


def test_budget_room_is_respected() -> None:
    nodes, pods = fragmented()
    r = run(nodes, pods, pool_settings={"default": disruption_settings(Budget(nodes="1"))})
    assert [len(a.nodes) for a in r.actions] == [1]
    assert len(r.actions[0].replacements) == 2  # one node's three pods: two s-4x
    blocked = [x for x in r.not_disrupted if x.blocked_by == "budget"]
    assert [x.node for x in blocked] == [next(n for n in ("n1", "n2") if n not in r.actions[0].nodes)]


@pytest.mark.parametrize(
    ("limit", "groups"),
    [
        ("20", []),  # 16 CPU of nodes + 8 for even one node's repack: over
        ("24", [1, 1]),  # one node at a time (16 + 8); the pair would need 16 + 12
        ("28", [2]),  # the pair fits when its nodes are still counted
    ],
)
def test_pool_limits_count_the_group_until_it_is_gone(limit: str, groups: list[int]) -> None:
    limited = pool("default", ON_DEMAND, limits=Resources.parse({"cpu": limit}))
    r = run(*fragmented(), pools=[limited])
    assert [len(a.nodes) for a in r.actions] == groups
    cpu = {n.name: 8000 for n in fragmented()[0]}
    for a in r.actions:
        added = sum(4000 for _ in a.replacements)
        assert sum(cpu.values()) + added <= Resources.parse({"cpu": limit}).get("cpu", 0)
        for n in a.nodes:
            cpu.pop(n)
        for c in a.replacements:
            cpu[c["name"]] = 4000


def test_pods_with_topology_rules_are_left_to_karpenters_methods() -> None:
    r = run(*fragmented(spread=(spread(ZONE, app="a1"),)))
    assert r.actions == []


def test_gates_hold_for_repack() -> None:
    r = run(*fragmented(), pool_settings={"default": disruption_settings(policy="WhenEmpty")})
    assert r.actions == []
    nodes, pods = fragmented()
    nodes = [dataclasses.replace(n, annotations={"karpenter.sh/last-pod-event-time": "2026-11-30T11:50:00Z"}) for n in nodes]
    r = run(nodes, pods, pool_settings={"default": disruption_settings(after=timedelta(minutes=30))})
    assert r.actions == []
    assert all("consolidateAfter" in x.reason for x in r.not_disrupted)


def test_the_margin_and_min_savings() -> None:
    # a repack must save 5% of its group's cost and at least $0.01/h; --min-savings only raises that
    assert (REPACK_MIN_FRACTION, REPACK_MIN_DOLLARS) == (0.05, 0.01)
    nodes, pods = fragmented()
    # $0.49/h: one node alone saves $0.20, so only the pair qualifies
    assert [len(a.nodes) for a in run(nodes, pods, min_savings=MinSavings.parse("0.49")).actions] == [2]
    assert run(nodes, pods, min_savings=MinSavings.parse("0.51")).actions == []
    assert [len(a.nodes) for a in run(nodes, pods, min_savings=MinSavings.parse("62%")).actions] == [2]
    assert run(nodes, pods, min_savings=MinSavings.parse("63%")).actions == []  # the pair saves 62.5%
    # a small type barely cheaper than the nodes: 3 x $0.26 against $0.80 saves 2.5%, under the margin
    dear = [*small_catalog(), small_catalog_type("s-4x", 4, 24, 0.26)]
    assert run(nodes, pods, cat=dear).actions == []


def test_every_launch_option_keeps_the_margin() -> None:
    # several small types: each replacement may launch any option priced up to its planned price plus its share of
    # the saving above the margin, so whatever launches the move still saves at least the margin
    cat = [*CAT, small_catalog_type("s2-4x", 4, 24, 0.11), small_catalog_type("s3-4x", 4, 24, 0.30)]
    r = run(*fragmented(), cat=cat)
    a = r.actions[0]
    assert a.method == "repack"
    price = {it.name: it.offerings[0].price for it in cat}
    worst = sum(max(price[t] for t in c["instance_type_options"]) for c in a.replacements)
    cost = 0.80
    assert worst <= cost - max(REPACK_MIN_FRACTION * cost, REPACK_MIN_DOLLARS) + 1e-9
    assert all("s3-4x" not in c["instance_type_options"] for c in a.replacements)
    assert all("s2-4x" in c["instance_type_options"] for c in a.replacements)


def test_on_demand_to_spot_repack_is_pinned_to_spot() -> None:
    nodes, pods = fragmented()
    r = run(nodes, pods, pools=[pool("default", Requirement.new(CT, "In", ["on-demand", "spot"]))])
    repacks = [a for a in r.actions if a.method == "repack"]
    for a in repacks:
        assert all(c["capacity_type"] == "spot" for c in a.replacements)
        assert "pinned to spot" in a.why


def test_cli_flag_reaches_the_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    seen: list[bool] = []
    real = disruption_cli.consolidate

    def spy(*args: Any, **kw: Any) -> Any:
        seen.append(kw["repack"])
        return real(*args, **kw)

    monkeypatch.setattr(disruption_cli, "consolidate", spy)
    f = tmp_path / "pool.yaml"
    f.write_text(
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\nspec:\n  template:\n    spec:\n"
        "      requirements: []\n"
    )
    out = io.StringIO()
    assert disruption_cli.main([str(f), "--no-repack"], stdout=out, stderr=io.StringIO()) == 0
    assert disruption_cli.main([str(f)], stdout=out, stderr=io.StringIO()) == 0
    assert seen == [False, True]
