"""Hourly rollups: every figure is the same read from the minute samples or from the rollups (with
the minutes pruned), the rollup is idempotent, and retention prunes only what was rolled up."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from console.dashboards import selectors
from console.telemetry import services
from console.telemetry.models import MetricRollup, MetricSample

NOW = datetime(2026, 1, 15, 12, 37, tzinfo=UTC)  # mid-hour on purpose
pytestmark = pytest.mark.django_db
REASONS = ("nodepool a: limit cpu=8 would be exceeded", "waiting for the provisioner")


def fill(days: int = 3, seed: int = 4) -> None:
    """`days` of minutes for pools a, b and the cluster, with gaps, estimated prices, null bounds and
    pending reasons, all varying."""
    rnd = random.Random(seed)
    rows = []
    for m in range(days * 24 * 60):
        at = NOW - timedelta(minutes=m)
        if rnd.random() < 0.03:
            continue  # loops down for a minute
        for pool in ("a", "b", ""):
            bound = None if rnd.random() < 0.2 else Decimal(f"{rnd.uniform(0.5, 2):.6f}")
            pending = rnd.choice([0, 0, 1, 3]) if pool == "" else 0
            rows.append(MetricSample(
                at=at, nodepool=pool, nodes=rnd.randrange(1, 9), spot_nodes=rnd.randrange(0, 3),
                cost_per_hour=Decimal(f"{rnd.uniform(1, 3):.6f}"), on_demand_cost_per_hour=Decimal(f"{rnd.uniform(3, 5):.6f}"),
                estimated=rnd.random() < 0.01, cpu_allocatable=rnd.randrange(4000, 9000), cpu_requested=rnd.randrange(0, 4000),
                memory_allocatable=rnd.randrange(2**33, 2**34), memory_requested=rnd.randrange(0, 2**33),
                pods=rnd.randrange(0, 50), pods_pending=pending, lower_bound_per_hour=bound,
                unschedulable_reasons={REASONS[rnd.randrange(2)]: pending} if pending else {}))
    MetricSample.objects.bulk_create(rows, batch_size=2000)


def figures() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for window in ("7d", "30d"):
        out[f"hist {window}"] = selectors.histories(pools=["", "a", "b"], window=window, now=NOW)
        out[f"savings {window}"] = selectors.savings(window=window, now=NOW)
        out[f"by pool {window}"] = selectors.savings_by_pool(window=window, now=NOW)
        out[f"cost by pool {window}"] = selectors.cost_by_pool(window=window, now=NOW)
        out[f"reasons {window}"] = selectors.reasons_history(window=window, now=NOW)
    for pool in ("", "a"):
        out[f"summary {pool}"] = selectors.cost_summary(nodepool=pool, now=NOW)
    out["pools"] = selectors.nodepools()
    return out


def same(a: Any, b: Any) -> None:
    """Equal, floats to 1e-9 relative (SQL sums of decimals vs sums of sums)."""
    if isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-9)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            same(a[k], b[k])
    elif isinstance(a, list | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            same(x, y)
    elif hasattr(a, "__dataclass_fields__"):
        assert type(a) is type(b)
        for name in a.__dataclass_fields__:
            same(getattr(a, name), getattr(b, name))
    else:
        assert a == b


def test_figures_identical_from_minutes_and_rollups(settings: Any) -> None:
    fill()
    from_minutes = figures()
    assert len(from_minutes["hist 7d"][""]) == 3 * 24 + 1  # whole hours since 3 days ago, and this one
    written = services.metric_rollups_catch_up(now=NOW)
    assert written == 3 * 72  # every ended hour of the three series; the current hour stays in minutes
    same(figures(), from_minutes)
    # Prune every rolled-up minute: the long windows now read rollups only (and this hour's minutes).
    settings.LOADMASTER_METRICS_MINUTE_RETENTION_DAYS = 0
    assert services.metric_samples_prune(now=NOW) > 0
    assert MetricSample.objects.filter(at__lt=NOW.replace(minute=0)).count() == 0
    from_rollups = figures()
    for key in from_minutes:
        if key.startswith("summary"):
            # The forecast's last-24-hours mean reads minutes by design (kept 8 days by default).
            same(from_rollups[key].month_to_date, from_minutes[key].month_to_date)
            same(from_rollups[key].estimated, from_minutes[key].estimated)
        else:
            same(from_rollups[key], from_minutes[key])


def test_hourly_means_and_gap_by_hand() -> None:
    hour = datetime(2026, 1, 14, 10, 0, tzinfo=UTC)
    for minute, cost, bound in ((0, "3", "1"), (20, "5", None), (40, "4", "2")):
        MetricSample.objects.create(at=hour + timedelta(minutes=minute), nodepool="", cost_per_hour=Decimal(cost),
                                    lower_bound_per_hour=None if bound is None else Decimal(bound))
    for source in ("minutes", "rollups"):
        if source == "rollups":
            services.metric_rollups_write(since=hour, until=hour + timedelta(hours=1))
            MetricSample.objects.all().delete()
        [p] = selectors.history(window="7d", now=NOW)
        assert p.at == hour and p.cost == pytest.approx(4.0)
        # Bound and the cost it is compared with over the same two minutes: (3 + 4) / 2 vs (1 + 2) / 2.
        assert p.lower_bound == pytest.approx(1.5) and p.cost_bounded == pytest.approx(3.5)
        assert p.gap == pytest.approx(2.0) and p.gap_ratio == pytest.approx(3.5 / 1.5)


def test_rollup_is_idempotent() -> None:
    fill(days=1)
    services.metric_rollups_write(since=NOW - timedelta(days=1), until=NOW)
    first = list(MetricRollup.objects.order_by("hour", "nodepool").values())
    services.metric_rollups_write(since=NOW - timedelta(days=1), until=NOW)
    assert services.metric_rollups_catch_up(now=NOW) == 0
    again = list(MetricRollup.objects.order_by("hour", "nodepool").values())
    assert [{k: v for k, v in r.items() if k != "id"} for r in first] == [
        {k: v for k, v in r.items() if k != "id"} for r in again]


def test_retention_keeps_minutes_not_rolled_up(settings: Any) -> None:
    settings.LOADMASTER_METRICS_MINUTE_RETENTION_DAYS = 8
    old = NOW - timedelta(days=10)
    MetricSample.objects.create(at=old, nodepool="", cost_per_hour=Decimal("1"))
    MetricSample.objects.create(at=NOW - timedelta(days=2), nodepool="", cost_per_hour=Decimal("1"))
    assert services.metric_samples_prune(now=NOW) == 0  # nothing rolled up yet: nothing pruned
    services.metric_rollups_catch_up(now=NOW)
    assert services.metric_samples_prune(now=NOW) == 1  # the 10-day-old minute; the 2-day-old one stays
    assert list(MetricSample.objects.values_list("at", flat=True)) == [NOW - timedelta(days=2)]
    assert MetricRollup.objects.get(hour=old.replace(minute=0)).samples == 1
