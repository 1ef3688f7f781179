"""`python -m packing.bench consolidate [--quick] [--json]`: speed and savings of the disruption engine.

A cluster is built the way fragmentation happens: a seeded workload is provisioned by the planner onto small nodes
(as a pool that grew in small batches would have them), then 40% of its pods are deleted at random. The whole
consolidate run is timed; its savings are compared with the gap between the cluster's cost and the provisioning
engine's lower bound for the pods that survive (no arrangement of those pods can cost less than the bound, so
savings / gap is the share of the achievable saving the engine found). A second variant adds PodDisruptionBudgets
and do-not-disrupt pods. The budgets are set to 100% so that the figure measures the engine, not the policy; a
run with Karpenter's default budget (10%) is reported beside it. The pool is Karpenter's documented example; the
same clusters are also consolidated with a pool open to the full catalog (what issue 5 asks for), and the
fragmented one with the full catalog but the burstable t family.

One run proposes what the disruption loop would do now; the nodes its actions launch are not initialized yet, so
no action of the same run touches them. On the full catalog the "converged" rows therefore replay the loop: each
run's actions are applied as if they succeeded (their replacements become initialized nodes) and consolidation
runs again, until a run proposes nothing; they are reported with and without repack, with the time of every run.
Without repack, Karpenter's methods replace the whole cluster with large nodes in the first run; with it, the
moves that only delete come first, then repack, and later runs find little more.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from packing.bench.catalogs import bench_catalog
from packing.disruption import Budget, Cluster, DisruptionSettings, NodeInfo, PodMeta, consolidate
from packing.disruption.model import DO_NOT_DISRUPT, Report
from packing.instancetype import InstanceType
from packing.nodepool import (
    HOSTNAME_LABEL,
    INITIALIZED_LABEL,
    ExistingNodeSpec,
    NodePool,
    PodDisruptionBudget,
)
from packing.pods import Pod
from packing.requirements import Requirement, Requirements
from packing.resources import Resources
from packing.scheduling.scheduler import Scheduler

AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
_CPU = (100, 150, 200, 250, 300, 400, 500, 750, 1000)
_MEM = (256, 384, 512, 768, 1024, 1536, 2048)


POOLS = {
    "example": "c/m/r, generation > 2, on-demand",
    "full": "every on-demand Linux type",
    "full-no-burstable": "every on-demand Linux type but burstable (t)",
}


def _pool(extra: Sequence[Requirement] = (), *, kind: str = "example") -> NodePool:
    # "example": Karpenter's documented example NodePool (c, m and r families, generation 3 and later), on-demand;
    # "full": every on-demand Linux type (what issue 5 asks for); "full-no-burstable": the same without the t
    # family, whose 2-vCPU sizes price a vCPU far below any other type (see docs/performance.md)
    reqs = [
        Requirement.new("kubernetes.io/os", "In", ["linux"]),
        Requirement.new("karpenter.sh/capacity-type", "In", ["on-demand"]),
        *extra,
    ]
    if kind == "full-no-burstable":
        reqs.append(Requirement.new("karpenter.k8s.aws/instance-category", "NotIn", ["t"]))
    if kind == "example":
        reqs += [
            Requirement.new("karpenter.k8s.aws/instance-category", "In", ["c", "m", "r"]),
            Requirement.new("karpenter.k8s.aws/instance-generation", "Gt", ["2"]),
        ]
    return NodePool("default", Requirements(reqs))


@dataclasses.dataclass
class BenchCluster:
    cluster: Cluster
    surviving: list[Pod]
    pool: NodePool


def build(
    catalog: list[InstanceType], pods_n: int, seed: int, *, protected: bool, pool_kind: str = "example"
) -> BenchCluster:
    rnd = random.Random(seed)
    pods = [
        Pod(
            f"w-{i}",
            labels={"app": f"app-{i % 100}"},
            requests=Resources(
                {"cpu": rnd.choice(_CPU), "memory": rnd.choice(_MEM) * 2**20 * 1000, "pods": 1000}
            ),
        )
        for i in range(pods_n)
    ]
    # provisioned onto 4-vCPU nodes, as a pool that grew about ten pods at a time would be
    small = _pool([
        Requirement.new("karpenter.k8s.aws/instance-cpu", "In", ["4"]),
        Requirement.new("karpenter.k8s.aws/instance-category", "In", ["c", "m", "r"]),
        Requirement.new("karpenter.k8s.aws/instance-generation", "Gt", ["2"]),
    ])
    plan = Scheduler([small], catalog).solve(pods)
    nodes: list[NodeInfo] = []
    running: list[Pod] = []
    for i, c in enumerate(plan.nodeclaims):
        name = f"node-{i:04d}"
        labels = dict(c.labels)
        labels[HOSTNAME_LABEL] = name
        labels[INITIALIZED_LABEL] = "true"
        spec = ExistingNodeSpec(name, labels, c.allocatable, initialized=True, capacity=c.allocatable)
        nodes.append(NodeInfo(spec, created=AT - timedelta(days=2)))
        running.extend(dataclasses.replace(p, node_name=name) for p in c.pods)
    surviving = [p for p in running if rnd.random() >= 0.4]
    pool = _pool(kind=pool_kind)
    meta: dict[str, PodMeta] = {}
    pdbs: list[PodDisruptionBudget] = []
    if protected:
        for p in surviving:
            if rnd.random() < 0.02:
                meta[p.key] = PodMeta({DO_NOT_DISRUPT: "true"})
        for a in range(0, 100, 2):  # half the apps keep at most one pod down at a time
            pdbs.append(PodDisruptionBudget("default", f"app-{a}", {"matchLabels": {"app": f"app-{a}"}}, None, "1"))
    cluster = Cluster(
        nodepools=[pool],
        catalog=catalog,
        nodes=nodes,
        running=surviving,
        settings={"default": DisruptionSettings(budgets=(Budget(nodes="100%"),))},
        pod_meta=meta,
        pdbs=pdbs,
    )
    return BenchCluster(cluster, surviving, pool)


def apply_report(cluster: Cluster, report: Report, at: datetime) -> Cluster:
    """The cluster once every action of `report` has succeeded: its nodes gone, its replacements running as
    initialized nodes created at `at`, every moved pod where the action put it."""
    gone = {n for a in report.actions for n in a.nodes}
    nodes = [n for n in cluster.nodes if n.name not in gone]
    where: dict[str, str] = {}
    for a in report.actions:
        where.update(a.moves)
        for r in a.replacements:
            labels = dict(r["labels"])
            labels[HOSTNAME_LABEL] = r["name"]
            labels[INITIALIZED_LABEL] = "true"
            alloc = Resources.parse(r["allocatable"])
            spec = ExistingNodeSpec(r["name"], labels, alloc, initialized=True, capacity=alloc)
            nodes.append(NodeInfo(spec, created=at))
    running = [dataclasses.replace(p, node_name=where.get(p.key, p.node_name)) for p in cluster.running]
    return dataclasses.replace(cluster, nodes=nodes, running=running)


def converge(cluster: Cluster, at: datetime, *, repack: bool, max_runs: int = 8) -> tuple[list[float], list[Report]]:
    """Consolidate, apply, and again, until a run proposes nothing (at most max_runs runs): seconds and reports."""
    secs: list[float] = []
    reports: list[Report] = []
    for _ in range(max_runs):
        t0 = time.perf_counter()
        report = consolidate(cluster, at, repack=repack)
        secs.append(time.perf_counter() - t0)
        reports.append(report)
        if not report.actions:
            break
        cluster = apply_report(cluster, report, at)
    return secs, reports


def _bound(catalog: list[InstanceType], pool: NodePool, pods: list[Pod]) -> float:
    pending = [dataclasses.replace(p, node_name="") for p in pods]
    res = Scheduler([pool], catalog).solve(pending, lower_bound=True)
    return float(res.lower_bound or 0.0)


def run_consolidate_bench(quick: bool) -> dict[str, Any]:
    catalog, catalog_name = bench_catalog()
    pods_n = 2500 if quick else 10_000
    rows: list[dict[str, Any]] = []
    variants = (
        ("fragmented", False, "example"),
        ("pdb+do-not-disrupt", True, "example"),
        ("fragmented", False, "full"),
        ("pdb+do-not-disrupt", True, "full"),
        ("fragmented", False, "full-no-burstable"),
    )
    for variant, protected, kind in variants:
        bc = build(catalog, pods_n, seed=11, protected=protected, pool_kind=kind)
        bound = _bound(catalog, bc.pool, bc.surviving)
        for budget in ("100%", "10%"):
            if budget != "100%" and (protected or kind != "example"):
                continue
            cl = dataclasses.replace(
                bc.cluster, settings={"default": DisruptionSettings(budgets=(Budget(nodes=budget),))}
            )
            for repack in (False, True):
                if kind == "full":
                    # the first run of the replayed loop is the single run
                    run_secs, reports = converge(cl, AT, repack=repack)
                    rows.append(_row(variant, kind, budget, bc, bound, run_secs[:1], reports[:1], repack))
                    rows.append(_row(f"{variant}, converged", kind, budget, bc, bound, run_secs, reports, repack))
                    continue
                t0 = time.perf_counter()
                report = consolidate(cl, AT, repack=repack)
                secs = time.perf_counter() - t0
                rows.append(_row(variant, kind, budget, bc, bound, [secs], [report], repack))
    return {"catalog": catalog_name, "rows": rows}


def _row(
    variant: str,
    kind: str,
    budget: str,
    bc: BenchCluster,
    bound: float,
    secs: list[float],
    reports: list[Report],
    repack: bool,
) -> dict[str, Any]:
    """One row: a single run (one report) or the replayed loop (every run's report, in order)."""
    before = reports[0].cost_before
    after = reports[-1].cost_after
    gap = before - bound
    kinds: dict[str, int] = {}
    for rep in reports:
        for a in rep.actions:
            kinds[a.method] = kinds.get(a.method, 0) + 1
    return {
        "variant": variant,
        "pool": POOLS[kind],
        "repack": repack,
        "runs": len(reports),
        "run_seconds": [round(s, 3) for s in secs],
        "budget": budget,
        "nodes": reports[0].nodes,
        "nodes_after": reports[-1].nodes
        - sum(len(a.nodes) for a in reports[-1].actions)
        + sum(len(a.replacements) for a in reports[-1].actions),
        "pods": len(bc.surviving),
        "seconds": round(sum(secs), 3),
        "solves": sum(r.solves for r in reports),
        "actions": sum(len(r.actions) for r in reports),
        "action_kinds": kinds,
        "nodes_disrupted": sum(len(a.nodes) for r in reports for a in r.actions),
        "cost_before": round(before, 4),
        "cost_after": round(after, 4),
        "savings": round(before - after, 4),
        "bound": round(bound, 4),
        "savings_over_gap": round((before - after) / gap, 4) if gap > 0 else None,
    }


def _print(report: dict[str, Any]) -> None:
    print(f"catalog: {report['catalog']}")
    hdr = ("variant", "pool", "repack", "budget", "nodes", "pods", "runs", "seconds", "solves", "actions", "disrupted",
           "nodes after", "$/h before", "$/h after", "savings", "bound", "savings/gap")
    rows: list[tuple[str, ...]] = [hdr]
    for r in report["rows"]:
        per_run = "+".join(f"{x:.1f}" for x in r["run_seconds"]) if r["runs"] > 1 else f"{r['seconds']:.2f}"
        rows.append(
            (
                r["variant"], r["pool"], "yes" if r["repack"] else "no", r["budget"], str(r["nodes"]), str(r["pods"]),
                str(r["runs"]), per_run, str(r["solves"]),
                str(r["actions"]), str(r["nodes_disrupted"]), str(r["nodes_after"]), f"{r['cost_before']:.3f}",
                f"{r['cost_after']:.3f}",
                f"{r['savings']:.3f}", f"{r['bound']:.3f}",
                "-" if r["savings_over_gap"] is None else f"{r['savings_over_gap']:.3f}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(hdr))]
    for row in rows:
        print("  ".join(c.rjust(widths[i]) if i > 3 else c.ljust(widths[i]) for i, c in enumerate(row)))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m packing.bench consolidate")
    p.add_argument("--quick", action="store_true", help="a quarter-size cluster")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    args = p.parse_args(argv)
    report = run_consolidate_bench(args.quick)
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        _print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
