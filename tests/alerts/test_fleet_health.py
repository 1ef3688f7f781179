"""The drift and NodeClaim launch failure rules: the disrupt loop's drift observation (DriftedNode and the
NodeClaim's Drifted condition), the share of drifted nodes held past the window, the failures of the last hour
with their error codes and the pods they leave pending; both through the fire/repeat/resolve lifecycle."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from console.alerts import fleet_health, services
from console.alerts.models import AlertRule, Channel, DriftedNode
from console.alerts.validation import rule_problems
from console.fleet.models import Decision, NodeClaim
from packing.api import Requirement
from tests.alerts.conftest import SlackDouble
from tests.alerts.test_lifecycle import NOW, check_cycle, rule
from tests.engine_builders import cluster, mixed_capacity_pool, node, small_catalog

pytestmark = pytest.mark.django_db


def _claims(n: int, pool: str = "default") -> None:
    for i in range(n):
        NodeClaim.objects.create(name=f"{pool}-{i}", nodepool_name=pool, node_name=f"{pool}-node-{i}",
                                 registered_at=NOW - timedelta(hours=2))


def _drifted_cluster(drifted: int, total: int = 10) -> object:
    it = small_catalog()[0]
    # the pool now asks for a label value the old nodes do not carry: they drifted
    pool = mixed_capacity_pool("default", Requirement.new("team", "In", ["web"]))
    nodes = [node(f"default-node-{i}", it, labels={"team": "batch" if i < drifted else "web"}) for i in range(total)]
    return cluster(nodes, [], pools=[pool])


def test_the_disrupt_loop_records_drifted_nodes_and_their_claims_drifted_condition() -> None:
    _claims(10)
    fleet_health.drifted_nodes_record(cluster=_drifted_cluster(2), now=NOW)
    rows = {d.node: d for d in DriftedNode.objects.all()}
    assert sorted(rows) == ["default-node-0", "default-node-1"]
    assert "label team=batch no longer satisfies nodepool requirement" in rows["default-node-0"].reason
    assert NodeClaim.objects.filter(drifted_at=NOW).count() == 2
    later = NOW + timedelta(minutes=5)
    fleet_health.drifted_nodes_record(cluster=_drifted_cluster(1), now=later)
    assert list(DriftedNode.objects.values_list("node", "first_seen")) == [("default-node-0", NOW)]  # clock kept
    assert list(NodeClaim.objects.filter(drifted_at__isnull=False).values_list("node_name", flat=True)) == [
        "default-node-0"]


def test_drift_fires_above_the_share_only_once_held_past_the_window(channel: Channel) -> None:
    _claims(10)
    r = rule(channel, AlertRule.DRIFT, "5", window_minutes=30)
    fleet_health.drifted_nodes_record(cluster=_drifted_cluster(1), now=NOW - timedelta(minutes=10))
    assert not services.evaluate_rule(r, NOW).firing  # drifted, but not for longer than the window
    ev = services.evaluate_rule(r, NOW + timedelta(minutes=25))
    assert ev.firing and ev.value == "10 % (1 of 10 nodes)"
    assert any("label team=batch" in d for d in ev.details)
    assert not services.evaluate_rule(rule(channel, AlertRule.DRIFT, "10", window_minutes=30),
                                      NOW + timedelta(minutes=25)).firing  # 10 % is not above 10 %
    assert r.threshold_display == "> 5 % of nodes drifted"


def test_drift_rule_lifecycle(channel: Channel, slack: SlackDouble) -> None:
    _claims(10)
    r = rule(channel, AlertRule.DRIFT, "5", window_minutes=1)
    fleet_health.drifted_nodes_record(cluster=_drifted_cluster(3), now=NOW - timedelta(hours=1))
    check_cycle(r, slack, lambda at: None, lambda at: DriftedNode.objects.all().delete())


def test_a_drift_threshold_is_a_percentage(channel: Channel) -> None:
    r = AlertRule(name="d", kind=AlertRule.DRIFT, threshold=Decimal(150), channel=channel)
    assert "threshold" in rule_problems(r, stored_nodepool=None)


def _fail(at: object, why: str, pool: str = "default") -> None:
    Decision.objects.create(at=at, kind=Decision.FAILURE, nodepool_name=pool, why=why)


def test_launch_failures_name_the_error_codes_what_they_point_at_and_the_pods_left_pending(channel: Channel) -> None:
    r = rule(channel, AlertRule.LAUNCH_FAILURES, "2")
    _fail(NOW - timedelta(minutes=5), "NodeClaim default-a1: launch failed: CreateFleet failed: UnauthorizedOperation: "
                                      "You are not authorized to perform this operation.")
    _fail(NOW - timedelta(minutes=4), "NodeClaim default-b2: launch failed: CreateFleet for default-b2 launched "
                                      "nothing: InsufficientInstanceCapacity")
    assert not services.evaluate_rule(r, NOW).firing  # 2 is not more than 2
    _fail(NOW - timedelta(minutes=3), "NodeClaim default-c3: node did not register within 0:15:00; instance terminated")
    _fail(NOW - timedelta(hours=2), "NodeClaim old: launch failed: UnauthorizedOperation")  # outside the hour
    services.pending_pods_observe(pods=[{"metadata": {"name": "web-0", "namespace": "shop"},
                                         "spec": {"nodeSelector": {"karpenter.sh/nodepool": "default"}}}], now=NOW)
    ev = services.evaluate_rule(r, NOW)
    assert ev.firing and ev.value == "3 in the last hour"
    text = "\n".join(ev.details)
    assert "1 × UnauthorizedOperation — IAM" in text
    assert "1 × InsufficientInstanceCapacity — diversity" in text
    assert "1 × RegistrationTimeout — bootstrap" in text
    assert "1 pod(s) pending in default: shop/web-0" in text
    assert not services.evaluate_rule(rule(channel, AlertRule.LAUNCH_FAILURES, "0", nodepool=""), NOW - timedelta(
        hours=3)).firing


def test_launch_failures_lifecycle(channel: Channel, slack: SlackDouble) -> None:
    r = rule(channel, AlertRule.LAUNCH_FAILURES, "0")
    check_cycle(r, slack, lambda at: _fail(at, "launch failed: CreateFleet failed: UnauthorizedOperation: no"),
                lambda at: Decision.objects.filter(kind=Decision.FAILURE).delete())



def test_the_disrupt_loop_records_drift_end_to_end(db: object, settings: object) -> None:
    """A pool's requirements change under running nodes: the next disrupt loop run records them drifted, with
    the requirement they no longer satisfy, and sets their NodeClaims' Drifted condition."""
    from console.control.disruption import disrupt_run
    from console.control.lifecycle import lifecycle_run
    from console.control.provisioning import provision_run
    from console.fleet import services as fleet_services
    from console.fleet.models import NodePool
    from tests.simulation.conftest import advance, loop_world, on_demand_pool

    clock, config, world, cloud = loop_world(settings, on_demand_pool("fixed", ["m"], replicas=2))
    for _ in range(8):
        advance(clock, config, 10)
        provision_run(cluster=world, cloud=cloud, now=clock())
        lifecycle_run(cluster=world, cloud=cloud, now=clock())
    assert NodeClaim.objects.active().filter(nodepool_name="fixed", registered_at__isnull=False).count() == 2
    pool = NodePool.objects.get(name="fixed")
    fleet_services.nodepool_update(nodepool=pool, values={"requirements": on_demand_pool("fixed", ["c"])["requirements"]},
                                   user=None, source="api")
    advance(clock, config, 10)
    disrupt_run(cluster=world, cloud=cloud, now=clock())
    drifted = list(DriftedNode.objects.all())
    assert len(drifted) == 2 and all("no longer satisfies nodepool requirement" in d.reason for d in drifted)
    assert all(d.nodepool == "fixed" for d in drifted)
    assert NodeClaim.objects.active().filter(drifted_at__isnull=False).count() == 2
