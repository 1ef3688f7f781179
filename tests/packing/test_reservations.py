"""Capacity reservations in the solve (capacity type `reserved`, Karpenter v1.3+): reserved before spot before
on-demand, never more NodeClaims on a reservation than it has free, claims pinned to it, its labels and plan keys,
and the InstanceType document's reserved offering form."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from packing.fields import InputError
from packing.instancetype import ReservationType
from packing.kubeobjects import Inputs, add_object
from packing.plan_output import render_json
from packing.requirements import Requirement
from packing.scheduling.reservations import RESERVATION_ID_LABEL
from packing.scheduling.scheduler import Scheduler
from packing.scheduling.verify import check_plan
from tests.engine_builders import (
    CT,
    all_capacity_pool,
    catalog,
    existing_node,
    mixed_capacity_pool,
    on_demand_pool,
    pod,
    pool,
    term,
    with_reservation,
)

ENDS = datetime(2026, 12, 3, 18, 0, tzinfo=UTC)


def reserved_catalog(rid: str = "cr-1", available: int = 2, **kw: object) -> list:  # type: ignore[type-arg]
    return [with_reservation(it, rid, available, **kw) if it.name == "m-4x" else it for it in catalog()]  # type: ignore[arg-type]


def plan(pods: list, pools: list, cat: list, existing: list = ()) -> tuple[Scheduler, object]:  # type: ignore[type-arg,assignment]
    s = Scheduler(pools, cat, existing)
    r = s.solve(pods, lower_bound=True)
    assert check_plan(s, pods, r) == []
    return s, r


def on_reservation(r: object, rid: str = "cr-1") -> list:  # type: ignore[type-arg]
    return [c for c in r.nodeclaims if c.reservation_id == rid]  # type: ignore[attr-defined]


def test_reserved_capacity_comes_before_spot_and_is_never_overfilled() -> None:
    pods = [pod(f"p{i}", "500m", "1Gi") for i in range(40)]
    _, r = plan(pods, [all_capacity_pool()], reserved_catalog(available=3))
    held = on_reservation(r)
    assert len(held) == 3  # the reservation first, then the cheapest of the rest (spot)
    assert {c.capacity_type for c in r.nodeclaims if c not in held} == {"spot"}  # type: ignore[attr-defined]
    assert r.scheduled == 40  # type: ignore[attr-defined]


def test_reservation_claim_is_pinned_and_labelled() -> None:
    _, r = plan([pod("a", "3", "6Gi")], [all_capacity_pool()], reserved_catalog(ends=ENDS, block=True))
    c = r.nodeclaims[0]  # type: ignore[attr-defined]
    assert (c.capacity_type, c.instance_type, c.zone) == ("reserved", "m-4x", "us-east-1a")
    assert c.instance_type_options == ["m-4x"]
    assert c.labels[RESERVATION_ID_LABEL] == "cr-1"
    assert c.labels["karpenter.k8s.aws/capacity-reservation-type"] == "capacity-block"
    assert c.labels["karpenter.k8s.aws/capacity-reservation-interruptible"] == "false"
    assert c.labels["karpenter.sh/capacity-type"] == "reserved"
    doc = render_json(r)["nodeclaims"][0]  # type: ignore[arg-type]
    assert doc["reservation_id"] == "cr-1" and doc["reservation_type"] == "capacity-block"
    assert doc["reservation_ends"] == "2026-12-03T18:00:00Z"
    # listed at the offering's price; a reservation is prepaid: one more node on it adds nothing
    assert doc["price_per_hour"] == 0.192 and doc["effective_price_per_hour"] == 0.0


def test_a_pool_without_reserved_capacity_type_never_uses_the_reservation() -> None:
    _, r = plan([pod(f"p{i}", "500m", "1Gi") for i in range(10)], [mixed_capacity_pool()], reserved_catalog())
    assert not on_reservation(r)
    assert all("reservation_id" not in c for c in render_json(r)["nodeclaims"])  # type: ignore[arg-type]


def test_a_reserved_only_pool_leaves_pods_beyond_the_reservation_unschedulable() -> None:
    only = pool("default", Requirement.new(CT, "In", ["reserved"]))
    pods = [pod(f"p{i}", "500m", "1Gi") for i in range(40)]
    _, r = plan(pods, [only], reserved_catalog(available=2))
    assert len(r.nodeclaims) == 2 and len(on_reservation(r)) == 2  # type: ignore[attr-defined]
    assert r.scheduled == sum(len(c.pods) for c in r.nodeclaims)  # type: ignore[attr-defined]
    assert r.unschedulable  # type: ignore[attr-defined]
    for why in r.unschedulable_reasons.values():  # type: ignore[attr-defined]
        assert [(x.kind.value, dict(x.detail)) for x in why] == [("offering", {"reservation": "cr-1"})]


def test_pod_by_pod_claims_keep_the_count_too() -> None:
    # hostname anti-affinity: every pod its own claim, placed pod by pod (not by the bulk packer)
    anti = [term("kubernetes.io/hostname", app="x")]
    pods = [pod(f"p{i}", "500m", "1Gi", labels={"app": "x"}, anti_affinity=anti) for i in range(5)]
    _, r = plan(pods, [all_capacity_pool()], reserved_catalog(available=2))
    assert len(on_reservation(r)) == 2
    assert r.scheduled == 5  # type: ignore[attr-defined]


def test_in_flight_nodeclaims_on_the_reservation_take_its_free_instances() -> None:
    held = existing_node(
        "inflight",
        "1",
        "1Gi",
        kind="NodeClaim",
        ct="reserved",
        labels={RESERVATION_ID_LABEL: "cr-1"},
    )
    running = existing_node("registered", "1", "1Gi", ct="reserved", labels={RESERVATION_ID_LABEL: "cr-1"})
    pods = [pod(f"p{i}", "3", "6Gi") for i in range(4)]
    _, r = plan(pods, [all_capacity_pool()], reserved_catalog(available=2), [held, running])
    # the registered node is in the free count already; the in-flight claim is not
    assert len(on_reservation(r)) == 1


def test_plans_without_reservations_carry_no_new_keys() -> None:
    _, r = plan([pod("a")], [on_demand_pool()], catalog())
    doc = render_json(r)  # type: ignore[arg-type]
    assert "effective_price_per_hour" not in doc["nodeclaims"][0]
    assert "effective_cost_per_hour" not in doc["summary"] and "commitments" not in doc["summary"]


def _instance_type_doc(offering: dict) -> dict:  # type: ignore[type-arg]
    return {
        "apiVersion": "loadmaster.dev/v1alpha1",
        "kind": "InstanceType",
        "metadata": {"name": "m5.large"},
        "spec": {"capacity": {"cpu": "2", "memory": "8Gi"}, "offerings": [offering]},
    }


def test_instance_type_document_reads_the_reserved_offering_form() -> None:
    inp = Inputs()
    add_object(
        _instance_type_doc(
            {
                "zone": "us-east-1a",
                "capacityType": "reserved",
                "price": "0.096",
                "available": True,
                "reservationId": "cr-0abc",
                "reservationCapacity": 3,
                "reservationEnds": "2026-12-04T10:00:00Z",
                "reservationType": "capacity-block",
            }
        ),
        inp,
    )
    o = inp.instance_types[0].offerings[0]
    assert o.capacity_type == "reserved" and o.price == 0.096
    assert o.reservation is not None
    assert (o.reservation.id, o.reservation.available, o.reservation.type) == (
        "cr-0abc",
        3,
        ReservationType.CAPACITY_BLOCK,
    )
    assert o.reservation.ends == datetime(2026, 12, 4, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("offering", "message"),
    [
        ({"zone": "a", "capacityType": "dedicated", "price": 1}, "must be spot, on-demand or reserved"),
        ({"zone": "a", "capacityType": "reserved", "price": 1, "reservationCapacity": 1}, "reservationId: is required"),
        ({"zone": "a", "capacityType": "reserved", "price": 1, "reservationId": "cr-1"}, "reservationCapacity: is required"),
        (
            {"zone": "a", "capacityType": "reserved", "price": 1, "reservationId": "cr-1", "reservationCapacity": -1},
            "reservationCapacity",
        ),
        (
            {
                "zone": "a",
                "capacityType": "reserved",
                "price": 1,
                "reservationId": "cr-1",
                "reservationCapacity": 1,
                "reservationType": "capacity-block",
            },
            "reservationEnds: is required",
        ),
        (
            {
                "zone": "a",
                "capacityType": "reserved",
                "price": 1,
                "reservationId": "cr-1",
                "reservationCapacity": 1,
                "reservationType": "weekly",
            },
            "must be default or capacity-block",
        ),
    ],
)
def test_bad_reserved_offerings_are_refused_at_the_field(offering: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(InputError, match=message) as e:
        add_object(_instance_type_doc(offering), Inputs())
    assert "spec.offerings[0]" in str(e.value)


def test_expiring_capacity_block_offers_no_new_node_when_planning_at_a_time() -> None:
    from packing.planning import plan as run_plan

    inp = Inputs()
    inp.nodepools.append(all_capacity_pool())
    inp.pending.append(pod("a", "3", "6Gi"))
    cat = reserved_catalog(ends=ENDS, block=True)
    assert run_plan(inp, cat, at=ENDS - timedelta(hours=2)).nodeclaims[0].reservation_id == "cr-1"
    inp2 = Inputs()
    inp2.nodepools.append(all_capacity_pool())
    inp2.pending.append(pod("a", "3", "6Gi"))
    late = run_plan(inp2, cat, at=ENDS - timedelta(minutes=39))
    assert late.nodeclaims[0].reservation_id is None


CLUSTER = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [reserved, spot, on-demand]}
      nodeClassRef: {name: default}
---
apiVersion: loadmaster.dev/v1alpha1
kind: InstanceType
metadata: {name: m5.large}
spec:
  capacity: {cpu: "2", memory: 8Gi, pods: "29"}
  offerings:
    - {zone: us-east-1a, capacityType: on-demand, price: "0.096"}
    - {zone: us-east-1a, capacityType: spot, price: "0.035"}
    - {zone: us-east-1a, capacityType: reserved, price: "0.096", reservationId: cr-0abc, reservationCapacity: 1,
       reservationType: capacity-block, reservationEnds: "2026-12-04T10:00:00Z"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, resources: {requests: {cpu: 1500m, memory: 1Gi}}}]
"""


