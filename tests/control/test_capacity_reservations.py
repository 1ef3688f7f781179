"""Capacity reservations in the loops (console.control.reservations) on the simulated cloud: the sync into the
EC2NodeClass's status, the reserved offerings of the loops' catalog, a reserved launch into a selected reservation
with Karpenter's labels, and Capacity Block nodes drained and terminated 40 minutes before the block ends."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.template import Context, Template
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from console.access import VIEWER
from console.backends.base import CapacityReservation
from console.control import launch
from console.control.disruption import disrupt_run
from console.control.lifecycle import lifecycle_run
from console.control.models import CapacityReservationStatus, DisruptionAction
from console.control.reservations import (
    CAPACITY_BLOCK_ENDING,
    LABEL_RESERVATION_ID,
    LABEL_RESERVATION_INTERRUPTIBLE,
    LABEL_RESERVATION_TYPE,
    capacity_blocks_run,
    reservations_sync,
    reserved_offerings,
)
from console.fleet.models import Decision, EC2NodeClass, NodeClaim, NodePool
from console.simulation.models import SimInstance
from console.simulation.reservations import DEMO_RESERVATIONS, SimReservation
from packing.instancetype import Reservation, ReservationType
from tests.engine_builders import instance_type, pod
from tests.simulation.conftest import advance, loop_world
from tests.users import make_user

ODCR, BLOCK = DEMO_RESERVATIONS
DEMO_TERMS = [{"tags": {"karpenter.sh/discovery": "demo"}}]
RESERVED_POOL = {"name": "reserved", "node_class_name": "default",
                 "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved"]}]}


@pytest.fixture
def world(db: Any, settings: Any) -> Any:
    clock, config, cluster, cloud = loop_world(settings, RESERVED_POOL)
    EC2NodeClass.objects.filter(name="default").update(capacity_reservation_selector_terms=DEMO_TERMS)
    return clock, config, cluster, cloud


def _claim(itype: str, zone: str, now: datetime, **labels: str) -> NodeClaim:
    return NodeClaim.objects.create(name=f"reserved-{itype.replace('.', '-')}-{zone[-1]}", nodepool=NodePool.objects.get(),
                                    nodepool_name="reserved", instance_type=itype, instance_type_options=[itype],
                                    capacity_type="reserved", zone=zone, labels=dict(labels), created_at=now)


def _row(rid: str, **over: Any) -> CapacityReservationStatus:
    values: dict[str, Any] = {"nodeclass_name": "default", "reservation_id": rid, "instance_type": "m5.xlarge",
                              "zone": "us-east-1a", "available": 2, "total": 3, "owner_id": "111122223333",
                              "instance_match_criteria": "targeted", "synced_at": datetime(2026, 1, 5, tzinfo=UTC)}
    values.update(over)
    return CapacityReservationStatus(**values)


# --- sync ------------------------------------------------------------------------------------------------

def test_sync_stores_the_nodeclass_status_and_keeps_it_when_aws_fails(world: Any) -> None:
    clock, _, _, cloud = world
    outcome = reservations_sync(cloud=cloud, now=clock())
    assert outcome.resolved == {"default": [BLOCK.id, ODCR.id]}
    rows = {r.reservation_id: r for r in CapacityReservationStatus.objects.all()}
    assert (rows[ODCR.id].instance_type, rows[ODCR.id].zone, rows[ODCR.id].available, rows[ODCR.id].total,
            rows[ODCR.id].type) == ("m5.xlarge", "us-east-1a", 2, 2, "default")
    assert rows[BLOCK.id].type == "capacity-block" and rows[BLOCK.id].ends == datetime(2026, 1, 6, tzinfo=UTC)

    class Failing:
        def capacity_reservations(self, terms: Any) -> list[CapacityReservation]:
            raise RuntimeError("UnauthorizedOperation: ec2:DescribeCapacityReservations")

    outcome = reservations_sync(cloud=Failing(), now=clock())      # type: ignore[arg-type]
    assert "UnauthorizedOperation" in outcome.failed["default"]
    assert CapacityReservationStatus.objects.count() == 2          # the last good status stays

    EC2NodeClass.objects.filter(name="default").update(capacity_reservation_selector_terms=[])
    reservations_sync(cloud=cloud, now=clock())
    assert not CapacityReservationStatus.objects.exists()


def test_nodeclass_page_lists_the_resolved_reservations(world: Any) -> None:
    clock, _, _, cloud = world
    reservations_sync(cloud=cloud, now=clock())
    viewer_client = Client()
    viewer_client.force_login(make_user("victor", VIEWER))
    html = viewer_client.get("/nodeclasses/default/").content.decode()
    section = html[html.index('id="nodeclass-reservations"'):]
    assert f"<code>{ODCR.id}</code>" in section and "<code>m5.xlarge</code>" in section and "2 / 2" in section
    assert f"<code>{BLOCK.id}</code>" in section and "capacity-block" in section and "2026-01-06 00:00" in section


# --- the catalog -----------------------------------------------------------------------------------------

def test_reserved_offerings_are_karpenters() -> None:
    now = datetime(2026, 1, 5, 12, tzinfo=UTC)
    m5 = instance_type("m5.xlarge", 4, 16, 0.192, zones=["us-east-1a", "us-east-1b"])
    rows = [_row("cr-a"), _row("cr-a", nodeclass_name="other"),              # two NodeClasses, one offering
            _row("cr-full", available=1),
            _row("cr-blk", type="capacity-block", zone="us-east-1b", ends=now + timedelta(minutes=39)),
            _row("cr-later", type="capacity-block", starts=now + timedelta(hours=1), ends=now + timedelta(hours=5)),
            _row("cr-unknown-type", instance_type="x9.huge")]
    got = reserved_offerings([m5], rows, now=now, launched={"cr-full": 1})
    reserved = {o.reservation.id: o for o in got[0].offerings if o.reservation is not None}
    assert len(got[0].offerings) == len(m5.offerings) + 4
    a = reserved["cr-a"]
    assert (a.zone, a.capacity_type, a.available, a.price_source) == ("us-east-1a", "reserved", True, "reservation cr-a")
    assert a.price == pytest.approx(0.192 / 10_000_000)
    assert a.reservation == Reservation(id="cr-a", available=2, capacity=3, type=ReservationType.DEFAULT,
                                        owner_id="111122223333", node_classes=frozenset({"default", "other"}))
    assert not reserved["cr-full"].available and reserved["cr-full"].reservation.available == 0   # type: ignore[union-attr]
    assert not reserved["cr-blk"].available            # inside the 40 minutes before its end
    assert reserved["cr-blk"].reservation.type is ReservationType.CAPACITY_BLOCK    # type: ignore[union-attr]
    assert not reserved["cr-later"].available          # not started yet


def test_only_the_pools_of_the_selecting_nodeclass_are_offered_a_reservation() -> None:
    # Karpenter resolves capacityReservationSelectorTerms per EC2NodeClass: a pool of another class never sees it
    from packing.api import NodePool as EnginePool
    from packing.api import Requirement, Requirements, Scheduler
    now = datetime(2026, 1, 5, 12, tzinfo=UTC)
    m5 = instance_type("m5.xlarge", 4, 16, 0.192, zones=["us-east-1a"])
    catalog = reserved_offerings([m5], [_row("cr-a")], now=now)
    reserved = Requirements([Requirement.new("karpenter.sh/capacity-type", "In", ["reserved", "on-demand"])])
    pods = [pod("p", "1", "1Gi")]
    for node_class, on_it in (("default", True), ("gpu", False)):
        pools = [EnginePool("p", reserved, node_class=node_class)]
        (claim,) = Scheduler(pools, catalog, []).solve(pods).nodeclaims
        assert (claim.reservation_id == "cr-a") is on_it, node_class


def test_loops_catalog_carries_the_synced_reservations(world: Any) -> None:
    clock, _, _, cloud = world
    reservations_sync(cloud=cloud, now=clock())
    catalog = launch.engine_catalog(nodeclasses=list(EC2NodeClass.objects.all()), pools=list(NodePool.objects.all()),
                                    now=clock())
    by_name = {t.name: t for t in catalog}
    assert [(o.zone, o.reservation.id) for o in by_name["m5.xlarge"].offerings if o.reservation] == [
        ("us-east-1a", ODCR.id)]
    assert [o.reservation.id for o in by_name["p5.48xlarge"].offerings if o.reservation] == [BLOCK.id]


# --- launching -------------------------------------------------------------------------------------------

def test_a_reserved_claim_launches_into_its_reservation_with_karpenters_labels(world: Any) -> None:
    clock, config, _, cloud = world
    reservations_sync(cloud=cloud, now=clock())
    catalog = launch.engine_catalog(nodeclasses=list(EC2NodeClass.objects.all()), pools=list(NodePool.objects.all()),
                                    now=clock())
    claim = _claim("m5.xlarge", "us-east-1a", clock())
    assert launch.nodeclaim_launch(claim=claim, cloud=cloud, catalog=catalog, now=clock()) == "launched"
    claim.refresh_from_db()
    assert claim.capacity_type == "reserved"
    assert {k: claim.labels[k] for k in ("karpenter.sh/capacity-type", LABEL_RESERVATION_ID, LABEL_RESERVATION_TYPE,
                                         LABEL_RESERVATION_INTERRUPTIBLE)} == {
        "karpenter.sh/capacity-type": "reserved", LABEL_RESERVATION_ID: ODCR.id, LABEL_RESERVATION_TYPE: "default",
        LABEL_RESERVATION_INTERRUPTIBLE: "false"}
    row = SimInstance.objects.get(instance_id=claim.instance_id)
    assert row.capacity_type == "reserved" and row.labels[LABEL_RESERVATION_ID] == ODCR.id
    decision = Decision.objects.get(kind=Decision.LAUNCH, nodes=[claim.name])
    assert decision.details["reservation_id"] == ODCR.id
    # the launch counts against the reservation until the next sync reports it
    catalog = launch.engine_catalog(nodeclasses=list(EC2NodeClass.objects.all()), pools=list(NodePool.objects.all()),
                                    now=clock())
    m5 = next(t for t in catalog if t.name == "m5.xlarge")
    assert [o.reservation.available for o in m5.offerings if o.reservation] == [1]
    advance(clock, config, 5)
    reservations_sync(cloud=cloud, now=clock())
    assert CapacityReservationStatus.objects.get(reservation_id=ODCR.id).available == 1


def test_a_reservation_the_nodeclass_does_not_select_is_never_launched_into(world: Any) -> None:
    clock, _, _, cloud = world
    reservations_sync(cloud=cloud, now=clock())
    catalog = launch.engine_catalog(nodeclasses=list(EC2NodeClass.objects.all()), pools=list(NodePool.objects.all()),
                                    now=clock())
    # another NodeClass's status selected it: the default NodeClass's claim must not take it
    CapacityReservationStatus.objects.filter(reservation_id=ODCR.id).update(nodeclass_name="other")
    claim = _claim("m5.xlarge", "us-east-1a", clock())
    assert launch.nodeclaim_launch(claim=claim, cloud=cloud, catalog=catalog, now=clock()) == "failed"
    assert not SimInstance.objects.exists()


def test_metrics_count_reserved_nodes_on_their_own(world: Any) -> None:
    from console.control.metrics import metrics_record
    from console.telemetry.models import MetricSample
    clock, config, cluster, cloud = world
    reservations_sync(cloud=cloud, now=clock())
    catalog = launch.engine_catalog(nodeclasses=list(EC2NodeClass.objects.all()), pools=list(NodePool.objects.all()),
                                    now=clock())
    claim = _claim("m5.xlarge", "us-east-1a", clock())
    assert launch.nodeclaim_launch(claim=claim, cloud=cloud, catalog=catalog, now=clock()) == "launched"
    for _ in range(6):
        advance(clock, config, 10)
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    metrics_record(cluster=cluster, now=clock())
    total = MetricSample.objects.get(nodepool="")
    assert (total.nodes, total.reserved_nodes, total.spot_nodes) == (1, 1, 0)


def test_a_full_reservation_refuses_the_simulated_launch(world: Any) -> None:
    clock, _, _, _ = world
    from console.simulation.cloud import SimulatedCloud
    one = replace(ODCR, total=0)
    cloud = SimulatedCloud(world[1], clock=clock, reservations=[one, BLOCK])
    reservations_sync(cloud=cloud, now=clock())
    CapacityReservationStatus.objects.filter(reservation_id=ODCR.id).update(available=1)  # a stale count
    catalog = launch.engine_catalog(nodeclasses=list(EC2NodeClass.objects.all()), pools=list(NodePool.objects.all()),
                                    now=clock())
    claim = _claim("m5.xlarge", "us-east-1a", clock())
    assert launch.nodeclaim_launch(claim=claim, cloud=cloud, catalog=catalog, now=clock()) == "failed"
    assert not SimInstance.objects.exists()


def test_simulated_terms_select_by_id_tags_owner_and_match_criteria(world: Any) -> None:
    clock, _, _, cloud = world
    assert [r.id for r in cloud.capacity_reservations([{"id": ODCR.id}])] == [ODCR.id]
    assert cloud.capacity_reservations([{"tags": {"karpenter.sh/discovery": "prod"}}]) == []
    assert cloud.capacity_reservations([{"tags": {"karpenter.sh/discovery": "*"}, "ownerID": "999999999999"}]) == []
    assert [r.id for r in cloud.capacity_reservations([{"instanceMatchCriteria": "targeted"}])] == [BLOCK.id, ODCR.id]
    assert cloud.capacity_reservations([{"instanceMatchCriteria": "open"}]) == []
    custom = SimReservation("cr-0open", "c5.large", "us-east-1c", 1, instance_match_criteria="open", tags={})
    from console.simulation.cloud import SimulatedCloud
    other = SimulatedCloud(world[1], clock=clock, reservations=[custom])
    assert [r.id for r in other.capacity_reservations([{"instanceMatchCriteria": "open"}])] == ["cr-0open"]


# --- Capacity Blocks -------------------------------------------------------------------------------------

def test_capacity_block_nodes_are_drained_and_terminated_40_minutes_before_the_end(world: Any) -> None:
    clock, config, cluster, cloud = world
    reservations_sync(cloud=cloud, now=clock())
    catalog = launch.engine_catalog(nodeclasses=list(EC2NodeClass.objects.all()), pools=list(NodePool.objects.all()),
                                    now=clock())
    on_block = _claim("p5.48xlarge", "us-east-1b", clock())
    on_odcr = _claim("m5.xlarge", "us-east-1a", clock())
    for claim in (on_block, on_odcr):
        assert launch.nodeclaim_launch(claim=claim, cloud=cloud, catalog=catalog, now=clock()) == "launched"
    for _ in range(6):
        advance(clock, config, 10)
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    on_block.refresh_from_db()
    assert on_block.labels[LABEL_RESERVATION_TYPE] == "capacity-block" and on_block.node_name
    ends = datetime(2026, 1, 6, tzinfo=UTC)

    clock.now = ends - timedelta(minutes=41)                  # 41 minutes left: nothing yet
    reservations_sync(cloud=cloud, now=clock())
    assert capacity_blocks_run(now=clock()) == []
    clock.now = ends - timedelta(minutes=40)
    reservations_sync(cloud=cloud, now=clock())
    # the capacity-block loop owns the block's nodes (Karpenter's expiration controller): the disrupt loop, run
    # first, starts no removal of its own
    disrupt_run(cluster=cluster, cloud=cloud, now=clock())
    assert not DisruptionAction.objects.filter(reason=CAPACITY_BLOCK_ENDING).exists()
    assert capacity_blocks_run(now=clock()) == [on_block.name]
    assert capacity_blocks_run(now=clock()) == []             # once
    decision = Decision.objects.get(kind=Decision.DISRUPTION, nodes=[on_block.name])
    assert decision.details["reason"] == CAPACITY_BLOCK_ENDING and decision.details["reservation_id"] == BLOCK.id
    assert decision.details["ends"] == ends.isoformat() and "2026-01-06 00:00 UTC" in decision.why
    for _ in range(6):
        advance(clock, config, 10)
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    on_block.refresh_from_db()
    on_odcr.refresh_from_db()
    assert on_block.terminated_at is not None and on_block.deletion_reason.startswith(
        f"capacity-block-expiring: capacity block {BLOCK.id}")
    assert on_odcr.terminated_at is None and on_odcr.deletion_requested_at is None
    # the metrics name the reason: one voluntary decision, one disrupted NodeClaim
    from console.dashboards.ledger_metrics import _decisions, _disrupted
    assert sum(n for k, n in _decisions().items() if ("reason", CAPACITY_BLOCK_ENDING) in k) == 1
    assert sum(n for k, n in _disrupted().items() if ("reason", CAPACITY_BLOCK_ENDING) in k) == 1
    # a block that is ending offers nothing to launch into
    catalog = launch.engine_catalog(nodeclasses=list(EC2NodeClass.objects.all()), pools=list(NodePool.objects.all()),
                                    now=clock())
    p5 = next(t for t in catalog if t.name == "p5.48xlarge")
    assert [o.available for o in p5.offerings if o.reservation] == [False]

    # the why-node page's section shows the block's window
    html = Template("{% load reservation_tags %}{% node_capacity_block_window name %}").render(
        Context({"name": on_block.node_name}))
    assert BLOCK.id in html and "2026-01-05 00:00 → 2026-01-06 00:00 UTC" in html


def test_a_block_that_becomes_active_adds_offerings_at_the_next_sync(world: Any) -> None:
    clock, _, _, _ = world
    starts = clock()
    block = CapacityReservation(id="cr-0newblock", instance_type="p5.48xlarge", zone="us-east-1b", available=1,
                                total=1, owner_id="111122223333", instance_match_criteria="targeted",
                                type="capacity-block", starts=starts, ends=starts + timedelta(days=1))

    class Account:
        answer: list[CapacityReservation] = []        # a scheduled block: not "active", so not returned yet

        def capacity_reservations(self, terms: Any) -> list[CapacityReservation]:
            return list(self.answer)

    def p5_reservations() -> list[str]:
        catalog = launch.engine_catalog(nodeclasses=list(EC2NodeClass.objects.all()),
                                        pools=list(NodePool.objects.all()), now=clock())
        p5 = next(t for t in catalog if t.name == "p5.48xlarge")
        return [o.reservation.id for o in p5.offerings if o.reservation and o.available]

    account = Account()
    reservations_sync(cloud=account, now=clock())     # type: ignore[arg-type]
    assert p5_reservations() == []
    account.answer = [block]                            # EC2 made it active
    reservations_sync(cloud=account, now=clock())     # type: ignore[arg-type]
    assert p5_reservations() == ["cr-0newblock"]


@given(available=st.integers(min_value=0, max_value=5), launched=st.integers(min_value=0, max_value=8),
       minutes_left=st.integers(min_value=-5, max_value=120), block=st.booleans(),
       started_ago=st.integers(min_value=-60, max_value=60))
def test_a_reserved_offering_never_offers_more_than_is_left(available: int, launched: int, minutes_left: int,
                                                            block: bool, started_ago: int) -> None:
    now = datetime(2026, 1, 5, 12, tzinfo=UTC)
    row = _row("cr-x", available=available, type="capacity-block" if block else "default",
               starts=now - timedelta(minutes=started_ago), ends=now + timedelta(minutes=minutes_left))
    m5 = instance_type("m5.xlarge", 4, 16, 0.192, zones=["us-east-1a"])
    (offering,) = [o for o in reserved_offerings([m5], [row], now=now, launched={"cr-x": launched})[0].offerings
                   if o.reservation is not None]
    assert offering.reservation is not None and offering.reservation.available == max(0, available - launched)
    ending = block and minutes_left <= 40
    assert offering.available == (available > launched and not ending and started_ago >= 0)


def test_the_what_if_catalog_offers_the_reservations_as_the_loops_do(world: Any) -> None:
    from console.whatif.world import World as WhatIfWorld
    from console.whatif.world import catalog as whatif_catalog

    clock, _, _, cloud = world
    reservations_sync(cloud=cloud, now=clock())
    preview = WhatIfWorld([], list(NodePool.objects.all()), list(EC2NodeClass.objects.all()), set(), clock())
    loops = launch.engine_catalog(nodeclasses=list(EC2NodeClass.objects.all()), pools=list(NodePool.objects.all()),
                                  now=clock())

    def reserved_of(types: Any) -> list[tuple[str, str, bool]]:
        return sorted((t.name, o.reservation.id, o.available) for t in types for o in t.offerings if o.reservation)

    assert reserved_of(whatif_catalog(preview)) == reserved_of(loops) == [
        ("m5.xlarge", ODCR.id, True), ("p5.48xlarge", BLOCK.id, True)]


def test_an_adopted_instance_in_a_reservation_gets_its_labels(world: Any) -> None:
    """A worker died between CreateFleet and saving the instance: the lifecycle loop adopts the tagged instance
    and labels the claim with its reservation, as the launch would have."""
    clock, _, cluster, cloud = world
    from console.backends.base import LaunchOption, LaunchRequest

    reservations_sync(cloud=cloud, now=clock())
    claim = _claim("p5.48xlarge", "us-east-1b", clock())
    NodeClaim.objects.filter(pk=claim.pk).update(launch_started_at=clock())
    cloud.launch(LaunchRequest(nodeclaim=claim.name, nodepool="reserved", cluster="test",
                               nodeclass=EC2NodeClass.objects.get().field_values(),
                               options=[LaunchOption("p5.48xlarge", "us-east-1b", "reserved", 1e-6,
                                                     reservation_id=BLOCK.id, reservation_type="capacity-block")]))
    outcome = lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    assert claim.name in outcome.adopted
    claim.refresh_from_db()
    assert claim.capacity_type == "reserved"
    assert (claim.labels[LABEL_RESERVATION_ID], claim.labels[LABEL_RESERVATION_TYPE]) == (BLOCK.id, "capacity-block")
