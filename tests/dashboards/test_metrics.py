"""/metrics parsed with prometheus_client's parser: Karpenter v1's names, label sets and the fixture's
values, Loadmaster's cost gauges, counters and summaries computed from the database, no duplicate
series, promtool's lint, and the bearer token and login rules."""

from __future__ import annotations

import shutil
import subprocess
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from console.control.models import DisruptionAction
from console.dashboards import live_metrics
from console.dashboards.exposition import Exposition
from console.dashboards.ledger_metrics import consolidation_type, nodeclaim_reason
from console.fleet import services
from console.fleet.models import Decision, NodeClaim, NodePool
from console.telemetry import loop_stats, pod_startup
from tests.console_pages import NODECLASS
from tests.dashboards.conftest import build_fleet

pytestmark = pytest.mark.django_db

Labels = tuple[tuple[str, str], ...]


@pytest.fixture(autouse=True)
def fresh_metrics_read() -> Any:
    live_metrics.live_read_clear()
    yield
    live_metrics.live_read_clear()


@pytest.fixture
def fleet(operator: User) -> None:
    services.nodeclass_create(values=NODECLASS, user=operator)
    services.nodepool_create(values={"name": "a", "node_class_name": "default", "limits": {"cpu": "100", "memory": "1Gi"}},
                             user=operator)
    build_fleet(timezone.now().replace(second=0, microsecond=0))


def scrape_text(client: Client, **headers: Any) -> str:
    r = client.get("/metrics", **headers)
    assert r.status_code == 200, r.content
    assert r["Content-Type"].startswith("text/plain; version=0.0.4")
    return r.content.decode()


