"""NodeOverlay (karpenter.sh/v1alpha1): the document parser, the application to a catalog (price, priceAdjustment,
capacity, weight order and conflicts as Karpenter resolves them) and the plan CLI that applies it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from packing.fields import FieldError
from packing.instancetype import Offering, Reservation
from packing.overlay import NodeOverlay, adjusted_price, apply_overlays, ordered, resolve_overlays
from packing.overlaydocs import read_overlay
from packing.plan_cli import main
from packing.requirements import Requirements
from packing.resources import Resources
from tests.engine_builders import catalog, instance_type, pool, req, solve
from tests.engine_builders import pod as mkpod


def overlay(name: str, spec: dict[str, object]) -> NodeOverlay:
    return read_overlay({"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay", "metadata": {"name": name},
                         "spec": spec})


FAMILY = "karpenter.k8s.aws/instance-family"
ON_DEMAND = {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}


def prices(types: list, name: str, capacity_type: str = "on-demand") -> set[float | None]:
    [it] = [t for t in types if t.name == name]
    return {o.price for o in it.offerings if o.capacity_type == capacity_type}


# ---------------------------------------------------------------- price arithmetic
@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"price": "0.5"}, 0.5),
        ({"priceAdjustment": "+0.1"}, 1.1),
        ({"priceAdjustment": "-0.25"}, 0.75),
        ({"priceAdjustment": "-10%"}, 0.9),
        ({"priceAdjustment": "+15%"}, 1.15),
        ({"priceAdjustment": "-100%"}, 0.0),
        ({"priceAdjustment": "-5"}, 0.0),  # never below 0, as Karpenter's AdjustedPrice
    ],
)
def test_adjusted_price(spec: dict[str, object], expected: float) -> None:
    assert adjusted_price(1.0, overlay("o", spec)) == pytest.approx(expected)


def test_unknown_price_stays_unknown_under_an_adjustment_but_a_fixed_price_gives_one() -> None:
    assert adjusted_price(None, overlay("o", {"priceAdjustment": "-10%"})) is None
    assert adjusted_price(None, overlay("o", {"price": "0.3"})) == 0.3


# ---------------------------------------------------------------- selection
def test_requirements_select_offerings_by_type_labels_zone_and_capacity_type() -> None:
    types = catalog()
    ov = overlay("m-od", {"requirements": [{"key": FAMILY, "operator": "In", "values": ["m"]}, ON_DEMAND],
                          "priceAdjustment": "-50%"})
    out = apply_overlays(types, [ov])
    m4 = next(t for t in types if t.name == "m-4x")
    assert prices(out, "m-4x") == {round(m4.offerings[0].price / 2, 9)}
    assert prices(out, "m-4x", "spot") == prices(types, "m-4x", "spot")  # spot not selected
    assert prices(out, "c-4x") == prices(types, "c-4x")  # another family not selected
    od = next(o for o in next(t for t in out if t.name == "m-4x").offerings if o.capacity_type == "on-demand")
    assert od.overlays == ("m-od",) and od.price_source == m4.offerings[0].price_source
    # the catalog passed in is not changed, and an untouched type is the same object
    assert prices(types, "m-4x") == {m4.offerings[0].price}
    assert next(t for t in out if t.name == "c-4x") is next(t for t in types if t.name == "c-4x")


def test_zone_and_instance_type_and_reservation_id_are_selectable() -> None:
    it = instance_type("m-4x", 4, 16, 1.0, zones=("us-east-1a", "us-east-1b"), spot_factor=None)
    reserved = Offering("us-east-1a", "reserved", 0.0, reservation=Reservation("cr-1", 2))
    it = type(it)(it.name, it.capacity, it.overhead, it.labels, (*it.offerings, reserved))
    ov = overlay("a", {"requirements": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]},
                                        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m-4x"]}],
                       "price": "0.7"})
    [out] = apply_overlays([it], [ov])
    assert [(o.zone, o.capacity_type, o.price) for o in out.offerings] == [
        ("us-east-1a", "on-demand", 0.7), ("us-east-1b", "on-demand", 1.0), ("us-east-1a", "reserved", 0.7)]
    rid = overlay("r", {"requirements": [{"key": "karpenter.k8s.aws/capacity-reservation-id", "operator": "In",
                                          "values": ["cr-1"]}], "price": "0.01"})
    [out] = apply_overlays([it], [rid])
    assert [o.price for o in out.offerings] == [1.0, 1.0, 0.01]


def test_capacity_adds_extended_resources_and_hugepages_take_memory() -> None:
    it = instance_type("m-4x", 4, 16, 1.0)
    ov = overlay("fuse", {"capacity": {"smarter-devices/fuse": "1", "hugepages-2Mi": "1Gi"}})
    [out] = apply_overlays([it], [ov])
    assert out.capacity["smarter-devices/fuse"] == 1000
    assert out.allocatable["memory"] == it.allocatable["memory"] - 2**30 * 1000
    assert {o.price for o in out.offerings} == {o.price for o in it.offerings}  # no price change
    assert all(o.overlays == ("fuse",) for o in out.offerings)


# ---------------------------------------------------------------- weight and conflicts
def test_highest_weight_wins_per_offering_and_lower_weights_fill_the_rest() -> None:
    types = catalog()
    base = overlay("base", {"priceAdjustment": "-10%", "capacity": {"example.com/a": "1", "example.com/b": "1"}})
    m = overlay("m", {"weight": 5, "requirements": [{"key": FAMILY, "operator": "In", "values": ["m"]}],
                      "price": "0.01", "capacity": {"example.com/a": "7"}})
    out = {t.name: t for t in apply_overlays(types, [base, m])}
    orig = {t.name: t for t in types}
    assert {o.price for o in out["m-4x"].offerings} == {0.01}
    assert {o.price for o in out["c-4x"].offerings} == {round(o.price * 0.9, 9) for o in orig["c-4x"].offerings}
    # per resource: the heavier overlay's a, the lighter one's b
    assert out["m-4x"].capacity["example.com/a"] == 7000 and out["m-4x"].capacity["example.com/b"] == 1000
    assert out["c-4x"].capacity["example.com/a"] == 1000


def test_order_is_weight_then_name_later_in_the_alphabet_first() -> None:
    a, b, c = overlay("a", {"weight": 3}), overlay("b", {"weight": 3}), overlay("c", {"weight": 9})
    assert [o.name for o in ordered([a, b, c])] == ["c", "b", "a"]


def test_equal_weight_conflict_keeps_the_loser_out_entirely() -> None:
    types = catalog()
    zeta = overlay("zeta", {"requirements": [{"key": FAMILY, "operator": "In", "values": ["m"]}], "price": "0.02"})
    # alpha prices every type: it conflicts with zeta on the m family, so it is applied nowhere (all or nothing)
    alpha = overlay("alpha", {"price": "0.03"})
    result = resolve_overlays(types, [alpha, zeta])
    assert [(c.overlay, c.winner) for c in result.conflicts] == [("alpha", "zeta")]
    out = {t.name: t for t in result.types}
    assert {o.price for o in out["m-4x"].offerings} == {0.02}
    assert prices(result.types, "c-4x") == prices(types, "c-4x")
    assert "alpha" not in result.applied and result.applied["zeta"][0] > 0
    assert "conflicts with zeta" in str(result.conflicts[0])


def test_same_weight_on_different_fields_is_no_conflict() -> None:
    types = catalog()
    price = overlay("p", {"price": "0.02"})
    cap = overlay("q", {"capacity": {"example.com/x": "2"}})
    result = resolve_overlays(types, [price, cap])
    assert not result.conflicts
    assert all(o.price == 0.02 for t in result.types for o in t.offerings)


def test_no_overlays_returns_the_catalog_unchanged() -> None:
    types = catalog()
    out = apply_overlays(types, [])
    assert all(a is b for a, b in zip(out, types, strict=True))


# ---------------------------------------------------------------- the scheduler sees the overlaid catalog
def test_a_discount_changes_what_the_scheduler_launches() -> None:
    types = catalog()
    p = pool("default", *req("karpenter.sh/capacity-type", "In", "on-demand").values())
    pods = [mkpod(f"p{i}", cpu="1", memory="2Gi") for i in range(3)]
    _, before = solve(pods, [p], cat=types)
    [claim] = before.nodeclaims
    assert not claim.overlays
    # make the r family far cheaper: the plan moves onto it and names the overlay
    cheap_r = overlay("r-cheap", {"requirements": [{"key": FAMILY, "operator": "In", "values": ["r"]}],
                                  "priceAdjustment": "-90%"})
    _, after = solve([mkpod(f"p{i}", cpu="1", memory="2Gi") for i in range(3)], [p],
                     cat=apply_overlays(types, [cheap_r]))
    [claim2] = after.nodeclaims
    assert claim2.instance_type.startswith("r-") and claim2.overlays == ["r-cheap"]
    assert claim2.price_per_hour < claim.price_per_hour


def test_capacity_overlay_makes_an_extended_resource_schedulable() -> None:
    types = catalog()
    p = pool("default")
    want = mkpod("fuse", extra={"smarter-devices/fuse": "1"})
    _, before = solve([want], [p], cat=types)
    assert not before.nodeclaims
    ov = overlay("fuse", {"requirements": [{"key": FAMILY, "operator": "In", "values": ["c"]}],
                          "capacity": {"smarter-devices/fuse": "1"}})
    _, after = solve([mkpod("fuse", extra={"smarter-devices/fuse": "1"})], [p],
                     cat=apply_overlays(types, [ov]))
    [claim] = after.nodeclaims
    assert claim.instance_type.startswith("c-") and claim.overlays == ["fuse"]


# ---------------------------------------------------------------- the document
@pytest.mark.parametrize(
    ("spec", "path", "words"),
    [
        ({"requirements": [{"key": FAMILY, "operator": "Near", "values": ["m"]}]}, "spec.requirements[0].operator",
         "unknown operator"),
        ({"requirements": [{"key": FAMILY, "operator": "In"}]}, "spec.requirements[0].values", "at least one value"),
        ({"requirements": [{"key": FAMILY, "operator": "NotIn"}]}, "spec.requirements[0].values", "must have a value"),
        ({"requirements": [{"key": "bad key!", "operator": "Exists"}]}, "spec.requirements[0].key", "qualified"),
        ({"requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["a"]}]},
         "spec.requirements[0].key", "not supported"),
        ({"requirements": [{"key": "x", "operator": "Gt", "values": ["-1"]}]}, "spec.requirements[0].values",
         "positive integer"),
        ({"requirements": [{"key": "x", "operator": "Gt", "values": ["a"]}]}, "spec.requirements[0].values",
         "integer"),
        ({"requirements": [{"key": "x", "operator": "In", "values": ["not a value"]}]},
         "spec.requirements[0].values[0]", "label value"),
        ({"requirements": "x"}, "spec.requirements", "must be a list"),
        ({"price": "0.5", "priceAdjustment": "-10%"}, "spec.priceAdjustment", "cannot set both"),
        ({"priceAdjustment": "10%"}, "spec.priceAdjustment", "signed amount"),
        ({"priceAdjustment": "-120%"}, "spec.priceAdjustment", "signed amount"),
        ({"priceAdjustment": "cheap"}, "spec.priceAdjustment", "signed amount"),
        ({"price": "-1"}, "spec.price", "must be a price"),
        ({"price": "1e3"}, "spec.price", "must be a price"),
        ({"capacity": {"cpu": "1"}}, "spec.capacity.cpu", "invalid resource restricted"),
        ({"capacity": {"x/y": "lots"}}, "spec.capacity.x/y", ""),
        ({"weight": 0}, "spec.weight", "at least 1"),
        ({"weight": 10001}, "spec.weight", "at most 10000"),
        ({"priceAdjustments": ["-10%"]}, "spec.priceAdjustments", "unknown field"),
    ],
)
def test_bad_documents_are_refused_at_the_field(spec: dict[str, object], path: str, words: str) -> None:
    with pytest.raises(FieldError) as e:
        overlay("bad", spec)
    assert e.value.path == path and words in e.value.message


def test_document_reads_every_field() -> None:
    ov = overlay("full", {"weight": 7, "requirements": [ON_DEMAND], "priceAdjustment": "-12.5%",
                          "capacity": {"hugepages-2Mi": "100Mi"}})
    assert ov.weight == 7 and ov.price_adjustment == "-12.5%" and ov.price is None
    assert ov.requirements == Requirements(r for r in req("karpenter.sh/capacity-type", "In", "on-demand").values())
    assert ov.capacity == Resources.parse({"hugepages-2Mi": "100Mi"})
    assert overlay("n", {"price": 0.25}).price == 0.25  # YAML may read the string as a number
    assert overlay("empty", {}).weight == 0


# ---------------------------------------------------------------- the CLIs
CATALOG = """
apiVersion: loadmaster.dev/v1alpha1
kind: InstanceType
metadata: {name: c-4x}
spec:
  capacity: {cpu: "4", memory: 8Gi, pods: "58"}
  labels: {karpenter.k8s.aws/instance-family: c}
  offerings:
  - {zone: us-east-1a, capacityType: on-demand, price: 0.17}
