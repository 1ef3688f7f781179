"""Commitments' marginal pricing (packing.commitmentpricing): Reserved Instances by type and by family with AWS's
normalization factors, Savings Plans at their plan rate until the hourly commitment is used, the existing fleet
first, spot only when cheaper than the marginal price, and the plan's effective prices and summary."""

from __future__ import annotations

from packing.commitmentpricing import NORMALIZATION_FACTORS, CommitmentBook, priced_catalog
from packing.commitments import Commitment, CommitmentKind
from packing.kubeobjects import Inputs
from packing.plan_output import render_json
from packing.planning import plan
from packing.scheduling.results import Results
from tests.engine_builders import (
    catalog,
    existing_node,
    instance_type,
    mixed_capacity_pool,
    on_demand_pool,
    pod,
)

RI = CommitmentKind.RESERVED_INSTANCES
CSP = CommitmentKind.COMPUTE_SAVINGS_PLAN
ISP = CommitmentKind.EC2_INSTANCE_SAVINGS_PLAN


def run(pods: int, commitments: list[Commitment], *, pools: list | None = None, nodes: list | None = None, cat: list | None = None) -> Results:  # type: ignore[type-arg]
    inp = Inputs()
    inp.nodepools.extend(pools or [on_demand_pool()])
    inp.pending.extend(pod(f"p{i}", "500m", "1Gi") for i in range(pods))
    inp.nodes.extend(nodes or [])
    return plan(inp, cat or catalog(), commitments=commitments)


def test_an_unused_reserved_instance_makes_its_type_free_for_as_many_nodes_as_it_counts() -> None:
    r = run(40, [Commitment("ri", RI, instance_type="m-4x", count=2)])
    covered = [c for c in r.nodeclaims if c.covered_by == ["ri"]]
    assert len(covered) == 2 and {c.instance_type for c in covered} == {"m-4x"}
    assert all(c.effective_price_per_hour == 0.0 and c.price_per_hour == 0.192 for c in covered)
    rest = [c for c in r.nodeclaims if not c.covered_by]
    assert all(c.effective_price_per_hour == c.price_per_hour for c in rest)
    assert r.effective_cost_per_hour == round(sum(c.price_per_hour for c in rest), 6)
    (use,) = r.commitments
    assert (use.total, use.used_by_plan, use.left) == (2.0, 2.0, 0.0)


def test_existing_nodes_use_the_commitment_first() -> None:
    busy = [existing_node(f"n{i}", "4", "16Gi", instance_type="m-4x") for i in range(2)]
    r = run(40, [Commitment("ri", RI, instance_type="m-4x", count=2)], nodes=busy)
    assert not any(c.covered_by for c in r.nodeclaims)
    assert r.commitments[0].used_by_existing == 2.0 and r.commitments[0].left == 0.0


def test_without_commitments_the_plan_is_unchanged() -> None:
    a, b = run(40, []), run(40, [])
    assert render_json(a)["nodeclaims"] == render_json(b)["nodeclaims"]
    assert "effective_price_per_hour" not in render_json(a)["nodeclaims"][0]
    assert "commitments" not in render_json(a)["summary"]


def test_spot_wins_only_when_cheaper_than_the_marginal_price() -> None:
    # the RI makes m-4x free: chosen over spot
    r = run(7, [Commitment("ri", RI, instance_type="m-4x", count=1)], pools=[mixed_capacity_pool()])
    assert [(c.instance_type, c.capacity_type, c.covered_by) for c in r.nodeclaims] == [("m-4x", "on-demand", ["ri"])]
    # a Savings Plan at 10% off still leaves on-demand dearer than spot at 60% off: spot is chosen
    sp = Commitment("sp", CSP, hourly_commitment=0.0001, rates={"m": 0.1})
    r = run(7, [sp], pools=[mixed_capacity_pool()])
    assert all(c.capacity_type == "spot" for c in r.nodeclaims)


