"""A launch decision records the engine's lower bound for the pods the launch serves — not $0 because
the free fragments of the existing nodes, pooled, could hold them."""

from __future__ import annotations

import re
from typing import Any

from console.control.lifecycle import lifecycle_run
from console.control.provisioning import provision_run
from console.fleet.models import Decision, NodeClaim
from tests.simulation.conftest import advance, loop_world, on_demand_pool, pod


def test_launch_decision_records_the_bound_of_the_launched_pods(db: Any, settings: Any) -> None:
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    clock, config, cluster, cloud = loop_world(settings, on_demand_pool("general", ["c", "m"]),
                                               on_demand_pool("dedicated", ["m"], taints=[taint], weight=90))
    # A node of the tainted pool, almost empty: room that the pods below may not use.
    cluster.apply(pod("small-0", namespace="ml", cpu="100m", memory="128Mi",
                      tolerations=[{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
                      node_selector={"karpenter.sh/nodepool": "dedicated"}))
    cluster.apply(pod("big-0", namespace="ml", cpu="7", memory="28Gi",
                      tolerations=[{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
                      node_selector={"karpenter.sh/nodepool": "dedicated"}))
    advance(clock, config, 1)
    provision_run(cluster=cluster, cloud=cloud, now=clock())
    for _ in range(8):
        advance(clock, config, 10)
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    cluster.delete("Pod", "big-0", "ml")
    assert NodeClaim.objects.filter(initialized_at__isnull=False, nodepool_name="dedicated").exists()
    first = set(Decision.objects.filter(kind=Decision.LAUNCH).values_list("pk", flat=True))

    # Pods that do not tolerate the taint: they need a node of their own.
    for i in range(2):
        cluster.apply(pod(f"web-{i}", namespace="shop", cpu="1", memory="2Gi"))
    advance(clock, config, 1)
    assert provision_run(cluster=cluster, cloud=cloud, now=clock()).launched
    launch = Decision.objects.filter(kind=Decision.LAUNCH).exclude(pk__in=first).get()
    assert launch.nodepool_name == "general"
    bound = launch.details["lower_bound_per_hour"]
    assert bound is not None and 0 < bound <= float(launch.cost_after) + 1e-9
    assert launch.details["plan_cost_per_hour"] == float(launch.cost_after)
    shown = re.search(r"lower bound \$([0-9.]+)/h", launch.why)
    assert shown is not None and float(shown.group(1)) == round(bound, 4) > 0
