"""Every dashboard figure against numbers computed by hand from the fixtures in conftest.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from console.control import live_cluster
from console.dashboards import selectors
from tests.dashboards.conftest import CLUSTER, build_fleet, sample

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet(db: Any) -> None:
    build_fleet(NOW)


def test_cost_now_month_to_date_and_forecast(fleet: None) -> None:
    # Counted from the first minute of the month; a sample of December is not.
    sample(datetime(2026, 1, 1, 0, 0, tzinfo=UTC), "", CLUSTER, cost_per_hour=Decimal("6"))
    sample(datetime(2025, 12, 31, 23, 59, tzinfo=UTC), "", CLUSTER, cost_per_hour=Decimal("600"))
    s = selectors.cost_summary(now=NOW)
    assert s.cost_per_hour == 3.0
    # Σ cost / 60: three minutes at $3/h and one at $6/h.
    assert s.month_to_date == pytest.approx((3 * 3 + 6) / 60)
    # Remaining: Jan 15 12:00 → Feb 1 00:00 = 16.5 days = 396 h at the last 24 h's mean ($3/h).
    assert s.forecast == pytest.approx(0.25 + 3 * 396)
    assert s.spot_share == pytest.approx(2 / 3)
    assert s.nodes == 3 and s.pods_pending == 2
    assert s.cpu_efficiency == pytest.approx(0.5)
    assert s.memory_efficiency == pytest.approx(5 / 12)


def test_pool_summary_counts_no_pending_pods(fleet: None) -> None:
    s = selectors.cost_summary(nodepool="a", now=NOW)
    assert s.cost_per_hour == 1.0 and s.spot_share == 1.0 and s.pods_pending == 0
    assert s.month_to_date == pytest.approx(3 / 60)
    assert s.cpu_efficiency == pytest.approx(0.25) and s.memory_efficiency == pytest.approx(0.5)


def test_empty_database_gives_zeros(db: Any) -> None:
    s = selectors.cost_summary(now=NOW)
    assert (s.cost_per_hour, s.month_to_date, s.forecast, s.spot_share) == (0.0, 0.0, 0.0, None)
    assert selectors.history(now=NOW) == []


def test_node_view_reads_the_live_cluster(fleet: None) -> None:
    from console.simulation.cluster import SimulatedCluster
    from tests.dashboards.test_metrics import catalog_price

    rows = selectors.node_view(cluster=SimulatedCluster(), now=NOW)
    # Every live node, worst-packed first; claim n3 (terminated, no node) is not one of them.
    assert [r.name for r in rows] == ["node-u2", "node-u1", "node-n1", "node-n2"]
    u2, u1, n1, n2 = rows
    # node-n1: web-1 500m/1Gi + the DaemonSet pod 100m/128Mi against 2 cpu / 4Gi / 29 pods.
    assert (n1.cpu_requested, n1.cpu_allocatable) == (600, 2000)
    assert (n1.memory_requested, n1.memory_allocatable) == ((1024 + 128) * 2**20, 4 * 2**30)
    assert (n1.pods_requested, n1.pods_allocatable) == (2, 29)
    assert n1.daemon_requests == {"cpu": 100, "memory": 128 * 2**20 * 1000, "pods": 1000}
    assert n1.packing == pytest.approx(0.3) and n1.nodepool == "a" and n1.managed
    # Priced by the launch its NodeClaim recorded; the claim enriches the row.
    assert n1.price == 0.04 and n1.claim is not None and n1.claim.name == "n1"
    assert n1.age == timedelta(hours=2)
    # node-n2: the Succeeded pod counts nothing; CPU 3.1/4 binds: $0.17 × 0.225.
    assert n2.cpu_requested == 3100 and n2.stranded == pytest.approx(0.17 * 0.225)
    # Unmanaged: priced from the catalog when type, zone and capacity type are known, else unknown.
    assert not u1.managed and u1.capacity_type == "on-demand" and u1.claim is None
    assert u1.price == pytest.approx(catalog_price("m5.large", "us-east-1a", "on-demand"))
    assert u2.price is None and u2.stranded == 0.0 and u2.instance_type == "" and u2.capacity_type == ""
    only_b = selectors.node_view(cluster=SimulatedCluster(), nodepool="b", now=NOW)
    assert [r.name for r in only_b] == ["node-n2"]
    assert selectors.stranded_now(nodes=rows, nodepool="a") == pytest.approx(0.04 * 0.7)


def test_capacity_type_labels() -> None:
    assert live_cluster.capacity_type_of({"karpenter.sh/capacity-type": "spot"}) == "spot"
    assert live_cluster.capacity_type_of({"eks.amazonaws.com/capacityType": "SPOT"}) == "spot"
    assert live_cluster.capacity_type_of({"eks.amazonaws.com/capacityType": "weird"}) == ""
    assert live_cluster.capacity_type_of({}) == ""


def test_minute_history_and_derived_series(fleet: None) -> None:
    points = selectors.history(window="1h", now=NOW)
    assert [p.at for p in points] == [NOW - timedelta(minutes=2), NOW - timedelta(minutes=1), NOW]
    p = points[-1]
    assert p.cpu_efficiency == pytest.approx(0.5) and p.memory_efficiency == pytest.approx(5 / 12)
    assert p.savings == pytest.approx(2.0)
    # Aggregate stranded: $3/h × (1 − max(0.5, 5/12)).
    assert p.stranded == pytest.approx(1.5)


def test_hourly_rollup_beyond_a_day(db: Any) -> None:
    base = datetime(2026, 1, 14, 10, 0, tzinfo=UTC)
    sample(base, "c", {}, cost_per_hour=Decimal("1"), cpu_allocatable=1000, cpu_requested=200)
    sample(base + timedelta(minutes=30), "c", {}, cost_per_hour=Decimal("3"), cpu_allocatable=1000,
           cpu_requested=600, estimated=True)
    sample(base + timedelta(minutes=75), "c", {}, cost_per_hour=Decimal("5"))
    points = selectors.history(nodepool="c", window="7d", now=NOW)
    assert [p.at for p in points] == [base, base + timedelta(hours=1)]
    assert points[0].cost == pytest.approx(2.0) and points[0].estimated is True
    assert points[0].cpu_efficiency == pytest.approx(0.4)
    assert points[1].cost == pytest.approx(5.0) and points[1].estimated is False
    # The 24 h window keeps minutes but these samples are older than a day.
    assert selectors.history(nodepool="c", window="24h", now=NOW) == []


def test_savings_total_per_pool_and_estimates(fleet: None) -> None:
    s = selectors.savings(now=NOW)
    # Three minutes at ($5 − $3)/h.
    assert (s.actual, s.on_demand, s.saved) == (pytest.approx(0.15), pytest.approx(0.25), pytest.approx(0.1))
    assert s.estimated is False
    by_pool = selectors.savings_by_pool(now=NOW)
    assert list(by_pool) == ["a", "b"]
    assert by_pool["a"].saved == pytest.approx(3 * 2 / 60) and by_pool["b"].saved == pytest.approx(0)
    sample(NOW - timedelta(minutes=3), "a", {}, cost_per_hour=Decimal("0"), estimated=True)
    assert selectors.savings(nodepool="a", now=NOW).estimated is True
    assert selectors.cost_by_pool(now=NOW) == {"a": pytest.approx(0.05), "b": pytest.approx(0.1)}
    assert selectors.interruptions(now=NOW) == 1


def test_cost_by_family(fleet: None) -> None:
    # From the samples, like the cost per pool: three minutes of pool b ($2/h, its live claim n2 is a c5)
    # and of pool a ($1/h, n1 is an m5); n3 (c5) was terminated an hour before them.
    fam = selectors.cost_by_family(now=NOW)
    assert fam == {"c5": pytest.approx(0.1), "m5": pytest.approx(0.05)}
    assert list(fam) == ["c5", "m5"]
    assert selectors.cost_by_family(nodepool="a", window="1h", now=NOW) == {"m5": pytest.approx(0.05)}


def test_unschedulable_history_and_pending_now(fleet: None) -> None:
    hist = selectors.reasons_history(window="1h", now=NOW)
    assert len(hist) == 3 and hist[-1][1] == {"nodepool a: limit cpu=8 would be exceeded": 2}
    assert selectors.reasons_nodepool("nodepool a: limit cpu=8 would be exceeded") == "a"
    pending = selectors.pending_now(now=NOW)
    assert [p["pod"] for p in pending] == ["default/p1"] and len(pending[0]["reasons"]) == 2
    only_b = selectors.pending_now(nodepool="b", now=NOW)
    assert only_b[0]["reasons"] == [{"nodepool": "b", "reason": "taint gpu=true:NoSchedule not tolerated"}]
    # Beyond a day, the hour's mean per reason: 11:58 and 11:59 (2 each), then 12:00 (2).
    assert selectors.reasons_history(window="7d", now=NOW) == [
        (NOW - timedelta(hours=1), {"nodepool a: limit cpu=8 would be exceeded": 2.0}),
        (NOW, {"nodepool a: limit cpu=8 would be exceeded": 2.0})]


def test_timeline(fleet: None) -> None:
    entries = selectors.timeline(now=NOW)
    assert [e.decision.kind for e in entries] == ["interruption", "disruption", "launch"]
    assert entries[1].savings_per_hour == Decimal("0.4")
    assert [e.decision.kind for e in selectors.timeline(nodepool="a", now=NOW)] == ["launch"]
    assert selectors.timeline_counts(now=NOW) == {"disruption": 1, "interruption": 1, "launch": 1, "unschedulable": 1}


def test_window_parsing() -> None:
    assert selectors.parse_window("7d") == "7d"
    assert selectors.parse_window("bogus") == selectors.DEFAULT_WINDOW
    assert selectors.parse_window(None) == "24h"


def test_histories_of_several_pools_in_few_queries(fleet: None, django_assert_num_queries: Any) -> None:
    # One query for where the rollups end, one for the minutes after them (no rollups here).
    with django_assert_num_queries(2):
        both = selectors.histories(pools=["a", "b"], window="30d", now=NOW)
    # 11:58 and 11:59 fall in the 11:00 hour, 12:00 in the next.
    assert [p.cost for p in both["a"]] == [1.0, 1.0] and [p.cost for p in both["b"]] == [2.0, 2.0]
    assert both["a"][0].cpu_efficiency == pytest.approx(0.25)
    assert selectors.histories(pools=["a", "zzz"], window="1h", now=NOW)["zzz"] == []


def test_histories_narrowed_to_efficiency(fleet: None) -> None:
    pts = selectors.histories(pools=["a"], window="24h", now=NOW, fields=selectors.EFFICIENCY_FIELDS)["a"]
    assert pts[-1].cpu_efficiency == pytest.approx(0.25) and pts[-1].cost == 0.0
