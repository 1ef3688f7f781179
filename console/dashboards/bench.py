"""Dashboard benchmark: ``python -m console.dashboards.bench [--days 30] [--nodes 200 1000] [--pools 4]``.

Builds a throwaway SQLite database (never the console's own) with `days` of 1-minute samples for
the cluster and each pool (lower bound included), rolls them up into hours and prunes the minutes
past the retention as record_metrics does, puts `nodes` live nodes with their pods (a DaemonSet pod
on each) in the simulated cluster, with NodeClaims plus churned ones and their decisions, then prints
each page's server time (median of 3) per window. Several --nodes sizes run one after the other
on fresh data. Without --keep the database is deleted.

The module doubles as the URLconf of its run, so it works before console/urls.py mounts the app."""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.urls import include, path

urlpatterns: list[Any] = []

PAGES = ["/dashboards/", "/dashboards/binpacking/", "/dashboards/spot/", "/dashboards/unschedulable/",
         "/dashboards/cost/", "/metrics"]
PODS_PER_NODE = 10  # nine workload pods and one DaemonSet pod
TYPES = [("m5.large", 2, 8, 0.096), ("m5.xlarge", 4, 16, 0.192), ("c5.2xlarge", 8, 16, 0.34),
         ("r6g.xlarge", 4, 32, 0.2016), ("m7g.4xlarge", 16, 64, 0.6528)]


