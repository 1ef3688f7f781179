"""`python -m packing advise`: the advisor over Kubernetes objects read from files (the inputs of `plan`):
Karpenter's classic mistakes, each with a stable code, evidence, the dollars at stake and a fix. `--aws` adds
the IAM preflight against the account of the environment's credentials."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from packing.advisor import DO_NOT_DISRUPT_SHARE, Advice, Context, advice_json, advise, read_advisor_files
from packing.advisor.finding import SEVERITY_ORDER
from packing.advisor.iam import iam_findings, preflight
from packing.cli_arguments import CliParser, add_input_arguments, input_budget
from packing.fields import InputError
from packing.kubeobjects import Inputs, expand_workloads, load_files
from packing.planning import resolve_catalog, skipped_notice

__all__ = ["build_parser", "main", "render_text"]


def _share(text: str) -> float:
    try:
        value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a share (0.2 or 20%)") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError("must be between 0 and 1 (or 0% and 100%)")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = CliParser(prog="python -m packing advise", description="Find Karpenter's classic mistakes, with fixes.")
    add_input_arguments(p)
    p.add_argument("--output", choices=("json", "text"), default="json")
    p.add_argument(
        "--do-not-disrupt-share",
        type=_share,
        default=DO_NOT_DISRUPT_SHARE,
        metavar="X",
        help=f"LM154 fires above this share of pods with do-not-disrupt (default {DO_NOT_DISRUPT_SHARE:g})",
    )
    p.add_argument("--aws", action="store_true", help="also run the IAM preflight (EC2 DryRun) with the environment's credentials")
    p.add_argument("--node-role", default="", metavar="ROLE", help="with --aws: the nodes' IAM role iam:PassRole must allow")
    return p


def render_text(advice: Advice, out: TextIO) -> None:
    s = advice.summary()
    out.write(
        f"{s['findings']} findings ({', '.join(f'{v} {k}' for k, v in s['by_severity'].items())}); "
        f"savings ${s['monthly_savings']:,.2f}/month\n"
    )
    for f in sorted(advice.findings, key=lambda f: (SEVERITY_ORDER[f.severity], f.code, f.objects)):
        money = "" if f.monthly_savings is None else f"  (${f.monthly_savings:,.2f}/month)"
        out.write(f"\n{f.code} {f.severity.upper():7} {f.title}{money}\n")
        out.write(f"  objects: {', '.join(f.objects)}\n")
        for k, v in f.evidence.items():
            out.write(f"  {k}: {json.dumps(v)}\n")
        if f.fix is not None:
            out.write(f"  fix ({f.fix.kind} {f.fix.name}):\n")
            out.write("".join(f"    {line}\n" for line in f.fix.diff.splitlines()))


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    try:
        with contextlib.redirect_stderr(stderr):  # usage errors go where the caller's stderr is
            args = build_parser().parse_intermixed_args(list(argv) if argv is not None else None)
    except SystemExit as e:
        return int(e.code or 0)
    try:
        budget = input_budget(args)
        inp, extras, manifests = read_advisor_files(args.files, budget)
        cat_inp = load_files(args.catalog, budget=budget) if args.catalog else Inputs()
        expand_workloads(inp)  # MAX_EXPANDED_PODS is bad input too
        catalog = resolve_catalog(inp, cat_inp, args.region)
    except InputError as e:
        print(f"error: {e}", file=stderr)
        return 2
    notice = skipped_notice(inp, cat_inp)
    if notice:
        print(notice, file=stderr)
    try:
        ctx = Context(inp, extras, catalog, manifests, do_not_disrupt_share=args.do_not_disrupt_share)
        advice = advise(ctx)
        if args.aws:
            import boto3  # only with --aws: the advisor itself needs no AWS

            permissions = preflight(boto3.Session(), region=args.region, node_role=args.node_role)
            advice.findings.extend(iam_findings(permissions))
            advice.extra["iam"] = {str(s): sum(1 for p in permissions if p.status == s) for s in
                                   ("allowed", "denied", "unknown")}
    except InputError as e:
        print(f"error: {e}", file=stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - the CLI promises a one-line message, never a traceback
        if os.environ.get("LOADMASTER_DEBUG"):
            raise
        print(f"error: advising failed: {type(e).__name__}: {e} (set LOADMASTER_DEBUG=1 for details)", file=stderr)
        return 1
    if args.output == "json":
        stdout.write(json.dumps(advice_json(advice), indent=2) + "\n")
    else:
        render_text(advice, stdout)
    return 0