def parse(text: str) -> dict[str, dict[Labels, float]]:
    out: dict[str, dict[Labels, float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            # Prometheus stores an empty label as no label: compare label sets that way.
            key = tuple(sorted((k, v) for k, v in s.labels.items() if v != ""))
            assert key not in out.setdefault(s.name, {}), f"duplicate series {s.name}{dict(key)}"
            out[s.name][key] = s.value
    return out


def scrape(client: Client, **headers: Any) -> dict[str, dict[Labels, float]]:
    return parse(scrape_text(client, **headers))


def L(**kw: str) -> Labels:  # noqa: N802
    return tuple(sorted((k, v) for k, v in kw.items() if v != ""))


def catalog_price(itype: str, zone: str, capacity_type: str) -> float:
    from django.conf import settings

    from console import adapters
    from console.control.live_cluster import offering_price

    price, _ = offering_price({t.name: t for t in adapters.instance_types(settings.LOADMASTER_AWS_REGION)},
                              itype, zone, capacity_type)
    assert price is not None and price > 0
    return price


def node(name: str, pool: str, itype: str, ct: str, zone: str = "us-east-1a", **kw: str) -> Labels:
    """A node's labels as Karpenter's node metrics controller writes them (os from kubernetes.io/os)."""
    return L(node_name=f"node-{name}", nodepool=pool, instance_type=itype, capacity_type=ct, zone=zone, os="linux",
             managed="true" if pool else "false", **kw)


MI = 2**20


def test_node_gauges_have_karpenters_labels_and_count_pods(viewer_client: Client, fleet: None) -> None:
    m = scrape(viewer_client)
    alloc = m["karpenter_nodes_allocatable"]
    assert alloc[node("n1", "a", "m5.large", "spot", resource_type="cpu")] == 2.0
    assert alloc[node("n1", "a", "m5.large", "spot", resource_type="memory")] == 4 * 2**30
    assert alloc[node("n2", "b", "c5.xlarge", "on-demand", resource_type="pods")] == 58
    # Every live node, the unmanaged ones included (managed="false"); claims without a node are not.
    assert alloc[node("u1", "", "m5.large", "", resource_type="cpu")] == 2.0
    assert alloc[node("u2", "", "", "", zone="", resource_type="cpu")] == 2.0
    assert not any(("node_name", "node-n3") in k for k in alloc)
    # Karpenter v1: pod requests include the DaemonSet pods; daemon requests are the DaemonSet pods alone;
    # both count pods as resource_type="pods" (RequestsForPods), 0 on a node without any.
    reqs, daemon = m["karpenter_nodes_total_pod_requests"], m["karpenter_nodes_total_daemon_requests"]
    assert reqs[node("n1", "a", "m5.large", "spot", resource_type="cpu")] == pytest.approx(0.6)
    assert reqs[node("n1", "a", "m5.large", "spot", resource_type="memory")] == (1024 + 128) * MI
    assert reqs[node("n1", "a", "m5.large", "spot", resource_type="pods")] == 2
    assert daemon[node("n1", "a", "m5.large", "spot", resource_type="cpu")] == pytest.approx(0.1)
    assert daemon[node("n1", "a", "m5.large", "spot", resource_type="pods")] == 1
    # node-n2: api-1 + api-2 + agent (the Succeeded pod counts nowhere); its DaemonSet pod alone.
    assert reqs[node("n2", "b", "c5.xlarge", "on-demand", resource_type="cpu")] == pytest.approx(3.1)
    assert reqs[node("n2", "b", "c5.xlarge", "on-demand", resource_type="pods")] == 3
    assert reqs[node("u1", "", "m5.large", "", resource_type="cpu")] == pytest.approx(0.25)
    assert daemon[node("u1", "", "m5.large", "", resource_type="pods")] == 0
    assert daemon[node("u2", "", "", "", zone="", resource_type="pods")] == 0
    assert not any(("node_name", "node-u1") in k and ("resource_type", "cpu") in k for k in daemon)
    assert m["karpenter_nodes_system_overhead"][node("n1", "a", "m5.large", "spot", resource_type="cpu")] == 0
    assert m["karpenter_nodes_current_lifetime_seconds"][node("n1", "a", "m5.large", "spot")] >= 7200
    util = m["karpenter_cluster_utilization_percent"]
    assert util[L(resource_type="cpu")] == pytest.approx(100 * (0.6 + 3.1 + 0.25) / 10)
    assert m["karpenter_nodepools_usage"][L(nodepool="b", resource_type="cpu")] == 4.0
    # as Karpenter's status.resources, usage counts the nodes (a static pool's status.nodes, beside its replicas)
    assert m["karpenter_nodepools_usage"][L(nodepool="b", resource_type="nodes")] >= 1
    assert m["karpenter_nodepools_limit"][L(nodepool="a", resource_type="cpu")] == 100.0
    assert m["karpenter_nodepools_limit"][L(nodepool="a", resource_type="memory")] == 2**30
    # The cost of each NodePool's live nodes (pool b has nodes but no NodePool object: none, as Karpenter).
    assert m["karpenter_nodepools_cost_total"] == {L(nodepool="a"): 0.04}
    price = m["karpenter_cloudprovider_instance_type_offering_price_estimate"]
    assert price[L(instance_type="c5.xlarge", capacity_type="on-demand", zone="us-east-1a")] == 0.17


def test_pods_state_one_series_per_pod(viewer_client: Client, fleet: None) -> None:
    state = scrape(viewer_client)["karpenter_pods_state"]
    assert len(state) == 7 and set(state.values()) == {1.0}
    assert L(name="web-1", namespace="default", owner="/apis/apps/v1/namespaces/default/replicasets/web-abc",
             node="node-n1", scheduled="true", nodepool="a", zone="us-east-1a", capacity_type="spot",
             instance_type="m5.large", phase="Running", ready="true", managed="true") in state
    assert L(name="done-1", namespace="default", owner="/apis/apps/v1/namespaces/default/jobs/once", node="node-n2",
             scheduled="true", nodepool="b", zone="us-east-1a", capacity_type="on-demand", instance_type="c5.xlarge",
             phase="Succeeded", ready="true", managed="true") in state
    assert L(name="sys-1", namespace="default", node="node-u1", scheduled="true", zone="us-east-1a",
             instance_type="m5.large", phase="Running", ready="true", managed="false") in state


def test_pending_pods_in_pods_state(viewer_client: Client, fleet: None) -> None:
    from console.simulation.cluster import SimulatedCluster
    from tests.simulation.conftest import pod

    SimulatedCluster().apply(pod("waiting", namespace="shop", unschedulable=True))
    state = scrape(viewer_client)["karpenter_pods_state"]
    assert state[L(name="waiting", namespace="shop", scheduled="false", phase="Pending", ready="false",
                   managed="false")] == 1
    assert scrape(viewer_client)["karpenter_scheduler_unschedulable_pods_count"][L(controller="provisioner")] == 2


def test_counters_from_the_ledger(viewer_client: Client, fleet: None) -> None:
    m = scrape(viewer_client)
    assert m["karpenter_voluntary_disruption_decisions_total"] == {
        L(decision="delete", reason="underutilized", consolidation_type="single"): 1}
    assert m["karpenter_nodeclaims_created_total"][L(reason="provisioned", nodepool="b", min_values_relaxed="false")] == 2
    assert m["karpenter_nodes_created_total"][L(nodepool="a", zone="us-east-1a")] == 1
    # n3's interruption is its disruption (Karpenter's reason for a spot interruption warning).
    assert m["karpenter_nodeclaims_disrupted_total"] == {L(reason="spot_interrupted", nodepool="b", capacity_type="spot"): 1}
    assert m["karpenter_nodes_terminated_total"][L(nodepool="b", zone="us-east-1a")] == 1
    assert m["karpenter_nodeclaims_terminated_total"][L(nodepool="b", capacity_type="spot", zone="us-east-1a")] == 1


def action_no(nodes: list[str]) -> str:
    return "-".join(nodes)


def _action(now: Any, type_: str, reason: str, nodes: list[str], replacements: int = 0, method: str = "") -> None:
    planned = [{"nodepool": "a"} for _ in range(replacements)]
    action = DisruptionAction.objects.create(created_at=now, updated_at=now, state=DisruptionAction.DONE, type=type_,
                                             reason=reason, nodes=nodes, replacements=planned,
                                             replacement_claims=[f"r-{action_no(nodes)}-{i}" for i in range(replacements)], why="t")
    details: dict[str, Any] = {"action": action.pk}
    if method:
        details["method"] = method
    Decision.objects.create(at=now, kind=Decision.DISRUPTION, nodepool_name="a", nodes=nodes,
                            why=f"{type_} ({reason}): t", details=details)
    for i in range(replacements):
        NodeClaim.objects.create(name=f"r-{action_no(nodes)}-{i}", nodepool_name="a", created_at=now)


def test_decisions_by_decision_reason_and_consolidation_type(viewer_client: Client, operator: User) -> None:
    now = timezone.now()
    _action(now, "delete", "empty", ["e1", "e2"])
    _action(now, "delete", "underutilized", ["s1"])
    _action(now, "delete", "underutilized", ["m1", "m2"])
    _action(now, "replace", "underutilized", ["m3", "m4"], replacements=1)
    _action(now, "replace", "underutilized", ["p1", "p2", "p3"], replacements=4)
    _action(now, "replace", "drifted", ["d1"], replacements=1)
    _action(now, "replace", "underutilized", ["x1"], replacements=2, method="single-node")  # the ledger's method wins
    m = scrape(viewer_client)
    assert m["karpenter_voluntary_disruption_decisions_total"] == {
        L(decision="delete", reason="empty", consolidation_type="empty"): 1,
        L(decision="delete", reason="underutilized", consolidation_type="single"): 1,
        L(decision="delete", reason="underutilized", consolidation_type="multi"): 1,
        L(decision="replace", reason="underutilized", consolidation_type="multi"): 1,
        L(decision="replace", reason="underutilized", consolidation_type="repack"): 1,
        L(decision="replace", reason="drifted"): 1,
        L(decision="replace", reason="underutilized", consolidation_type="single"): 1,
    }
    assert sum(m["karpenter_voluntary_disruption_decisions_total"].values()) == \
        Decision.objects.filter(kind=Decision.DISRUPTION).count()
    created = m["karpenter_nodeclaims_created_total"]
    assert created[L(reason="underutilized", nodepool="a", min_values_relaxed="false")] == 7
    assert created[L(reason="drifted", nodepool="a", min_values_relaxed="false")] == 1
    assert created[L(reason="provisioned", nodepool="a", min_values_relaxed="false")] == 0


def test_terminations_in_the_ledger_are_not_voluntary_decisions(viewer_client: Client, operator: User) -> None:
    now = timezone.now()
    Decision.objects.create(at=now, kind=Decision.DISRUPTION, nodepool_name="a", nodes=["c1"], why="NodeClaim c1 terminated",
                            cost_before=Decimal("0.5"), cost_after=Decimal(0),
                            details={"termination": "spot interruption", "instance_id": "i-1"})
    Decision.objects.create(at=now, kind=Decision.DISRUPTION, nodepool_name="a", nodes=["c2"], why="nodepool a deleted",
                            cost_before=Decimal("0.5"), cost_after=Decimal(0), details={"nodepool_deleted": "a"})
    Decision.objects.create(at=now, kind=Decision.DISRUPTION, nodepool_name="a", nodes=["c3"],
                            cost_before=Decimal("0.3"), cost_after=Decimal(0), why="empty: node c3 ran no pods, deleted")
    m = scrape(viewer_client)
    assert m["karpenter_voluntary_disruption_decisions_total"] == {
        L(decision="delete", reason="empty", consolidation_type="empty"): 1}
    assert m["loadmaster_consolidation_savings_per_hour_dollars_total"] == {L(nodepool="a"): pytest.approx(0.3)}


def test_reason_mapping_is_karpenters_enum() -> None:
    assert nodeclaim_reason("underutilized: replace by consolidation") == "underutilized"
    assert nodeclaim_reason("empty: delete by consolidation") == "empty"
    assert nodeclaim_reason("instance is gone") == "garbage_collected"
    assert nodeclaim_reason("not launched within 0:05:00") == "launch_timeout"
    assert nodeclaim_reason("node did not register within 0:15:00") == "registration_timeout"
    assert nodeclaim_reason("no launchable offering left (all unavailable or unpriced)") == "insufficient_capacity"
    assert nodeclaim_reason("replacement abandoned: x") is None
    assert consolidation_type(reason="empty", method="", nodes=3, replacements=0) == "empty"
    assert consolidation_type(reason="expired", method="", nodes=1, replacements=1) == ""


def test_disrupted_reasons_from_terminated_claims(viewer_client: Client, operator: User) -> None:
    now = timezone.now()
    for name, reason, disrupting in (("c1", "underutilized: replace by consolidation", True),
                                     ("c2", "instance is gone", False), ("c3", "instance is gone", True),
                                     ("c4", "not launched within 0:05:00", False),
                                     ("c5", "replacement abandoned: it failed", False)):
        NodeClaim.objects.create(name=name, nodepool_name="a", capacity_type="spot", created_at=now,
                                 disrupting_at=now if disrupting else None, terminated_at=now,
                                 termination_reason=reason)
    assert scrape(viewer_client)["karpenter_nodeclaims_disrupted_total"] == {
        L(reason="underutilized", nodepool="a", capacity_type="spot"): 1,
        L(reason="garbage_collected", nodepool="a", capacity_type="spot"): 1,   # c3 was being disrupted already
        L(reason="launch_timeout", nodepool="a", capacity_type="spot"): 1,
    }


def test_termination_duration_summary(viewer_client: Client, operator: User) -> None:
    now = timezone.now()
    for i, seconds in enumerate((10, 20, 30, 40, 100)):
        NodeClaim.objects.create(name=f"t{i}", nodepool_name="a", created_at=now - timedelta(hours=1),
                                 registered_at=now - timedelta(hours=1), disrupting_at=now - timedelta(seconds=seconds),
                                 terminated_at=now, termination_reason="empty: delete by consolidation")
    # Terminated an hour ago: counted in _count and _sum, outside the summary's 10-minute window.
    NodeClaim.objects.create(name="old", nodepool_name="a", created_at=now - timedelta(hours=3),
                             registered_at=now - timedelta(hours=3), disrupting_at=now - timedelta(hours=1, seconds=500),
                             terminated_at=now - timedelta(hours=1))
    m = scrape(viewer_client)
    q = m["karpenter_nodes_termination_duration_seconds"]
    assert q[L(nodepool="a", quantile="0")] == pytest.approx(10, abs=1)
    assert q[L(nodepool="a", quantile="0.5")] == pytest.approx(30, abs=1)
    assert q[L(nodepool="a", quantile="1")] == pytest.approx(100, abs=1)
    assert m["karpenter_nodes_termination_duration_seconds_count"][L(nodepool="a")] == 6
    assert m["karpenter_nodes_termination_duration_seconds_sum"][L(nodepool="a")] == pytest.approx(700, abs=1)


def test_pod_startups_recorded_once_and_pruned_into_the_carry(viewer_client: Client, operator: User) -> None:
    from console.telemetry.models import PodStartup

    now = timezone.now().replace(microsecond=0)

    def ready_pod(uid: str, created_ago: float, ready_ago: float) -> dict[str, Any]:
        stamp = (now - timedelta(seconds=ready_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"metadata": {"uid": uid, "name": uid, "creationTimestamp":
                             (now - timedelta(seconds=created_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
                                                               "lastTransitionTime": stamp}]}}

    pods = [ready_pod("p1", 100, 90), ready_pod("p2", 100, 70), ready_pod("p3", 60, 0),
            {"metadata": {"uid": "p4", "creationTimestamp": "2026-01-01T00:00:00Z"}, "status": {"phase": "Pending"}}]
    assert pod_startup.pod_startups_record(pods=pods, now=now) == 3
    pod_startup.pod_startups_record(pods=pods, now=now)             # the next minute sees the same pods
    assert PodStartup.objects.count() == 3
    m = scrape(viewer_client)
    assert m["karpenter_pods_startup_duration_seconds_count"][()] == 3
    assert m["karpenter_pods_startup_duration_seconds_sum"][()] == pytest.approx(10 + 30 + 60)
    assert m["karpenter_pods_startup_duration_seconds"][L(quantile="0.5")] == pytest.approx(30)
    assert m["karpenter_pods_startup_duration_seconds"][L(quantile="1")] == pytest.approx(60)
    # A day later the rows are folded into the carry: _count and _sum stay, the quantiles are empty (NaN).
    assert pod_startup.pod_startups_prune(now=now + timedelta(days=2)) == 3
    assert PodStartup.objects.count() == 0
    summary = pod_startup.pod_startup_summary(now=now + timedelta(days=2))
    assert (summary.count, summary.total, summary.quantiles) == (3, pytest.approx(100), {})


def test_loop_runs_are_counted_in_the_database(viewer_client: Client, operator: User) -> None:
    @loop_stats.timed("provisioner")
    def ok() -> str:
        return "done"

    @loop_stats.timed("provisioner")
    def broken() -> None:
        raise RuntimeError("boom")

    assert ok() == "done" and ok() == "done"
    with pytest.raises(RuntimeError):
        broken()
    loop_stats.scheduling_observe(controller="disruption", seconds=0.3)
    m = scrape(viewer_client)

    def counters(scraped: dict[str, dict[Labels, float]]) -> dict[str, dict[Labels, float]]:
        return {k: v for k, v in scraped.items() if k.startswith(("controller_runtime", "karpenter_scheduler_scheduling"))}

    # What another web process would serve: nothing of it lives in this process's memory.
    live_metrics.live_read_clear()
    assert counters(scrape(viewer_client)) == counters(m)
    total = m["controller_runtime_reconcile_total"]
    assert total[L(controller="provisioner", result="success")] == 2
    assert total[L(controller="provisioner", result="error")] == 1
    assert m["controller_runtime_reconcile_errors_total"][L(controller="provisioner")] == 1
    assert m["controller_runtime_reconcile_time_seconds_count"][L(controller="provisioner")] == 3
    assert m["controller_runtime_reconcile_time_seconds_bucket"][L(controller="provisioner", le="+Inf")] == 3
    assert m["controller_runtime_reconcile_time_seconds_bucket"][L(controller="provisioner", le="600")] == 3
    sched = m["karpenter_scheduler_scheduling_duration_seconds_bucket"]
    assert sched[L(controller="disruption", le="0.25")] == 0 and sched[L(controller="disruption", le="0.3")] == 1


def test_the_loop_tasks_are_timed_per_controller(db: Any, settings: Any) -> None:
    from console.control import tasks
    from console.telemetry.models import DurationStat

    settings.LOADMASTER_CLUSTER_NAME = "test"
    tasks.interruption()                 # an empty queue: one quick, successful run
    tasks.garbage_collect()
    runs = dict(DurationStat.objects.filter(metric=loop_stats.RECONCILE).values_list("controller", "runs"))
    assert runs == {"interruption": 1, "nodeclaim.garbagecollection": 1}
    assert tasks.provision.name == "console.control.tasks.provision"   # Celery's task names are unchanged


def test_eligible_nodes(viewer_client: Client, fleet: None) -> None:
    eligible = scrape(viewer_client)["karpenter_voluntary_disruption_eligible_nodes"]
    # n1 (pool a, initialized 2 h ago, consolidateAfter 0s) is the only node of an existing NodePool.
    assert eligible == {L(reason="empty"): 0, L(reason="underutilized"): 1, L(reason="drifted"): 0}
    NodeClaim.objects.filter(name="n1").update(disrupting_at=timezone.now())
    live_metrics.live_read_clear()
    from console.dashboards import selectors

    selectors.live_nodes_clear()
    assert set(scrape(viewer_client)["karpenter_voluntary_disruption_eligible_nodes"].values()) == {0}


def test_loadmaster_gauges(viewer_client: Client, fleet: None) -> None:
    m = scrape(viewer_client)
    assert m["loadmaster_cost_per_hour_dollars"][L(nodepool="", estimated="false")] == 3.0
    assert m["loadmaster_cost_per_hour_dollars"][L(nodepool="a", estimated="false")] == 1.0
    assert m["loadmaster_spot_savings_per_hour_dollars"][L(nodepool="")] == 2.0
    assert m["loadmaster_on_demand_cost_per_hour_dollars"][L(nodepool="a")] == 3.0
    # Per live node, price × (1 − binding share): n1 0.04 × (1 − 0.6/2), n2 0.17 × (1 − 3.1/4), and the
    # unmanaged node-u1 at the catalog's m5.large on-demand price × (1 − 0.25/2); node-u2 has no price.
    m5 = catalog_price("m5.large", "us-east-1a", "on-demand")
    assert m["loadmaster_stranded_capacity_per_hour_dollars"][()] == pytest.approx(0.028 + 0.03825 + m5 * 0.875)
    assert m["loadmaster_month_to_date_cost_dollars"][()] > 0
    assert m["loadmaster_unschedulable_pods"] == {L(nodepool="a", reason="limit cpu=8 would be exceeded"): 2}
    assert m["loadmaster_consolidation_savings_per_hour_dollars_total"] == {L(nodepool="b"): pytest.approx(0.4)}


def test_lower_bound_gauge_only_where_known(viewer_client: Client, fleet: None) -> None:
    from console.telemetry.models import MetricSample

    last = MetricSample.objects.filter(nodepool="").latest("at")
    MetricSample.objects.filter(at=last.at, nodepool="").update(lower_bound_per_hour=Decimal("1.25"))
    bound = scrape(viewer_client)["loadmaster_lower_bound_per_hour_dollars"]
    # The cluster's bound; pools a and b have none in this sample: no series, rather than a 0.
    assert bound == {L(nodepool=""): 1.25}


def test_unusable_nodepools_gauge(viewer_client: Client, fleet: None) -> None:
    from console.telemetry.models import NodePoolProblem

    now = timezone.now()
    NodePoolProblem.objects.create(nodepool="a", loop=NodePoolProblem.DISRUPT, reason="no instance type fits",
                                   since=now, seen_at=now)
    assert scrape(viewer_client)["loadmaster_nodepool_unusable"] == {L(nodepool="a", loop="disrupt"): 1}


def test_a_stopped_instance_is_disrupted_as_instance_stopped(viewer_client: Client, operator: User) -> None:
    now = timezone.now()
    NodeClaim.objects.create(name="s1", nodepool_name="a", capacity_type="on-demand", created_at=now,
                             deletion_requested_at=now, deletion_reason="instance stopping")
    Decision.objects.create(at=now, kind=Decision.INTERRUPTION, nodepool_name="a", nodes=["s1"], why="t",
                            details={"event": "state_change"})
    assert scrape(viewer_client)["karpenter_nodeclaims_disrupted_total"] == {
        L(reason="instance_stopped", nodepool="a", capacity_type="on-demand"): 1}


def test_a_series_is_never_written_twice() -> None:
    out = Exposition()
    out.family("x", "gauge", "x")
    out.sample("x", 'a="1"', 1)
    out.sample("x", 'a="1"', 2)
    assert out.duplicates == 1 and out.text().count("x{") == 1
    with pytest.raises(ValueError):
        out.family("x", "gauge", "again")


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian package prometheus) is not installed")
def test_promtool_accepts_the_exposition(viewer_client: Client, fleet: None) -> None:
    loop_stats.duration_observe(metric=loop_stats.RECONCILE, controller="disruption", seconds=0.2)
    loop_stats.scheduling_observe(controller="disruption", seconds=0.2)
    text = scrape_text(viewer_client)
    parse(text)  # and no duplicates
    result = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True, timeout=60)
    findings = [line for line in (result.stdout + result.stderr).decode().splitlines() if line.strip()]
    # Only Karpenter's own names, kept as Karpenter writes them (docs/dashboards.md lists them).
    assert sorted(findings) == [
        'karpenter_nodepools_cost_total non-counter metrics should not have "_total" suffix',
        'karpenter_scheduler_unschedulable_pods_count non-histogram and non-summary metrics should not have "_count" suffix',
    ]


def test_auth(db: Any, settings: Any) -> None:
    settings.LOADMASTER_METRICS_TOKEN = "s3cret-token"
    assert Client().get("/metrics").status_code == 401
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert scrape(Client(), HTTP_AUTHORIZATION="Bearer s3cret-token") is not None
    settings.LOADMASTER_METRICS_TOKEN = ""
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401
    settings.LOADMASTER_METRICS_PUBLIC = True
    assert Client().get("/metrics").status_code == 200


def test_balanced_consolidation_metrics_have_karpenters_names_types_and_labels(viewer_client: Client) -> None:
    from console.telemetry.consolidation_scores import consolidation_scores_observe
    from packing.api import MoveDecision, ScoreObservation

    text = scrape_text(viewer_client)
    assert "# TYPE karpenter_consolidation_moves_total counter" in text
    assert "# TYPE karpenter_consolidation_score histogram" in text
    consolidation_scores_observe(observations=[
        ScoreObservation("a", "Balanced", 0.3, MoveDecision.REJECTED),
        ScoreObservation("a", "Balanced", 0.5, MoveDecision.APPROVED),
        ScoreObservation("b", "WhenEmptyOrUnderutilized", None, MoveDecision.APPROVED)])
    m = scrape(viewer_client)
    assert m["karpenter_consolidation_moves_total"] == {
        L(decision="rejected", nodepool="a", policy="Balanced"): 1,
        L(decision="approved", nodepool="a", policy="Balanced"): 1,
        L(decision="approved", nodepool="b", policy="WhenEmptyOrUnderutilized"): 1}
    rejected = L(decision="rejected", nodepool="a", policy="Balanced")
    buckets = {dict(k)["le"]: v for k, v in m["karpenter_consolidation_score_bucket"].items()
               if dict(k)["decision"] == "rejected"}
    assert buckets == {"0.1": 0, "0.25": 0, "0.33": 1, "0.5": 1, "1": 1, "2": 1, "5": 1, "10": 1, "+Inf": 1}
    assert m["karpenter_consolidation_score_count"][rejected] == 1
    assert m["karpenter_consolidation_score_sum"][rejected] == 0.3
    # a pool that is not Balanced is counted, never scored
    assert all(dict(k)["nodepool"] == "a" for k in m["karpenter_consolidation_score_count"])


def test_eligible_nodes_read_timed_do_not_disrupt_as_the_engine_does(fleet: None) -> None:
    # n1 was created 2 h ago: "30m" on it has run out (eligible again), "3h" and "true" still protect it, on
    # the node or on one of its pods (web-1 was created with the cluster, now).
    from dataclasses import replace

    from console.backends.factory import cluster_backend

    now = timezone.now()
    read = live_metrics.live_read(cluster=cluster_backend(), now=now)
    pool = list(NodePool.objects.all())
    assert live_metrics.eligible_nodes(read, pool, now=now)["underutilized"] == 1

    def annotated(obj: Any, value: str) -> Any:
        meta = obj["metadata"]
        return {**obj, "metadata": {**meta, "annotations": {**(meta.get("annotations") or {}),
                                                              "karpenter.sh/do-not-disrupt": value}}}

    def count(node_value: str | None = None, pod_value: str | None = None, at: Any = now) -> int:
        nodes = dict(read.node_objects)
        if node_value is not None:
            nodes["node-n1"] = annotated(nodes["node-n1"], node_value)
        pods = [annotated(p, pod_value) if pod_value is not None and p["metadata"]["name"] == "web-1" else p
                for p in read.pods]
        return live_metrics.eligible_nodes(replace(read, node_objects=nodes, pods=pods), pool, now=at)["underutilized"]

    assert (count("30m"), count("3h"), count("true"), count("false")) == (1, 0, 0, 1)
    assert (count(pod_value="true"), count(pod_value="30m"), count(pod_value="30m", at=now + timedelta(hours=1))) \
        == (0, 0, 1)
