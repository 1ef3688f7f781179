"""On-demand and spot prices: the bundled dated snapshot, the live AWS APIs, the spot estimate, overrides.

On-demand
    The bundled snapshot (data/ondemand-<region>.txt) holds AWS list prices for Linux, shared tenancy,
    capacitystatus Used, preInstalledSw NA, with its date and source in the file header. A type absent
    from it has price None ("price unknown") and is never launched: we never guess a price. Live prices
    come from the Pricing API GetProducts (its endpoint lives in us-east-1 whatever region is priced).

Spot
    Live: DescribeSpotPriceHistory, the most recent price per (type, zone); price_source "live <time>".
    Offline estimate model (price_source "estimate"), used whenever no live spot price is known:

        spot_estimate(type, zone) = on_demand(type) x ratio(type) x zone_factor(type, zone)

    ratio is SPOT_RATIO_DEFAULT (0.35, i.e. the 65 % saving AWS advertises as typical for spot) and
    SPOT_RATIO_ACCELERATED (0.45) for GPU / Neuron types, whose spot discounts are smaller in practice;
    zone_factor is a deterministic number in [0.95, 1.05] from a CRC32 of "type/zone", so zones differ a
    little (as real spot markets do) and every run of the estimate gives the same answer. A type with no
    known on-demand price has no spot estimate either (None). Estimates are never presented as prices
    AWS quoted: everything that shows them carries price_source "estimate".

Overrides
    PriceOverride rules (a fixed price per type or per family, or a percentage adjustment for Savings
    Plans / RIs / enterprise discounts) are applied in order after the base price is known, and each one
    that changed a price is appended to the offering's price_source ("snapshot 2026-01-19; override m5=-20%").
"""

from __future__ import annotations

import datetime as dt
import json
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from packing.catalog.specs import InstanceSpec, split_name
from packing.instancetype import CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT

__all__ = [
    "SPOT_RATIO_ACCELERATED",
    "SPOT_RATIO_DEFAULT",
    "OnDemandPrices",
    "PriceOverride",
    "PricingError",
    "apply_overrides",
    "fetch_on_demand_prices",
    "fetch_spot_prices",
    "load_on_demand_snapshot",
    "parse_price_list",
    "pricing_filters",
    "spot_estimate",
]

SPOT_RATIO_DEFAULT = 0.35
SPOT_RATIO_ACCELERATED = 0.45
PRICING_REGION = "us-east-1"  # the Pricing API has endpoints in us-east-1 (and ap-south-1, eu-central-1) only


class PricingError(ValueError):
    """Bad price data or a bad override; the message says which."""


@dataclass(frozen=True)
class OnDemandPrices:
    """Prices per instance type for one region and where they came from."""

    region: str
    prices: Mapping[str, float]
    source: str  # "snapshot 2026-01-19" | "live 2026-11-30T10:00Z"
    date: str  # ISO date (snapshot) or timestamp (live)
    detail: str = ""  # full provenance text (file header)
    fallback: OnDemandPrices | None = None  # consulted for types this source does not price

    def get(self, name: str) -> float | None:
        price = self.prices.get(name)
        if price is None and self.fallback is not None:
            return self.fallback.get(name)
        return price

    def source_of(self, name: str) -> str | None:
        """Where the price of `name` comes from, or None when no source prices it."""
        if name in self.prices:
            return self.source
        return self.fallback.source_of(name) if self.fallback is not None else None


_PAIR = re.compile(r'"([^"]+)"\s*:\s*([0-9]+(?:\.[0-9]+)?)')


def _parse_snapshot_text(text: str, region: str) -> OnDemandPrices:
    meta: dict[str, str] = {}
    header: list[str] = []
    prices: dict[str, float] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        body, _, comment = line.partition("#")
        if comment and not body.strip():
            header.append(comment.strip())
            m = re.match(r"\s*(date|region):\s*(\S+)", comment)
            if m:
                meta[m.group(1)] = m.group(2)
            continue
        if not body.strip():
            continue
        pairs = _PAIR.findall(body)
        if not pairs or _PAIR.sub("", body).strip(" ,\t"):
            raise PricingError(f"price snapshot line {lineno}: cannot parse {line!r}")
        for name, price in pairs:
            if name in prices:
                raise PricingError(f"price snapshot line {lineno}: {name} listed twice")
            prices[name] = float(price)
    date = meta.get("date")
    if not date:
        raise PricingError("price snapshot has no '# date:' line")
    if meta.get("region", region) != region:
        raise PricingError(f"price snapshot is for {meta['region']}, not {region}")
    return OnDemandPrices(region, prices, f"snapshot {date}", date, "\n".join(h for h in header if h))


