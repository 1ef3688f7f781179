"""LOADMASTER_MIN_VALUES_POLICY reaches the provision loop (issue 16 item 6): Strict launches nothing for a pod
that would leave a NodeClaim one instance family where the NodePool asks for two; BestEffort launches it and
the ledger records min_values_relaxed."""

from __future__ import annotations

from typing import Any

import pytest

from console.control.provisioning import provision_run
from console.fleet.models import Decision
from tests.simulation.conftest import advance, loop_world, pod

FAMILY = "karpenter.k8s.aws/instance-family"


def two_families_pool() -> dict[str, Any]:
    return {"name": "general", "node_class_name": "default",
            "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                             {"key": FAMILY, "operator": "In", "values": ["m5", "c5"], "minValues": 2}]}


@pytest.mark.parametrize("policy", ["Strict", "BestEffort"])
def test_policy_setting_decides_the_launch(db: Any, settings: Any, policy: str) -> None:
    settings.LOADMASTER_MIN_VALUES_POLICY = policy
    clock, config, cluster, cloud = loop_world(settings, two_families_pool())
    cluster.apply(pod("web-0", namespace="shop", cpu="1", memory="2Gi", node_selector={FAMILY: "m5"}))
    advance(clock, config, 1)
    outcome = provision_run(cluster=cluster, cloud=cloud, now=clock())
    launches = list(Decision.objects.filter(kind=Decision.LAUNCH))
    if policy == "Strict":
        assert not outcome.launched and not launches
        assert outcome.unschedulable == 1
        verdict = Decision.objects.filter(kind=Decision.UNSCHEDULABLE).latest("at")
        assert "minValues 2 on karpenter.k8s.aws/instance-family" in verdict.why
    else:
        assert outcome.launched and len(launches) == 1
        assert launches[0].details.get("min_values_relaxed") is True
