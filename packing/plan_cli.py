"""`python -m packing plan`: a dry run of the provisioner over Kubernetes objects read from files."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from packing.cli_arguments import CliParser, add_input_arguments, input_budget
from packing.disruption.formatting import parse_time
from packing.fields import InputError
from packing.kubeobjects import Inputs, expand_workloads, load_files
from packing.plan_output import render_json, render_text
from packing.planning import overlay_notice, plan, resolve_catalog, skipped_notice
from packing.yamlinput import brief

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    p = CliParser(prog="python -m packing plan", description="Dry-run the provisioner over Kubernetes objects.")
    add_input_arguments(p)
    p.add_argument(
        "--at", metavar="ISO-8601", help="the clock for NodePools' clock-policy windows (loadmaster.dev/schedules; default now)"
    )
    p.add_argument("--output", choices=("json", "text"), default="json")
    return p


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
        at = parse_time(args.at) if args.at else None
    except ValueError:
        print(f"error: --at: invalid time {brief(args.at)} (expected ISO-8601, e.g. 2026-12-01T05:00:00Z)", file=stderr)
        return 2
    try:
        budget = input_budget(args)
        inp = load_files(args.files, budget=budget, parallel=True)
        cat_inp = load_files(args.catalog, budget=budget) if args.catalog else Inputs()
        expand_workloads(inp)  # MAX_EXPANDED_PODS is bad input too
        catalog = resolve_catalog(inp, cat_inp, args.region)
    except InputError as e:
        print(f"error: {e}", file=stderr)
        return 2
    for notice in (skipped_notice(inp, cat_inp), overlay_notice(catalog, inp, cat_inp)):
        if notice:
            print(notice, file=stderr)
    try:
        res = plan(inp, catalog, min_values_policy=args.min_values_policy, at=at,
                   commitments=[*inp.commitments, *cat_inp.commitments])
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
        # one write: json.dump writes each of a large plan's hundreds of thousands of pieces on its own
        stdout.write(json.dumps(render_json(res, inp.ignored), indent=2) + "\n")
    else:
        render_text(res, stdout, inp.ignored)
    return 0
