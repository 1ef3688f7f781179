"""The "NodePool unusable" rule: a pool a control loop has been leaving out (NodePoolProblem) for longer
than the window fires the rule, naming the pool, the loop and why; it resolves once the pool is usable
again. End to end: the provision loop meets a pool whose limit the engine cannot use."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from console.alerts import services
from console.alerts.models import AlertEvent, AlertRule, Channel
from console.control.provisioning import provision_run
from console.fleet.models import NodePool
from console.telemetry.models import NodePoolProblem
from tests.simulation.conftest import advance, loop_world, on_demand_pool, pod

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def problem(pool: str, minutes_ago: int, loop: str = NodePoolProblem.PROVISION) -> NodePoolProblem:
    at = NOW - timedelta(minutes=minutes_ago)
    return NodePoolProblem.objects.create(nodepool=pool, loop=loop, reason=f"{pool}: limit cannot be used",
                                          since=at, seen_at=NOW)


def rule(channel: Channel, *, nodepool: str = "", threshold: int = 1, window: int = 10) -> AlertRule:
    return AlertRule.objects.create(name="unusable", kind=AlertRule.UNUSABLE, nodepool=nodepool,
                                    threshold=Decimal(threshold), window_minutes=window, channel=channel)


def test_fires_only_after_the_window_and_names_pool_loop_and_reason(channel: Channel) -> None:
    r = rule(channel)
    problem("batch", minutes_ago=5)
    assert not services.evaluate_rule(r, NOW).firing                  # not left out long enough yet
    problem("gpu", minutes_ago=30, loop=NodePoolProblem.DISRUPT)
    ev = services.evaluate_rule(r, NOW)
    assert ev.firing and ev.value == "1 NodePool" and ev.change == "gpu"
    assert ev.details == ["gpu (disrupt loop, 30 min): gpu: limit cannot be used"]
    assert r.threshold_display == "≥ 1 NodePool unusable"


def test_scoped_to_one_pool_and_a_threshold_of_several_pools(channel: Channel) -> None:
    problem("batch", minutes_ago=30)
    problem("gpu", minutes_ago=30)
    assert services.evaluate_rule(rule(channel, nodepool="web"), NOW).firing is False
    assert services.evaluate_rule(rule(channel, nodepool="gpu"), NOW).change == "gpu"
    assert services.evaluate_rule(rule(channel, threshold=3), NOW).firing is False
    assert services.evaluate_rule(rule(channel, threshold=2), NOW).firing is True


def test_the_provision_loop_reports_a_broken_pool_and_the_rule_fires_then_resolves(
        channel: Channel, settings: Any, slack: Any) -> None:
    clock, config, cluster, cloud = loop_world(settings, on_demand_pool("general", ["c", "m"]),
                                               on_demand_pool("shaky", ["c", "m"], weight=90))
    NodePool.objects.filter(name="shaky").update(limits={"memory": "1Ei"})   # saved behind validation's back
    cluster.apply(pod("web-0", namespace="shop", cpu="1", memory="2Gi"))
    advance(clock, config, 1)
    provision_run(cluster=cluster, cloud=cloud, now=clock())
    r = rule(channel, window=0)
    later = clock() + timedelta(minutes=1)
    fired = services.process_rule(r, later)
    assert fired is not None and fired.kind == AlertEvent.FIRED and fired.delivered
    assert "shaky" in fired.summary and "provision loop" in str(slack.requests[-1]["json"])

    NodePool.objects.filter(name="shaky").update(limits={})                   # fixed: usable again
    cluster.apply(pod("web-1", namespace="shop", cpu="1", memory="2Gi"))
    advance(clock, config, 1)
    provision_run(cluster=cluster, cloud=cloud, now=clock())
    assert not NodePoolProblem.objects.exists()
    resolved = services.process_rule(r, clock() + timedelta(minutes=2))
    assert resolved is not None and resolved.kind == AlertEvent.RESOLVED
