"""Turn region data + prices into the engine's InstanceType objects (the one interface packing uses)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from packing.catalog.allocatable import DEFAULT_EPHEMERAL_STORAGE, capacity_and_overhead, validate_kubelet
from packing.catalog.pricing import OnDemandPrices, PriceOverride, apply_overrides, spot_estimate
from packing.catalog.snapshot import RegionData
from packing.catalog.unavailable import UnavailableOfferings
from packing.instancetype import CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT, InstanceType, Offering

__all__ = ["PRICE_UNKNOWN", "SpotPrices", "build_instance_types"]

PRICE_UNKNOWN = "price unknown"

# (type, zone) -> (USD/hour, price_source)
SpotPrices = Mapping[tuple[str, str], tuple[float, str]]


def build_instance_types(
    data: RegionData,
    on_demand: OnDemandPrices | None,
    *,
    spot: SpotPrices | None = None,
    kubelet: Mapping[str, Any] | None = None,
    overrides: Sequence[PriceOverride] = (),
    unavailable: UnavailableOfferings | None = None,
    ephemeral_storage: str = DEFAULT_EPHEMERAL_STORAGE,
) -> list[InstanceType]:
    """One InstanceType per type offered in the region, sorted by name.

    Offerings: every zone the type is offered in x on-demand (and spot when the type supports it).
    A price that is unknown stays None with price_source "price unknown": the engine never launches it.
    Spot prices come from `spot` (live) when it has the pair, else from the documented estimate.
    """
    validate_kubelet(kubelet)
    out: list[InstanceType] = []
    for name in sorted(data.specs):
        spec = data.specs[name]
        capacity, overhead = capacity_and_overhead(spec, kubelet, ephemeral_storage=ephemeral_storage)
        od_price = on_demand.get(name) if on_demand is not None else None
        od_source = (on_demand.source_of(name) if on_demand is not None else None) or PRICE_UNKNOWN
        offerings: list[Offering] = []
        for zone in data.zones.get(name, ()):
            price, source = apply_overrides(name, CAPACITY_TYPE_ON_DEMAND, od_price, od_source, overrides)
            if price is None:
                source = PRICE_UNKNOWN
            offerings.append(
                Offering(
                    zone,
                    CAPACITY_TYPE_ON_DEMAND,
                    price,
                    _available(unavailable, name, zone, CAPACITY_TYPE_ON_DEMAND),
                    source,
                )
            )
            if not spec.spot:
                continue
            live = spot.get((name, zone)) if spot else None
            if live is not None:
                sp, s_source = live
                s_price: float | None = sp
            else:
                # estimate from the list price before any on-demand override: a discount negotiated on
                # on-demand capacity does not move the spot market
                s_price, s_source = spot_estimate(spec, zone, od_price), "estimate"
            s_price, s_source = apply_overrides(name, CAPACITY_TYPE_SPOT, s_price, s_source, overrides)
            if s_price is None:
                s_source = PRICE_UNKNOWN
            offerings.append(
                Offering(
                    zone,
                    CAPACITY_TYPE_SPOT,
                    s_price,
                    _available(unavailable, name, zone, CAPACITY_TYPE_SPOT),
                    s_source,
                )
            )
        out.append(InstanceType(name, capacity, overhead, spec.labels(data.region), tuple(offerings)))
    return out


def _available(unavailable: UnavailableOfferings | None, name: str, zone: str, capacity_type: str) -> bool:
    return unavailable is None or not unavailable.is_unavailable(name, zone, capacity_type)
