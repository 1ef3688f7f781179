"""Pending pods by reason count each pod once, under its deciding reason; what each NodePool says is a chart
of its own. Four pods refused by three pools are four pods, not twelve."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from console.dashboards import charts, selectors
from console.telemetry import reasons, services
from tests.dashboards.conftest import CLUSTER, sample

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
pytestmark = pytest.mark.django_db

THREE_POOLS = [{"nodepool": "gpu", "reason": "taint nvidia.com/gpu=true:NoSchedule not tolerated"},
               {"nodepool": "default", "reason": "limit cpu=100 would be exceeded (in use 98)"},
               {"nodepool": "batch", "reason": "requirement karpenter.sh/capacity-type In [spot] is not satisfied"}]


def four_pods() -> dict[str, int]:
    """What record_metrics stores for 4 pending pods: 3 refused by three pools, 1 not looked at yet."""
    return reasons.pending_reason_counts([THREE_POOLS, THREE_POOLS, THREE_POOLS, None])


def test_deciding_reason_prefers_the_pool_that_came_closest() -> None:
    assert reasons.deciding_reason(THREE_POOLS) == "nodepool default: limit cpu=100 would be exceeded (in use 98)"
    assert reasons.deciding_reason(THREE_POOLS[::3]) == THREE_POOLS[0]["reason"].join(["nodepool gpu: ", ""])
    # same kind of reason: the scheduler's order (highest weight first) decides
    two = [{"nodepool": "x", "reason": "taint a:NoSchedule not tolerated"},
           {"nodepool": "y", "reason": "taint b:NoSchedule not tolerated"}]
    assert reasons.deciding_reason(two) == "nodepool x: taint a:NoSchedule not tolerated"
    assert reasons.deciding_reason([]) == reasons.NO_REASON
    assert reasons.deciding_reason([{"nodepool": "", "reason": "no nodepool is defined"}]) == "no nodepool is defined"


def test_stored_counts_hold_both_views() -> None:
    counts = four_pods()
    per_pod = {k: v for k, v in counts.items() if k.startswith(reasons.POD_PREFIX)}
    assert sum(per_pod.values()) == 4
    assert per_pod == {"pod: nodepool default: limit cpu=100 would be exceeded (in use 98)": 3,
                       "pod: waiting for the provisioner": 1}
    assert counts["nodepool gpu: taint nvidia.com/gpu=true:NoSchedule not tolerated"] == 3


@pytest.mark.parametrize("window", ["1h", "7d"])
def test_each_pod_counted_once(db: Any, window: str) -> None:
    for m in range(5):
        sample(NOW - timedelta(minutes=m), "", CLUSTER, pods_pending=4, unschedulable_reasons=four_pods())
    services.metric_rollups_write(since=NOW - timedelta(hours=3), until=NOW - timedelta(minutes=1))
    points = selectors.reasons_points(window=window, now=NOW)
    assert points
    for p in points:
        assert sum(p.per_pod.values()) == pytest.approx(4)  # not 12
        assert p.per_pool["nodepool batch: requirement karpenter.sh/capacity-type In [spot] is not satisfied"] \
            == pytest.approx(3)


def test_older_samples_count_their_pending_pods_once(db: Any) -> None:
    """Samples from before the per-pod keys: 2 pods × 2 pools stored; they count as 2 pods, reason unknown."""
    sample(NOW, "", CLUSTER, pods_pending=2, unschedulable_reasons={"nodepool a: limit cpu=8 would be exceeded": 2,
                                                                    "nodepool b: taint x:NoSchedule not tolerated": 2})
    (point,) = selectors.reasons_points(window="1h", now=NOW)
    assert point.per_pod == {reasons.NOT_RECORDED: 2.0}
    assert sum(point.per_pool.values()) == 4.0


def test_page_draws_both_charts(viewer_client: Client, db: Any, monkeypatch: Any) -> None:
    now = timezone.now().replace(second=0, microsecond=0)
    for m in range(3):
        sample(now - timedelta(minutes=m), "", CLUSTER, pods_pending=4, unschedulable_reasons=four_pods())
    drawn: dict[str, Any] = {}
    real = charts.lines

    def spy(div_id: str, title: str, yaxis: str, x: Any, series: Any, **kw: Any) -> str:
        drawn[div_id] = (title, series, kw.get("stacked", False))
        return real(div_id, title, yaxis, x, series, **kw)

    monkeypatch.setattr(charts, "lines", spy)
    html = viewer_client.get("/dashboards/unschedulable/?window=1h").content.decode()
    assert 'id="chart-reasons"' in html and 'id="chart-reasons-pools"' in html
    title, per_pod, stacked = drawn["chart-reasons"]
    assert stacked and "deciding reason" in title
    assert [sum(col) for col in zip(*per_pod.values(), strict=True)] == [4, 4, 4]
    _, per_pool, stacked = drawn["chart-reasons-pools"]
    assert not stacked and len(per_pool) == 4  # three pools' reasons and the provisioner's wait


def test_deciding_reason_follows_the_reason_kind_not_its_wording() -> None:
    """Verdicts carry the engine's kind: the deciding pool is chosen by it, whatever the sentences say."""
    taint = {"nodepool": "gpu", "reason": "reworded: limit would be exceeded", "kind": "taint", "detail": {}}
    limit = {"nodepool": "default", "reason": "reworded: a taint", "kind": "limit", "detail": {}}
    assert reasons.deciding_reason([taint, limit]) == "nodepool default: reworded: a taint"
    # an offering refusal of one requirement is a label the pod asks for; of the pool as a whole, a capacity
    label = {"nodepool": "a", "reason": "r1", "kind": "offering", "detail": {"key": "size"}}
    capacity = {"nodepool": "b", "reason": "r2", "kind": "offering", "detail": {}}
    assert reasons.deciding_reason([label, capacity]) == "nodepool b: r2"
