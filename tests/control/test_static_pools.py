"""Static NodePools in the loops: the provision loop keeps exactly spec.replicas nodes (launches the missing,
removes the extras in Karpenter's order), launches nothing from them for pending pods, lets pods schedule onto
them, replaces a node being disrupted one for one within limits.nodes, and the disrupt loop never consolidates
them. Every action has its ledger entry."""

from __future__ import annotations

from typing import Any

from console.control.disruption import disrupt_run
from console.control.lifecycle import lifecycle_run
from console.control.provisioning import provision_run
from console.fleet import services
from console.fleet.models import Decision, NodeClaim, NodePool
from tests.simulation.conftest import advance, loop_world, on_demand_pool, pod


def _ticks(clock: Any, config: Any, cluster: Any, cloud: Any, rounds: int = 8) -> None:
    for _ in range(rounds):
        advance(clock, config, 10)
        provision_run(cluster=cluster, cloud=cloud, now=clock())
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())


def _live(pool: str) -> list[NodeClaim]:
    return list(NodeClaim.objects.active().filter(nodepool_name=pool, deletion_requested_at__isnull=True))


def test_a_static_pool_keeps_its_replicas_and_scales(db: Any, settings: Any) -> None:
    clock, config, cluster, cloud = loop_world(settings, on_demand_pool("fixed", ["m"], replicas=3))
    _ticks(clock, config, cluster, cloud)
    claims = _live("fixed")
    assert len(claims) == 3 and all(c.initialized_at for c in claims)
    launches = Decision.objects.filter(kind=Decision.LAUNCH, nodepool_name="fixed")
    assert launches.count() == 3
    assert all("static nodepool fixed keeps spec.replicas=3" in d.why for d in launches)
    _ticks(clock, config, cluster, cloud, rounds=3)
    assert len(_live("fixed")) == 3  # steady: nothing more launched

    # a pod lands on one of them; scaling down to 1 removes the two empty ones first
    cluster.apply(pod("web", cpu="500m", memory="256Mi", owner="ReplicaSet/web-x"))
    _ticks(clock, config, cluster, cloud, rounds=3)
    busy = {p["spec"].get("nodeName") for p in cluster.list_pods()[0] if p["metadata"]["name"] == "web"}
    assert busy <= {c.node_name for c in _live("fixed")} and busy != {None}
    assert not NodeClaim.objects.exclude(nodepool_name="fixed").exists()  # no other node was launched for it

    services.nodepool_scale(nodepool=NodePool.objects.get(name="fixed"), replicas=1, user=None, source="api")
    _ticks(clock, config, cluster, cloud, rounds=6)
    left = _live("fixed")
    assert [c.node_name for c in left] == list(busy)
    removal = Decision.objects.get(kind=Decision.DISRUPTION, details__static_nodepool="fixed")
    assert "scaled down to 1 replica(s)" in removal.why and "(empty)" in removal.why
    assert NodeClaim.objects.filter(nodepool_name="fixed", terminated_at__isnull=False).count() == 2

    services.nodepool_scale(nodepool=NodePool.objects.get(name="fixed"), replicas=2, user=None, source="api")
    _ticks(clock, config, cluster, cloud, rounds=3)
    assert len(_live("fixed")) == 2


def test_pending_pods_get_no_node_from_a_static_pool(db: Any, settings: Any) -> None:
    clock, config, cluster, cloud = loop_world(settings, on_demand_pool("fixed", ["m"], replicas=0))
    cluster.apply(pod("web", cpu="500m", memory="256Mi", owner="ReplicaSet/web-x"))
    _ticks(clock, config, cluster, cloud)
    assert not NodeClaim.objects.exists()
    verdict = Decision.objects.get(kind=Decision.UNSCHEDULABLE)
    assert "nodepool fixed: nodepool is static (spec.replicas: 0)" in verdict.why


def test_limits_nodes_caps_a_static_pool(db: Any, settings: Any) -> None:
    clock, config, cluster, cloud = loop_world(settings, on_demand_pool("fixed", ["m"], replicas=4,
                                                                         limits={"nodes": "2"}))
    _ticks(clock, config, cluster, cloud)
    assert len(_live("fixed")) == 2


