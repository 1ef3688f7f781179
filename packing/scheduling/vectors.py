"""Resource vectors: a pod's requests or a node's room as one int per resource key of the solve.

A solve fixes its resource keys once (cpu, memory, pods and every extended resource any pod or DaemonSet asks
for), so requests, allocatable and free room are tuples (or numpy rows) in that order and comparing two is a
loop over a few ints instead of a dictionary walk.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from packing.resources import Resources

__all__ = ["Vec", "add", "fits", "fits_any", "undominated", "vector"]

Vec = tuple[int, ...]


def vector(r: Mapping[str, int], keys: Sequence[str]) -> Vec:
    """The amounts of `r` along `keys` (0 where it has none)."""
    if isinstance(r, Resources):
        return r.vector(keys)
    return tuple(r.get(k, 0) for k in keys)


def fits(a: Vec, b: Vec) -> bool:
    """Whether `a` is nowhere larger than `b`."""
    for x, y in zip(a, b, strict=True):
        if x > y:
            return False
    return True


def add(a: Vec, b: Vec) -> Vec:
    return tuple(map(operator.add, a, b))


def undominated(allocs: npt.NDArray[np.int64], prices: Sequence[float]) -> list[int]:
    """Indices of options that no other option beats (at least as big everywhere and no dearer).

    A dominated type is never the right choice for any set of pods, and dropping it shrinks the packer's work.
    """
    price = np.asarray(prices, dtype=np.float64)
    n = len(price)
    keep: list[int] = []
    order = np.lexsort((np.arange(n), price))
    for i in order.tolist():
        if keep:
            k = np.asarray(keep)
            if bool(((allocs[k] >= allocs[i]).all(axis=1) & (price[k] <= price[i])).any()):
                continue
        keep.append(i)
    keep.sort()
    return keep


def fits_any(vecs: npt.NDArray[np.int64], allocs: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """For each row of `vecs`, whether some row of `allocs` holds it.

    The options are tried largest first, each only against the rows still unplaced: most rows fit one of
    the first few, so this touches far fewer (row, option) pairs than comparing all of them at once.
    """
    ok = np.zeros(vecs.shape[0], dtype=bool)
    if not allocs.size or not vecs.size:
        return ok
    size = (allocs / np.maximum(allocs.max(axis=0), 1)).sum(axis=1)
    todo = np.arange(vecs.shape[0])
    for j in np.argsort(-size, kind="stable").tolist():
        hit = np.all(vecs[todo] <= allocs[j], axis=1)
        ok[todo[hit]] = True
        todo = todo[~hit]
        if not todo.size:
            break
    return ok
