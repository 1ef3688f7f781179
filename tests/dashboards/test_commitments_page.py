"""The Commitments dashboard: tiles, table and charts from the metrics loop's CommitmentSample and MetricSample rows,
figures that add up (list = effective + paid by commitments), unknown shown as unknown, hourly means for long
windows."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from console.dashboards import commitment_selectors
from console.telemetry.models import CommitmentSample, MetricSample
from tests.dashboards.conftest import CLUSTER, sample


def _minute(at: Any, *, sp_used: float = 1.5, effective: str | None = "1.2") -> None:
    sample(at, "", CLUSTER, effective_cost_per_hour=None if effective is None else Decimal(effective))
    CommitmentSample.objects.create(at=at, kind=CommitmentSample.RESERVED_INSTANCES, name="ri-m5", unit="instances",
                                    total=2, used=1, covered_nodes=1, covered_per_hour=Decimal("0.3"),
                                    unused_per_hour=Decimal("0.096"))
    CommitmentSample.objects.create(at=at, kind=CommitmentSample.COMPUTE_SAVINGS_PLAN, name="sp", unit="$/h",
                                    total=2, used=sp_used, covered_nodes=2, covered_per_hour=Decimal("1.5"),
                                    unused_per_hour=Decimal(str(2 - sp_used)))
    CommitmentSample.objects.create(at=at, kind=CommitmentSample.CAPACITY_BLOCK, name="cr-block", unit="instances",
                                    total=4, used=1, unused_per_hour=None)


@pytest.fixture
def minutes(db: Any) -> Any:
    now = timezone.now().replace(second=0, microsecond=0)
    _minute(now - timedelta(minutes=2), sp_used=1.0)
    _minute(now - timedelta(minutes=1))
    return now


def test_tiles_and_table_add_up_and_say_unknown(viewer_client: Client, minutes: Any) -> None:
    html = viewer_client.get("/dashboards/commitments/").content.decode()
    assert 'id="list-cost">$3.0000/h' in html
    assert 'id="effective-cost">$1.2000/h' in html
    assert 'id="coverage">60.0%' in html                 # (3 − 1.2) ÷ 3, and 0.3 + 1.5 = 1.8 paid
    assert "$1.8000/h of the list cost paid by commitments" in html
    assert 'id="unused">$0.5960/h' in html              # 0.096 + (2 − 1.5); the Capacity Block's is unknown
    assert 'id="unused-unknown">plus 1 with an unknown price' in html
    assert "a Capacity Block&#x27;s price is paid up front" in html
    for div in ("chart-commitment-cost", "chart-commitment-coverage", "chart-commitment-utilization",
                "chart-commitment-unused"):
        assert f'id="{div}"' in html
    assert "ri-m5 (Reserved Instances)" in html and "cr-block (Capacity Block)" in html


def test_effective_cost_unknown_is_unknown_not_list(viewer_client: Client, db: Any) -> None:
    now = timezone.now().replace(second=0, microsecond=0)
    sample(now - timedelta(minutes=1), "", CLUSTER)     # a minute recorded before the effective cost existed
    html = viewer_client.get("/dashboards/commitments/").content.decode()
    assert 'id="effective-cost">unknown' in html and 'id="coverage">unknown' in html
    assert "No commitment or reservation recorded yet" in html


def test_series_minutes_and_hourly_means(db: Any) -> None:
    now = timezone.now().replace(minute=30, second=0, microsecond=0)   # both minutes in one hour
    _minute(now - timedelta(minutes=2), sp_used=1.0)
    _minute(now - timedelta(minutes=1))
    series = {s.name: s for s in commitment_selectors.commitment_series(window="1h", now=now)}
    assert series["sp"].used == [1.0, 1.5] and series["sp"].utilization == [50.0, 75.0]
    assert series["cr-block"].unused_per_hour == [None, None]
    times, by_kind = commitment_selectors.commitments_by_kind(list(series.values()))
    assert len(times) == 2 and by_kind == {"ReservedInstances": [0.3, 0.3], "ComputeSavingsPlan": [1.5, 1.5]}
    costs = commitment_selectors.cost_points(window="1h", now=now)
    assert [c.covered for c in costs] == [pytest.approx(1.8), pytest.approx(1.8)]
    long = {s.name: s for s in commitment_selectors.commitment_series(window="7d", now=now)}   # the hour's mean
    assert long["sp"].used == [pytest.approx(1.25)] and long["sp"].unused_per_hour == [pytest.approx(0.75)]
    assert long["cr-block"].unused_per_hour == [None]


def test_an_hour_with_an_unknown_minute_has_an_unknown_mean(db: Any) -> None:
    now = timezone.now().replace(minute=30, second=0, microsecond=0)
    _minute(now - timedelta(minutes=2))
    _minute(now - timedelta(minutes=1), effective=None)
    costs = commitment_selectors.cost_points(window="7d", now=now)
    assert [c.effective for c in costs] == [None]
    assert MetricSample.objects.count() == 2


def test_the_page_shows_each_capacity_blocks_window_and_when_its_nodes_go(viewer_client: Client, db: Any) -> None:
    from console.control.models import CapacityReservationStatus

    now = timezone.now().replace(second=0, microsecond=0)
    for rid, starts, ends in (("cr-soon", now - timedelta(hours=2), now + timedelta(minutes=20)),
                              ("cr-later", now + timedelta(hours=1), now + timedelta(hours=5))):
        CapacityReservationStatus.objects.create(
            nodeclass_name="default", reservation_id=rid, instance_type="p5.48xlarge", zone="us-east-1a", available=1,
            total=2, instance_match_criteria="targeted", type=CapacityReservationStatus.CAPACITY_BLOCK, starts=starts,
            ends=ends, synced_at=now)
    html = viewer_client.get("/dashboards/commitments/").content.decode()
    assert 'id="capacity-blocks"' in html
    soon = html[html.index("cr-soon"):html.index("cr-later")]
    assert f"{(now + timedelta(minutes=20) - timedelta(minutes=40)):%Y-%m-%d %H:%M}" in soon and "draining" in soon
    assert "not started" in html[html.index("cr-later"):]
