"""`python -m packing replay HISTORY [--change FILE...] [--from T] [--to T] [--output json|text]`: replay a
history through the provisioning and disruption engines, with the configuration in force and with a change."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from packing.cli_arguments import CliParser
from packing.disruption.formatting import parse_time
from packing.documents import kubernetes_objects, read_text
from packing.fields import InputError
from packing.history.jsonl import read_history_file
from packing.replay.config import change_manifests
from packing.replay.replay import ReplayResult, replay
from packing.yamlinput import brief

__all__ = ["build_parser", "main", "render_text"]


def build_parser() -> argparse.ArgumentParser:
    p = CliParser(
        prog="python -m packing replay",
        description="Replay a history (docs/history.md) through the engines, as configured and with a change.",
    )
    p.add_argument("history", metavar="HISTORY", help="a history file (JSON lines, docs/history.md; '-' = stdin)")
    p.add_argument("--change", action="append", default=[], metavar="FILE",
                   help="NodePools / EC2NodeClasses replacing those of the same name for the whole replay")
    p.add_argument("--from", dest="start", metavar="ISO-8601", help="start of the window (default the history's)")
    p.add_argument("--to", dest="end", metavar="ISO-8601", help="end of the window (default the history's)")
    p.add_argument("--region", default="us-east-1", help="region of the built-in catalog (default us-east-1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the choices a replay makes at random (default 0)")
    p.add_argument("--no-repack", action="store_true",
                   help="consolidation without Loadmaster's repack move (as LOADMASTER_CONSOLIDATION_REPACK=0)")
    p.add_argument("--output", choices=("json", "text"), default="json")
    return p


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    try:
        with contextlib.redirect_stderr(stderr):
            args = build_parser().parse_intermixed_args(list(argv) if argv is not None else None)
    except SystemExit as e:
        return int(e.code or 0)
    try:
        start = parse_time(args.start) if args.start else None
        end = parse_time(args.end) if args.end else None
    except ValueError:
        bad = args.start if args.start and not _is_time(args.start) else args.end
        flag = "--from" if bad == args.start else "--to"
        print(f"error: {flag}: invalid time {brief(bad)} (expected ISO-8601, e.g. 2026-12-01T05:00:00Z)", file=stderr)
        return 2
    if start and end and end <= start:
        print("error: --to: must be after --from", file=stderr)
        return 2
    try:
        history = read_history_file(args.history)
        docs = []
        for path in args.change:
            for where, prefix, obj in kubernetes_objects(read_text(path), path):
                docs.append((f"{where}{' ' + prefix.rstrip('.') if prefix else ''}", obj))
        change = change_manifests(docs)
    except InputError as e:
        print(f"error: {e}", file=stderr)
        return 2
    try:
        result = replay(history, change=change, start=start, end=end, region=args.region, seed=args.seed,
                        repack=not args.no_repack)
    except InputError as e:
        print(f"error: {e}", file=stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - the CLI promises a one-line message, never a traceback
        if os.environ.get("LOADMASTER_DEBUG"):
            raise
        print(f"error: replay failed: {type(e).__name__}: {e} (set LOADMASTER_DEBUG=1 for details)", file=stderr)
        return 1
    if args.output == "json":
        stdout.write(json.dumps(result.as_json(), indent=2) + "\n")
    else:
        render_text(result, stdout)
    return 0


def _is_time(text: str) -> bool:
    try:
        parse_time(text)
    except ValueError:
        return False
    return True


def render_text(result: ReplayResult, out: TextIO) -> None:
    doc = result.as_json()
    w = out.write
    win = doc["window"]
    w(f"Replay {win['from']} to {win['until']} ({win['hours']} h) in {doc['replay_seconds']} s\n")
    runs = [("actual", doc["actual"]), ("current", doc["current"])]
    if doc["changed"] is not None:
        runs.append(("changed", doc["changed"]))
    w(f"{'':24}" + "".join(f"{name:>14}" for name, _ in runs) + "\n")
    rows: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("cost $", lambda r: f"{r['cost']:.2f}"),
        ("node-hours on-demand", lambda r: f"{r['node_hours'].get('on-demand', 0):.1f}"),
        ("node-hours spot", lambda r: f"{r['node_hours'].get('spot', 0):.1f}"),
        ("nodes launched", lambda r: str(r["nodes_launched"])),
        ("nodes disrupted", lambda r: str(sum(r["nodes_disrupted"].values()))),
        ("evictions", lambda r: str(sum(r["evictions"].values()))),
        ("pending p50 s", lambda r: _num(r["pending_seconds"]["p50"])),
        ("pending p95 s", lambda r: _num(r["pending_seconds"]["p95"])),
        ("pending max s", lambda r: _num(r["pending_seconds"]["max"])),
        ("never scheduled", lambda r: str(r["never_scheduled"])),
        ("interruptions absorbed", lambda r: f"{r['interruptions']['absorbed']}/{r['interruptions']['seen']}"),
    ]
    for label, cell in rows:
        w(f"{label:24}" + "".join(f"{cell(r):>14}" for _, r in runs) + "\n")
    if doc["difference"] is not None:
        d = doc["difference"]
        pct = "" if d["cost_percent"] is None else f" ({d['cost_percent']:+.2f}%)"
        w(f"Change {', '.join(doc['change'])}: cost {d['cost']:+.2f} ${pct}\n")
        for day, delta in d["cost_by_day"].items():
            w(f"  {day}: {delta:+.2f} $\n")


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"
