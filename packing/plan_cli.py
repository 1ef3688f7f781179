"""`python -m packing plan`: a dry run of the provisioner over Kubernetes objects read from files."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from packing.instancetype import InstanceType
from packing.kubeobjects import (
    DEFAULT_MAX_INPUT_BYTES,
    ByteBudget,
    InputError,
    Inputs,
    expand_workloads,
    inflight_claims,
    load_files,
)
from packing.nodepool import ExistingNodeSpec
from packing.scheduling.results import Results
from packing.scheduling.scheduler import Scheduler

__all__ = ["add_input_arguments", "build_parser", "main", "plan_from_inputs", "render_json", "render_text"]


class CliParser(argparse.ArgumentParser):
    """argparse that exits 2 with ONE line naming the subcommand (prog's last word), never a traceback: the
    exit contract of every dry-run command is 0, or 2 with one line on stderr."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"error: packing {self.prog.split()[-1]}: {message} (see --help)", file=sys.stderr)
        raise SystemExit(2)


def _byte_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number of bytes") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative (0: no limit)")
    return value


def add_input_arguments(p: argparse.ArgumentParser) -> None:
    """FILE..., --catalog, --region and --max-input-bytes: what plan and consolidate read the same way."""
    p.add_argument(
        "files", nargs="+", metavar="FILE", help="YAML or JSON files with Kubernetes objects ('-' = stdin)"
    )
    p.add_argument("--catalog", action="append", default=[], metavar="FILE", help="InstanceType documents")
    p.add_argument("--region", default="us-east-1", help="region of the built-in catalog (default us-east-1)")
    p.add_argument(
        "--max-input-bytes",
        type=_byte_count,
        default=DEFAULT_MAX_INPUT_BYTES,
        metavar="N",
        help=f"refuse input files larger than N bytes in all (default {DEFAULT_MAX_INPUT_BYTES}, 64 MiB; 0: no limit)",
    )


def input_budget(args: argparse.Namespace) -> ByteBudget:
    return ByteBudget(args.max_input_bytes or None)


def build_parser() -> argparse.ArgumentParser:
    p = CliParser(prog="python -m packing plan", description="Dry-run the provisioner over Kubernetes objects.")
    add_input_arguments(p)
    p.add_argument("--output", choices=("json", "text"), default="json")
    return p


class CatalogUnavailable(Exception):
    pass


def _builtin_catalog(inp: Inputs, region: str) -> list[InstanceType]:
    kubelet: dict[str, Any] | None = None
    for pool in sorted(inp.nodepools, key=lambda p: (-p.weight, p.name)):
        k = inp.nodeclasses.get(pool.node_class)
        if k:
            kubelet = dict(k)
            break
    if kubelet is None:
        for name in sorted(inp.nodeclasses):
            if inp.nodeclasses[name]:
                kubelet = dict(inp.nodeclasses[name])
                break
    try:
        from packing.catalog import load_builtin
    except ImportError:
        raise CatalogUnavailable(
            "no built-in catalog yet: pass InstanceType documents with --catalog"
        ) from None
    try:
        return list(load_builtin(region, kubelet=kubelet))
    except ValueError as e:
        raise CatalogUnavailable(f"built-in catalog: {e}") from None


def plan_from_inputs(inp: Inputs, catalog: Sequence[InstanceType]) -> Results:
    expand_workloads(inp)
    existing: list[ExistingNodeSpec] = [*inp.nodes, *inflight_claims(inp, catalog)]
    sched = Scheduler(inp.nodepools, catalog, existing, inp.running, inp.daemonsets)
    return sched.solve(inp.pending, lower_bound=True)


def render_json(res: Results) -> dict[str, Any]:
    return {
        "nodeclaims": [
            {
                "name": c.name,
                "nodepool": c.nodepool,
                "instance_type": c.instance_type,
                "instance_type_options": c.instance_type_options,
                "capacity_type": c.capacity_type,
                "zone": c.zone,
                "price_per_hour": round(c.price_per_hour, 6),
                "labels": c.labels,
                "taints": [t.to_dict() for t in c.taints],
                "startup_taints": [t.to_dict() for t in c.startup_taints],
                "pods": sorted(p.key for p in c.pods),
                "requests": c.requests.to_strings(),
                "allocatable": c.allocatable.to_strings(),
            }
            for c in res.nodeclaims
        ],
        "existing_nodes": [
            {
                "name": e.name,
                "kind": e.kind,
                "pods": sorted(p.key for p in e.pods),
                "price_per_hour": e.price_per_hour,
            }
            for e in res.existing
        ],
        "unschedulable": [
            {"pod": pod, "reasons": [{"nodepool": np_, "reason": r} for np_, r in reasons]}
            for pod, reasons in sorted(res.unschedulable.items())
        ],
        "summary": {
            "pending_pods": res.pending,
            "scheduled": res.scheduled,
            "unschedulable": len(res.unschedulable),
            "new_nodeclaims": len(res.nodeclaims),
            "cost_per_hour": res.cost_per_hour,
            "lower_bound_per_hour": None if res.lower_bound is None else round(res.lower_bound, 6),
            "existing_cost_per_hour": res.existing_cost_per_hour,
            "solve_seconds": round(res.solve_seconds, 4),
        },
    }


