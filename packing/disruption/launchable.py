"""What the run could launch: every instance type some NodePool may launch, with its cheapest offering's price.

Built once per run (the catalog and the pools do not change during it). Optimistic on purpose (DaemonSet overhead
and the pods' own constraints ignored): it only serves to skip simulations that cannot succeed and to bound what a
move could save, so it must never say no where the simulation could say yes.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property

import numpy as np
import numpy.typing as npt

from packing.disruption.model import EPS, CheapestOption, Cluster
from packing.disruption.refusals import (
    Refusal,
    needs_several_nodes,
    no_cheaper_replacement,
    no_launchable_type,
)
from packing.instancetype import InstanceType
from packing.nodepool import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL, NodePool
from packing.scheduling.reservations import pool_may_use

__all__ = ["TypeTable", "resource_keys"]


def resource_keys(cluster: Cluster) -> tuple[str, ...]:
    """The resources a type table counts: cpu, memory, pods and whatever a running or pending pod requests."""
    keys = {"cpu", "memory", "pods"}
    for p in (*cluster.running, *cluster.pending):
        keys.update(p.requests)
    return tuple(sorted(keys))


class TypeTable:
    """keys: the resources counted (cpu, memory, pods and whatever a pod requests); per launchable type, its
    allocatable over the keys (alloc), its cheapest offering's price and that offering's capacity type."""

    def __init__(self, cluster: Cluster, pools: Mapping[str, NodePool], catalog: Mapping[str, InstanceType]) -> None:
        self._cluster = cluster
        self._pools = pools
        self._catalog = catalog
        kt = resource_keys(cluster)
        rows: list[list[int]] = []
        prices: list[float] = []
        self.options: list[tuple[str, str]] = []  # (instance type, capacity type) per row
        for it in cluster.catalog:
            best: tuple[float, str] | None = None
            for pool in cluster.nodepools:
                tl = dict(it.labels)
                tl[INSTANCE_TYPE_LABEL] = it.name
                reqs = pool.requirements
                if not all(r.has(tl.get(k)) for k, r in reqs.items() if k not in (ZONE_LABEL, CAPACITY_TYPE_LABEL)):
                    continue
                zr, cr = reqs.get(ZONE_LABEL), reqs.get(CAPACITY_TYPE_LABEL)
                for o in it.offerings:
                    if not o.available or o.price is None:
                        continue
                    if (zr is not None and not zr.has(o.zone)) or (cr is not None and not cr.has(o.capacity_type)):
                        continue
                    if not pool_may_use(o, pool):
                        continue
                    if best is None or o.price < best[0]:
                        best = (o.price, o.capacity_type)
            if best is None:
                continue
            rows.append([it.allocatable.get(k, 0) for k in kt])
            prices.append(best[0])
            self.options.append((it.name, best[1]))
        self.keys = kt
        self.alloc: npt.NDArray[np.int64] = np.array(rows, dtype=np.int64).reshape(len(rows), len(kt))
        self.prices: npt.NDArray[np.float64] = np.array(prices, dtype=np.float64)
        self._type_prices: dict[tuple[str, str, str], float | None] = {}

    def cheapest_option(self, row: int) -> CheapestOption:
        name, capacity_type = self.options[row]
        return CheapestOption(name, capacity_type, float(self.prices[row]))

    def one_cheaper_node(self, fits: npt.NDArray[np.bool_], cost: float) -> Refusal | None:
        """Why no single new node can take pods needing the room `fits` marks (per type), for less than `cost`
        (None: one can)."""
        if not fits.size:
            return no_launchable_type()
        if not bool(fits.any()):
            return needs_several_nodes()
        j = int(np.argmin(np.where(fits, self.prices, np.inf)))
        if self.prices[j] + EPS >= cost:
            return no_cheaper_replacement(self.cheapest_option(j), cost)
        return None

    @cached_property
    def _by_price(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
        """Type prices ascending, and the running maximum allocatable over the types up to each one."""
        order = np.argsort(self.prices, kind="stable")
        cm = np.maximum.accumulate(self.alloc[order], axis=0) if len(order) else self.alloc
        return self.prices[order], cm

    def biggest_cheaper(self, costs: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
        """Per cost, the elementwise largest allocatable among types strictly cheaper (zeros when none)."""
        prices, cm = self._by_price
        idx = np.searchsorted(prices, costs - EPS, side="left")
        out = np.zeros((len(costs), cm.shape[1] if cm.ndim == 2 else 0), dtype=np.int64)
        has = idx > 0
        if bool(has.any()):
            out[has] = cm[idx[has] - 1]
        return out

    @cached_property
    def unit_rates(self) -> npt.NDArray[np.float64]:
        """Per key, the lowest price per unit of allocatable over the launchable types. Any set of new nodes
        holding R of a resource costs at least R x its rate, so the largest such product is a lower bound on what a
        group's pods cost anywhere."""
        with np.errstate(divide="ignore", invalid="ignore"):
            per = np.where(self.alloc > 0, self.prices[:, None] / np.where(self.alloc > 0, self.alloc, 1), np.inf)
        rates = per.min(axis=0) if len(per) else np.zeros(self.alloc.shape[1])
        return np.where(np.isfinite(rates), rates, 0.0)

    @cached_property
    def _offers(self) -> dict[tuple[str, str, str], float]:
        offers: dict[tuple[str, str, str], float] = {}
        for it in self._cluster.catalog:
            for o in it.offerings:
                if o.available and o.price is not None:
                    k = (it.name, o.zone, o.capacity_type)
                    offers[k] = min(o.price, offers.get(k, o.price))
        return offers

    def offer_price(self, it_name: str, zone: str, capacity_type: str) -> float | None:
        """The price of the type's available offering in that zone and capacity type (what a launch would pay)."""
        return self._offers.get((it_name, zone, capacity_type))

    def type_price(self, it_name: str, pool: str, capacity_type: str) -> float | None:
        """The cheapest available offering of a type in the zones its pool allows (for a replacement's options)."""
        key = (it_name, pool, capacity_type)
        if key in self._type_prices:
            return self._type_prices[key]
        price = self._type_price(it_name, pool, capacity_type)
        self._type_prices[key] = price  # asked again for every candidate of the pool, in every run sharing the table
        return price

    def _type_price(self, it_name: str, pool: str, capacity_type: str) -> float | None:
        it = self._catalog.get(it_name)
        if it is None:
            return None
        p = self._pools.get(pool)
        zr = p.requirements.get(ZONE_LABEL) if p else None
        prices = [
            o.price
            for o in it.offerings
            if o.available and o.price is not None and o.capacity_type == capacity_type
            and (zr is None or zr.has(o.zone))
        ]
        return min(prices) if prices else None

