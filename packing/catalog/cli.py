"""`python -m packing catalog`: list instance types with allocatable, prices and zones.

    python -m packing catalog [--region R] [--filter 'key Op [v1,v2]']... [--output json|text]
                              [--override 'm5=-20%']... [--kubelet '{"maxPods": 110}'] [--refresh] [--cache-dir D]

--refresh pulls live data through boto3 (needs AWS credentials), stores it in the cache directory and
reports what changed; a failed step keeps the previous data, is reported on stderr, and the exit code is 1.
Bad input exits 2 with a one-line message.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import yaml

from packing.catalog import live, region_sources
from packing.catalog.allocatable import KubeletError
from packing.catalog.builder import build_instance_types
from packing.catalog.listing import instance_type_to_json, listed, render_text
from packing.catalog.pricing import PriceOverride, PricingError
from packing.catalog.snapshot import CatalogError
from packing.requirements import Requirement, RequirementError
from packing.yamlinput import brief, load_one

# instance_type_to_json is re-exported: it was this module's (packing.catalog.listing holds it now)
__all__ = ["instance_type_to_json", "main", "parse_filter"]

_FILTER_RE = re.compile(r"^\s*(?P<key>[A-Za-z0-9./_-]+)\s+(?P<op>[A-Za-z]+)\s*(?P<vals>.*?)\s*$")


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(
        self, message: str
    ) -> NoReturn:  # one line on stderr and exit 2, never a usage dump + traceback
        raise UsageError(message)


def parse_filter(text: str) -> Requirement:
    """'karpenter.k8s.aws/instance-family In [m7g,c7g]', 'key Exists', 'karpenter.k8s.aws/instance-cpu Gt 4'."""
    m = _FILTER_RE.match(text)
    if not m:
        raise UsageError(f"bad --filter {brief(text)}: expected 'key Operator [v1,v2]'")
    raw = m.group("vals")
    if raw.startswith("[") != raw.endswith("]"):
        raise UsageError(f"bad --filter {brief(text)}: unbalanced brackets")
    raw = raw.strip("[]")
    values = [v.strip().strip("'\"") for v in re.split(r"[,\s]+", raw) if v.strip()]
    try:
        return Requirement.new(m.group("key"), m.group("op"), values)
    except RequirementError as e:
        raise UsageError(f"bad --filter {brief(text)}: {e}") from None


def _parse_kubelet(text: str) -> dict[str, Any]:
    try:
        # YAML is a superset of JSON, so both '{"maxPods": 110}' and 'maxPods: 110' work
        value = load_one(text)
    except yaml.YAMLError as e:  # the shared reader's errors only: tags, aliases, duplicate keys are input errors
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise UsageError(f"bad --kubelet: {str(problem)[:200]}") from None
    if not isinstance(value, dict):
        raise UsageError("bad --kubelet: expected a mapping such as '{\"maxPods\": 110}'")
    return value


def _build_parser() -> _Parser:
    p = _Parser(
        prog="python -m packing catalog",
        description="List EC2 instance types with allocatable, prices and zones.",
    )
    p.add_argument("--region", default="us-east-1")
    p.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="'KEY OP [V1,V2]'",
        help="label requirement; repeatable (AND)",
    )
    p.add_argument("--output", choices=("json", "text"), default="text")
    p.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="RULE",
        help="price override, e.g. 'm5=-20%%', 'm5.large=0.08', 'spot:*=-5%%'",
    )
    p.add_argument("--kubelet", default=None, help="EC2NodeClass spec.kubelet as JSON/YAML")
    p.add_argument(
        "--refresh", action="store_true", help="pull live data through boto3 first and report what changed"
    )
    p.add_argument(
        "--cache-dir",
        default=None,
        help="live-data cache directory (default $LOADMASTER_CATALOG_CACHE or ~/.cache/loadmaster/catalog)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except UsageError as e:
        print(f"catalog: {e}", file=sys.stderr)
        return 2
    except (CatalogError, KubeletError, PricingError) as e:
        print(f"catalog: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `| head` closed stdout: not an error worth a traceback
        return 0
    except SystemExit as e:  # --help: argparse exits; main() returns the code instead
        return e.code if isinstance(e.code, int) else 0


def _main(argv: list[str]) -> int:
    args = _build_parser().parse_args(argv)
    reqs = [parse_filter(f) for f in args.filter]
    overrides: list[PriceOverride] = []
    for rule in args.override:
        try:
            overrides.append(PriceOverride.parse(rule))
        except PricingError as e:
            raise UsageError(str(e)) from None
    kubelet = _parse_kubelet(args.kubelet) if args.kubelet is not None else None
    # live's functions are looked up at each call (tests stand in for AWS there)
    cache_dir = Path(args.cache_dir) if args.cache_dir else live.default_cache_dir()
    status = 0
    if args.refresh:
        if not live.have_credentials():
            print(
                "catalog: --refresh needs AWS credentials (none found); showing the last good data",
                file=sys.stderr,
            )
            status = 1
        else:
            report = live.refresh(args.region, cache_dir)
            for line in report.lines():
                print(line, file=sys.stderr)
            status = 0 if report.ok else 1
    data, prices, spot = region_sources(args.region, cache_dir=cache_dir)
    types = build_instance_types(data, prices, spot=spot, kubelet=kubelet, overrides=overrides)
    types = listed(types, reqs)
    if args.output == "json":
        json.dump([instance_type_to_json(t, data.specs.get(t.name)) for t in types], sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        if prices is None:
            od_line = "none bundled for this region: every price unknown (run --refresh with credentials)"
        elif prices.fallback is not None:
            od_line = (
                f"{prices.source}, else {prices.fallback.source} (AWS list prices, Linux, shared tenancy)"
            )
        else:
            od_line = f"{prices.source} (AWS list prices, Linux, shared tenancy)"
        spot_line = (
            next(iter(spot.values()))[1]
            if spot
            else "estimate (no live spot data; model in packing.catalog.pricing)"
        )
        header = [
            f"# region {args.region}; instance types: {data.source}",
            f"# on-demand prices: {od_line}",
            f"# spot prices: {spot_line}"
            + (f"; overrides: {', '.join(o.describe() for o in overrides)}" if overrides else ""),
        ]
        print(render_text(types, header))
    return status