def setup_scratch_database(tmp: str) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp}/bench.sqlite3"
    os.environ["LOADMASTER_VAR_DIR"] = tmp
    os.environ.setdefault("SECRET_KEY", "dashboards-bench-only-" + "x" * 40)
    os.environ["DJANGO_SETTINGS_MODULE"] = "console.settings"
    import django
    from django.conf import settings

    django.setup()
    settings.ROOT_URLCONF = __name__
    settings.ALLOWED_HOSTS = ["*"]
    from console.urls import urlpatterns as console_urls

    urlpatterns[:] = [path("", include("console.dashboards.urls")), *console_urls]
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def generate(days: int, nodes: int, pools: int, seed: int) -> None:
    from django.utils import timezone

    from console.fleet.models import Decision, NodeClaim
    from console.telemetry.models import MetricSample

    rnd = random.Random(seed)
    now = timezone.now().replace(second=0, microsecond=0)
    names = [f"pool-{i}" for i in range(pools)]
    per_pool = nodes // pools
    batch: list[MetricSample] = []
    for m in range(days * 24 * 60):
        at = now - timedelta(minutes=m)
        day = 0.75 + 0.25 * ((m // 60) % 24) / 24  # a daily swell
        totals: dict[str, float] = dict.fromkeys(("cost", "od", "ca", "cr", "ma", "mr", "n", "s", "p", "lb"), 0.0)
        for pool in names:
            n = max(1, int(per_pool * day))
            s = n * 2 // 3
            cost, od = n * 0.2 - s * 0.12, n * 0.2
            ca, ma = n * 4000, n * 16 * 2**30
            cr, mr = int(ca * rnd.uniform(0.5, 0.9)), int(ma * rnd.uniform(0.4, 0.8))
            bound = cost * rnd.uniform(0.6, 0.9)
            batch.append(MetricSample(at=at, nodepool=pool, nodes=n, spot_nodes=s, cost_per_hour=Decimal(f"{cost:.6f}"),
                                      on_demand_cost_per_hour=Decimal(f"{od:.6f}"), cpu_allocatable=ca, cpu_requested=cr,
                                      memory_allocatable=ma, memory_requested=mr, pods=n * 12, estimated=m % 97 == 0,
                                      lower_bound_per_hour=None if m % 53 == 0 else Decimal(f"{bound:.6f}")))
            for k, v in zip(("cost", "od", "ca", "cr", "ma", "mr", "n", "s", "p", "lb"),
                            (cost, od, ca, cr, ma, mr, n, s, n * 12, bound), strict=True):
                totals[k] += v
        pending = rnd.choice([0, 0, 0, 1, 3])
        batch.append(MetricSample(
            at=at, nodepool="", nodes=int(totals["n"]), spot_nodes=int(totals["s"]),
            cost_per_hour=Decimal(f"{totals['cost']:.6f}"), on_demand_cost_per_hour=Decimal(f"{totals['od']:.6f}"),
            cpu_allocatable=int(totals["ca"]), cpu_requested=int(totals["cr"]), memory_allocatable=int(totals["ma"]),
            memory_requested=int(totals["mr"]), pods=int(totals["p"]), pods_pending=pending,
            lower_bound_per_hour=None if m % 53 == 0 else Decimal(f"{totals['lb']:.6f}"),
            unschedulable_reasons={"nodepool pool-0: limit cpu=1000 would be exceeded": pending} if pending else {}))
        if len(batch) >= 5000:
            MetricSample.objects.bulk_create(batch)
            batch = []
    MetricSample.objects.bulk_create(batch)

    claims = []
    for i in range(nodes * 5):  # the live fleet plus four times as many churned claims over the month
        itype, cpu, mem, price = rnd.choice(TYPES)
        created = now - timedelta(minutes=rnd.randrange(days * 24 * 60))
        live = i < nodes
        claims.append(NodeClaim(
            name=f"claim-{i}", nodepool_name=names[i % pools], instance_type=itype,
            capacity_type=rnd.choice(["spot", "spot", "on-demand"]), zone="us-east-1a",
            price_per_hour=Decimal(str(price)), price_source="snapshot", node_name=f"node-{i}",
            allocatable={"cpu": f"{cpu * 1000 - 100}m", "memory": f"{mem * 1024 - 800}Mi", "pods": "58"},
            capacity={"cpu": str(cpu), "memory": f"{mem}Gi", "pods": "58"},
            requests={"cpu": f"{rnd.randrange(100, cpu * 900)}m", "memory": f"{rnd.randrange(100, mem * 900)}Mi",
                      "pods": str(rnd.randrange(1, 40))},
            created_at=created, launched_at=created, registered_at=created, initialized_at=created,
            terminated_at=None if live else min(now, created + timedelta(hours=rnd.randrange(1, 72))),
            termination_reason="" if live else "consolidated"))
    NodeClaim.objects.bulk_create(claims, batch_size=1000)
    _live_cluster(claims[:nodes], rnd)
    kinds = [Decision.LAUNCH, Decision.DISRUPTION, Decision.INTERRUPTION, Decision.FAILURE, Decision.UNSCHEDULABLE]
    Decision.objects.bulk_create([
        Decision(at=now - timedelta(minutes=rnd.randrange(days * 24 * 60)), kind=rnd.choice(kinds),
                 nodepool_name=rnd.choice(names), why="bench", cost_before=Decimal("1.0"), cost_after=Decimal("0.7"),
                 details={"pod": f"default/p{i}", "reasons": [{"nodepool": "pool-0", "reason": "limit"}]})
        for i in range(nodes * 20)], batch_size=1000)


def _live_cluster(claims: list[Any], rnd: random.Random) -> None:
    """The live nodes behind the live claims, each with PODS_PER_NODE pods (one of a DaemonSet), as
    rows of the simulated cluster (written in bulk: this is bench data, not a simulation step)."""
    from console.simulation.models import SimObject

    rows: list[SimObject] = []

    def add(kind: str, name: str, body: dict[str, Any], namespace: str = "", node: str = "") -> None:
        rv = len(rows) + 1
        body["metadata"].update(uid=f"uid-{rv}", resourceVersion=str(rv))
        rows.append(SimObject(kind=kind, namespace=namespace, name=name, uid=f"uid-{rv}", resource_version=rv,
                              created_version=rv, node_name=node, body=body))

    for c in claims:
        labels = {"kubernetes.io/hostname": c.node_name, "karpenter.sh/nodepool": c.nodepool_name,
                  "node.kubernetes.io/instance-type": c.instance_type, "karpenter.sh/capacity-type": c.capacity_type,
                  "topology.kubernetes.io/zone": c.zone, "karpenter.sh/initialized": "true"}
        add("Node", c.node_name, {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": c.node_name, "labels": labels, "creationTimestamp": c.created_at.strftime("%Y-%m-%dT%H:%M:%SZ")},
            "spec": {}, "status": {"allocatable": c.allocatable, "capacity": c.capacity}})
        cpu_m = int(c.allocatable["cpu"].rstrip("m"))
        for j in range(PODS_PER_NODE):
            daemon = j == 0
            name = f"agent-{c.node_name}" if daemon else f"app-{c.node_name}-{j}"
            owner = {"apiVersion": "apps/v1", "kind": "DaemonSet" if daemon else "ReplicaSet",
                     "name": "agent" if daemon else f"app-{j}", "controller": True, "uid": f"owner-{j}"}
            requests = {"cpu": f"{100 if daemon else rnd.randrange(50, max(60, cpu_m // PODS_PER_NODE))}m",
                        "memory": f"{128 if daemon else rnd.randrange(64, 1024)}Mi"}
            add("Pod", name, {"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": name, "namespace": "bench", "ownerReferences": [owner], "labels": {"app": owner["name"]}},
                "spec": {"nodeName": c.node_name, "containers": [{"name": "c", "image": "x",
                                                                   "resources": {"requests": requests}}]},
                "status": {"phase": "Running"}}, namespace="bench", node=c.node_name)
    SimObject.objects.bulk_create(rows, batch_size=2000)


def _roll_up() -> tuple[int, int]:
    """What record_metrics does at each hour boundary, all at once: roll up, then prune."""
    from django.utils import timezone

    from console.telemetry import services

    now = timezone.now()
    return services.metric_rollups_catch_up(now=now), services.metric_samples_prune(now=now)


def _wipe() -> None:
    from django.contrib.auth.models import User

    from console.fleet.models import Decision, EC2NodeClass, NodeClaim, NodePool
    from console.simulation.models import SimObject
    from console.telemetry.models import MetricRollup, MetricSample

    for model in (MetricSample, MetricRollup, NodeClaim, Decision, SimObject, NodePool, EC2NodeClass, User):
        model.objects.all().delete()


def _time_record(pools: int) -> dict[str, float]:
    """record_metrics on the live cluster, in seconds: the first run (lower bounds computed for every
    pool and the cluster), a second on the same pods (bounds from the cache), and one after a pod of
    a new size appeared (bounds recomputed)."""
    from django.contrib.auth.models import User

    from console.control import metrics
    from console.fleet import services
    from console.simulation.cluster import SimulatedCluster
    from console.simulation.models import SimObject

    user = User.objects.create_user("bench-ops")
    services.nodeclass_create(values={
        "name": "default", "ami_family": "AL2023", "ami_selector_terms": [{"alias": "al2023@latest"}],
        "subnet_selector_terms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
        "security_group_selector_terms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
        "role": "KarpenterNodeRole-bench"}, user=user)
    for i in range(pools):
        services.nodepool_create(values={"name": f"pool-{i}", "node_class_name": "default"}, user=user)
    cluster = SimulatedCluster()
    metrics.lower_bound_cache_clear()
    out = {}
    for label in ("first", "cached"):
        t = time.perf_counter()
        metrics.metrics_record(cluster=cluster)
        out[label] = time.perf_counter() - t
    row = SimObject.objects.filter(kind="Pod").exclude(name__startswith="agent-").first()
    if row is not None:
        body = row.body
        body["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "777m"
        row.body = body
        row.save(update_fields=["body"])
    t = time.perf_counter()
    metrics.metrics_record(cluster=cluster)
    out["one pod changed"] = time.perf_counter() - t
    return out


def _time_pages(repeat: int) -> list[tuple[str, str, float]]:
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.test import Client

    # The table is of pages reusing one live read, as they do between two reads; the cold reads
    # are timed apart below.
    settings.LOADMASTER_DASHBOARD_LIVE_SECONDS = 3600

    client = Client()
    client.force_login(User.objects.create_superuser("bench", password="bench-only-password"))
    results = []
    for page in PAGES:
        for window in ("1h", "24h", "7d", "30d") if page != "/metrics" else ("-",):
            for pool in ("", "pool-1") if page != "/metrics" else ("",):
                times = []
                for _ in range(repeat):
                    t = time.perf_counter()
                    r = client.get(page, {"window": window, "nodepool": pool} if window != "-" else {})
                    times.append(time.perf_counter() - t)
                    if r.status_code != 200:
                        raise SystemExit(f"{page} answered {r.status_code}")
                results.append((page, f"{window} {pool or 'cluster'}".strip(), statistics.median(times) * 1000))
    # The pages above reuse one live read (LOADMASTER_DASHBOARD_LIVE_SECONDS); the request that finds it
    # expired pays the read: timed here on its own, once per page that reads the live cluster.
    from console.dashboards import selectors

    for page, query in (("/dashboards/", {"window": "24h"}), ("/dashboards/binpacking/", {"window": "24h"}),
                        ("/metrics", {})):
        times = []
        for _ in range(repeat):
            selectors.live_nodes_clear()
            t = time.perf_counter()
            client.get(page, query)
            times.append(time.perf_counter() - t)
        results.append((page, "live read (cold)", statistics.median(times) * 1000))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m console.dashboards.bench")
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--nodes", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--pools", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="keep the temporary database and print its path")
    args = parser.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="lm-dash-bench-")
    try:
        setup_scratch_database(tmp)
        from console.telemetry.models import MetricRollup, MetricSample

        table: dict[tuple[str, str], dict[int, float]] = {}
        worst: dict[int, float] = {}
        for nodes in args.nodes:
            _wipe()
            t = time.perf_counter()
            generate(args.days, nodes, args.pools, args.seed)
            generated = MetricSample.objects.count()
            t_gen = time.perf_counter() - t
            t = time.perf_counter()
            rolled, pruned = _roll_up()
            print(f"{nodes} nodes: generated {generated:,} minute samples ({args.days} days, {args.pools} pools + cluster) "
                  f"and {nodes * PODS_PER_NODE:,} live pods in {t_gen:.1f} s; rolled up {rolled:,} hours and pruned "
                  f"{pruned:,} minutes in {time.perf_counter() - t:.1f} s; {MetricSample.objects.count():,} minutes and "
                  f"{MetricRollup.objects.count():,} hourly rows remain")
            record = _time_record(args.pools)
            print(f"{nodes} nodes, {nodes * (PODS_PER_NODE - 1):,} workload pods: record_metrics "
                  + ", ".join(f"{k} {v:.2f} s" for k, v in record.items()))
            for page, variant, ms in _time_pages(args.repeat):
                table.setdefault((page, variant), {})[nodes] = ms
                if "cold" not in variant:
                    worst[nodes] = max(worst.get(nodes, 0.0), ms)
        print(f"{'page':32} {'window / pool':16} " + " ".join(f"{f'{n} nodes ms':>14}" for n in args.nodes))
        for (page, variant), by_size in table.items():
            print(f"{page:32} {variant:16} " + " ".join(f"{by_size.get(n, float('nan')):14.1f}" for n in args.nodes))
        for n in args.nodes:
            print(f"slowest page with {n} nodes: {worst[n]:.1f} ms (target 500 ms; cold live reads listed apart)")
        return 0 if all(w < 500 for w in worst.values()) else 1
    finally:
        if args.keep:
            print(f"database kept in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
