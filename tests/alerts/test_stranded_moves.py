"""Stranded savings, exactly: the disruption loop records each blocked move (what blocks it, what it
would save) with the time it was first seen; the rule fires once a move has been blocked long enough
and would save enough, names the blocker and the saving, and resolves when the block lifts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from console.alerts import messages, services
from console.alerts.models import AlertEvent, AlertRule, Channel, StrandedMove
from console.control.disruption import disrupt_run
from console.control.lifecycle import lifecycle_run
from console.control.models import DisruptionAction
from console.control.provisioning import provision_run
from console.fleet.models import NodeClaim
from console.simulation.cloud import SimulatedCloud
from console.simulation.cluster import SimulatedCluster
from console.simulation.config import SimulationConfig
from packing.disruption.model import NotDisrupted, Report
from tests.alerts.conftest import SlackDouble
from tests.simulation.conftest import Clock, advance, loop_world, on_demand_pool, pdb, pod

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


# --- the service on hand-made reports ------------------------------------------------------------

def report(*items: NotDisrupted) -> Report:
    return Report(not_disrupted=list(items))


def test_record_creates_keeps_the_clock_updates_and_clears() -> None:
    pools = {"n1": "general", "n2": "general", "n3": "batch"}
    services.stranded_moves_record(report=report(
        NotDisrupted("n1", "pdb default/web blocks eviction of default/web-2", "pdb", 0.25),
        NotDisrupted("n2", "no cheaper arrangement of its pods was found", None, None),      # not blocked
        NotDisrupted("n3", "pod jobs/etl-1 has do-not-disrupt", "do-not-disrupt", None),     # nothing to save
    ), nodepools=pools, now=NOW)
    row = StrandedMove.objects.get()
    assert (row.node, row.nodepool, row.blocked_by, row.savings_per_hour, row.first_seen) == (
        "n1", "general", "pdb", Decimal("0.25"), NOW)

    later = NOW + timedelta(minutes=5)
    services.stranded_moves_record(report=report(
        NotDisrupted("n1", "budget 0 nodes for Underutilized until 2026-12-01T06:00Z", "budget", 0.3),
        NotDisrupted("n3", "pod jobs/etl-1 has do-not-disrupt", "do-not-disrupt", 0.5),
    ), nodepools=pools, now=later)
    n1, n3 = StrandedMove.objects.order_by("node")
    # Still blocked (by something else now): the clock keeps running; the text and saving follow the engine.
    assert (n1.first_seen, n1.last_seen, n1.blocked_by, n1.savings_per_hour) == (NOW, later, "budget", Decimal("0.3"))
    assert n1.reason.startswith("budget 0 nodes")
    assert (n3.first_seen, n3.nodepool) == (later, "batch")

    services.stranded_moves_record(report=report(), nodepools=pools, now=later + timedelta(minutes=5))
    assert not StrandedMove.objects.exists()
    # Blocked again later: a new clock.
    again = later + timedelta(minutes=10)
    services.stranded_moves_record(report=report(NotDisrupted("n1", "pdb default/web blocks eviction", "pdb", 0.25)),
                                   nodepools=pools, now=again)
    assert StrandedMove.objects.get().first_seen == again


# --- the rule ----------------------------------------------------------------------------------

def stranded_rule(channel: Channel, *, per_day: str, hold_minutes: int, nodepool: str = "") -> AlertRule:
    return AlertRule.objects.create(name="stranded", kind=AlertRule.STRANDED, threshold=Decimal(per_day),
                                    window_minutes=hold_minutes, cooldown_minutes=30, nodepool=nodepool,
                                    channel=channel)


def tick(r: AlertRule, at: datetime) -> str | None:
    event = services.process_rule(AlertRule.objects.get(pk=r.pk), at, sleep=lambda s: None)
    return event.kind if event else None


def blocked_web(at: datetime, per_hour: float = 1.5) -> None:
    services.stranded_moves_record(report=report(
        NotDisrupted("ip-10-0-1-5", "pdb default/web blocks eviction of default/web-2", "pdb", per_hour)),
        nodepools={"ip-10-0-1-5": "general"}, now=at)


def test_fires_after_the_hold_above_the_threshold_repeats_and_resolves(channel: Channel, slack: SlackDouble) -> None:
    r = stranded_rule(channel, per_day="20", hold_minutes=120)
    blocked_web(NOW)                                            # 1.5 $/h = 36 $/day ≥ 20
    assert tick(r, NOW) is None
    blocked_web(NOW + timedelta(minutes=120))
    assert tick(r, NOW + timedelta(minutes=120)) is None        # blocked exactly 2 h: not "more than"
    t = NOW + timedelta(minutes=121)
    blocked_web(t)
    assert tick(r, t) == "fired"
    blocked_web(t + timedelta(minutes=10))
    assert tick(r, t + timedelta(minutes=10)) is None           # cooldown
    blocked_web(t + timedelta(minutes=31))
    assert tick(r, t + timedelta(minutes=31)) == "repeated"
    services.stranded_moves_record(report=report(), nodepools={}, now=t + timedelta(minutes=32))  # block lifted
    assert tick(r, t + timedelta(minutes=32)) == "resolved"
    assert tick(r, t + timedelta(minutes=33)) is None
    assert [e.kind for e in AlertEvent.objects.order_by("at")] == ["fired", "repeated", "resolved"]

    first = slack.requests[0]["json"]
    assert messages.problems(first["blocks"]) == []
    details = first["blocks"][3]["text"]["text"]
    assert "ip-10-0-1-5 (general): pdb default/web blocks eviction of default/web-2" in details
    assert "saves $36.00/day ($1.50/h)" in details and "blocked 2 h 01 min" in details
    fields = " ".join(f["text"] for f in first["blocks"][2]["fields"])
    assert "$36.00/day" in fields and "≥ $20.00/day" in fields and "blocked by pdb" in fields
    assert "$36.00/day" in first["text"]


def test_below_the_threshold_never_fires(channel: Channel, slack: SlackDouble) -> None:
    r = stranded_rule(channel, per_day="40", hold_minutes=60)
    for minutes in (0, 61, 180):
        blocked_web(NOW + timedelta(minutes=minutes))          # 36 $/day < 40
        assert tick(r, NOW + timedelta(minutes=minutes)) is None
    blocked_web(NOW + timedelta(minutes=181), per_hour=2)      # now 48 $/day, blocked since NOW
    assert tick(r, NOW + timedelta(minutes=181)) == "fired"
    assert "$48.00/day" in slack.requests[0]["json"]["blocks"][3]["text"]["text"]


def test_a_lifted_block_restarts_the_hold(channel: Channel, slack: SlackDouble) -> None:
    r = stranded_rule(channel, per_day="1", hold_minutes=60)
    blocked_web(NOW)
    services.stranded_moves_record(report=report(), nodepools={}, now=NOW + timedelta(minutes=50))
    blocked_web(NOW + timedelta(minutes=55))
    assert tick(r, NOW + timedelta(minutes=70)) is None         # blocked again only 15 min ago
    assert tick(r, NOW + timedelta(minutes=116)) == "fired"


def test_pool_scope_counts_only_its_nodes(channel: Channel, slack: SlackDouble) -> None:
    r = stranded_rule(channel, per_day="1", hold_minutes=1, nodepool="batch")
    blocked_web(NOW)                                            # a general node
    assert tick(r, NOW + timedelta(hours=3)) is None
    services.stranded_moves_record(report=report(
        NotDisrupted("ip-10-0-9-9", "pod jobs/etl-1 has do-not-disrupt", "do-not-disrupt", 0.1)),
        nodepools={"ip-10-0-9-9": "batch"}, now=NOW + timedelta(hours=3))
    assert tick(r, NOW + timedelta(hours=3, minutes=2)) == "fired"
    details = slack.requests[0]["json"]["blocks"][3]["text"]["text"]
    assert "pod jobs/etl-1 has do-not-disrupt" in details and "ip-10-0-1-5" not in details


# --- end to end: the disruption loop on the simulated cluster --------------------------------------

@pytest.fixture
def world(db: Any, settings: Any) -> tuple[Clock, SimulationConfig, SimulatedCluster, SimulatedCloud]:
    return loop_world(settings, on_demand_pool("general", ["c", "m"], consolidate_after="0s",
                                               budgets=[{"nodes": "100%"}]))


def test_the_disruption_loop_records_updates_and_clears_a_pdb_block(world: Any, channel: Channel,
                                                                    slack: SlackDouble) -> None:
    clock, config, cluster, cloud = world
    r = stranded_rule(channel, per_day="1", hold_minutes=60)
    for i in range(6):
        cluster.apply(pod(f"batch-{i}", namespace="jobs", cpu="1", memory="2Gi"))
    cluster.apply(pod("db-0", namespace="data", cpu="250m", memory="256Mi", labels={"app": "db"},
                      owner="StatefulSet/db"))
    cluster.apply(pdb("db", {"app": "db"}, namespace="data", min_available=1))
    advance(clock, config, 1)
    provision_run(cluster=cluster, cloud=cloud, now=clock())
    for _ in range(8):
        advance(clock, config, 10)
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    nodes = {c.node_name for c in NodeClaim.objects.active()}
    assert nodes and all(nodes)
    for i in range(6):                                          # the batch finished: db-0 alone, oversized
        cluster.delete("Pod", f"batch-{i}", "jobs")
    advance(clock, config, 1)

    first = clock()
    disrupt_run(cluster=cluster, cloud=cloud, now=first)
    assert not DisruptionAction.objects.exists()                # the PDB forbids every move
    row = StrandedMove.objects.get()
    assert row.node in nodes and row.nodepool == "general" and row.blocked_by == "pdb"
    assert row.reason == "pdb data/db blocks eviction of data/db-0" and row.first_seen == first
    price = NodeClaim.objects.get(node_name=row.node).price_per_hour
    assert Decimal(0) < row.savings_per_hour <= price           # a saving, at most the whole node

    advance(clock, config, 10)
    disrupt_run(cluster=cluster, cloud=cloud, now=clock())
    row.refresh_from_db()
    assert (row.first_seen, row.last_seen) == (first, clock())  # still blocked: the clock keeps running
    assert tick(r, clock()) is None                             # not blocked for an hour yet

    advance(clock, config, 3600)
    disrupt_run(cluster=cluster, cloud=cloud, now=clock())
    assert tick(r, clock()) == "fired"
    details = slack.requests[0]["json"]["blocks"][3]["text"]["text"]
    per_day = row.savings_per_hour * 24
    assert f"{row.node} (general): pdb data/db blocks eviction of data/db-0 — saves ${per_day:,.2f}/day" in details

    cluster.delete("PodDisruptionBudget", "db", "data")         # the block lifts: the engine moves
    advance(clock, config, 10)
    disrupt_run(cluster=cluster, cloud=cloud, now=clock())
    assert DisruptionAction.objects.exists()
    assert not StrandedMove.objects.exists()
    assert tick(r, clock()) == "resolved"