def snapshot_regions() -> list[str]:
    data = resources.files("packing.catalog").joinpath("data")
    return sorted(
        p.name.removeprefix("ondemand-").removesuffix(".txt")
        for p in data.iterdir()
        if p.name.startswith("ondemand-") and p.name.endswith(".txt")
    )


def load_on_demand_snapshot(region: str) -> OnDemandPrices | None:
    """The bundled price snapshot for `region`, or None when we ship none for it (every price unknown)."""
    path = resources.files("packing.catalog").joinpath("data").joinpath(f"ondemand-{region}.txt")
    if not path.is_file():
        return None
    return _parse_snapshot_text(path.read_text(encoding="utf-8"), region)


# ---------------------------------------------------------------------------------------------- Pricing API


def pricing_filters(region: str) -> list[dict[str, str]]:
    """GetProducts filters for on-demand Linux shared-tenancy prices in `region` (the list price a bill shows)."""
    pairs = [
        ("regionCode", region),
        ("operatingSystem", "Linux"),
        ("tenancy", "Shared"),
        ("capacitystatus", "Used"),
        ("preInstalledSw", "NA"),
    ]
    return [{"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in pairs]


def parse_price_list(items: Iterable[str | Mapping[str, Any]]) -> dict[str, float]:
    """instance type -> USD/hour from GetProducts PriceList entries (JSON strings, as the API returns them).

    Entries that are not hourly USD on-demand prices, or are zero (placeholder SKUs), are skipped; if a type
    has several SKUs left we keep the highest, which is the plain Linux one (others are discounted variants).
    """
    out: dict[str, float] = {}
    for item in items:
        doc = json.loads(item) if isinstance(item, str) else item
        attrs = (doc.get("product") or {}).get("attributes") or {}
        name = attrs.get("instanceType")
        if not name:
            continue
        for term in ((doc.get("terms") or {}).get("OnDemand") or {}).values():
            for dim in (term.get("priceDimensions") or {}).values():
                if str(dim.get("unit", "")).lower() not in ("hrs", "hours"):
                    continue
                usd = (dim.get("pricePerUnit") or {}).get("USD")
                try:
                    price = float(str(usd))
                except (TypeError, ValueError):
                    continue
                if price > 0:
                    out[name] = max(price, out.get(name, 0.0))
    return out


def fetch_on_demand_prices(client: Any, region: str, *, now: dt.datetime) -> OnDemandPrices:
    """Live on-demand prices through a boto3 "pricing" client (create it with region_name="us-east-1")."""
    items: list[str] = []
    paginator = client.get_paginator("get_products")
    for page in paginator.paginate(
        ServiceCode="AmazonEC2", Filters=pricing_filters(region), FormatVersion="aws_v1"
    ):
        items.extend(page.get("PriceList", []))
    prices = parse_price_list(items)
    if not prices:
        raise PricingError(f"the Pricing API returned no Linux on-demand prices for {region}")
    stamp = now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%MZ")
    return OnDemandPrices(region, prices, f"live {stamp}", stamp, "AWS Price List API GetProducts")


# ---------------------------------------------------------------------------------------------------- Spot


def fetch_spot_prices(
    client: Any, *, now: dt.datetime, instance_types: Sequence[str] = ()
) -> dict[tuple[str, str], tuple[float, str]]:
    """(type, zone) -> (price, "live <timestamp>") from DescribeSpotPriceHistory, the latest row per pair.

    StartTime=now asks EC2 for the price in force now (one row per pair) rather than hours of history.
    Call it at least hourly; the control loops own the schedule.
    """
    kwargs: dict[str, Any] = {
        "ProductDescriptions": ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"],
        "StartTime": now,
    }
    if instance_types:
        kwargs["InstanceTypes"] = list(instance_types)
    latest: dict[tuple[str, str], tuple[dt.datetime, float]] = {}
    for page in client.get_paginator("describe_spot_price_history").paginate(**kwargs):
        for row in page.get("SpotPriceHistory", []):
            key = (row["InstanceType"], row["AvailabilityZone"])
            ts = row.get("Timestamp") or now
            if isinstance(ts, str):
                ts = dt.datetime.fromisoformat(ts.replace("Z", "+00:00"))
            try:
                price = float(row["SpotPrice"])
            except (KeyError, TypeError, ValueError):
                continue
            if price <= 0:
                continue
            if key not in latest or ts > latest[key][0]:
                latest[key] = (ts, price)
    stamp = now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%MZ")
    return {k: (p, f"live {stamp}") for k, (_, p) in latest.items()}


def spot_estimate(spec: InstanceSpec, zone: str, on_demand: float | None) -> float | None:
    """The documented offline estimate (module docstring); None when the on-demand price is unknown."""
    if on_demand is None:
        return None
    ratio = SPOT_RATIO_ACCELERATED if (spec.gpu_count or spec.accelerator_count) else SPOT_RATIO_DEFAULT
    h = zlib.crc32(f"{spec.name}/{zone}".encode())
    zone_factor = 0.95 + (h % 1001) / 10000  # 0.95 .. 1.05
    return round(on_demand * ratio * zone_factor, 6)


# ----------------------------------------------------------------------------------------------- Overrides

_OVERRIDE_RE = re.compile(
    r"^(?:(?P<ct>on-demand|spot|\*):)?(?P<sel>[a-z0-9*][a-z0-9.\-*]*)=(?P<val>[+-]?\d+(?:\.\d+)?)(?P<pct>%)?$"
)


@dataclass(frozen=True)
class PriceOverride:
    """One price rule.

    selector: an instance type ("m5.large"), a family ("m5") or "*" for every type.
    price:    a fixed USD/hour price, or
    percent:  an adjustment in percent (-20 = 20 % cheaper), applied to the price as it stands.
    capacity_type: "on-demand" (the default: Savings Plans and RIs do not cover spot), "spot" or "*".
    """

    selector: str
    price: float | None = None
    percent: float | None = None
    capacity_type: str = CAPACITY_TYPE_ON_DEMAND

    def __post_init__(self) -> None:
        if (self.price is None) == (self.percent is None):
            raise PricingError(f"override {self.selector}: give exactly one of price or percent")
        if self.price is not None and self.price <= 0:
            raise PricingError(f"override {self.selector}: price must be positive, got {self.price}")
        if self.percent is not None and self.percent <= -100:
            raise PricingError(f"override {self.selector}: percent must be above -100, got {self.percent}")
        if self.capacity_type not in (CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT, "*"):
            raise PricingError(f"override {self.selector}: unknown capacity type {self.capacity_type!r}")
        if not self.selector:
            raise PricingError("override with an empty selector")

    @classmethod
    def parse(cls, text: str) -> PriceOverride:
        """ "m5.large=0.08", "m5=0.09", "*=-20%", "spot:c7g=-5%" (capacity type prefix optional)."""
        m = _OVERRIDE_RE.match(text.strip())
        if not m:
            raise PricingError(
                f"bad price override {text!r}: expected [on-demand:|spot:|*:]<type|family|*>=<price> or =<percent>%"
            )
        value = float(m.group("val"))
        ct = m.group("ct") or CAPACITY_TYPE_ON_DEMAND
        if m.group("pct"):
            return cls(m.group("sel"), percent=value, capacity_type=ct)
        return cls(m.group("sel"), price=value, capacity_type=ct)

    def matches(self, name: str, capacity_type: str) -> bool:
        if self.capacity_type != "*" and self.capacity_type != capacity_type:
            return False
        return self.selector in ("*", name, split_name(name)[0])

    def describe(self) -> str:
        if self.percent is not None:
            return f"override {self.selector}={self.percent:+g}%"
        return f"override {self.selector}={self.price:g}"


def apply_overrides(
    name: str, capacity_type: str, price: float | None, source: str, overrides: Sequence[PriceOverride]
) -> tuple[float | None, str]:
    """Apply the matching rules in order; a fixed price gives a price even to a type whose price was unknown
    (an operator who states a price knows it), a percentage leaves an unknown price unknown."""
    notes: list[str] = []
    for o in overrides:
        if not o.matches(name, capacity_type):
            continue
        if o.price is not None:
            price = o.price
        elif price is not None and o.percent is not None:
            price = round(price * (1 + o.percent / 100), 6)
        else:
            continue
        notes.append(o.describe())
    if notes:
        source = "; ".join([source, *notes]) if source else "; ".join(notes)
    return price, source
