"""`python -m packing history DUMP...`: a history file (docs/history.md) from a series of `kubectl get
pods,nodes -A -o yaml` (or `-o json`) dumps, by diffing each dump with the one before (packing.history.dumps).

Each dump's time is its `--at` (given once per DUMP, in the same order), else a UTC time in its file name
(`pods-2026-12-03T09:40:00Z.yaml`, `20261203T094000Z.json`: what `date -u +%Y%m%dT%H%M%SZ` prints), else the
`loadmaster.dev/captured-at` annotation of its List. Dumps are
taken in time order whatever order they are named in. Node prices come from the built-in catalog of --region.
Exit 0, or 2 with one line naming the file (and document and field) on bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

from packing.cli_arguments import CliParser
from packing.documents import DEFAULT_MAX_INPUT_BYTES, ByteBudget, documents
from packing.fields import FieldError, InputError, timestamp
from packing.history.dumps import PriceOf, Snapshot, diff, read_dump
from packing.history.events import (
    NodeLaunched,
    NodeTerminated,
    OfferingPrice,
    PodArrived,
    PodDeparted,
    Prices,
)
from packing.history.jsonl import Header, History, HistoryWriter, format_time, read_history_file
from packing.kubeobjects import Inputs
from packing.planning import builtin_catalog

__all__ = ["CAPTURED_AT", "annotated_time", "build_parser", "dump_time", "main"]

CAPTURED_AT = "loadmaster.dev/captured-at"  # an annotation on a dump's List: when it was taken

# 2026-12-03T09:40:00Z, 2026-12-03T09-40-00Z (colons are awkward in file names), 20261203T094000Z
_NAME_TIME = re.compile(
    r"(?P<y>\d{4})-?(?P<mo>\d{2})-?(?P<d>\d{2})T(?P<h>\d{2})[:-]?(?P<mi>\d{2})[:-]?(?P<s>\d{2})(?P<f>\.\d{1,6})?Z"
)


def _time_arg(text: str) -> datetime:
    try:
        t = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not an RFC 3339 time such as 2026-12-03T09:40:00Z") from None
    if t.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} has no time zone (add Z for UTC)")
    return t.astimezone(UTC)


def dump_time(path: str) -> datetime | None:
    """The UTC time in a dump's file name, None when it has none."""
    m = _NAME_TIME.search(os.path.basename(path))
    if m is None:
        return None
    frac = m.group("f") or ""
    try:
        return datetime(
            int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]),
            int((frac[1:] + "000000")[:6]) if frac else 0, tzinfo=UTC,
        )  # fmt: skip
    except ValueError:
        return None


def build_parser() -> argparse.ArgumentParser:
    p = CliParser(prog="python -m packing history",
                  description="A history (JSON lines) from a series of `kubectl get pods,nodes -A -o yaml` dumps.")  # fmt: skip
    p.add_argument("dumps", nargs="+", metavar="DUMP", help="YAML or JSON dumps ('-' = stdin, once)")
    p.add_argument("--check", action="store_true",
                   help="read the files as history files instead (strictly) and print a JSON summary of each")  # fmt: skip
    p.add_argument("--at", action="append", type=_time_arg, default=[], metavar="TIME",
                   help="the time of each DUMP, in order (RFC 3339); default: the time in its file name")  # fmt: skip
    p.add_argument("-o", "--output", metavar="FILE", help="write the history here (default: stdout)")
    p.add_argument("--region", default="us-east-1", help="region of the built-in catalog that prices nodes")
    p.add_argument("--prices", action="store_true",
                   help="begin with a Prices event: every offering of the built-in catalog of --region")  # fmt: skip
    p.add_argument("--max-input-bytes", type=int, default=DEFAULT_MAX_INPUT_BYTES, metavar="N",
                   help=f"refuse dumps larger than N bytes in all (default {DEFAULT_MAX_INPUT_BYTES}; 0: no limit)")  # fmt: skip
    return p


def annotated_time(path: str, budget: ByteBudget) -> datetime | None:
    """The `loadmaster.dev/captured-at` annotation of the dump's List (its first document), None when it has
    none; the file is read whole for it (the streaming readers do not keep the List's own metadata)."""
    for _, doc in documents(budget.read(path), path):
        meta = doc.get("metadata") if isinstance(doc, Mapping) else None
        annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
        if not isinstance(annotations, Mapping):
            return None
        return timestamp(annotations.get(CAPTURED_AT), f"metadata.annotations.{CAPTURED_AT}")
    return None


