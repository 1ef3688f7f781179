"""The instance catalog: EC2 instance types, per-zone offerings, prices and allocatable, as InstanceType objects.

The engine uses one function, `load_builtin(region, kubelet=...)`. Data sources, best first:
- a live refresh cached in a directory (`cache_dir`, see packing.catalog.live), when given and present;
- the bundled snapshot: instance types and offerings generated from moto's copy of AWS's
  DescribeInstanceTypes/Offerings output, and dated on-demand list prices (data/ondemand-<region>.txt).
  With live prices cached, a type the live price list lacks keeps its snapshot price (its price_source
  says "snapshot <date>"), so every price stays traceable to where it came from.
Spot prices without a fresh live refresh are estimates (packing.catalog.pricing explains the model) and
are marked price_source "estimate". A type without a known on-demand price is listed with price None
("price unknown") and never launched.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from packing.catalog.allocatable import DEFAULT_EPHEMERAL_STORAGE, KubeletError
from packing.catalog.builder import PRICE_UNKNOWN, build_instance_types
from packing.catalog.pricing import OnDemandPrices, PriceOverride, PricingError, load_on_demand_snapshot
from packing.catalog.snapshot import CatalogError, RegionData, bundled_regions, load_bundled
from packing.catalog.unavailable import UnavailableOfferings
from packing.instancetype import InstanceType

log = logging.getLogger(__name__)
_T = TypeVar("_T")

__all__ = [
    "PRICE_UNKNOWN",
    "CatalogError",
    "KubeletError",
    "PriceOverride",
    "PricingError",
    "UnavailableOfferings",
    "bundled_regions",
    "catalog_info",
    "load_builtin",
    "region_sources",
]


def region_sources(
    region: str, *, cache_dir: str | os.PathLike[str] | None = None, now: dt.datetime | None = None
) -> tuple[RegionData, OnDemandPrices | None, Mapping[tuple[str, str], tuple[float, str]] | None]:
    """(types and offerings, on-demand prices, live spot prices) for a region, each from the best source.

    Raises CatalogError for a region neither the bundle nor the cache knows.
    """
    from packing.catalog.live import CatalogCache

    cache = CatalogCache(cache_dir) if cache_dir is not None else None

    def cached(read: Callable[[], _T]) -> _T | None:
        # a damaged cache must not stop planning: use the bundled data and say so in the log
        try:
            return read()
        except CatalogError as e:
            log.warning("%s; using the bundled snapshot instead", e)
            return None

    data = cached(lambda: cache.region_data(region)) if cache is not None else None
    if data is None:
        data = load_bundled(region)
    snapshot = load_on_demand_snapshot(region)
    live = cached(lambda: cache.on_demand(region)) if cache is not None else None
    # live prices win; a type the live price list lacks keeps its dated snapshot price (labelled as such)
    prices = dataclasses.replace(live, fallback=snapshot) if live is not None else snapshot
    when = now or dt.datetime.now(dt.UTC)
    spot = cached(lambda: cache.spot(region, now=when)) if cache is not None else None
    return data, prices, spot


def load_builtin(
    region: str = "us-east-1",
    *,
    kubelet: Mapping[str, Any] | None = None,
    overrides: Sequence[PriceOverride] = (),
    unavailable: UnavailableOfferings | None = None,
    now: dt.datetime | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    ephemeral_storage: str = DEFAULT_EPHEMERAL_STORAGE,
) -> list[InstanceType]:
    """Every instance type offered in `region`, with allocatable for the given EC2NodeClass kubelet settings.

    kubelet: EC2NodeClass spec.kubelet (maxPods, podsPerCore, systemReserved, kubeReserved, evictionHard/Soft);
             an invalid block raises KubeletError (a ValueError naming the field).
    overrides: price rules applied in order (PriceOverride.parse("m5=-20%")).
    unavailable: offerings that recently failed with InsufficientInstanceCapacity come back available=False.
    now: decides whether cached live spot prices are still fresh (default: the current time).
    cache_dir: where `python -m packing catalog --refresh` (or the loops) stored live data; None = bundled only.
    Raises CatalogError (a ValueError) for an unknown region.
    """
    data, prices, spot = region_sources(region, cache_dir=cache_dir, now=now)
    return build_instance_types(
        data,
        prices,
        spot=spot,
        kubelet=kubelet,
        overrides=overrides,
        unavailable=unavailable,
        ephemeral_storage=ephemeral_storage,
    )


def catalog_info(
    region: str = "us-east-1",
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    now: dt.datetime | None = None,
) -> dict[str, str]:
    """Where a region's catalog data comes from, for the console header and `catalog --output text`.

    Keys: region, types ("snapshot moto 5.2.5 (generated ...)" or "live <time>"), types_date,
    on_demand ("snapshot 2026-01-19", "live <time>" or "none"), on_demand_date, on_demand_detail
    (the snapshot file's provenance header), spot ("live <time>" or "estimate").
    """
    data, prices, spot = region_sources(region, cache_dir=cache_dir, now=now)
    spot_source = next(iter(spot.values()))[1] if spot else "estimate"
    return {
        "region": region,
        "types": data.source,
        "types_date": data.date,
        "on_demand": prices.source if prices is not None else "none",
        "on_demand_date": prices.date if prices is not None else "",
        "on_demand_detail": (prices.detail or (prices.fallback.detail if prices.fallback else ""))
        if prices
        else "",
        "spot": spot_source,
    }
