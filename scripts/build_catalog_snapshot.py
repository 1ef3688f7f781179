#!/usr/bin/env python
"""Build packing/catalog/data/instance-types.json.gz from the EC2 data the `moto` package ships.

moto bundles AWS's own DescribeInstanceTypes output (moto/ec2/resources/instance_types.json.gz) and
per-region DescribeInstanceTypeOfferings results by availability zone
(moto/ec2/resources/instance_type_offerings/availability-zone/<region>.json.gz). We keep only the
fields Loadmaster uses (see packing.catalog.specs.InstanceSpec) and, per region, the zones each type is
offered in, and record the moto version and generation date so the snapshot is honest about its age.

Usage:  python scripts/build_catalog_snapshot.py [--date YYYY-MM-DD] [--regions us-east-1,us-west-2] [--out PATH]
Regenerate after upgrading moto; commit the result. Prices are NOT taken from moto (it has none).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import importlib.metadata
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a plain script from a checkout, without installing the project
    sys.path.insert(0, str(ROOT))

from packing.catalog.specs import spec_from_ec2  # noqa: E402

DEFAULT_OUT = ROOT / "packing" / "catalog" / "data" / "instance-types.json.gz"


def _moto_resources() -> Path:
    import moto.ec2

    return Path(moto.ec2.__file__).resolve().parent / "resources"


def build(date: str, regions: list[str] | None) -> dict[str, Any]:
    res = _moto_resources()
    with gzip.open(res / "instance_types.json.gz", "rt") as f:
        raw: dict[str, Any] = json.load(f)
    specs = [s for s in (spec_from_ec2(v) for v in raw.values()) if s is not None]
    specs.sort(key=lambda s: s.name)
    names = {s.name for s in specs}
    az_dir = res / "instance_type_offerings" / "availability-zone"
    available = sorted(p.name.removesuffix(".json.gz") for p in az_dir.glob("*.json.gz"))
    out_regions: dict[str, Any] = {}
    for region in regions or available:
        if region not in available:
            raise SystemExit(f"moto has no offerings for region {region!r}")
        with gzip.open(az_dir / f"{region}.json.gz", "rt") as f:
            rows: list[dict[str, str]] = json.load(f)
        zones = sorted({r["Location"] for r in rows})
        index = {z: i for i, z in enumerate(zones)}
        per_type: dict[str, list[int]] = {}
        for r in rows:
            if r["InstanceType"] in names:
                per_type.setdefault(r["InstanceType"], []).append(index[r["Location"]])
        out_regions[region] = {
            "zones": zones,
            # type -> indexes into "zones": compact, and it keeps the real per-zone gaps (m5.large is not in us-east-1e)
            "offerings": {t: sorted(set(v)) for t, v in sorted(per_type.items())},
        }
    return {
        "format": 1,
        "generated": date,
        "source": f"moto {importlib.metadata.version('moto')} bundled DescribeInstanceTypes / DescribeInstanceTypeOfferings",
        "types": [s.to_json() for s in specs],
        "regions": out_regions,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument(
        "--date", default=dt.date.today().isoformat(), help="generation date to record (default today)"
    )
    ap.add_argument(
        "--regions", default="", help="comma-separated regions (default: every region moto ships)"
    )
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    args = ap.parse_args(argv)
    regions = [r.strip() for r in args.regions.split(",") if r.strip()] or None
    data = build(args.date, regions)
    payload = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # mtime=0 keeps the gzip bytes reproducible, so regenerating without changes gives no diff
    with open(out, "wb") as raw_f, gzip.GzipFile(fileobj=raw_f, mode="wb", mtime=0, compresslevel=9) as gz:
        gz.write(payload)
    print(
        f"wrote {out} ({out.stat().st_size} bytes): {len(data['types'])} types, {len(data['regions'])} regions"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