def test_savings_plan_covers_at_the_plan_rate_until_the_commitment_is_used_then_partly_then_not() -> None:
    # m-4x on-demand 0.192; at 25% off one node uses 0.144 of the commitment
    sp = Commitment("sp", CSP, hourly_commitment=0.2, rates={"m": 0.25})
    cat = [it for it in catalog() if it.name.startswith("m-")]
    r = run(30, [sp], cat=cat)
    covered = [c for c in r.nodeclaims if c.covered_by == ["sp"]]
    assert covered
    used = 0.0
    for c in covered:
        frac = 1.0 - c.effective_price_per_hour / c.price_per_hour  # type: ignore[operator]
        used += frac * c.price_per_hour * 0.75
    assert abs(used - 0.2) < 1e-6  # the whole commitment is used, part of it on a node it covers partly
    assert abs(r.commitments[0].left) < 1e-9
    # a type with no rate is not covered
    r = run(30, [Commitment("sp", CSP, hourly_commitment=5.0, rates={"r": 0.3})], cat=cat)
    assert not any(c.covered_by for c in r.nodeclaims)


def test_size_flexible_reserved_instance_uses_normalization_factors() -> None:
    # a family RI of 2 x m5.xlarge (factor 8) = 16 units: four m5.large (4 each), or two m5.xlarge
    book = CommitmentBook([Commitment("ri", RI, instance_family="m5", instance_type="m5.xlarge", count=2)])
    assert book.pools[0].total == 2 * NORMALIZATION_FACTORS["xlarge"] == 16.0
    assert book.units(book.pools[0].c, "m5.large", {}, "us-east-1a", 0.096) == 4.0
    assert book.units(book.pools[0].c, "c5.large", {}, "us-east-1a", 0.085) is None
    assert book.units(book.pools[0].c, "m5.metal", {}, "us-east-1a", 4.6) is None  # no factor: not covered
    cat = [
        instance_type("m5.large", 2, 8, 0.096, spot_factor=None, labels={"karpenter.k8s.aws/instance-family": "m5"}),
        instance_type("m5.xlarge", 4, 16, 0.192, spot_factor=None, labels={"karpenter.k8s.aws/instance-family": "m5"}),
    ]
    priced = priced_catalog(cat, [Commitment("ri", RI, instance_family="m5", count=6)], [])
    large = [o for o in priced[0].offerings if o.coverage is not None]
    xlarge = [o for o in priced[1].offerings if o.coverage is not None]
    assert large and all(o.price == 0.0 for o in large)  # 6 units hold a large (4) whole
    assert xlarge and all(abs(o.price - 0.192 * (1 - 6 / 8)) < 1e-9 for o in xlarge)  # ... an xlarge (8) in part


def test_zonal_reserved_instance_covers_its_zone_only() -> None:
    ri = Commitment("ri", RI, instance_type="m-4x", zone="us-east-1b", count=5)
    r = run(40, [ri])
    assert {c.zone for c in r.nodeclaims if c.covered_by} == {"us-east-1b"}


def test_reserved_instances_apply_before_savings_plans() -> None:
    book = CommitmentBook(
        [
            Commitment("a-sp", CSP, hourly_commitment=1.0, rates={"m": 0.2}),
            Commitment("b-isp", ISP, hourly_commitment=1.0, rates={"m": 0.3}),
            Commitment("z-ri", RI, instance_type="m-4x", count=1),
        ]
    )
    assert [p.c.name for p in book.pools] == ["z-ri", "b-isp", "a-sp"]


def test_plan_json_shows_effective_prices_and_commitment_use() -> None:
    doc = render_json(run(40, [Commitment("ri", RI, instance_type="m-4x", count=2)]))
    c = doc["nodeclaims"][0]
    assert set(c) >= {"price_per_hour", "effective_price_per_hour", "covered_by"}
    assert doc["summary"]["commitments"] == [
        {
            "name": "ri",
            "type": "ReservedInstances",
            "unit": "instances",
            "total": 2.0,
            "used_by_existing": 0.0,
            "used_by_plan": 2.0,
            "left": 0.0,
        }
    ]
    assert doc["summary"]["effective_cost_per_hour"] < doc["summary"]["cost_per_hour"]
