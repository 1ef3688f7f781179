"""`python -m packing.bench replay [--days D] [--nodes N] [--pods P] [--json] [--write FILE]`: how long a replay
takes. A synthetic history (packing.bench.history) of D days of a cluster of N recorded nodes and P pods is
replayed once with its own configuration and once with a change (the same pool on-demand only), and the figures
printed: events, wall seconds, disruption evaluations and the three costs. `--write FILE` also writes the history,
for `python -m packing replay`."""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

from packing.bench.history import POOL, iter_lines, synthetic_history
from packing.history.events import ManifestKind
from packing.replay import replay

__all__ = ["main", "run_replay_bench"]


def run_replay_bench(days: float, nodes: int, pods: int, seed: int, *, parallel: bool = True) -> dict[str, Any]:
    t0 = time.perf_counter()
    history = synthetic_history(days=days, nodes=nodes, pods=pods, seed=seed)
    generated = time.perf_counter() - t0
    on_demand = copy.deepcopy(POOL)
    on_demand["spec"]["template"]["spec"]["requirements"][0]["values"] = ["on-demand"]
    t1 = time.perf_counter()
    result = replay(history, change={(ManifestKind.NODEPOOL, "default"): on_demand}, seed=seed, parallel=parallel)
    seconds = time.perf_counter() - t1
    doc = result.as_json()
    return {
        "days": days, "nodes": nodes, "pods": pods, "events": len(history.events),
        "generate_s": round(generated, 2), "replay_s": round(seconds, 2), "disruption_runs": doc["current"]["disruption_runs"] + doc["changed"]["disruption_runs"],
        "cost_actual": doc["actual"]["cost"], "cost_current": doc["current"]["cost"],
        "cost_changed": doc["changed"]["cost"],
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m packing.bench replay")
    p.add_argument("--days", type=float, default=1.0)
    p.add_argument("--nodes", type=int, default=200)
    p.add_argument("--pods", type=int, default=2000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true")
    p.add_argument("--serial", action="store_true", help="both runs in this process (default: a core each)")
    p.add_argument("--write", metavar="FILE", help="also write the synthetic history to FILE")
    args = p.parse_args(list(argv) if argv is not None else None)
    if args.write:
        history = synthetic_history(days=args.days, nodes=args.nodes, pods=args.pods, seed=args.seed)
        with open(args.write, "w", encoding="utf-8") as f:
            for chunk in iter_lines(history):
                f.write(chunk)
    row = run_replay_bench(args.days, args.nodes, args.pods, args.seed, parallel=not args.serial)
    if args.json:
        json.dump(row, sys.stdout, indent=2)
        print()
    else:
        print("  ".join(f"{k} {v}" for k, v in row.items()))
    return 0