def render_text(res: Results, out: TextIO) -> None:
    w = out.write
    if res.nodeclaims:
        rows = [("NODECLAIM", "NODEPOOL", "TYPE", "ZONE", "CAPACITY", "$/H", "PODS")]
        for c in res.nodeclaims:
            pods = ", ".join(sorted(p.key for p in c.pods))
            rows.append(
                (
                    c.name,
                    c.nodepool,
                    c.instance_type,
                    c.zone,
                    c.capacity_type,
                    f"{c.price_per_hour:.4f}",
                    pods,
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(6)]
        w("Nodes to launch:\n")
        for r in rows:
            w("  " + "  ".join(r[i].ljust(widths[i]) for i in range(6)) + "  " + r[6] + "\n")
    else:
        w("Nodes to launch: none\n")
    placed = [e for e in res.existing if e.pods]
    if placed:
        w("Placed on existing nodes:\n")
        for e in placed:
            w(f"  {e.name}: {', '.join(sorted(p.key for p in e.pods))}\n")
    if res.unschedulable:
        w("Unschedulable pods:\n")
        for pod, reasons in sorted(res.unschedulable.items()):
            w(f"  {pod}\n")
            for np_, why in reasons:
                w(f"    - nodepool {np_}: {why}\n" if np_ else f"    - {why}\n")
    bound = "n/a" if res.lower_bound is None else f"${res.lower_bound:.4f}/h"
    w(
        f"Pods: {res.pending} pending, {res.scheduled} scheduled, {len(res.unschedulable)} unschedulable; "
        f"{len(res.nodeclaims)} new nodeclaims\n"
    )
    w(f"Total cost: ${res.cost_per_hour:.4f}/h   Lower bound: {bound}   Solve: {res.solve_seconds:.3f}s\n")


def resolve_catalog(inp: Inputs, cat_inp: Inputs, region: str, stderr: TextIO) -> list[InstanceType] | None:
    """What every dry-run command does after reading its files: one notice for skipped objects, then
    the catalog (InstanceType documents, else the built-in one of `region`). None after printing an
    error (the caller exits 2); the notice is printed only when there is no error (an error is one line)."""
    catalog = inp.instance_types + cat_inp.instance_types
    if not catalog:
        try:
            catalog = _builtin_catalog(inp, region)
        except CatalogUnavailable as e:
            print(f"error: {e}", file=stderr)
            return None
    # each Inputs refuses its own duplicates as it reads them; a FILE and a --catalog file may still share a name
    both = sorted(set(inp.origins) & set(cat_inp.origins))
    if both:
        name = both[0]
        print(
            f"error: {cat_inp.origins[name]}: metadata.name: InstanceType {name[:60]} is defined more than once "
            f"(also {inp.origins[name]})",
            file=stderr,
        )
        return None
    names = [it.name for it in catalog]
    if len(set(names)) != len(names):  # objects added without their place (kubeobjects._add_object)
        dup = sorted({n for n in names if names.count(n) > 1})[0]
        print(f"error: InstanceType {dup[:60]} is defined more than once", file=stderr)
        return None
    if inp.skipped_total or cat_inp.skipped_total:
        counts: dict[str, int] = dict(inp.skipped)
        for k, v in cat_inp.skipped.items():
            counts[k] = counts.get(k, 0) + v
        kinds = ", ".join(f"{k[:60]} {v}" for k, v in sorted(counts.items())[:20])
        more = ", …" if len(counts) > 20 else ""
        print(f"skipped {sum(counts.values())} objects of other kinds ({kinds}{more})", file=stderr)
    return catalog


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    try:
        # intermixed: `plan a.yaml --catalog types.yaml b.yaml` reads a.yaml and b.yaml
        with contextlib.redirect_stderr(stderr):  # usage errors go where the caller's stderr is
            args = build_parser().parse_intermixed_args(list(argv) if argv is not None else None)
    except SystemExit as e:
        return int(e.code or 0)
    try:
        budget = input_budget(args)
        inp = load_files(args.files, budget=budget)
        cat_inp = load_files(args.catalog, budget=budget) if args.catalog else Inputs()
        expand_workloads(inp)  # MAX_EXPANDED_PODS is bad input too
    except InputError as e:
        print(f"error: {e}", file=stderr)
        return 2
    catalog = resolve_catalog(inp, cat_inp, args.region, stderr)
    if catalog is None:
        return 2
    try:
        res = plan_from_inputs(inp, catalog)
    except InputError as e:
        print(f"error: {e}", file=stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - the CLI promises a one-line message, never a traceback
        if os.environ.get("LOADMASTER_DEBUG"):
            raise
        print(
            f"error: planning failed: {type(e).__name__}: {e} (set LOADMASTER_DEBUG=1 for details)",
            file=stderr,
        )
        return 1
    if args.output == "json":
        json.dump(render_json(res), stdout, indent=2)
        stdout.write("\n")
    else:
        render_text(res, stdout)
    return 0
