"""`python -m packing consolidate`: a dry run of the disruption controller over Kubernetes objects read from files."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from packing.api import (
    Extras,
    InputError,
    Inputs,
    MinSavings,
    build_cluster,
    consolidate,
    expand_workloads,
    overlay_notice,
    parse_time,
    read_files,
    report_json,
    resolve_catalog,
    skipped_notice,
)
from packing.cli_arguments import CliParser, add_input_arguments, input_budget
from packing.disruption.output import render_text
from packing.yamlinput import brief

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    p = CliParser(
        prog="python -m packing consolidate",
        description="Dry-run the disruption controller: which nodes it would delete or replace now, and why.",
    )
    add_input_arguments(p)
    p.add_argument("--at", metavar="ISO-8601", help="the clock for budgets, expiry and consolidateAfter (default now)")
    p.add_argument(
        "--min-savings", metavar="X", help="skip moves saving less than X dollars per hour, or X%% of the nodes' cost"
    )
    p.add_argument(
        "--no-repack",
        action="store_true",
        help="only Karpenter's methods: skip Loadmaster's repack move (node groups re-planned onto new, often "
        "more and smaller, nodes)",
    )
    p.add_argument("--output", choices=("json", "text"), default="json")
    return p


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    try:
        # intermixed: `plan a.yaml --catalog types.yaml b.yaml` reads a.yaml and b.yaml
        with contextlib.redirect_stderr(stderr):  # usage errors go where the caller's stderr is
            args = build_parser().parse_intermixed_args(list(argv) if argv is not None else None)
    except SystemExit as e:
        return int(e.code or 0)
    try:
        at = parse_time(args.at) if args.at else None
    except ValueError:
        print(f"error: --at: invalid time {brief(args.at)} (expected ISO-8601, e.g. 2026-12-01T05:00:00Z)", file=stderr)
        return 2
    try:
        min_savings = MinSavings.parse(args.min_savings) if args.min_savings is not None else None
    except ValueError as e:
        print(f"error: {e}", file=stderr)
        return 2
    try:
        budget = input_budget(args)
        inp, ex = read_files(args.files, budget=budget)
        cat_inp, _ = read_files(args.catalog, Inputs(), Extras(), budget=budget) if args.catalog else (Inputs(), Extras())
        expand_workloads(inp)  # MAX_EXPANDED_PODS is bad input too
        catalog = resolve_catalog(inp, cat_inp, args.region)
    except InputError as e:
        print(f"error: {e}", file=stderr)
        return 2
    for notice in (skipped_notice(inp, cat_inp), overlay_notice(catalog, inp, cat_inp)):
        if notice:
            print(notice, file=stderr)
    try:
        cluster = build_cluster(inp, ex, catalog)
        cluster.commitments.extend(cat_inp.commitments)  # a --catalog file may hold them too
        cluster.min_values_policy = args.min_values_policy
        report = consolidate(cluster, at, min_savings=min_savings, repack=not args.no_repack)
    except InputError as e:
        print(f"error: {e}", file=stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - the CLI promises a one-line message, never a traceback
        if os.environ.get("LOADMASTER_DEBUG"):
            raise
        print(f"error: consolidation failed: {type(e).__name__}: {e} (set LOADMASTER_DEBUG=1 for details)", file=stderr)
        return 1
    if args.output == "json":
        json.dump(report_json(report), stdout, indent=2)
        stdout.write("\n")
    else:
        render_text(report, stdout)
    return 0
