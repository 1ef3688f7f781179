"""Cost per NodePool and cost per instance family come from the same samples and both sum to the window's
cost; a pool's cost is split among the families of its NodeClaims alive at the time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client

from console.dashboards import selectors
from console.telemetry import services
from tests.dashboards.conftest import CLUSTER, POOL_A, POOL_B, build_fleet, build_history, claim, sample

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
pytestmark = pytest.mark.django_db
WINDOWS = ["1h", "24h", "7d", "30d"]


@pytest.fixture
def fleet(db: Any) -> None:
    build_fleet(NOW)
    build_history(NOW, minutes=120)  # within the lifetimes of the claims n1 (2 h) and n2


@pytest.mark.parametrize("window", WINDOWS)
def test_both_breakdowns_sum_to_the_window_cost(fleet: None, window: str) -> None:
    total = selectors.window_cost(window=window, now=NOW)
    pools = selectors.cost_by_pool(window=window, now=NOW, unmanaged=True)
    families = selectors.cost_by_family(window=window, now=NOW)
    assert total > 0
    assert sum(pools.values()) == pytest.approx(total, rel=1e-9)
    assert sum(families.values()) == pytest.approx(total, rel=1e-9)
    # Pool a runs only m5 (claim n1), pool b only c5 (n2, n3): each family is its pool's cost.
    assert families == {"c5": pytest.approx(pools["b"]), "m5": pytest.approx(pools["a"])}
    for pool in ("a", "b"):
        one = selectors.cost_by_family(nodepool=pool, window=window, now=NOW)
        assert sum(one.values()) == pytest.approx(selectors.window_cost(nodepool=pool, window=window, now=NOW))
        assert sum(one.values()) == pytest.approx(pools[pool])


def test_unmanaged_nodes_and_mixed_families(db: Any) -> None:
    """The cluster costs $4/h where the pools cost $3/h: $1/h of nodes no NodePool manages. Pool b runs a
    c5 ($0.17/h) for the whole hour and an m6i ($0.34/h) for its second half."""
    for m in range(60):
        at = NOW - timedelta(minutes=m)
        sample(at, "a", POOL_A)
        sample(at, "b", POOL_B)
        sample(at, "", CLUSTER, cost_per_hour=Decimal("4"))
    claim("n1", "a", "m5.large", "spot", "0.04", {}, {}, NOW - timedelta(hours=2))
    claim("n2", "b", "c5.xlarge", "on-demand", "0.17", {}, {}, NOW - timedelta(hours=2))
    claim("n4", "b", "m6i.large", "on-demand", "0.34", {}, {}, NOW - timedelta(minutes=30))
    families = selectors.cost_by_family(window="1h", now=NOW)
    assert sum(families.values()) == pytest.approx(4.0)
    assert families[selectors.UNMANAGED] == pytest.approx(1.0)
    # b: $2 over the hour; the first half ($1) all c5, the second half ($1) split c5:m6i = 0.17:0.34.
    assert families["c5"] == pytest.approx(1 + 1 / 3)
    assert families["m6i"] == pytest.approx(2 / 3)
    assert families["m5"] == pytest.approx(1.0)
    assert selectors.cost_by_pool(window="1h", now=NOW, unmanaged=True) == {
        "a": pytest.approx(1.0), "b": pytest.approx(2.0), selectors.UNMANAGED: pytest.approx(1.0)}


def test_same_from_rollups(fleet: None) -> None:
    before = {w: (selectors.cost_by_family(window=w, now=NOW), selectors.window_cost(window=w, now=NOW))
              for w in ("7d", "30d")}
    services.metric_rollups_write(since=NOW - timedelta(days=30), until=NOW)
    for w, (families, total) in before.items():
        again = selectors.cost_by_family(window=w, now=NOW)
        assert list(again) == list(families)
        assert again == {k: pytest.approx(v) for k, v in families.items()}
        assert selectors.window_cost(window=w, now=NOW) == pytest.approx(total)


def test_cost_page_shows_the_total(viewer_client: Client, db: Any) -> None:
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    build_fleet(now)
    html = viewer_client.get("/dashboards/cost/?window=1h").content.decode()
    total = selectors.window_cost(window="1h", now=now)
    assert f'id="window-cost">${total:.2f}' in html
