"""minValues on NodePool requirements (Karpenter's Requirements.HasMinValues / InstanceTypes.SatisfiesMinValues).

A requirement with minValues N asks that a NodeClaim keep at least N distinct values of its key among the
instance types it may launch as (its instance_type_options), so that the cloud provider has room to choose.
An instance type's values of a key are its label (instance-type, family, category, arch, ...) or, for zone and
capacity type, those of its available offerings the claim's requirements allow.

Policy Strict: a claim whose types would fall below a minimum refuses the pod (the pod is unschedulable on the
pool if no claim, new or open, keeps the minimum). BestEffort: the minimum is relaxed as far as needed and the
claim says so (min_values_relaxed).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from packing.nodepool import CAPACITY_TYPE_LABEL, ZONE_LABEL
from packing.requirements import MinValuesPolicy, Requirements
from packing.scheduling.vectors import Vec

if TYPE_CHECKING:
    from packing.scheduling.templates import PoolTemplate, TypeOption

__all__ = ["MinValuesPolicy", "Shortfall", "holders", "keep_min_values", "shortfall", "shortfall_of", "type_values"]


@dataclass(frozen=True, slots=True)
class Shortfall:
    """The first key (in key order) whose minimum the types do not meet, and the values they do keep."""

    key: str
    minimum: int
    remaining: tuple[str, ...]


def type_values(o: TypeOption, key: str, reqs: Requirements) -> Iterable[str]:
    """The values of `key` a NodeClaim with requirements `reqs` could get by launching type `o`."""
    if key in (ZONE_LABEL, CAPACITY_TYPE_LABEL):
        zr, cr = reqs.get(ZONE_LABEL), reqs.get(CAPACITY_TYPE_LABEL)
        for x in o.offerings:
            if (zr is None or zr.has(x.zone)) and (cr is None or cr.has(x.capacity_type)):
                yield x.zone if key == ZONE_LABEL else x.capacity_type
        return
    v = o.labels.get(key)
    if v is not None:
        r = reqs.get(key)
        if r is None or r.has(v):
            yield v


def _shortfall_of(options: Iterable[TypeOption], minima: dict[str, int], reqs: Requirements) -> Shortfall | None:
    opts = list(options)
    for key in sorted(minima):
        seen: set[str] = set()
        need = minima[key]
        for o in opts:
            seen.update(type_values(o, key, reqs))
            if len(seen) >= need:
                break
        if len(seen) < need:
            return Shortfall(key, need, tuple(sorted(seen)))
    return None


def shortfall_of(options: Iterable[TypeOption], reqs: Requirements) -> Shortfall | None:
    """Which minValues of `reqs` the instance types `options` fail, if any."""
    minima = reqs.min_values()
    return _shortfall_of(options, minima, reqs) if minima else None


def shortfall(tpl: PoolTemplate, reqs: Requirements, idx: npt.NDArray[np.int64]) -> Shortfall | None:
    """Which minValues of `reqs` the types `idx` (indices into the pool's options) fail, if any."""
    minima = reqs.min_values()
    if not minima:
        return None
    return _shortfall_of((tpl.options[i] for i in idx.tolist()), minima, reqs)


def holders(tpl: PoolTemplate, reqs: Requirements, used: Vec) -> npt.NDArray[np.int64]:
    """Indices (into the pool's options, cheapest first) of the types with an offering for `reqs` whose
    allocatable holds `used`: what a finalized claim's instance_type_options are drawn from."""
    alloc_t, _, order = tpl.ranked(reqs)
    ok = np.ones(order.size, dtype=bool)
    for r, u in enumerate(used):
        ok &= alloc_t[r] >= u
    return order[ok]


def keep_min_values(
    first: TypeOption, ranked: Sequence[TypeOption], reqs: Requirements, limit: int
) -> tuple[list[TypeOption], bool]:
    """At most `limit` options, `first` leading and the rest in `ranked` order (cheapest first), chosen so that
    every minValues of `reqs` survives the cut: for each key, the cheapest types that add a value not yet
    kept, then the cheapest others. Also returns whether every minimum is met."""
    minima = reqs.min_values()
    picked: list[TypeOption] = [first]
    chosen = {id(first)}
    seen: dict[str, set[str]] = {k: set(type_values(first, k, reqs)) for k in minima}
    for key in sorted(minima):
        for o in ranked:
            if len(seen[key]) >= minima[key] or len(picked) >= limit:
                break
            if id(o) in chosen:
                continue
            vals = set(type_values(o, key, reqs))
            if vals - seen[key]:
                picked.append(o)
                chosen.add(id(o))
                for k in minima:
                    seen[k].update(type_values(o, k, reqs))
    for o in ranked:
        if len(picked) >= limit:
            break
        if id(o) not in chosen:
            picked.append(o)
            chosen.add(id(o))
    rank = {id(o): i for i, o in enumerate(ranked)}
    rest = sorted(picked[1:], key=lambda o: rank.get(id(o), -1))
    out = [first, *rest]
    return out, _shortfall_of(out, minima, reqs) is None