def test_a_node_being_disrupted_is_replaced_one_for_one_first(db: Any, settings: Any) -> None:
    clock, config, cluster, cloud = loop_world(settings, on_demand_pool("fixed", ["m"], replicas=2,
                                                                         limits={"nodes": "3"}))
    _ticks(clock, config, cluster, cloud)
    old = _live("fixed")[0]
    NodeClaim.objects.filter(pk=old.pk).update(disrupting_at=clock())  # the disrupt loop took it (drift)
    provision_run(cluster=cluster, cloud=cloud, now=clock())
    live = _live("fixed")
    assert len(live) == 3  # the replacement runs before the old node goes
    why = Decision.objects.filter(kind=Decision.LAUNCH, nodepool_name="fixed").order_by("-at", "-id").first()
    assert why is not None and f"to replace {old.name}" in why.why
    provision_run(cluster=cluster, cloud=cloud, now=clock())
    assert len(_live("fixed")) == 3  # one for one, not more (and limits.nodes 3)


def test_the_disrupt_loop_never_consolidates_static_nodes(db: Any, settings: Any) -> None:
    clock, config, cluster, cloud = loop_world(settings, on_demand_pool("fixed", ["m"], replicas=2))
    _ticks(clock, config, cluster, cloud)
    for _ in range(3):
        advance(clock, config, 60)
        outcome = disrupt_run(cluster=cluster, cloud=cloud, now=clock())
        assert outcome.started == ""
    assert len(_live("fixed")) == 2


def test_drifted_static_nodes_are_replaced_one_for_one(db: Any, settings: Any) -> None:
    clock, config, cluster, cloud = loop_world(settings, on_demand_pool("fixed", ["m"], replicas=2))
    _ticks(clock, config, cluster, cloud)
    before = {c.name for c in _live("fixed")}
    assert len(before) == 2
    pool = NodePool.objects.get(name="fixed")
    services.nodepool_update(nodepool=pool, values={"requirements": on_demand_pool("fixed", ["c"])["requirements"]},
                             user=None, source="api")
    most = 0
    for _ in range(40):
        advance(clock, config, 10)
        disrupt_run(cluster=cluster, cloud=cloud, now=clock())
        provision_run(cluster=cluster, cloud=cloud, now=clock())
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
        most = max(most, NodeClaim.objects.active().filter(nodepool_name="fixed").count())
    live = _live("fixed")
    assert len(live) == 2 and not ({c.name for c in live} & before)
    assert all(c.instance_type.startswith("c") for c in live), [c.instance_type for c in live]
    assert most <= 3  # one replacement at a time beside the two (the drift budget, one for one)
    drift = Decision.objects.filter(kind=Decision.DISRUPTION, why__contains="drifted")
    assert drift.count() == 2


def test_a_clock_policy_window_changes_the_replicas_while_open(db: Any, settings: Any) -> None:
    """loadmaster.dev/schedules: a window sets replicas 3 on a 1-replica static pool for 30 minutes; the loop keeps
    3 while it is open, says so in the ledger, and scales back to 1 once it closes."""
    from tests.simulation.conftest import Clock

    start = Clock()()
    window = (f"- {{name: peak, schedule: '{start.minute} {start.hour} * * *', duration: 30m, replicas: 3}}")
    clock, config, cluster, cloud = loop_world(settings, on_demand_pool(
        "fixed", ["m"], replicas=1, metadata_annotations={"loadmaster.dev/schedules": window}))
    _ticks(clock, config, cluster, cloud)
    assert len(_live("fixed")) == 3
    launch = Decision.objects.filter(kind=Decision.LAUNCH, nodepool_name="fixed").first()
    assert launch is not None and "clock-policy window peak open until" in launch.why
    advance(clock, config, 31 * 60)
    _ticks(clock, config, cluster, cloud, rounds=4)
    assert len(_live("fixed")) == 1
    removal = Decision.objects.get(kind=Decision.DISRUPTION, details__static_nodepool="fixed")
    assert "scaled down to 1 replica(s)" in removal.why and "window" not in removal.why
