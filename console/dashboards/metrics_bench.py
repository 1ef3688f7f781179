"""/metrics benchmark: ``python -m console.dashboards.metrics_bench [--nodes 1000] [--repeat 5]``.

Builds a throwaway SQLite database as ``console.dashboards.bench`` does (a day of samples, N live
nodes of the simulated cluster with 10 pods each, 5 × N NodeClaims, 20 × N decisions), adds the loop
statistics and pod startups the tasks write, then prints the server time of /metrics (median of
--repeat) with the live read reused (what a scrape costs between two reads of the cluster) and with
it expired (the scrape that lists and reads the cluster: the cold figure, whose target is 1 s), and
how many series one scrape holds. Figures only: nothing here asserts a time."""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time

from console.dashboards import bench


def _extras(nodes: int) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from console.telemetry import loop_stats
    from console.telemetry.models import PodStartup

    for controller in loop_stats.CONTROLLERS:
        for i in range(20):
            loop_stats.duration_observe(metric=loop_stats.RECONCILE, controller=controller, seconds=0.01 * i,
                                        error=i == 7)
    now = timezone.now()
    PodStartup.objects.bulk_create([PodStartup(uid=f"bench-{i}", started_at=now - timedelta(seconds=i % 3600),
                                               seconds=5 + i % 60) for i in range(nodes * 10)], batch_size=2000)


def _time(repeat: int) -> tuple[list[float], list[float], int, int]:
    from django.conf import settings
    from django.test import Client

    from console.dashboards import live_metrics, selectors

    settings.LOADMASTER_METRICS_PUBLIC = True
    settings.LOADMASTER_DASHBOARD_LIVE_SECONDS = 3600
    client = Client()
    warm, cold = [], []
    size = series = 0
    for _ in range(repeat):
        live_metrics.live_read_clear()
        selectors.live_nodes_clear()
        t = time.perf_counter()
        r = client.get("/metrics")
        cold.append(time.perf_counter() - t)
        if r.status_code != 200:
            raise SystemExit(f"/metrics answered {r.status_code}")
        t = time.perf_counter()
        r = client.get("/metrics")
        warm.append(time.perf_counter() - t)
        size = len(r.content)
        series = sum(1 for line in r.content.splitlines() if line and not line.startswith(b"#"))
    return warm, cold, size, series


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m console.dashboards.metrics_bench")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pools", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="lm-metrics-bench-")
    try:
        bench.setup_scratch_database(tmp)
        t = time.perf_counter()
        bench.generate(1, args.nodes, args.pools, args.seed)
        _extras(args.nodes)
        print(f"{args.nodes} nodes, {args.nodes * bench.PODS_PER_NODE:,} pods, {args.nodes * 5:,} NodeClaims, "
              f"{args.nodes * 20:,} decisions generated in {time.perf_counter() - t:.1f} s")
        warm, cold, size, series = _time(args.repeat)
        print(f"/metrics: {series:,} series, {size / 1e6:.1f} MB per scrape")
        print(f"/metrics with the live read reused: median {statistics.median(warm) * 1000:.0f} ms "
              f"(min {min(warm) * 1000:.0f}, max {max(warm) * 1000:.0f})")
        print(f"/metrics reading the cluster:       median {statistics.median(cold) * 1000:.0f} ms "
              f"(min {min(cold) * 1000:.0f}, max {max(cold) * 1000:.0f}; target 1,000 ms)")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
