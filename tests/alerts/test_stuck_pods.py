"""Stuck pods, exactly: each pod's own pending clock as the alert tick observes it (creation time,
or the tick that saw it pending again), on hand-made pod objects and on the simulated cluster."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from console.alerts import messages, services
from console.alerts.models import AlertEvent, AlertRule, Channel, PendingPod
from console.control.provisioning import provision_run
from console.simulation import services as sim
from console.simulation.cloud import SimulatedCloud
from console.simulation.cluster import SimulatedCluster
from console.simulation.config import SimulationConfig
from tests.alerts.conftest import SlackDouble
from tests.simulation.conftest import Clock, loop_world, on_demand_pool, pod

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def k8s_pod(name: str, created: datetime | None, *, uid: str = "", namespace: str = "shop",
            spec: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid}
    if created is not None:
        meta["creationTimestamp"] = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"kind": "Pod", "metadata": meta, "spec": spec or {}, "status": {"phase": "Pending"}}


def since(key: str) -> datetime:
    return PendingPod.objects.get(key=key, left_at__isnull=True).since


def stuck_rule(channel: Channel, *, minutes: int = 10, pods: str = "1", nodepool: str = "") -> AlertRule:
    return AlertRule.objects.create(name="stuck", kind=AlertRule.STUCK, threshold=Decimal(pods),
                                    window_minutes=minutes, cooldown_minutes=30, nodepool=nodepool, channel=channel)


def tick(r: AlertRule, at: datetime) -> str | None:
    event = services.process_rule(AlertRule.objects.get(pk=r.pk), at, sleep=lambda s: None)
    return event.kind if event else None


def test_nine_minutes_does_not_count_eleven_does(channel: Channel, slack: SlackDouble) -> None:
    r = stuck_rule(channel, minutes=10)
    web = k8s_pod("web-1", NOW, uid="u1")
    services.pending_pods_observe(pods=[web], now=NOW + timedelta(minutes=9))
    assert since("shop/web-1") == NOW                              # its own creation time, not the first tick
    assert tick(r, NOW + timedelta(minutes=9)) is None
    services.pending_pods_observe(pods=[web], now=NOW + timedelta(minutes=11))
    assert tick(r, NOW + timedelta(minutes=11)) == "fired"
    blocks = slack.requests[0]["json"]["blocks"]
    assert messages.problems(blocks) == []
    assert "shop/web-1 — 11 min — waiting for the provisioner" in blocks[3]["text"]["text"]
    assert "1 stuck of 1 pending" in blocks[2]["fields"][0]["text"]


def test_scheduled_then_pending_again_restarts_the_clock(channel: Channel, slack: SlackDouble) -> None:
    r = stuck_rule(channel, minutes=10)
    web = k8s_pod("web-1", NOW - timedelta(hours=1), uid="u1")
    services.pending_pods_observe(pods=[web], now=NOW)
    assert tick(r, NOW) == "fired"                                   # pending for an hour
    services.pending_pods_observe(pods=[], now=NOW + timedelta(minutes=1))       # scheduled
    assert PendingPod.objects.get().left_at == NOW + timedelta(minutes=1)
    assert tick(r, NOW + timedelta(minutes=1)) == "resolved"
    back = NOW + timedelta(minutes=5)
    services.pending_pods_observe(pods=[web], now=back)              # the same pod, pending again
    assert since("shop/web-1") == back
    services.pending_pods_observe(pods=[web], now=back + timedelta(minutes=9))
    assert tick(r, back + timedelta(minutes=9)) is None              # 9 minutes in this stretch
    services.pending_pods_observe(pods=[web], now=back + timedelta(minutes=11))
    assert tick(r, back + timedelta(minutes=11)) == "fired"
    assert "shop/web-1 — 11 min" in slack.requests[-1]["json"]["blocks"][3]["text"]["text"]


def test_recreated_pods_and_odd_objects() -> None:
    old = k8s_pod("db-0", NOW - timedelta(hours=2), uid="a")
    services.pending_pods_observe(pods=[old], now=NOW)
    assert since("shop/db-0") == NOW - timedelta(hours=2)
    # A StatefulSet replaced it between two ticks: same name, new object, its own creation time.
    new = k8s_pod("db-0", NOW + timedelta(seconds=30), uid="b")
    services.pending_pods_observe(pods=[new], now=NOW + timedelta(minutes=1))
    assert since("shop/db-0") == NOW + timedelta(seconds=30)
    # Without uids a new creationTimestamp is what tells them apart.
    services.pending_pods_observe(pods=[k8s_pod("x", NOW - timedelta(hours=1))], now=NOW)
    services.pending_pods_observe(pods=[k8s_pod("x", NOW + timedelta(minutes=1))], now=NOW + timedelta(minutes=2))
    assert since("shop/x") == NOW + timedelta(minutes=1)
    # No creation time, or one in the future (clock skew): the clock starts at the tick.
    services.pending_pods_observe(pods=[k8s_pod("y", None), k8s_pod("z", NOW + timedelta(hours=1))], now=NOW)
    assert since("shop/y") == NOW and since("shop/z") == NOW
    # Junk is skipped, never a traceback.
    junk: list[Any] = [None, "pod", {}, {"metadata": []}, {"metadata": {"name": ""}},
                       {"metadata": {"name": "n" * 400}},
                       {"metadata": {"name": "bad-time", "uid": "u" * 99, "creationTimestamp": "yesterday"}, "spec": "x"}]
    services.pending_pods_observe(pods=junk, now=NOW)
    assert since("default/bad-time") == NOW
    assert set(PendingPod.objects.filter(left_at__isnull=True).values_list("key", flat=True)) == {"default/bad-time"}
    # Gone pods are remembered for a day, then forgotten.
    services.pending_pods_observe(pods=[], now=NOW + timedelta(days=2))
    assert PendingPod.objects.filter(left_at__isnull=True).count() == 0
    services.pending_pods_observe(pods=[], now=NOW + timedelta(days=3, minutes=1))
    assert not PendingPod.objects.exists()


def test_pins_from_node_selector_and_required_affinity() -> None:
    def terms(*values: list[str] | None) -> dict[str, Any]:
        out = []
        for v in values:
            exprs = [{"key": "karpenter.sh/nodepool", "operator": "In", "values": v}] if v is not None else \
                [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]
            out.append({"matchExpressions": exprs})
        return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": out}}}}

    services.pending_pods_observe(pods=[
        k8s_pod("a", NOW, spec={"nodeSelector": {"karpenter.sh/nodepool": "gpu", "x": "y"}}),
        k8s_pod("b", NOW, spec=terms(["batch"], ["gpu", "spot"])),
        k8s_pod("c", NOW, spec=terms(["batch"], None)),                 # one term admits any pool
        k8s_pod("d", NOW, spec={"affinity": {"nodeAffinity": "junk"}}),
    ], now=NOW)
    pins = dict(PendingPod.objects.values_list("key", "pinned_pools"))
    assert pins == {"shop/a": ["gpu"], "shop/b": ["batch", "gpu", "spot"], "shop/c": [], "shop/d": []}


# --- end to end on the simulated cluster ---------------------------------------------------------

@pytest.fixture
def world(db: Any, settings: Any) -> tuple[Clock, SimulationConfig, SimulatedCluster, SimulatedCloud]:
    return loop_world(settings, *(on_demand_pool(name, [category], limits={"cpu": "64"})
                                  for name, category in (("general", "m"), ("compute", "c"))))


def test_the_beat_tick_reads_the_simulated_cluster_and_the_ledger(world: Any, channel: Channel,
                                                                   slack: SlackDouble) -> None:
    clock, config, cluster, cloud = world
    cluster_rule = stuck_rule(channel, minutes=10, pods="2")
    compute_rule = stuck_rule(channel, minutes=10, nodepool="compute")
    cluster.apply(pod("huge", namespace="ml", cpu="500", memory="1Gi"))
    cluster.apply(pod("pinned", namespace="ml", cpu="500", memory="1Gi",
                      node_selector={"karpenter.sh/nodepool": "compute"}))
    clock.advance(1)
    sim.simulation_tick(now=clock(), config=config)               # the scheduler marks them Unschedulable
    provision_run(cluster=cluster, cloud=cloud, now=clock())       # the ledger gets their verdicts

    def beat(minutes: float) -> int:
        clock.advance(minutes * 60)
        sim.simulation_tick(now=clock(), config=config)
        return services.evaluate_all(clock(), sleep=lambda s: None, pending=cluster.pending_pods)

    assert beat(9) == 0
    assert beat(2) == 2                                             # 11 min: both rules fire
    by_rule = {e.rule_id: e for e in AlertEvent.objects.filter(kind="fired")}
    assert set(by_rule) == {cluster_rule.pk, compute_rule.pk}
    texts = [req["json"]["blocks"][3]["text"]["text"] for req in slack.requests]
    size = "no instance type has 500 cpu and 1Gi memory available"
    # The cluster: both pools could take huge but for its size; pinned only compute (general's
    # requirements exclude it, so that reason is not counted).
    cluster_text = next(t for t in texts if "nodepool general" in t)
    assert f"• 2 × nodepool compute: {size}" in cluster_text and f"• 1 × nodepool general: {size}" in cluster_text
    assert f"• ml/huge — 11 min — nodepool compute: {size}" in cluster_text
    assert "(and 1 other NodePool)" in cluster_text
    # The compute pool: the pod pinned to it and huge, which it could take but for its size.
    compute_text = next(t for t in texts if "nodepool general" not in t)
    assert f"• ml/huge — 11 min — nodepool compute: {size}" in compute_text
    assert f"• ml/pinned — 11 min — nodepool compute: {size}" in compute_text
    cluster.delete("Pod", "huge", "ml")
    cluster.delete("Pod", "pinned", "ml")
    assert beat(1) == 2                                             # both resolve
    assert AlertEvent.objects.filter(kind="resolved").count() == 2


def test_many_pods_are_observed_in_batches() -> None:
    pods = [k8s_pod(f"p-{i}", NOW - timedelta(minutes=30), uid=f"u{i}") for i in range(1200)]
    services.pending_pods_observe(pods=pods, now=NOW)
    services.pending_pods_observe(pods=pods[:700], now=NOW + timedelta(minutes=1))
    current = PendingPod.objects.filter(left_at__isnull=True)
    assert current.count() == 700 and PendingPod.objects.filter(left_at=NOW + timedelta(minutes=1)).count() == 500
    assert set(current.values_list("since", flat=True)) == {NOW - timedelta(minutes=30)}
    assert set(current.values_list("last_seen", flat=True)) == {NOW + timedelta(minutes=1)}
