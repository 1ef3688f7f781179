"""Proof with the real thing: Prometheus scrapes the console (bearer token, job "karpenter") while the
simulated world moves — launches, an empty node consolidated, a spot interruption and its
replacement, a pod nobody can schedule — then every panel query of Karpenter's two dashboards
(tests/prometheus/karpenter_panels.yaml) and of Loadmaster's own (deploy/grafana/loadmaster.json)
runs through Prometheus' HTTP API: each must return series with the labels the panel groups by, and
the figures must agree with the console's own."""

from __future__ import annotations

import json
import math
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.utils import timezone

from console.dashboards import live_metrics
from console.fleet.models import Decision, NodeClaim
from console.simulation.config import SimulationConfig
from console.telemetry import loop_stats
from tests.prometheus.harness import ConsoleServer, Prometheus, running
from tests.simulation.conftest import Clock, pod

PROMETHEUS = shutil.which("prometheus")
ROOT = Path(__file__).resolve().parents[2]
PANELS = yaml.safe_load((Path(__file__).parent / "karpenter_panels.yaml").read_text())
TOKEN = "prometheus-test-token"

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(PROMETHEUS is None, reason="the prometheus binary is not installed (apt-get install -y prometheus)"),
]


class World:
    """The simulated cluster and cloud on a clock that starts at the real now (Prometheus reads the
    console at wall-clock time) and runs ahead of it as the loops wait for boots and notices."""

    def __init__(self, settings: Any, server: ConsoleServer) -> None:
        from django.contrib.auth.models import User

        from console.fleet import services as fleet
        from console.simulation import services
        from console.simulation.cloud import SimulatedCloud
        from console.simulation.cluster import SimulatedCluster
        from tests.console_pages import NODECLASS

        self.server = server
        self.clock = Clock(now=timezone.now().replace(microsecond=0))
        self.config = SimulationConfig(cluster_name="test", seed=7, demo_workloads=False, spot_interruptions_per_hour=0.0,
                                       state_changes_per_hour=0.0, replica_noise=0.0)
        with server.lock:
            services.simulation_reset(seed=7, now=self.clock(), config=self.config)
            user = User.objects.create_user("ops")
            fleet.nodeclass_create(values=NODECLASS, user=user)
            for name, capacity in (("spot", "spot"), ("general", "on-demand")):
                fleet.nodepool_create(values={
                    "name": name, "node_class_name": "default", "consolidate_after": "0s",
                    "budgets": [{"nodes": "100%"}], "limits": {"cpu": "200", "memory": "800Gi"},
                    "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": [capacity]},
                                     {"key": "karpenter.k8s.aws/instance-category", "operator": "In",
                                      "values": ["c", "m"]}]}, user=user)
        self.cluster = SimulatedCluster(clock=self.clock, sleep=lambda _: None)
        self.cloud = SimulatedCloud(self.config, clock=self.clock)
        self._services = services

    def step(self, fn: Callable[..., Any], controller: str, **kwargs: Any) -> Any:
        """One run of a loop, timed as its Celery task is, while no scrape reads the database."""
        with self.server.lock:
            return loop_stats.timed(controller)(fn)(now=self.clock(), **kwargs)

    def advance(self, seconds: float) -> None:
        with self.server.lock:
            self.clock.advance(seconds)
            self._services.simulation_tick(now=self.clock(), config=self.config)

    def apply(self, *bodies: dict[str, Any]) -> None:
        with self.server.lock:
            for body in bodies:
                self.cluster.apply(body)

    def provision(self) -> Any:
        from console.control.provisioning import provision_run

        return self.step(provision_run, loop_stats.PROVISIONER, cluster=self.cluster, cloud=self.cloud)

    def settle(self, rounds: int = 8) -> None:
        from console.control.lifecycle import garbage_collect_run, lifecycle_run

        for _ in range(rounds):
            self.advance(10)
            self.step(lifecycle_run, loop_stats.LIFECYCLE, cluster=self.cluster, cloud=self.cloud)
        self.step(garbage_collect_run, loop_stats.GARBAGE_COLLECTION, cluster=self.cluster, cloud=self.cloud)

    def disrupt(self, rounds: int) -> None:
        from console.control.disruption import disrupt_run
        from console.control.lifecycle import lifecycle_run

        for _ in range(rounds):
            self.step(disrupt_run, loop_stats.DISRUPTION, cluster=self.cluster, cloud=self.cloud)
            self.advance(10)
            self.step(lifecycle_run, loop_stats.LIFECYCLE, cluster=self.cluster, cloud=self.cloud)

    def record_metrics(self) -> None:
        from console.control.metrics import metrics_record

        with self.server.lock:
            # At the real now: the month-to-date and the overview read samples up to the wall clock.
            loop_stats.timed(loop_stats.METRICS)(metrics_record)(cluster=self.cluster, now=timezone.now())