---
apiVersion: loadmaster.dev/v1alpha1
kind: InstanceType
metadata: {name: m-4x}
spec:
  capacity: {cpu: "4", memory: 16Gi, pods: "58"}
  labels: {karpenter.k8s.aws/instance-family: m}
  offerings:
  - {zone: us-east-1a, capacityType: on-demand, price: 0.19}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      requirements: []
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: c
    resources: {requests: {cpu: "1", memory: 1Gi}}
"""

SAVINGS = """
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: m-savings}
spec:
  requirements:
  - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m]}
  priceAdjustment: "-20%"
"""


def run(tmp_path: Path, *docs: str, cmd: str = "plan") -> tuple[int, str, str]:
    files = []
    for i, d in enumerate(docs):
        f = tmp_path / f"in{i}.yaml"
        f.write_text(d)
        files.append(str(f))
    out, err = io.StringIO(), io.StringIO()
    if cmd == "plan":
        code = main(files, stdout=out, stderr=err)
    else:
        from packing.disruption.cli import main as cmain

        code = cmain(files, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_plan_applies_overlays_and_names_them_on_the_nodeclaim(tmp_path: Path) -> None:
    code, out, _ = run(tmp_path, CATALOG)
    assert code == 0
    [nc] = json.loads(out)["nodeclaims"]
    assert nc["instance_type"] == "c-4x" and nc["overlays"] == []
    code, out, _ = run(tmp_path, CATALOG, SAVINGS)
    assert code == 0
    [nc] = json.loads(out)["nodeclaims"]
    assert nc["instance_type"] == "m-4x" and nc["overlays"] == ["m-savings"]
    assert nc["price_per_hour"] == pytest.approx(0.152)


def test_plan_refuses_a_bad_overlay_naming_file_document_and_field(tmp_path: Path) -> None:
    bad = SAVINGS.replace('"-20%"', '"20%"')
    code, out, err = run(tmp_path, CATALOG, bad)
    assert code == 2 and out == ""
    assert "in1.yaml: document 1 (NodeOverlay m-savings): spec.priceAdjustment: must be a signed amount" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_consolidate_prices_existing_nodes_with_overlays(tmp_path: Path) -> None:
    node = """
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {node.kubernetes.io/instance-type: m-4x, topology.kubernetes.io/zone: us-east-1a,
           karpenter.sh/capacity-type: on-demand, karpenter.sh/nodepool: default, karpenter.sh/initialized: "true"}
