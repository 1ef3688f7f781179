"""`python -m packing.bench plan [--quick] [--large] [--json]`: speed and cost of the planner on seeded workloads.

For each workload it runs the planner and a Karpenter-style baseline (packing.bench.baseline: every pod
through a pod-by-pod greedy, largest first, first-fit into NodeClaims that narrow their compatible types, each
launched as the cheapest type that fits, generic types before GPU or metal ones) on the same input, checks
both plans for feasibility, and reports pods/s (the solve alone; the bound is timed apart as "bound s"), $/h,
the LP lower bound, cost/bound, cost/baseline and peak memory.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from collections.abc import Sequence
from typing import Any

from packing.bench.baseline import karpenter_baseline
from packing.bench.catalogs import bench_catalog
from packing.bench.workloads import families
from packing.bound import lower_bound
from packing.scheduling.scheduler import Scheduler
from packing.scheduling.verify import check_plan


def _peak_mb() -> float:
    # ru_maxrss is in KiB on Linux: the whole process's high-water mark, catalog included
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_plan_bench(quick: bool, large: bool = False) -> dict[str, Any]:
    catalog, catalog_name = bench_catalog()
    rows: list[dict[str, Any]] = []
    for wl in families(quick, large):
        sched = Scheduler(wl.pools, catalog)
        sched.solve(
            wl.pods[:50] + wl.pods[-50:]
        )  # warm the per-pool option tables so that the timing is the solve itself
        t0 = time.perf_counter()
        res = sched.solve(wl.pods)
        solve_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        bound = lower_bound(sched, res, wl.pods)
        bound_s = time.perf_counter() - t1
        problems = check_plan(sched, wl.pods, res)
        t2 = time.perf_counter()
        base = karpenter_baseline(sched, wl.pods)
        base_s = time.perf_counter() - t2
        base_problems = check_plan(sched, wl.pods, base)
        cost = res.cost_per_hour if not problems else float("nan")
        base_cost = base.cost_per_hour if not base_problems else float("nan")
        row = {
            "workload": wl.name,
            "family": wl.family,
            "pods": len(wl.pods),
            "scheduled": res.scheduled,
            "baseline_scheduled": base.scheduled,
            "nodes": len(res.nodeclaims),
            "solve_s": round(solve_s, 3),
            "pods_per_s": round(len(wl.pods) / solve_s, 1),
            "bound_s": round(bound_s, 3),
            "cost": round(cost, 4),
            "bound": round(bound, 4),
            "cost_over_bound": round(cost / bound, 4) if bound > 0 else None,
            "baseline_cost": round(base_cost, 4),
            "baseline_s": round(base_s, 3),
            "cost_over_baseline": round(cost / base_cost, 4) if base_cost > 0 else None,
            "peak_mb": round(_peak_mb(), 1),
            "feasible": not problems,
            "baseline_feasible": not base_problems,
            "problems": problems[:5] + base_problems[:5],
        }
        rows.append(row)
    ratios = [r["cost_over_baseline"] for r in rows if r["cost_over_baseline"]]
    fam_avgs: dict[int, list[float]] = {}
    for r in rows:
        if r["cost_over_baseline"]:
            fam_avgs.setdefault(r["family"], []).append(r["cost_over_baseline"])
    per_family = {f: sum(v) / len(v) for f, v in fam_avgs.items()}
    return {
        "catalog": catalog_name,
        "rows": rows,
        "mean_cost_over_baseline": round(sum(ratios) / len(ratios), 4) if ratios else None,
        "mean_cost_over_baseline_by_family": {str(k): round(v, 4) for k, v in sorted(per_family.items())},
    }


def _print_table(report: dict[str, Any]) -> None:
    print(f"catalog: {report['catalog']}")
    hdr = (
        "workload",
        "pods/s",
        "solve s",
        "bound s",
        "$/h",
        "bound",
        "cost/bound",
        "baseline",
        "cost/base",
        "peak MB",
        "ok",
    )
    rows = [hdr]
    for r in report["rows"]:
        rows.append(
            (
                r["workload"],
                f"{r['pods_per_s']:.0f}",
                f"{r['solve_s']:.2f}",
                f"{r['bound_s']:.2f}",
                f"{r['cost']:.3f}",
                f"{r['bound']:.3f}",
                f"{r['cost_over_bound']:.3f}" if r["cost_over_bound"] else "-",
                f"{r['baseline_cost']:.3f}",
                f"{r['cost_over_baseline']:.3f}" if r["cost_over_baseline"] else "-",
                f"{r['peak_mb']:.0f}",
                "yes" if r["feasible"] and r["baseline_feasible"] else "NO",
            )
        )
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(hdr))]
    for row in rows:
        print("  ".join(str(c).rjust(widths[i]) if i else str(c).ljust(widths[i]) for i, c in enumerate(row)))
    print(
        f"mean cost/baseline: {report['mean_cost_over_baseline']}  by family: {report['mean_cost_over_baseline_by_family']}"
    )
    print(
        "note: the baseline is Karpenter's first-fit (packing/bench/baseline.py); pods without GPU requests stay "
        "off GPU-only NodeClaims and launches skip GPU and metal types while a generic type fits; its claims "
        "keep taking pods while any catalog type still holds them, so on an unrestricted pool they end as the "
        "largest types (family 1: u7i-12tb.224xlarge)"
    )
    for r in report["rows"]:
        for p in r["problems"]:
            print(f"  infeasible ({r['workload']}): {p}")


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["consolidate"]:
        # imported here, not at the top: the plan benchmark does not load the disruption engine (its
        # instruction count is measured for the whole process); no import cycle is involved
        from packing.bench.consolidate import main as consolidate_main

        return consolidate_main(args_list[1:])
    if args_list[:1] == ["dump"]:
        from packing.bench.dump import main as dump_main

        return dump_main(args_list[1:])
    if args_list[:1] == ["replay"]:
        from packing.bench.replay import main as replay_main

        return replay_main(args_list[1:])
    p = argparse.ArgumentParser(prog="python -m packing.bench")
    sub = p.add_subparsers(dest="cmd", required=True)
    plan = sub.add_parser("plan", help="benchmark the provisioning planner")
    plan.add_argument("--quick", action="store_true", help="smaller workloads (about 10 s)")
    plan.add_argument("--json", action="store_true", help="print the report as JSON")
    plan.add_argument(
        "--large", action="store_true", help="also the 50,000-pod mixed-shape family (full run only)"
    )
    sub.add_parser("consolidate", help="benchmark the disruption engine (see packing.bench.consolidate)")
    sub.add_parser("dump", help="print a kubectl-style pod dump for timing `packing plan` (see packing.bench.dump)")
    sub.add_parser("replay", help="time a replay of a synthetic history (see packing.bench.replay)")
    args = p.parse_args(args_list)
    report = run_plan_bench(args.quick, args.large)
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        _print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