def run_scenario(world: World, pause: Callable[[], None]) -> None:
    """`pause` waits for a scrape between the phases, so Prometheus sees the counters rise."""
    from console.control.lifecycle import interruption_run

    world.apply(*(pod(f"web-{i}", namespace="shop", cpu="1", memory="2Gi", owner="ReplicaSet/web-abc",
                      node_selector={"karpenter.sh/nodepool": "spot"}) for i in range(5)),
                *(pod(f"api-{i}", namespace="api", cpu="500m", memory="1Gi", owner="ReplicaSet/api-abc",
                      node_selector={"karpenter.sh/nodepool": "general"}) for i in range(2)),
                pod("batch-0", namespace="jobs", cpu="2", memory="1Gi", owner="Job/batch",
                    node_selector={"karpenter.sh/nodepool": "general"}))
    world.advance(1)
    assert world.provision().launched
    world.settle()
    world.record_metrics()
    pause()

    # The general pool's work is done: its nodes are empty, and consolidation removes them.
    with world.server.lock:
        for p in ("api-0", "api-1"):
            world.cluster.delete("Pod", p, "api")
        world.cluster.delete("Pod", "batch-0", "jobs")
    world.disrupt(rounds=6)
    world.record_metrics()
    pause()

    # A spot interruption: cordon and drain, the pods come back pending and get a new node; the
    # reclaimed instance goes away and garbage collection ends its claim.
    spot = NodeClaim.objects.active().filter(capacity_type="spot", initialized_at__isnull=False).first()
    assert spot is not None
    with world.server.lock:
        assert world.cloud.interrupt(spot.instance_id)
    world.advance(1)
    assert world.step(interruption_run, loop_stats.INTERRUPTION, cluster=world.cluster, cloud=world.cloud).handled
    world.advance(2)
    world.provision()
    world.settle()
    world.advance(130)
    world.settle(rounds=2)
    pause()
    # A pod no NodePool can run stays pending.
    world.apply(pod("huge", namespace="shop", cpu="500", memory="1Gi"))
    world.advance(1)
    world.provision()
    world.advance(1)
    world.record_metrics()


def grafana_escape(value: str) -> str:
    """A value as Grafana's Prometheus data source puts it in a regex matcher: each regex
    metacharacter behind a backslash, itself doubled inside the PromQL string."""
    return re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\\\1", value)


def _substitute_all(prom: Prometheus, query: str) -> str:
    """Grafana's "All" for a label_values variable without a custom all value: every value, as a regex."""
    def render(m: re.Match[str]) -> str:
        label = m.group(1)
        values = prom.label_values(label, "karpenter_nodes_allocatable")
        return f'{label}=~"({"|".join(grafana_escape(v) for v in values)})"'

    return re.sub(r'\b(nodepool|zone|arch|capacity_type|instance_type)=~"\.\*"', render, query)


def _check(prom: Prometheus, where: str, query: str, group_by: list[str], problems: list[str]) -> list[dict[str, Any]]:
    try:
        series = prom.query(query)
    except AssertionError as exc:
        problems.append(f"{where}: {exc}")
        return []
    if not series:
        problems.append(f"{where}: no series for {query}")
    elif not any(all(s["metric"].get(label) for label in group_by) for s in series):
        problems.append(f"{where}: no series carries {group_by}: {[s['metric'] for s in series][:5]}")
    return series


def _value(prom: Prometheus, query: str) -> float:
    series = prom.query(query)
    assert len(series) == 1, (query, series)
    return float(series[0]["value"][1])


def loadmaster_queries() -> list[tuple[str, str]]:
    board = json.loads((ROOT / "deploy" / "grafana" / "loadmaster.json").read_text())
    out = []
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"].replace("$__rate_interval", "1m").replace("$__range", "1h")
            expr = expr.replace('nodepool=~"$nodepool"', 'nodepool=~".*"')
            out.append((panel["title"], expr))
    return out


