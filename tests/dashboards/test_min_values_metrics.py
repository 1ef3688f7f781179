"""karpenter_nodeclaims_created_total's min_values_relaxed label (issue 16 item 6): true for the NodeClaims the
engine planned with minValues relaxed (policy BestEffort), from the launch ledger and the planned replacements."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from console.control.models import DisruptionAction
from console.fleet.models import Decision, NodeClaim
from tests.dashboards.test_metrics import L, scrape

pytestmark = pytest.mark.django_db


def test_relaxed_launches_and_replacements_are_labelled_true(viewer_client: Client, operator: User) -> None:
    now = timezone.now()
    for i in range(3):
        NodeClaim.objects.create(name=f"p-{i}", nodepool_name="a", created_at=now)
    # one of the provisioner's three launches was planned with minValues relaxed
    Decision.objects.create(at=now, kind=Decision.LAUNCH, nodepool_name="a", nodes=["p-0"], why="t",
                            details={"min_values_relaxed": True})
    Decision.objects.create(at=now, kind=Decision.LAUNCH, nodepool_name="a", nodes=["p-1"], why="t", details={})
    DisruptionAction.objects.create(created_at=now, updated_at=now, state=DisruptionAction.DONE, type="replace",
                                    reason="underutilized", nodes=["x"],
                                    replacements=[{"nodepool": "a", "min_values_relaxed": True},
                                                  {"nodepool": "a", "min_values_relaxed": False}],
                                    replacement_claims=["r-0", "r-1"], why="t")
    for i in range(2):
        NodeClaim.objects.create(name=f"r-{i}", nodepool_name="a", created_at=now)
    created = scrape(viewer_client)["karpenter_nodeclaims_created_total"]
    assert created[L(reason="provisioned", nodepool="a", min_values_relaxed="true")] == 1
    assert created[L(reason="provisioned", nodepool="a", min_values_relaxed="false")] == 2
    assert created[L(reason="underutilized", nodepool="a", min_values_relaxed="true")] == 1
    assert created[L(reason="underutilized", nodepool="a", min_values_relaxed="false")] == 1