def _times(paths: Sequence[str], given: Sequence[datetime], budget: ByteBudget) -> list[tuple[datetime, str]]:
    if given and len(given) != len(paths):
        raise InputError(f"--at: given {len(given)} times for {len(paths)} dumps (give one per DUMP, in order)")
    out = []
    for i, path in enumerate(paths):
        t = given[i] if given else dump_time(path)
        if t is None and path != "-":
            try:
                t = annotated_time(path, ByteBudget(budget.total))
            except FieldError as e:
                raise InputError(f"{path}: document 1: {e.path}: {e.message}") from None
        if t is None:
            raise InputError(f"{path}: no time: give --at for every dump, name the file with its UTC time "
                             f"(e.g. pods-2026-12-03T09:40:00Z.yaml) or annotate its List with {CAPTURED_AT}")  # fmt: skip
        out.append((t, path))
    out.sort()
    for (t1, p1), (t2, p2) in zip(out, out[1:], strict=False):
        if t1 == t2:
            raise InputError(f"{p2}: taken at {format_time(t2)}, the same time as {p1}")
    return out


def _catalog(region: str, want: bool) -> tuple[PriceOf, list[OfferingPrice]]:
    table: dict[tuple[str, str, str], float | None] = {}
    for t in builtin_catalog(Inputs(), region):
        for o in t.offerings:
            table[(t.name, o.zone, o.capacity_type)] = o.price
    offerings = [OfferingPrice(k[0], k[1], k[2], p) for k, p in sorted(table.items())] if want else []
    return (lambda it, zone, ct: table.get((it, zone, ct))), offerings


def write_history(paths: Sequence[str], given: Sequence[datetime], out: TextIO, *, region: str, prices: bool,
                  budget: ByteBudget) -> int:  # fmt: skip
    """Read the dumps in time order, one at a time, and write their history to `out`; the events written."""
    times = _times(paths, given, budget)
    price_of, offerings = _catalog(region, prices)
    writer = HistoryWriter(out, Header(source="python -m packing history", start=times[0][0], end=times[-1][0]))
    count = 0
    if offerings:
        writer.write(Prices(times[0][0], tuple(offerings)))
        count += 1
    prev: Snapshot | None = None
    for at, path in times:
        cur = read_dump(path, at, price_of, budget)
        for spec, template in cur.templates.items():
            writer.add_template(spec, template)
        events = diff(prev, cur)
        writer.write_all(events)
        count += len(events)
        cur.templates.clear()  # the writer holds them
        prev = cur
    return count


def summary(history: History) -> dict[str, Any]:
    """What `--check` prints of a history: its window, its events by kind, what is alive at its end."""
    kinds: dict[str, int] = {}
    pods: set[str] = set()
    nodes: set[str] = set()
    for e in history.events:
        name = type(e).__name__
        kinds[name] = kinds.get(name, 0) + 1
        if isinstance(e, PodArrived):
            pods.add(e.key)
        elif isinstance(e, PodDeparted):
            pods.discard(e.key)
        elif isinstance(e, NodeLaunched):
            nodes.add(e.name)
        elif isinstance(e, NodeTerminated):
            nodes.discard(e.name)
    times = [e.at for e in history.events]
    return {
        "version": history.header.version,
        "source": history.header.source,
        "first": format_time(times[0]) if times else None,
        "last": format_time(times[-1]) if times else None,
        "events": dict(sorted(kinds.items())),
        "templates": len(history.templates),
        "pods_at_end": len(pods),
        "nodes_at_end": len(nodes),
    }


def check_histories(paths: Sequence[str], stdout: TextIO, stderr: TextIO) -> int:
    """`--check`: each history file read strictly; 0 and one JSON summary per file, or 2 and the first bad line."""
    out = {}
    try:
        for path in paths:
            out[path] = summary(read_history_file(path))
    except InputError as e:
        print(f"error: {e}", file=stderr)
        return 2
    stdout.write(json.dumps(out, indent=2) + "\n")
    return 0


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    try:
        with contextlib.redirect_stderr(stderr):
            args = build_parser().parse_args(list(argv) if argv is not None else None)
    except SystemExit as e:
        return int(e.code or 0)
    if args.max_input_bytes < 0:
        print("error: packing history: --max-input-bytes must not be negative (0: no limit)", file=stderr)
        return 2
    budget = ByteBudget(args.max_input_bytes or None)
    if args.check:
        return check_histories(args.dumps, stdout, stderr)
    try:
        if args.output:
            # written to a temporary file and renamed: a bad dump leaves no half-written history behind
            tmp = f"{args.output}.tmp{os.getpid()}"
            try:
                with open(tmp, "w", encoding="utf-8", newline="\n") as f:
                    write_history(args.dumps, args.at, f, region=args.region, prices=args.prices, budget=budget)
                os.replace(tmp, args.output)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
        else:
            buf = io.StringIO()  # printed only when every dump was read: a bad one prints no half history
            write_history(args.dumps, args.at, buf, region=args.region, prices=args.prices, budget=budget)
            stdout.write(buf.getvalue())
    except InputError as e:
        print(f"error: {e}", file=stderr)
        return 2
    except OSError as e:
        print(f"error: {args.output}: cannot write: {e.strerror or e}", file=stderr)
        return 2
    return 0
