"""The catalog page and the NodePool page say which instance types a Reserved Instance, a Savings Plan or a capacity
reservation covers, and at what effective price: the engine's marginal price from what the metrics loop last
recorded as left, unknown until a minute is recorded."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from console import adapters
from console.commitments import services as commitment_services
from console.commitments.coverage import coverage_by_type
from console.fleet import services as fleet_services
from console.telemetry.models import CommitmentSample
from tests.console_pages import nodeclass  # noqa: F401 - a fixture


@pytest.fixture
def covered(db: Any) -> dict[str, float]:
    adapters.clear_catalog_cache()
    commitment_services.commitment_create(values={"name": "ri-m5", "type": "ReservedInstances",
                                                  "instance_type": "m5.large", "count": 2})
    commitment_services.commitment_create(values={"name": "sp", "type": "ComputeSavingsPlan",
                                                  "hourly_commitment": "0.1", "rates": {"c5": "0.25"}})
    # the metrics loop's last minute of a reservation of m5.xlarge (console.control.commitment_metrics)
    CommitmentSample.objects.create(at=timezone.now() - timedelta(minutes=2), kind="reservation", name="cr-1",
                                    instance_type="m5.xlarge", zone="us-east-1a", unit="instances", total=4, used=1)
    types = {t.name: t for t in adapters.instance_types()}
    od = {n: min(o.price for o in types[n].offerings if o.capacity_type == "on-demand" and o.price is not None)
          for n in ("m5.large", "m5.xlarge", "c5.large", "c5.xlarge")}
    return od


def test_coverage_before_and_after_a_minute_is_recorded(covered: dict[str, float]) -> None:
    now = timezone.now()
    types = [t for t in adapters.instance_types() if t.name in covered]
    cov = coverage_by_type(types, now=now)
    assert set(cov) == set(covered)
    (ri,) = cov["m5.large"]
    assert (ri.by, ri.kind, ri.unit, ri.left, ri.effective_price) == ("ri-m5", "ReservedInstances", "instances",
                                                                      None, None)    # not in the last minute
    (block,) = cov["m5.xlarge"]
    assert (block.by, block.zone, block.left, block.effective_price) == ("cr-1", "us-east-1a", 3, 0.0)
    (sp,) = cov["c5.xlarge"]
    assert sp.plan_rate == pytest.approx(covered["c5.xlarge"] * 0.75)

    at = now - timedelta(minutes=1)
    CommitmentSample.objects.create(at=at, kind="ReservedInstances", name="ri-m5", unit="instances", total=2, used=2)
    # 0.1 $/h left of the plan: a c5.large (its share under 0.1) is wholly covered, a c5.xlarge only in part
    CommitmentSample.objects.create(at=at, kind="ComputeSavingsPlan", name="sp", unit="$/h", total=0.1, used=0)
    CommitmentSample.objects.create(at=at, kind="reservation", name="cr-1", instance_type="m5.xlarge",
                                    zone="us-east-1a", unit="instances", total=4, used=4)
    cov = coverage_by_type(types, now=now)
    assert cov["m5.xlarge"][0].effective_price == pytest.approx(covered["m5.xlarge"])   # full: on-demand
    assert cov["m5.large"][0].left == 0 and cov["m5.large"][0].effective_price == pytest.approx(covered["m5.large"])
    large, xlarge = cov["c5.large"][0], cov["c5.xlarge"][0]
    assert large.units_per_node <= 0.1 and large.effective_price == 0.0
    share = 0.1 / (covered["c5.xlarge"] * 0.75)
    assert 0 < share < 1 and xlarge.effective_price == pytest.approx(covered["c5.xlarge"] * (1 - share))


def test_catalog_page_shows_covered_types(covered: dict[str, float], viewer_client: Client) -> None:
    html = viewer_client.get("/catalog/?q=m5.large&family=m5").content.decode()
    assert "<code>ri-m5</code>" in html and "effective price unknown (no minute recorded yet)" in html
    html = viewer_client.get("/catalog/?q=c5.xlarge&family=c5").content.decode()
    assert "<code>sp</code>" in html and "plan rate" in html


def test_nodepool_page_lists_the_types_it_admits_that_are_covered(covered: dict[str, float], viewer_client: Client,
                                                                  nodeclass: Any, operator: Any) -> None:  # noqa: F811 - fixtures
    pool = fleet_services.nodepool_create(values={
        "name": "m-only", "node_class_name": "default",
        "requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]}]},
        user=operator)
    assert pool.name == "m-only"
    html = viewer_client.get("/nodepools/m-only/").content.decode()
    section = html[html.index('id="commitment-coverage"'):html.index("<h2>NodeClaims</h2>")]
    assert "<code>m5.large</code>" in section and "<code>cr-1</code>" in section
    assert "<code>c5.large</code>" not in section and "<code>sp</code>" not in section   # not a type of this pool