def test_plan_cli_fills_the_reservation_then_spot(tmp_path: object) -> None:
    import io
    import json
    import pathlib

    from packing.plan_cli import main

    f = pathlib.Path(str(tmp_path)) / "c.yaml"
    f.write_text(CLUSTER)
    out, err = io.StringIO(), io.StringIO()
    assert main([str(f), "--output", "json"], stdout=out, stderr=err) == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    got = sorted((c["capacity_type"], c.get("reservation_id")) for c in doc["nodeclaims"])
    assert got == [("reserved", "cr-0abc"), ("spot", None)]
    reserved = next(c for c in doc["nodeclaims"] if c["capacity_type"] == "reserved")
    assert reserved["labels"]["karpenter.k8s.aws/capacity-reservation-type"] == "capacity-block"
    assert reserved["reservation_ends"] == "2026-12-04T10:00:00Z"


def test_a_pool_without_capacity_type_requirement_keeps_off_reservations() -> None:
    # Karpenter launches into reserved capacity only for a pool whose capacity-type requirement names `reserved`
    _, r = plan([pod(f"p{i}", "500m", "1Gi") for i in range(10)], [pool()], reserved_catalog())
    assert not on_reservation(r)
    assert r.scheduled == 10  # type: ignore[attr-defined]


def scoped_catalog(*node_classes: str) -> list:  # type: ignore[type-arg]
    out = []
    for it in reserved_catalog(available=5):
        offs = tuple(
            dataclasses.replace(o, reservation=dataclasses.replace(o.reservation, node_classes=frozenset(node_classes)))
            if o.reservation is not None else o
            for o in it.offerings
        )
        out.append(dataclasses.replace(it, offerings=offs))
    return out


