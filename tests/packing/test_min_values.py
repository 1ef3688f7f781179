"""minValues on NodePool requirements (issue 16 item 6): Strict keeps the minimum on every NodeClaim's
instance_type_options (after the 60-option cut too) or leaves the pods unschedulable with a min_values
Reason; BestEffort relaxes it and says so (min_values_relaxed)."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest

from packing.disruption.cli import main as consolidate_main
from packing.instancetype import InstanceType
from packing.plan_cli import main as plan_main
from packing.plan_output import nodeclaim_json
from packing.requirements import MinValuesPolicy, Requirement
from packing.resources import Resources
from packing.scheduling.reasons import ReasonKind
from packing.scheduling.scheduler import Scheduler
from packing.scheduling.solve import MAX_OPTIONS
from tests.engine_builders import IT, ZONE, instance_type, pod, pool

FAMILY = "karpenter.k8s.aws/instance-family"


def minimum(key: str, op: str, n: int, *values: str) -> Requirement:
    return dataclasses.replace(Requirement.new(key, op, values), min_values=n)


def one_zone(name: str, cpu: int, mem_gib: int, price: float, zones: tuple[str, ...] = ("us-east-1a",)) -> InstanceType:
    return instance_type(name, cpu, mem_gib, price, zones=zones, spot_factor=None, overhead=Resources())


def two_types() -> list[InstanceType]:
    # one small type, and one four times its size that costs less than two small ones
    return [one_zone("small-1x", 1, 2, 0.10), one_zone("big-4x", 4, 8, 0.15)]


def distinct(types: list[str], catalog: list[InstanceType], key: str) -> set[str]:
    by_name = {it.name: it for it in catalog}
    out: set[str] = set()
    for t in types:
        it = by_name[t]
        out.add(t if key == IT else it.labels[key])
    return out


def test_strict_gives_each_claim_enough_instance_types() -> None:
    cat = two_types()
    p = pool("default", minimum(IT, "In", 2, "small-1x", "big-4x"))
    res = Scheduler([p], cat).solve([pod("a", "900m", "1Gi"), pod("b", "900m", "1Gi")])
    assert not res.unschedulable
    # one big-4x would hold both pods, but its claim would then have one option: each pod gets a claim
    assert len(res.nodeclaims) == 2
    for c in res.nodeclaims:
        assert set(c.instance_type_options) == {"small-1x", "big-4x"}
        assert c.min_values_relaxed is False
        assert nodeclaim_json(c)["min_values_relaxed"] is False


def test_without_min_values_the_same_pods_share_one_claim() -> None:
    res = Scheduler([pool("default", Requirement.new(IT, "In", ["small-1x", "big-4x"]))], two_types()).solve(
        [pod("a", "900m", "1Gi"), pod("b", "900m", "1Gi")]
    )
    assert [c.instance_type for c in res.nodeclaims] == ["big-4x"]


def test_strict_unschedulable_reason_names_key_minimum_and_what_remained() -> None:
    p = pool("default", minimum(IT, "In", 3, "small-1x", "big-4x", "huge-8x"))
    res = Scheduler([p], two_types()).solve([pod("a", "900m", "1Gi")])
    assert not res.nodeclaims
    (why,) = res.unschedulable_reasons["default/a"]
    assert why.kind == ReasonKind.MIN_VALUES and why.nodepool == "default"
    assert why.detail == {"key": IT, "min_values": 3, "remaining": 2, "values": ("big-4x", "small-1x")}
    assert IT in why.text and "3" in why.text and "big-4x" in why.text


def test_strict_falls_back_to_a_pool_without_min_values() -> None:
    strict = pool("first", minimum(IT, "In", 3, "small-1x", "big-4x", "huge-8x"), weight=100)
    res = Scheduler([strict, pool("second")], two_types()).solve([pod("a", "900m", "1Gi")])
    assert [c.nodepool for c in res.nodeclaims] == ["second"]


def test_best_effort_relaxes_and_says_so() -> None:
    p = pool("default", minimum(IT, "In", 3, "small-1x", "big-4x", "huge-8x"), weight=100)
    res = Scheduler([p, pool("other")], two_types(), min_values_policy=MinValuesPolicy.BEST_EFFORT).solve(
        [pod("a", "900m", "1Gi")]
    )
    (c,) = res.nodeclaims
    assert c.nodepool == "default" and c.min_values_relaxed is True
    assert nodeclaim_json(c)["min_values_relaxed"] is True


def test_best_effort_not_relaxed_when_the_minimum_holds() -> None:
    p = pool("default", minimum(IT, "In", 2, "small-1x", "big-4x"))
    res = Scheduler([p], two_types(), min_values_policy="BestEffort").solve([pod("a", "900m", "1Gi")])  # type: ignore[arg-type]
    assert [c.min_values_relaxed for c in res.nodeclaims] == [False]


def test_zone_min_values_count_offered_zones() -> None:
    cat = [one_zone("x-2x", 2, 4, 0.1, ("z1",))]
    res = Scheduler([pool("default", minimum(ZONE, "In", 2, "z1", "z2"))], cat).solve([pod("a")])
    (why,) = res.unschedulable_reasons["default/a"]
    assert why.kind == ReasonKind.MIN_VALUES and why.detail["key"] == ZONE and why.detail["values"] == ("z1",)
    cat2 = [one_zone("x-2x", 2, 4, 0.1, ("z1", "z2"))]
    res2 = Scheduler([pool("default", minimum(ZONE, "In", 2, "z1", "z2"))], cat2).solve([pod("a")])
    assert len(res2.nodeclaims) == 1 and not res2.unschedulable


def test_truncation_keeps_families_when_all_cheap_types_share_one() -> None:
    # 70 cheap types of family a, then one of family b and one of c, dearer than all of them
    cat = [one_zone(f"a-{i:02d}x", 2, 4, round(0.01 + 0.001 * i, 4)) for i in range(70)]
    cat += [one_zone("b-2x", 2, 4, 0.5), one_zone("c-2x", 2, 4, 0.6)]
    res = Scheduler([pool("default", minimum(FAMILY, "Exists", 3))], cat).solve([pod("p")])
    (c,) = res.nodeclaims
    opts = c.instance_type_options
    assert len(opts) == MAX_OPTIONS and opts[0] == "a-00x"
    assert "b-2x" in opts and "c-2x" in opts  # without them the 60 cheapest would be of family a alone
    assert distinct(opts, cat, FAMILY) == {"a", "b", "c"}


def two_keys_catalog() -> list[InstanceType]:
    """40 types of distinct families sharing one generation, and 40 of distinct generations sharing one family:
    minValues 40 on both keys needs 78 types, more than MAX_OPTIONS."""
    cat = [instance_type(f"f{i:02d}-2x", 2, 4, round(0.05 + 0.001 * i, 4), zones=("us-east-1a",), spot_factor=None,
                         labels={GEN: "g"}) for i in range(40)]  # fmt: skip
    cat += [instance_type(f"z-{i:02d}x", 2, 4, round(0.10 + 0.001 * i, 4), zones=("us-east-1a",), spot_factor=None,
                          labels={GEN: f"g{i:02d}"}) for i in range(40)]  # fmt: skip
    return cat


GEN = "example.com/generation"


def test_strict_refuses_minimums_that_need_more_than_max_options_types() -> None:
    p = pool("default", minimum(FAMILY, "Exists", 40), minimum(GEN, "Exists", 40))
    res = Scheduler([p], two_keys_catalog()).solve([pod("a", "500m", "1Gi")])
    assert res.nodeclaims == []
    (why,) = res.unschedulable_reasons["default/a"]
    assert why.kind == ReasonKind.MIN_VALUES and why.nodepool == "default"
    assert why.detail["min_values"] == 40 and why.detail["remaining"] < 40
    # BestEffort launches it, relaxed; and one minimum alone fits in the cut
    res = Scheduler([p], two_keys_catalog(), min_values_policy=MinValuesPolicy.BEST_EFFORT).solve([pod("a", "500m", "1Gi")])
    (c,) = res.nodeclaims
    assert c.min_values_relaxed is True and len(c.instance_type_options) == MAX_OPTIONS
    one = pool("default", minimum(FAMILY, "Exists", 40), minimum(GEN, "Exists", 15))
    res = Scheduler([one], two_keys_catalog()).solve([pod("a", "500m", "1Gi")])
    (c,) = res.nodeclaims
    assert c.min_values_relaxed is False and not res.unschedulable
    assert len(distinct(c.instance_type_options, two_keys_catalog(), FAMILY)) >= 40


def test_min_values_on_a_pod_requirement_is_the_pools() -> None:
    # the pool's requirement is intersected with the pod's: the larger minimum of repeated keys applies
    p = pool("default", minimum(IT, "Exists", 1), minimum(IT, "In", 2, "small-1x", "big-4x"))
    res = Scheduler([p], two_types()).solve([pod("a", "900m", "1Gi"), pod("b", "900m", "1Gi")])
    assert len(res.nodeclaims) == 2


# ---------------------------------------------------------------- the CLI

POOL_YAML = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: default}}
spec:
  template:
    spec:
      requirements:
      - {{key: node.kubernetes.io/instance-type, operator: In, values: [t-1, t-2, t-3], minValues: {mv}}}
"""

