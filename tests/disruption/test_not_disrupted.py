"""NotDisrupted is typed: a closed category behind every text, the rule that blocks (derived from the category),
and the cheapest option behind "no cheaper replacement" — the console reads these fields, never the words."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given, settings

from packing.disruption import (
    BlockedBy,
    Budget,
    Cluster,
    MinSavings,
    NotDisrupted,
    NotDisruptedCategory,
    PodMeta,
    Report,
    consolidate,
)
from packing.disruption.engine import methods
from packing.disruption.formatting import money
from packing.disruption.model import DO_NOT_DISRUPT
from packing.disruption.output import render_json
from packing.disruption.state import Fact, NodeFacts, RunState
from packing.requirements import Requirement
from tests.disruption.test_properties import clusters
from tests.engine_builders import AT, CT, bound_pod, cluster, node, pdb
from tests.engine_builders import disruption_settings as pool_settings
from tests.engine_builders import mixed_capacity_pool as pool
from tests.engine_builders import small_catalog as catalog

Category = NotDisruptedCategory
CAT = {it.name: it for it in catalog()}
M4, M8, C2 = CAT["m-4x"], CAT["m-8x"], CAT["c-2x"]

# what each category's text says (the words stay as they were; the category must match them)
WORDS: dict[NotDisruptedCategory, str] = {
    Category.PDB: r"^pdb \S+ blocks eviction of |is covered by several PDBs",
    Category.DO_NOT_DISRUPT: r"do-not-disrupt",
    Category.BUDGET: r"budget",
    Category.NOT_MANAGED: r"^not managed ",
    Category.NODEPOOL_NOT_FOUND: r"^nodepool \S+ not found in the input$",
    Category.NOT_INITIALIZED: r"^not initialized yet ",
    Category.BEING_DISRUPTED: r"^already being disrupted$",
    Category.LAUNCHED_BY_ACTION: r"^launched by an earlier action",
    Category.PRICE_UNKNOWN: r"^its price is unknown ",
    Category.CONSOLIDATE_AFTER: r"consolidateAfter",
    Category.WHEN_EMPTY: r"\(WhenEmpty\)",
    Category.STATIC_NODEPOOL: r"^nodepool \S+ is static \(spec\.replicas: \d+\)",
    Category.PENDING_POD_BOUND: r"^pending pod \S+ would schedule on it$",
    Category.PODS_DO_NOT_FIT: r"would not fit elsewhere|do not fit in the free room",
    Category.NEEDS_SEVERAL_NODES: r"its pods would need (more than one|\d+) new node",
    Category.NO_LAUNCHABLE_TYPE: r"no nodepool can launch a replacement",
    Category.NO_CHEAPER_REPLACEMENT: r"no cheaper replacement: cheapest fitting option ",
    Category.SPOT_TO_SPOT: r"spot-to-spot replacement ",
    Category.RESERVED_CAPACITY: r"^node \S+ runs on capacity reservation \S+, paid whether used or not: ",
    Category.NO_SAVING: r"no saving: ",
    Category.BELOW_MIN_SAVINGS: r"is below --min-savings ",
    Category.BELOW_SCORE_THRESHOLD: r"^Balanced consolidation, .*: score \d+\.\d\d < threshold 0\.50 ",
    Category.ON_DEMAND_SHARE: r"the on-demand share of \S+ \S+ .* needs \d+ of its \d+ replicas on on-demand nodes; the move would leave \d+ \(now \d+\)$",
    Category.NO_CHEAPER_ARRANGEMENT: r"^no cheaper arrangement of its pods was found$",
    Category.NOT_EVALUATED: r"^not evaluated: the simulation limit was reached$",
}


def check_typed(report: Report) -> None:
    for x in report.not_disrupted:
        assert x.category is not Category.OTHER, x
        assert x.blocked_by == x.category.blocked_by, x
        assert re.search(WORDS[x.category], x.text), x
        assert x.reason == x.text
        assert (x.cheapest_replacement is not None) == (x.category is Category.NO_CHEAPER_REPLACEMENT), x
        assert (x.score is not None) == (x.category is Category.BELOW_SCORE_THRESHOLD), x
        if x.cheapest_replacement is not None:
            c = x.cheapest_replacement
            said = f"cheapest fitting option {c.instance_type} {c.capacity_type} at {money(c.price_per_hour)}"
            assert said in x.text, x


def spared(report: Report) -> dict[str, NotDisrupted]:
    check_typed(report)
    return {x.node: x for x in report.not_disrupted}


@settings(max_examples=60, deadline=None)
@given(clusters(heavy=True))
def test_every_reason_has_the_category_its_words_say(case: tuple[Cluster, Any]) -> None:
    c, at = case
    check_typed(consolidate(c, at))
    check_typed(consolidate(c, at, repack=False, max_solves=3))


def test_every_category_is_described() -> None:
    assert set(WORDS) == set(Category) - {Category.OTHER}
    assert {c.blocked_by for c in Category} == {None, *BlockedBy}


def test_no_cheaper_replacement_carries_the_cheapest_option() -> None:
    p = pool("default", Requirement.new(CT, "In", ["on-demand"]))
    x = spared(consolidate(cluster([node("n1", C2)], [bound_pod("a", "n1", "1500m", "3Gi")], pools=[p]), AT))["n1"]
    assert x.category is Category.NO_CHEAPER_REPLACEMENT and x.blocked_by is None
    assert x.cheapest_replacement is not None
    assert (x.cheapest_replacement.instance_type, x.cheapest_replacement.capacity_type) == ("c-2x", "on-demand")
    assert x.cheapest_replacement.price_per_hour == min(
        o.price for o in C2.offerings if o.capacity_type == "on-demand" and o.price is not None
    )


def test_rules_and_settings_have_their_categories() -> None:
    pods = [bound_pod("web-1", "n1", "1", labels={"app": "web"}), bound_pod("x", "n2", "1"), bound_pod("y", "n3", "1")]
    nodes = [node("n1", M4), node("n2", M4, annotations={DO_NOT_DISRUPT: "true"}), node("n3", M4, pool_name=None)]
    r = spared(consolidate(cluster(nodes, pods, pdbs=[pdb("web", min_available="1", app="web")]), AT))
    assert (r["n1"].category, r["n1"].blocked_by) == (Category.PDB, BlockedBy.PDB)
    assert (r["n2"].category, r["n2"].blocked_by) == (Category.DO_NOT_DISRUPT, BlockedBy.DO_NOT_DISRUPT)
    assert r["n3"].category is Category.NOT_MANAGED
    meta = {"default/x": PodMeta({DO_NOT_DISRUPT: "true"})}
    r = spared(consolidate(cluster([node("n2", M4)], pods[1:2], meta=meta), AT))
    assert (r["n2"].category, r["n2"].text) == (Category.DO_NOT_DISRUPT, "pod default/x has do-not-disrupt")
    never = {"default": pool_settings(after=None)}
    r = spared(consolidate(cluster([node("n1", M4), node("n2", M4)], pods[1:2], pool_settings=never), AT))
    assert {x.category for x in r.values()} <= {Category.CONSOLIDATE_AFTER}


def test_budget_and_min_savings_categories() -> None:
    nodes = [node("n1", M4), node("n2", M4)]
    pods = [bound_pod("a", "n1", "1"), bound_pod("b", "n2", "2")]
    r = spared(consolidate(cluster(nodes, pods), AT, min_savings=MinSavings.parse("$0.5/h")))
    assert Category.BELOW_MIN_SAVINGS in {x.category for x in r.values()}
    zero = {"default": pool_settings(Budget(nodes="0"))}
    r = spared(consolidate(cluster(nodes, pods, pool_settings=zero), AT))
    assert {(x.category, x.blocked_by) for x in r.values()} == {(Category.BUDGET, BlockedBy.BUDGET)}


def test_the_json_keeps_its_keys_and_adds_the_category() -> None:
    pods = [bound_pod("web-1", "n1", "1", labels={"app": "web"})]
    r = consolidate(cluster([node("n1", M4)], pods, pdbs=[pdb("web", min_available="1", app="web")]), AT)
    text = json.dumps(render_json(r)["not_disrupted"])
    saving = r.not_disrupted[0].savings_per_hour
    assert text == json.dumps(
        [
            {
                "node": "n1",
                "reason": "pdb default/web blocks eviction of default/web-1",
                "blocked_by": "pdb",
                "savings_per_hour": saving,
                "category": "pdb",
                "cheapest_replacement": None,
                "score": None,
                "score_threshold": None,
            }
        ]
    )


def test_the_order_of_methods_is_data() -> None:
    run = RunState(cluster([node("n1", M4)], []), AT, None, 100)
    with_repack = [(m.name, m.waits_for_chain, m.chains) for m in methods(run, repack=True)]
    assert with_repack == [
        ("capacity-block", False, False),
        ("emptiness", False, False),
        ("drift", False, False),
        ("expiration", False, False),
        ("multi-node", True, False),
        ("single-node", True, False),
        ("repack", False, True),
        ("multi-node", False, False),
        ("single-node", False, False),
    ]
    assert [m.name for m in methods(run, repack=False)] == [
        "capacity-block", "emptiness", "drift", "expiration", "multi-node", "single-node"
    ]


def test_node_facts_are_forgotten_only_for_the_nodes_named() -> None:
    facts = NodeFacts()
    calls: list[str] = []
    size: Fact[int] = Fact("size")

    def compute(n: str) -> int:
        calls.append(n)
        return len(n)

    assert facts.recall(size, "ab", compute) == 2
    assert facts.recall(size, "ab", compute) == 2 and calls == ["ab"]
    facts.recall(size, "abc", compute)
    facts.forget(["ab"])
    facts.recall(size, "ab", compute)
    facts.recall(size, "abc", compute)
    assert calls == ["ab", "abc", "ab"]
