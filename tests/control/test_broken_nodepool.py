"""One NodePool the engine cannot use must not stop the loops for every pool: it is reported (ledger
once, NodePoolProblem row for the pool's page and /metrics) while the others are still provisioned and
consolidated."""

from __future__ import annotations

from typing import Any

import pytest

from console.control.disruption import disrupt_run
from console.control.lifecycle import lifecycle_run
from console.control.models import DisruptionAction
from console.control.provisioning import provision_run
from console.fleet import services
from console.fleet.models import Decision, NodeClaim, NodePool
from console.telemetry.models import NodePoolProblem
from tests.simulation.conftest import advance, loop_world, on_demand_pool, pod

# Saved behind validation's back (an older release accepted them, or a direct DB write).
BROKEN: dict[str, dict[str, Any]] = {
    "huge limit": {"limits": {"memory": "1Ei"}},
    "no instance type": {"requirements": [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["x9.nonexistent"]}]},
}


def _world(settings: Any, broken: str) -> Any:
    world = loop_world(settings, on_demand_pool("general", ["c", "m"], consolidate_after="0s",
                                               budgets=[{"nodes": "100%"}]),
                       on_demand_pool("shaky", ["c", "m"], weight=90))
    NodePool.objects.filter(name="shaky").update(**BROKEN[broken])
    return world


def _problems(loop: str) -> dict[str, str]:
    return dict(NodePoolProblem.objects.filter(loop=loop).values_list("nodepool", "reason"))


@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_provision_serves_the_healthy_pool_beside_a_broken_one(db: Any, settings: Any, broken: str) -> None:
    clock, config, cluster, cloud = _world(settings, broken)
    for i in range(3):
        cluster.apply(pod(f"web-{i}", namespace="shop", cpu="1", memory="2Gi"))
    advance(clock, config, 1)
    outcome = provision_run(cluster=cluster, cloud=cloud, now=clock())
    assert outcome.launched and not outcome.failed
    assert {c.nodepool_name for c in NodeClaim.objects.all()} == {"general"}
    assert set(_problems(NodePoolProblem.PROVISION)) == {"shaky"}
    provision_run(cluster=cluster, cloud=cloud, now=clock())          # the next tick: told once, not again
    told = Decision.objects.filter(kind=Decision.FAILURE, details__unusable_nodepool="shaky")
    assert told.count() == 1 and "every other NodePool is still provisioned" in told.get().why
    assert told.get().nodepool == NodePool.objects.get(name="shaky")
    # Shown on the pool's page and in the list.
    from django.test import Client

    from tests.users import make_user
    client = Client()
    client.force_login(make_user("viewer1", "viewer"))
    assert "The provision loop cannot use this NodePool" in client.get("/nodepools/shaky/").content.decode()
    assert "unusable" in client.get("/nodepools/").content.decode()

    # Fixed: the row goes and the pool is planned again.
    services.nodepool_update(nodepool=NodePool.objects.get(name="shaky"),
                             values=on_demand_pool("shaky", ["c", "m"], weight=90, limits={}), user=None)
    cluster.apply(pod("web-9", namespace="shop", cpu="1", memory="2Gi"))
    advance(clock, config, 1)
    provision_run(cluster=cluster, cloud=cloud, now=clock())
    assert _problems(NodePoolProblem.PROVISION) == {}


@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_disrupt_consolidates_the_healthy_pool_beside_a_broken_one(db: Any, settings: Any, broken: str) -> None:
    clock, config, cluster, cloud = _world(settings, broken)
    NodePool.objects.filter(name="shaky").update(weight=1)        # the launch goes to general
    cluster.apply(pod("batch-0", namespace="jobs", cpu="1", memory="1Gi"))
    advance(clock, config, 1)
    provision_run(cluster=cluster, cloud=cloud, now=clock())
    for _ in range(8):
        advance(clock, config, 10)
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    claim = NodeClaim.objects.get(nodepool_name="general")
    assert claim.initialized_at
    cluster.delete("Pod", "batch-0", "jobs")                     # empty now: consolidation deletes it
    for _ in range(6):
        disrupt_run(cluster=cluster, cloud=cloud, now=clock())
        advance(clock, config, 10)
    action = DisruptionAction.objects.get()
    assert (action.reason, action.state) == ("empty", DisruptionAction.DONE)
    claim.refresh_from_db()
    assert claim.terminated_at
    assert set(_problems(NodePoolProblem.DISRUPT)) == {"shaky"}
    assert Decision.objects.filter(kind=Decision.FAILURE, details__unusable_nodepool="shaky",
                                   details__loop="disrupt").count() == 1