TYPES_YAML = """
apiVersion: loadmaster.dev/v1alpha1
kind: InstanceType
metadata: {name: t-1}
spec:
  capacity: {cpu: "4", memory: 8Gi, pods: "58"}
  offerings: [{zone: us-east-1a, capacityType: on-demand, price: 0.1}]
---
apiVersion: loadmaster.dev/v1alpha1
kind: InstanceType
metadata: {name: t-2}
spec:
  capacity: {cpu: "4", memory: 8Gi, pods: "58"}
  offerings: [{zone: us-east-1a, capacityType: on-demand, price: 0.2}]
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  containers: [{name: c, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"""


def run_cli(tmp_path: Path, mv: str, *args: str, main=plan_main) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    f = tmp_path / "in.yaml"
    f.write_text(POOL_YAML.format(mv=mv) + "---" + TYPES_YAML)
    out, err = io.StringIO(), io.StringIO()
    code = main([str(f), *args], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_plan_strict_by_default_and_best_effort_by_flag(tmp_path: Path) -> None:
    code, out, _ = run_cli(tmp_path, "3")
    doc = json.loads(out)
    assert code == 0 and doc["nodeclaims"] == []
    (u,) = doc["unschedulable"]
    assert "minValues 3 on node.kubernetes.io/instance-type" in u["reasons"][0]["reason"]
    code, out, _ = run_cli(tmp_path, "3", "--min-values-policy", "BestEffort")
    (c,) = json.loads(out)["nodeclaims"]
    assert code == 0 and c["min_values_relaxed"] is True and c["instance_type_options"] == ["t-1", "t-2"]
    code, out, _ = run_cli(tmp_path, "2", "--min-values-policy", "Strict")
    (c,) = json.loads(out)["nodeclaims"]
    assert code == 0 and c["min_values_relaxed"] is False


def test_bad_policy_exits_2(tmp_path: Path) -> None:
    code, out, err = run_cli(tmp_path, "2", "--min-values-policy", "Sometimes")
    assert code == 2 and out == "" and "--min-values-policy" in err and len(err.strip().splitlines()) == 1


def test_consolidate_takes_the_flag(tmp_path: Path) -> None:
    code, out, err = run_cli(tmp_path, "3", "--min-values-policy", "BestEffort", main=consolidate_main)
    assert code == 0, err
    assert "actions" in json.loads(out)


@pytest.mark.parametrize(
    ("mv", "expected"),
    [
        ("0", "minValues: must be at least 1"),
        ("51", "minValues: must be at most 50"),
        ("many", "minValues: must be an integer"),
        ("true", "minValues: must be an integer"),
        ("2.5", "minValues: must be an integer"),
        ("[2]", "minValues: must be an integer"),
        ("4", "minValues: minValues 4 needs at least 4 values, 3 given"),
    ],
)
def test_malformed_min_values_exits_2_naming_file_document_and_field(tmp_path: Path, mv: str, expected: str) -> None:
    code, out, err = run_cli(tmp_path, mv)
    assert code == 2 and out == ""
    assert "in.yaml" in err and "document 1 (NodePool default)" in err
    assert f"spec.template.spec.requirements[0].{expected}" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_min_values_as_a_whole_float_is_read(tmp_path: Path) -> None:
    code, out, _ = run_cli(tmp_path, "2.0")
    assert code == 0 and len(json.loads(out)["nodeclaims"]) == 1


def test_min_values_kept_by_the_cost_packer_leave_the_plan_as_it_was() -> None:
    # a family minimum that every bin's types meet anyway: the bulk plan stands, claim for claim
    from tests.engine_builders import catalog

    pods = [pod(f"w{i}", "700m", "1500Mi") for i in range(40)]
    plain = Scheduler([pool("default")], catalog()).solve(pods)
    kept = Scheduler([pool("default", minimum(FAMILY, "Exists", 2))], catalog()).solve(pods)
    assert [(c.instance_type, len(c.pods)) for c in kept.nodeclaims] == [
        (c.instance_type, len(c.pods)) for c in plain.nodeclaims
    ]
    assert kept.cost_per_hour == plain.cost_per_hour
    for c in kept.nodeclaims:
        assert len(distinct(c.instance_type_options, catalog(), FAMILY)) >= 2 and not c.min_values_relaxed


def test_bulk_claims_that_miss_the_minimum_are_replanned_pod_by_pod() -> None:
    # the cost packer would put all four pods on one big-4x (cheapest), which leaves one instance type
    p = pool("default", minimum(IT, "In", 2, "small-1x", "big-4x"))
    res = Scheduler([p], two_types()).solve([pod(f"p{i}", "900m", "1Gi") for i in range(4)])
    assert not res.unschedulable and len(res.nodeclaims) == 4
    assert all(set(c.instance_type_options) == {"small-1x", "big-4x"} for c in res.nodeclaims)