def test_every_panel_query_of_the_dashboards_returns_series(settings: Any, tmp_path: Path) -> None:
    settings.LOADMASTER_METRICS_TOKEN = TOKEN
    settings.LOADMASTER_DASHBOARD_LIVE_SECONDS = 0       # every scrape sees the world as it is
    settings.LOADMASTER_CLUSTER_NAME = "test"
    live_metrics.live_read_clear()
    assert PROMETHEUS is not None
    with running(PROMETHEUS, tmp_path, TOKEN) as (server, prom):
        world = World(settings, server)
        prom.scrapes_after(time.time() - 5, count=1)       # scraping (with the token) before anything moves
        run_scenario(world, pause=lambda: prom.scrapes_after(time.time(), count=1))
        prom.scrapes_after(time.time(), count=3)
        problems: list[str] = []

        for var in PANELS["variables"]:
            if not prom.label_values(var["label"], var["match"]):
                problems.append(f"variable ${var['name']}: label_values({var['match']}, {var['label']}) is empty")
        for panel in PANELS["panels"]:
            where = f"{panel['dashboard']} / {panel['panel']}"
            series = _check(prom, where, panel["query"], panel["group_by"], problems)
            # The latencies were observed within the summaries' window: figures, not NaN.
            if panel["dashboard"] == "performance" and any(math.isnan(float(s["value"][1])) for s in series):
                problems.append(f"{where}: NaN ({series})")
            if '=~".*"' in panel["query"]:
                _check(prom, f"{where} (All as Grafana renders it)", _substitute_all(prom, panel["query"]),
                       panel["group_by"], problems)
        for controller in PANELS["controllers"]:
            for expr in PANELS["controller_latency"]:
                where = f"performance / Controller Reconciliation Latency [{controller}]"
                series = _check(prom, where, expr.replace("$controller", controller), [], problems)
                # (the 0-quantile of a histogram is NaN in Prometheus whenever the first bucket is empty)
                if not expr.startswith("histogram_quantile(0,") and any(math.isnan(float(s["value"][1])) for s in series):
                    problems.append(f"{where}: NaN for {expr}")
        for title, expr in loadmaster_queries():
            _check(prom, f"loadmaster / {title}", expr, [], problems)
        if problems:
            scrapes = prom.query('count_over_time(up{job="karpenter"}[1m])')
            ok = prom.query('sum_over_time(up{job="karpenter"}[1m])')
            took = prom.query('max_over_time(scrape_duration_seconds{job="karpenter"}[1m])')
            problems.append(f"scrapes in the last minute: {scrapes}, successful: {ok}, slowest: {took}")
        assert not problems, "\n".join(problems)

        # The figures agree with the console's own.
        from console.dashboards import selectors
        from console.telemetry.models import MetricSample

        last = MetricSample.objects.filter(nodepool="").latest("at")
        live_nodes = len(world.cluster.list_nodes()[0])
        assert _value(prom, 'count(karpenter_nodes_allocatable{resource_type="cpu"})') == live_nodes == last.nodes
        assert _value(prom, 'count(karpenter_pods_state{phase="Pending"})') == last.pods_pending == \
            len(world.cluster.pending_pods()) >= 1
        assert _value(prom, 'karpenter_scheduler_unschedulable_pods_count') == last.pods_pending
        # The voluntary ones: the ledger also records the termination of the interrupted claim there.
        disruptions = Decision.objects.filter(kind=Decision.DISRUPTION).exclude(details__has_key="termination").count()
        assert disruptions >= 1
        assert _value(prom, "sum(karpenter_voluntary_disruption_decisions_total)") == disruptions
        assert _value(prom, 'sum(karpenter_voluntary_disruption_decisions_total{reason="empty"})') >= 1
        interruptions = Decision.objects.filter(kind=Decision.INTERRUPTION).count()
        assert _value(prom, 'sum(karpenter_nodeclaims_disrupted_total{reason="spot_interrupted"})') == interruptions == 1
        cost = float(last.cost_per_hour)
        assert _value(prom, "sum(karpenter_nodepools_cost_total)") == pytest.approx(cost, abs=1e-6)
        assert _value(prom, 'loadmaster_cost_per_hour_dollars{nodepool=""}') == pytest.approx(cost, abs=1e-6)
        summary = selectors.cost_summary()
        assert _value(prom, "loadmaster_month_to_date_cost_dollars") == pytest.approx(summary.month_to_date, rel=1e-6)
        created = NodeClaim.objects.filter(registered_at__isnull=False).count()
        assert _value(prom, "sum(karpenter_nodes_created_total)") == created
        assert _value(prom, 'sum(controller_runtime_reconcile_total{controller="disruption"})') >= 6
        assert server.requests >= 3
