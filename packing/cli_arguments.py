"""What the dry-run commands (plan, consolidate) read the same way: FILE..., --catalog, --region,
--max-input-bytes and --min-values-policy, and the exit contract of their usage errors."""

from __future__ import annotations

import argparse
import sys

from packing.documents import DEFAULT_MAX_INPUT_BYTES, ByteBudget
from packing.requirements import MinValuesPolicy

__all__ = ["CliParser", "add_input_arguments", "input_budget"]


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
    """FILE..., --catalog, --region, --max-input-bytes and --min-values-policy: what plan and consolidate read
    the same way."""
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
    p.add_argument(
        "--min-values-policy",
        type=MinValuesPolicy,
        choices=list(MinValuesPolicy),
        default=MinValuesPolicy.STRICT,
        metavar="{Strict,BestEffort}",
        help="when a NodeClaim cannot keep a requirement's minValues: Strict (default) leaves its pods "
        "unschedulable on that pool, BestEffort relaxes the minimum and marks the NodeClaim min_values_relaxed",
    )


def input_budget(args: argparse.Namespace) -> ByteBudget:
    return ByteBudget(args.max_input_bytes or None)
