"""Dashboard benchmark: ``python -m console.dashboards.bench [--days 30] [--nodes 200] [--pools 4]``.

Builds a throwaway SQLite database (never the console's own) with `days` of 1-minute samples for
the cluster and each pool, `nodes` live NodeClaims plus churned ones and their decisions, then
prints each page's server time (median of 3) per window. Without --keep the database is deleted.

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
TYPES = [("m5.large", 2, 8, 0.096), ("m5.xlarge", 4, 16, 0.192), ("c5.2xlarge", 8, 16, 0.34),
         ("r6g.xlarge", 4, 32, 0.2016), ("m7g.4xlarge", 16, 64, 0.6528)]


def _setup(tmp: str) -> None:
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


def _generate(days: int, nodes: int, pools: int, seed: int) -> None:
    from django.utils import timezone

    from console.control.models import MetricSample
    from console.fleet.models import Decision, NodeClaim

    rnd = random.Random(seed)
    now = timezone.now().replace(second=0, microsecond=0)
    names = [f"pool-{i}" for i in range(pools)]
    per_pool = nodes // pools
    batch: list[MetricSample] = []
    for m in range(days * 24 * 60):
        at = now - timedelta(minutes=m)
        day = 0.75 + 0.25 * ((m // 60) % 24) / 24  # a daily swell
        totals: dict[str, float] = dict.fromkeys(("cost", "od", "ca", "cr", "ma", "mr", "n", "s", "p"), 0.0)
        for pool in names:
            n = max(1, int(per_pool * day))
            s = n * 2 // 3
            cost, od = n * 0.2 - s * 0.12, n * 0.2
            ca, ma = n * 4000, n * 16 * 2**30
            cr, mr = int(ca * rnd.uniform(0.5, 0.9)), int(ma * rnd.uniform(0.4, 0.8))
            batch.append(MetricSample(at=at, nodepool=pool, nodes=n, spot_nodes=s, cost_per_hour=Decimal(f"{cost:.6f}"),
                                      on_demand_cost_per_hour=Decimal(f"{od:.6f}"), cpu_allocatable=ca, cpu_requested=cr,
                                      memory_allocatable=ma, memory_requested=mr, pods=n * 12, estimated=m % 97 == 0))
            for k, v in zip(("cost", "od", "ca", "cr", "ma", "mr", "n", "s", "p"), (cost, od, ca, cr, ma, mr, n, s, n * 12),
                            strict=True):
                totals[k] += v
        pending = rnd.choice([0, 0, 0, 1, 3])
        batch.append(MetricSample(
            at=at, nodepool="", nodes=int(totals["n"]), spot_nodes=int(totals["s"]),
            cost_per_hour=Decimal(f"{totals['cost']:.6f}"), on_demand_cost_per_hour=Decimal(f"{totals['od']:.6f}"),
            cpu_allocatable=int(totals["ca"]), cpu_requested=int(totals["cr"]), memory_allocatable=int(totals["ma"]),
            memory_requested=int(totals["mr"]), pods=int(totals["p"]), pods_pending=pending,
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
    kinds = [Decision.LAUNCH, Decision.DISRUPTION, Decision.INTERRUPTION, Decision.FAILURE, Decision.UNSCHEDULABLE]
    Decision.objects.bulk_create([
        Decision(at=now - timedelta(minutes=rnd.randrange(days * 24 * 60)), kind=rnd.choice(kinds),
                 nodepool_name=rnd.choice(names), why="bench", cost_before=Decimal("1.0"), cost_after=Decimal("0.7"),
                 details={"pod": f"default/p{i}", "reasons": [{"nodepool": "pool-0", "reason": "limit"}]})
        for i in range(nodes * 20)], batch_size=1000)


def _time_pages(repeat: int) -> list[tuple[str, str, float]]:
    from django.contrib.auth.models import User
    from django.test import Client

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
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m console.dashboards.bench")
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--pools", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="keep the temporary database and print its path")
    args = parser.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="lm-dash-bench-")
    try:
        _setup(tmp)
        t = time.perf_counter()
        _generate(args.days, args.nodes, args.pools, args.seed)
        from console.control.models import MetricSample

        print(f"generated {MetricSample.objects.count():,} samples ({args.days} days, {args.pools} pools + cluster), "
              f"{args.nodes} live nodes in {time.perf_counter() - t:.1f} s")
        worst = 0.0
        print(f"{'page':32} {'window / pool':16} {'ms':>8}")
        for page, variant, ms in _time_pages(args.repeat):
            worst = max(worst, ms)
            print(f"{page:32} {variant:16} {ms:8.1f}")
        print(f"slowest page: {worst:.1f} ms (target 500 ms)")
        return 0 if worst < 500 else 1
    finally:
        if args.keep:
            print(f"database kept in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
