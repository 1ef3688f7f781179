"""karpenter_cloudprovider_errors_total on /metrics: the launches the cloud refused, by error code (the
counterpart of the NodeClaim launch failure alert)."""

from __future__ import annotations

from datetime import UTC, datetime

from django.test import Client

from console.fleet.models import NodeClaim
from tests.dashboards.test_metrics import L, scrape

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def test_refused_launches_are_karpenters_cloudprovider_errors(viewer_client: Client) -> None:
    for name, why in (("a", "launch failed: CreateFleet failed: UnauthorizedOperation: not allowed"),
                      ("b", "launch failed: CreateFleet for b launched nothing: InsufficientInstanceCapacity"),
                      ("c", "launch failed: CreateFleet for c launched nothing: InsufficientInstanceCapacity"),
                      ("d", "node did not register within 0:15:00")):   # not a cloud error
        NodeClaim.objects.create(name=name, nodepool_name="p", terminated_at=NOW, termination_reason=why)
    base = {"controller": "nodeclaim.lifecycle", "method": "Create", "provider": "aws"}
    assert scrape(viewer_client)["karpenter_cloudprovider_errors_total"] == {
        L(**base, error="UnauthorizedOperation"): 1, L(**base, error="InsufficientInstanceCapacity"): 2}