def test_a_reservation_is_offered_only_to_pools_of_the_nodeclasses_that_select_it() -> None:
    pods = [pod(f"p{i}", "500m", "1Gi") for i in range(10)]
    _, r = plan(pods, [all_capacity_pool("gpu", node_class="gpu")], scoped_catalog("default"))
    assert not on_reservation(r)
    _, r = plan(pods, [all_capacity_pool("main", node_class="default")], scoped_catalog("default", "other"))
    assert on_reservation(r)
    # no NodeClass named (a plan file's reservation): any pool that asks for reserved capacity
    _, r = plan(pods, [all_capacity_pool("gpu", node_class="gpu")], scoped_catalog())
    assert on_reservation(r)


def test_a_claim_moved_off_a_full_reservation_keeps_its_pods_requirements() -> None:
    """The amd64 type's reservation is full and the arm64 type's has room: a claim holding a pod that asks amd64
    may go only where its pods may, never to the arm64 reservation. (The property test
    test_a_reservation_serves_only_the_pools_that_may_use_it found bulk packing's claims moved there; this is
    the plain case of the same rule.)"""
    from packing.requirements import Requirement
    from packing.scheduling.scheduler import Scheduler
    from packing.scheduling.verify import check_plan
    from tests.engine_builders import CT, instance_type, pod, pool, with_reservation

    amd = with_reservation(instance_type("a-2x", 2, 8, 0.1, spot_factor=None), "cr-amd", 0)
    arm = with_reservation(instance_type("g-2x", 2, 8, 0.08, spot_factor=None, arch="arm64"), "cr-arm", 1)
    pools = [pool("reserved", Requirement.new(CT, "In", ["reserved"]))]
    pods = [pod("free", "500m", "1Gi"), pod("x86", "500m", "1Gi", node_selector={"kubernetes.io/arch": "amd64"})]
    sched = Scheduler(pools, [amd, arm])
    res = sched.solve(pods)
    assert check_plan(sched, pods, res) == []
    for c in res.nodeclaims:
        if any(p.name == "x86" for p in c.pods):
            assert c.instance_type == "a-2x"
