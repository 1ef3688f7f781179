"""Live refresh from AWS through boto3, with an on-disk cache of the last good data.

What is fetched (the control loops own the schedule: types/offerings/on-demand every 12 hours, spot hourly):
- DescribeInstanceTypes and DescribeInstanceTypeOfferings (LocationType availability-zone), paginated;
- Pricing API GetProducts (us-east-1 endpoint; Linux, Shared, capacitystatus Used, preInstalledSw NA);
- DescribeSpotPriceHistory, latest price per (type, zone).

Every step is independent: a step that fails keeps the previous good data (cache, else the bundled
snapshot) and its error is reported in RefreshReport.errors. The cache lives in a directory the
caller chooses (never inside the package): <dir>/<region>/{ec2,ondemand,spot}.json.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from packing.catalog.pricing import (
    PRICING_REGION,
    OnDemandPrices,
    PricingError,
    fetch_on_demand_prices,
    fetch_spot_prices,
    load_on_demand_snapshot,
)
from packing.catalog.snapshot import CatalogError, RegionData, load_bundled
from packing.catalog.specs import InstanceSpec, spec_from_ec2

__all__ = [
    "SPOT_MAX_AGE",
    "CatalogCache",
    "RefreshReport",
    "default_cache_dir",
    "fetch_region_data",
    "have_credentials",
    "refresh",
    "refresh_spot",
]

_T = TypeVar("_T")

# Spot prices older than this are not trusted any more and the estimate is used instead (hourly refresh
# plus slack for a missed run).
SPOT_MAX_AGE = dt.timedelta(hours=3)


def default_cache_dir() -> Path:
    """$LOADMASTER_CATALOG_CACHE, else $XDG_CACHE_HOME/loadmaster/catalog, else ~/.cache/loadmaster/catalog."""
    env = os.environ.get("LOADMASTER_CATALOG_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "loadmaster" / "catalog"


def have_credentials() -> bool:
    """True when boto3 can find AWS credentials (env, profile, instance role...) without calling AWS."""
    import boto3

    try:
        return boto3.Session().get_credentials() is not None
    except Exception:  # a broken profile file must not crash the catalog: treat it as "no credentials"
        return False


def _stamp(now: dt.datetime) -> str:
    return now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%MZ")


class CatalogCache:
    """Last good live data per region, as small JSON files written atomically."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def _path(self, region: str, kind: str) -> Path:
        return self.directory / region / f"{kind}.json"

    def _read(self, region: str, kind: str) -> dict[str, Any] | None:
        path = self._path(region, kind)
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            raise CatalogError(f"unreadable catalog cache {path}: {e}") from None
        return data if isinstance(data, dict) else None

    def _write(self, region: str, kind: str, data: Mapping[str, Any]) -> None:
        path = self._path(region, kind)
        path.parent.mkdir(parents=True, exist_ok=True)
        # write-then-rename: a reader (another process) never sees half a file
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{kind}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, separators=(",", ":"), sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def region_data(self, region: str) -> RegionData | None:
        d = self._read(region, "ec2")
        if d is None:
            return None
        try:
            specs = {s["name"]: InstanceSpec.from_json(s) for s in d["types"]}
            zones = {t: tuple(z) for t, z in d["zones"].items() if t in specs}
            return RegionData(
                region, {t: specs[t] for t in zones}, zones, f"live {d['fetched_at']}", str(d["fetched_at"])
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise self._corrupt(region, "ec2", e) from None

    def save_region_data(self, data: RegionData) -> None:
        self._write(
            data.region,
            "ec2",
            {
                "fetched_at": data.date,
                "types": [s.to_json() for s in data.specs.values()],
                "zones": {t: list(z) for t, z in data.zones.items()},
            },
        )

    def on_demand(self, region: str) -> OnDemandPrices | None:
        d = self._read(region, "ondemand")
        if d is None:
            return None
        try:
            return OnDemandPrices(
                region,
                {k: float(v) for k, v in d["prices"].items()},
                f"live {d['fetched_at']}",
                str(d["fetched_at"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise self._corrupt(region, "ondemand", e) from None

    def save_on_demand(self, prices: OnDemandPrices) -> None:
        self._write(prices.region, "ondemand", {"fetched_at": prices.date, "prices": dict(prices.prices)})

    def spot(
        self, region: str, *, now: dt.datetime | None = None
    ) -> dict[tuple[str, str], tuple[float, str]] | None:
        """Cached live spot prices, or None when absent or older than SPOT_MAX_AGE at `now`."""
        d = self._read(region, "spot")
        if d is None:
            return None
        try:
            if now is not None:
                fetched = dt.datetime.fromisoformat(str(d["fetched_at"]).replace("Z", "+00:00"))
                if now - fetched > SPOT_MAX_AGE:
                    return None
            source = f"live {d['fetched_at']}"
            return {(t, z): (float(p), source) for t, z, p in d["prices"]}
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise self._corrupt(region, "spot", e) from None

    def _corrupt(self, region: str, kind: str, e: Exception) -> CatalogError:
        return CatalogError(f"corrupt catalog cache {self._path(region, kind)}: {type(e).__name__}: {e}")

    def save_spot(
        self, region: str, prices: Mapping[tuple[str, str], tuple[float, str]], now: dt.datetime
    ) -> None:
        rows = sorted([t, z, p] for (t, z), (p, _) in prices.items())
        self._write(region, "spot", {"fetched_at": _stamp(now), "prices": rows})


@dataclass
class RefreshReport:
    """What a refresh changed, and which steps failed (their old data was kept)."""

    region: str
    fetched_at: str
    types_added: list[str] = field(default_factory=list)
    types_removed: list[str] = field(default_factory=list)
    offerings_changed: list[str] = field(default_factory=list)  # types whose zone list changed
    prices_changed: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    prices_fetched: int = 0
    spot_prices_fetched: int = 0
    errors: dict[str, str] = field(default_factory=dict)  # step -> message

    @property
    def ok(self) -> bool:
        return not self.errors

    def lines(self) -> list[str]:
        out = [f"refresh {self.region} at {self.fetched_at}:"]
        out.append(
            f"  instance types: +{len(self.types_added)} -{len(self.types_removed)}, "
            f"offerings changed for {len(self.offerings_changed)}"
        )
        out += [f"    added {t}" for t in self.types_added[:20]]
        out += [f"    removed {t}" for t in self.types_removed[:20]]
        out += [f"    zones changed for {t}" for t in self.offerings_changed[:20]]
        moved = {t: v for t, v in self.prices_changed.items() if v[0] is not None and v[1] is not None}
        new = sorted(t for t, v in self.prices_changed.items() if v[0] is None)
        gone = sorted(t for t, v in self.prices_changed.items() if v[1] is None)
        out.append(
            f"  on-demand prices: {self.prices_fetched} fetched; {len(moved)} changed, "
            f"{len(new)} newly priced, {len(gone)} not in the live list (their snapshot price, if any, stays)"
        )
        out += [f"    {t}: {old} -> {cur}" for t, (old, cur) in sorted(moved.items())[:50]]
        if new:
            out.append(f"    newly priced: {', '.join(new[:20])}{' ...' if len(new) > 20 else ''}")
        if gone:
            out.append(f"    no longer listed: {', '.join(gone[:20])}{' ...' if len(gone) > 20 else ''}")
        out.append(f"  spot prices: {self.spot_prices_fetched} fetched")
        for step, msg in sorted(self.errors.items()):
            out.append(f"  FAILED {step}: {msg} (kept the last good data)")
        return out


def fetch_region_data(client: Any, region: str, *, now: dt.datetime) -> RegionData:
    """DescribeInstanceTypes + DescribeInstanceTypeOfferings through a boto3 EC2 client of `region`."""
    specs: dict[str, InstanceSpec] = {}
    for page in client.get_paginator("describe_instance_types").paginate():
        for info in page.get("InstanceTypes", []):
            spec = spec_from_ec2(info)
            if spec is not None:
                specs[spec.name] = spec
    if not specs:
        raise CatalogError(f"DescribeInstanceTypes returned no usable instance types in {region}")
    zones: dict[str, set[str]] = {}
    for page in client.get_paginator("describe_instance_type_offerings").paginate(
        LocationType="availability-zone"
    ):
        for row in page.get("InstanceTypeOfferings", []):
            if row.get("InstanceType") in specs:
                zones.setdefault(row["InstanceType"], set()).add(row["Location"])
    if not zones:
        raise CatalogError(f"DescribeInstanceTypeOfferings returned no offerings in {region}")
    stamp = _stamp(now)
    return RegionData(
        region,
        {t: specs[t] for t in sorted(zones)},
        {t: tuple(sorted(z)) for t, z in sorted(zones.items())},
        f"live {stamp}",
        stamp,
    )


def _client_error_text(e: Exception) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0][:300]


def _quietly(read: Callable[[], _T]) -> _T | None:
    try:
        return read()
    except CatalogError:
        return None


def refresh(
    region: str,
    cache_dir: str | os.PathLike[str],
    *,
    previous: RegionData | None = None,
    previous_prices: OnDemandPrices | None = None,
    ec2: Any = None,
    pricing: Any = None,
    now: dt.datetime | None = None,
    session: Any = None,
    types: bool = True,
    on_demand: bool = True,
    spot: bool = True,
) -> RefreshReport:
    """Pull live data into the cache and report what changed against `previous` (or the cache).

    Clients are created from `session` (default boto3.Session()) unless given; tests pass moto / Stubber
    clients. Errors never propagate: each failed step is recorded and its old data stays in force.
    """
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    failures = (
        BotoCoreError,
        ClientError,
        CatalogError,
        PricingError,
        KeyError,
        ValueError,
        TypeError,
        OSError,
    )
    now = now or dt.datetime.now(dt.UTC)
    cache = CatalogCache(cache_dir)
    report = RefreshReport(region, _stamp(now))
    sess = session or boto3.Session()
    if previous is None:
        # compare with what was in force: the cache, else the bundled snapshot (None for a region we do not ship);
        # a corrupt cache must not block the refresh that will overwrite it
        previous = _quietly(lambda: cache.region_data(region)) or _quietly(lambda: load_bundled(region))
    if types:
        try:
            client = ec2 or sess.client("ec2", region_name=region)
            fresh = fetch_region_data(client, region, now=now)
            if previous is not None:
                report.types_added = sorted(set(fresh.specs) - set(previous.specs))
                report.types_removed = sorted(set(previous.specs) - set(fresh.specs))
                report.offerings_changed = sorted(
                    t for t in set(fresh.zones) & set(previous.zones) if fresh.zones[t] != previous.zones[t]
                )
            else:
                report.types_added = sorted(fresh.specs)
            cache.save_region_data(fresh)
        except failures as e:
            report.errors["instance types"] = _client_error_text(e)
    if on_demand:
        try:
            client = pricing or sess.client("pricing", region_name=PRICING_REGION)
            prices = fetch_on_demand_prices(client, region, now=now)
            # compare with what was in force: the cache, else the bundled snapshot
            old = (
                previous_prices
                or _quietly(lambda: cache.on_demand(region))
                or load_on_demand_snapshot(region)
            )
            report.prices_fetched = len(prices.prices)
            if old is not None:
                for t in sorted(set(old.prices) | set(prices.prices)):
                    a, b = old.get(t), prices.get(t)
                    if a != b:
                        report.prices_changed[t] = (a, b)
            cache.save_on_demand(prices)
        except failures as e:
            report.errors["on-demand prices"] = _client_error_text(e)
    if spot:
        try:
            client = ec2 or sess.client("ec2", region_name=region)
            report.spot_prices_fetched = refresh_spot(region, cache_dir, client, now=now)
        except failures as e:
            report.errors["spot prices"] = _client_error_text(e)
    return report


def refresh_spot(
    region: str, cache_dir: str | os.PathLike[str], client: Any, *, now: dt.datetime | None = None
) -> int:
    """The hourly spot refresh: DescribeSpotPriceHistory into the cache. Returns how many prices were stored;
    raises (botocore errors, CatalogError) so the caller's loop can report and retry."""
    now = now or dt.datetime.now(dt.UTC)
    prices = fetch_spot_prices(client, now=now)
    if not prices:
        raise CatalogError(f"DescribeSpotPriceHistory returned no prices in {region}")
    CatalogCache(cache_dir).save_spot(region, prices, now)
    return len(prices)
