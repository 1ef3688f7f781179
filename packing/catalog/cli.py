"""`python -m packing catalog`: list instance types with allocatable, prices and zones.

    python -m packing catalog [--region R] [--filter 'key Op [v1,v2]']... [--output json|text]
                              [--override 'm5=-20%']... [--kubelet '{"maxPods": 110}'] [--refresh] [--cache-dir D]

--refresh pulls live data through boto3 (needs AWS credentials), stores it in the cache directory and
reports what changed; a failed step keeps the previous data, is reported on stderr, and the exit code is 1.
Bad input exits 2 with a one-line message.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from packing.catalog import region_sources
from packing.catalog.allocatable import KubeletError
from packing.catalog.builder import build_instance_types
from packing.catalog.pricing import PriceOverride, PricingError
from packing.catalog.snapshot import CatalogError
from packing.catalog.specs import LABEL_CAPACITY_TYPE, LABEL_ZONE, InstanceSpec
from packing.instancetype import InstanceType, Offering
from packing.requirements import Requirement, RequirementError
from packing.resources import CPU, MEMORY, PODS
from packing.yamlinput import brief

__all__ = ["instance_type_to_json", "main", "parse_filter"]

_FILTER_RE = re.compile(r"^\s*(?P<key>[A-Za-z0-9./_-]+)\s+(?P<op>[A-Za-z]+)\s*(?P<vals>.*?)\s*$")
_OFFERING_KEYS = (LABEL_ZONE, LABEL_CAPACITY_TYPE)
FAMILY_LABEL = "karpenter.k8s.aws/instance-family"


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


def _offering_matches(req: Requirement, o: Offering) -> bool:
    value = o.zone if req.key == LABEL_ZONE else o.capacity_type
    return req.has(value)


def apply_filters(types: Sequence[InstanceType], reqs: Sequence[Requirement]) -> list[InstanceType]:
    """Keep types whose labels satisfy every requirement; zone / capacity-type requirements narrow the offerings."""
    out: list[InstanceType] = []
    for t in types:
        if not all(r.has(t.labels.get(r.key)) for r in reqs if r.key not in _OFFERING_KEYS):
            continue
        offering_reqs = [r for r in reqs if r.key in _OFFERING_KEYS]
        if offering_reqs:
            kept = tuple(o for o in t.offerings if all(_offering_matches(r, o) for r in offering_reqs))
            if not kept:
                continue
            t = InstanceType(t.name, t.capacity, t.overhead, t.labels, kept)
        out.append(t)
    return out


def _on_demand(t: InstanceType) -> Offering | None:
    return next((o for o in t.offerings if o.capacity_type == "on-demand"), None)


def instance_type_to_json(t: InstanceType, spec: InstanceSpec | None = None) -> dict[str, Any]:
    """The `--output json` object of one type (the console's catalog API can reuse it)."""
    od = _on_demand(t)
    out: dict[str, Any] = {
        "name": t.name,
        "labels": dict(sorted(t.labels.items())),
        "capacity": t.capacity.to_strings(),
        "overhead": t.overhead.to_strings(),
        "allocatable": t.allocatable.to_strings(),
        "on_demand_price": od.price if od else None,
        "on_demand_source": od.price_source if od else "price unknown",
        "zones": sorted({o.zone for o in t.offerings}),
        "offerings": [
            {
                "zone": o.zone,
                "capacityType": o.capacity_type,
                "price": o.price,
                "price_source": o.price_source,
                "available": o.available,
            }
            for o in t.offerings
        ],
    }
    if spec is not None:
        # the raw EC2 facts the labels do not carry (ENI limits, bare metal, burstable, neuron cores...)
        out["spec"] = dataclasses.asdict(spec)
    return out


def _fmt_price(p: float | None) -> str:
    return "unknown" if p is None else f"{p:.4f}"


def _text(types: Sequence[InstanceType], header: list[str]) -> str:
    rows = [
        (
            "NAME",
            "ARCH",
            "CPU",
            "MEMORY",
            "PODS",
            "ALLOC CPU",
            "ALLOC MEM",
            "ON-DEMAND $/H",
            "SPOT $/H (min)",
            "ZONES",
        )
    ]
    for t in types:
        od = _on_demand(t)
        spots = [o for o in t.offerings if o.capacity_type == "spot" and o.price is not None]
        best = min(spots, key=lambda o: o.price or 0.0) if spots else None
        spot = (
            "-"
            if best is None
            else _fmt_price(best.price) + (" est" if best.price_source == "estimate" else "")
        )
        cap, alloc = t.capacity.to_strings(), t.allocatable.to_strings()
        zones = sorted(
            {
                o.zone[-1:] if o.zone[:-1] == t.labels.get("topology.kubernetes.io/region") else o.zone
                for o in t.offerings
            }
        )
        rows.append(
            (
                t.name,
                t.labels.get("kubernetes.io/arch", ""),
                cap.get(CPU, "0"),
                cap.get(MEMORY, "0"),
                cap.get(PODS, "0"),
                alloc.get(CPU, "0"),
                alloc.get(MEMORY, "0"),
                _fmt_price(od.price if od else None) if od and od.price is not None else "price unknown",
                spot,
                ",".join(zones),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = list(header)
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.append(f"{len(types)} instance types")
    return "\n".join(lines)


def _parse_kubelet(text: str) -> dict[str, Any]:
    import yaml

    from packing.yamlinput import load_one

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

    from packing.catalog.live import default_cache_dir, have_credentials, refresh

    cache_dir = Path(args.cache_dir) if args.cache_dir else default_cache_dir()
    status = 0
    if args.refresh:
        if not have_credentials():
            print(
                "catalog: --refresh needs AWS credentials (none found); showing the last good data",
                file=sys.stderr,
            )
            status = 1
        else:
            report = refresh(args.region, cache_dir)
            for line in report.lines():
                print(line, file=sys.stderr)
            status = 0 if report.ok else 1
    data, prices, spot = region_sources(args.region, cache_dir=cache_dir)
    types = build_instance_types(data, prices, spot=spot, kubelet=kubelet, overrides=overrides)
    # family, then size by resources: reads like the AWS docs (m5.large before m5.xlarge before m5.2xlarge)
    types = sorted(
        apply_filters(types, reqs),
        key=lambda t: (
            t.labels.get(FAMILY_LABEL, t.name),
            t.capacity.get(CPU),
            t.capacity.get(MEMORY),
            t.name,
        ),
    )
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
        print(_text(types, header))
    return status