def test_a_pool_whose_row_cannot_be_converted_is_left_out(db: Any, settings: Any) -> None:
    clock, config, cluster, cloud = _world(settings, "huge limit")
    NodePool.objects.filter(name="shaky").update(requirements=[{"key": 7, "operator": None}], limits={})
    cluster.apply(pod("web-0", namespace="shop", cpu="1", memory="2Gi"))
    advance(clock, config, 1)
    assert provision_run(cluster=cluster, cloud=cloud, now=clock()).launched
    assert "cannot be read" in _problems(NodePoolProblem.PROVISION)["shaky"]
    disrupt_run(cluster=cluster, cloud=cloud, now=clock())
    assert "cannot be read" in _problems(NodePoolProblem.DISRUPT)["shaky"]


def test_provision_leaves_out_a_pool_the_engine_raises_on(db: Any, settings: Any, monkeypatch: Any) -> None:
    """The safety net for failures the engine does not report itself: each pool is tried alone."""
    from console.control import provisioning

    clock, config, cluster, cloud = _world(settings, "huge limit")
    NodePool.objects.filter(name="shaky").update(limits={})
    real = provisioning.Scheduler

    def scheduler(pools: Any, *args: Any, **kwargs: Any) -> Any:
        if any(p.name == "shaky" for p in pools):
            raise OverflowError("Python int too large to convert to C long")
        return real(pools, *args, **kwargs)

    monkeypatch.setattr(provisioning, "Scheduler", scheduler)
    cluster.apply(pod("web-0", namespace="shop", cpu="1", memory="2Gi"))
    advance(clock, config, 1)
    assert provision_run(cluster=cluster, cloud=cloud, now=clock()).launched
    assert "OverflowError" in _problems(NodePoolProblem.PROVISION)["shaky"]


def test_provision_raises_when_no_pool_is_to_blame(db: Any, settings: Any, monkeypatch: Any) -> None:
    from console.control import provisioning

    clock, config, cluster, cloud = _world(settings, "huge limit")
    NodePool.objects.filter(name="shaky").update(limits={})

    def scheduler(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("engine bug")

    monkeypatch.setattr(provisioning, "Scheduler", scheduler)
    cluster.apply(pod("web-0", namespace="shop", cpu="1", memory="2Gi"))
    advance(clock, config, 1)
    with pytest.raises(RuntimeError):
        provision_run(cluster=cluster, cloud=cloud, now=clock())
    assert _problems(NodePoolProblem.PROVISION) == {}          # not blamed on any pool


def test_disrupt_leaves_out_a_pool_the_engine_raises_on(db: Any, settings: Any, monkeypatch: Any) -> None:
    from console.control import disruption

    clock, config, cluster, cloud = _world(settings, "huge limit")
    NodePool.objects.filter(name="shaky").update(limits={})
    real = disruption.consolidate
    seen: list[list[str]] = []

    def consolidate(engine_cluster: Any, at: Any, **kwargs: Any) -> Any:
        names = sorted(p.name for p in engine_cluster.nodepools)
        seen.append(names)
        if "shaky" in names:
            raise ValueError("attempt to get argmin of an empty sequence")
        return real(engine_cluster, at, **kwargs)

    monkeypatch.setattr(disruption, "consolidate", consolidate)
    disrupt_run(cluster=cluster, cloud=cloud, now=clock())
    assert "argmin" in _problems(NodePoolProblem.DISRUPT)["shaky"]
    assert seen[-1] == ["general"]                                 # the run that counted


def test_a_tick_without_pending_pods_keeps_the_engines_verdict(db: Any, settings: Any) -> None:
    """No solve ran, so nothing is known about the pool: its row stays, and no second ledger line is
    written when the next solve finds it unusable again."""
    clock, config, cluster, cloud = _world(settings, "no instance type")
    cluster.apply(pod("web-0", namespace="shop", cpu="1", memory="2Gi"))
    advance(clock, config, 1)
    provision_run(cluster=cluster, cloud=cloud, now=clock())
    assert set(_problems(NodePoolProblem.PROVISION)) == {"shaky"}
    cluster.delete("Pod", "web-0", "shop")
    advance(clock, config, 1)
    provision_run(cluster=cluster, cloud=cloud, now=clock())          # nothing pending: no solve
    assert set(_problems(NodePoolProblem.PROVISION)) == {"shaky"}
    cluster.apply(pod("web-1", namespace="shop", cpu="1", memory="2Gi"))
    advance(clock, config, 1)
    provision_run(cluster=cluster, cloud=cloud, now=clock())
    assert Decision.objects.filter(kind=Decision.FAILURE, details__unusable_nodepool="shaky").count() == 1