status:
  allocatable: {cpu: "4", memory: 16Gi, pods: "58"}
"""
    code, out, err = run(tmp_path, CATALOG.split("---\napiVersion: v1\nkind: Pod")[0], node, SAVINGS,
                         cmd="consolidate")
    assert code == 0, err
    # the empty node is priced at the overlaid $0.19 x 0.8 (list price $0.19)
    assert json.loads(out)["summary"]["cost_per_hour_before"] == pytest.approx(0.152)


def test_the_clis_say_which_overlay_a_conflict_kept_out(tmp_path: Path) -> None:
    rival = SAVINGS.replace("m-savings", "z-fixed").replace('priceAdjustment: "-20%"', 'price: "0.01"')
    code, out, err = run(tmp_path, CATALOG, SAVINGS, rival)
    assert code == 0
    assert err.strip() == "NodeOverlay m-savings not applied: it conflicts with z-fixed (same weight) on the price of m-4x"
    [nc] = json.loads(out)["nodeclaims"]
    assert nc["instance_type"] == "m-4x" and nc["overlays"] == ["z-fixed"] and nc["price_per_hour"] == 0.01
    node_only = CATALOG.split("---\napiVersion: v1\nkind: Pod")[0]
    code, _, err = run(tmp_path, node_only, SAVINGS, rival, cmd="consolidate")
    assert code == 0 and "NodeOverlay m-savings not applied" in err
    code, _, err = run(tmp_path, CATALOG, SAVINGS)
    assert code == 0 and err == ""
