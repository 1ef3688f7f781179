"""First-fit placement of pods that room alone places (no constraint, seen by no topology rule) onto existing nodes.

For such pods any node with room is a valid place, so first-fit (largest pod first, nodes in the order the Scheduler
tries them) gives a placement with every constraint honoured, without a simulation. `first_fit` places one set of
pods with numpy; `RoomIndex` answers "would first-fit place every pod of this node elsewhere?" for many nodes in a
row, in plain Python over per-shape lists of the nodes with room, kept up to date as deletes are applied to it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import numpy.typing as npt

from packing.pods import Pod
from packing.scheduling.queue import order_key

__all__ = ["RoomIndex", "first_fit", "largest_first"]


def largest_first(pods: Sequence[Pod]) -> list[Pod]:
    """The order first-fit takes pods in: most cpu, then most memory, then by name."""
    return sorted(pods, key=order_key)


def first_fit(
    pods: Sequence[Pod],
    keys: tuple[str, ...],
    free: npt.NDArray[np.int64],
    names: Sequence[str],
    *,
    all_or_nothing: bool = False,
    skip: Collection[int] = (),
    allow: npt.NDArray[np.bool_] | None = None,
) -> tuple[dict[str, str], list[Pod], npt.NDArray[np.int64]]:
    """First-fit of `pods`, largest first, onto the rows of `free` (the room of the nodes `names`, in the order to
    try them; not modified): where each pod lands, the pods left over, and their summed requests. Runs of
    identical pods fill each node with as many as fit before moving on, so they are placed with one cumulative
    sum instead of pod by pod. all_or_nothing: stop at the first pod that finds no room (only whether every pod
    fits matters to the caller; what is left over is then incomplete). skip: rows to leave out (the nodes going);
    allow: a mask of the rows that may be used at all."""
    order = largest_first(pods)
    vecs = [p.requests.vector(keys) for p in order]
    targets: dict[str, str] = {}
    rest: list[Pod] = []
    left = np.zeros(len(keys), dtype=np.int64)
    if not order:
        return targets, rest, left
    # a node that cannot take even the smallest of these pods takes none: dropping it keeps first-fit's order
    ok = np.all(free >= np.array(vecs, dtype=np.int64).min(axis=0), axis=1)
    if skip:
        ok[list(skip)] = False
    if allow is not None:
        ok &= allow
    usable = np.flatnonzero(ok)
    f = free[usable]
    by_row = [names[r] for r in usable.tolist()]
    i = 0
    while i < len(order):
        v0 = vecs[i]
        j = i + 1
        while j < len(order) and vecs[j] == v0:
            j += 1
        v = np.array(v0, dtype=np.int64)
        k = j - i
        if k == 1 and len(f):
            # one pod of this shape: the first node with room for it, without counting how many fit where
            fit = np.flatnonzero((f >= v).all(axis=1))
            if len(fit):
                r = int(fit[0])
                targets[order[i].key] = by_row[r]
                f[r] -= v
            else:
                rest.append(order[i])
                left += v
                if all_or_nothing:
                    break
            i = j
            continue
        pos = v > 0
        if not bool(pos.any()):
            caps = np.full(len(f), k, dtype=np.int64)  # a pod requesting nothing fits anywhere
        else:
            caps = np.min(np.where(pos, np.clip(f, 0, None) // np.where(pos, v, 1), np.iinfo(np.int64).max), axis=1)
        cum = np.cumsum(caps)
        if not len(cum) or int(cum[-1]) < k:
            placed = int(cum[-1]) if len(cum) else 0
            take = caps
            rest.extend(order[i + placed : j])
            left += v * (k - placed)
            if all_or_nothing:
                break
        else:
            r = int(np.searchsorted(cum, k))
            take = np.zeros_like(caps)
            take[:r] = caps[:r]
            take[r] = k - (int(cum[r - 1]) if r > 0 else 0)
        at = i
        for row in np.flatnonzero(take).tolist():
            for p in order[at : at + int(take[row])]:
                targets[p.key] = by_row[row]
            at += int(take[row])
        f -= take[:, None] * v[None, :]
        i = j
    return targets, rest, left


class RoomIndex:
    """The free room of the nodes first-fit may use (rows in first-fit order), for many delete checks in a row.

    Each check emulates first_fit(..., all_or_nothing=True) of one node's pods with the node itself left out, in
    plain Python: for each pod shape, the rows that had room for it are listed once (numpy), and a row is dropped
    from a list for good once it no longer has room for that shape (room only shrinks while the index lives).
    apply() records a delete that was carried out: the node's row is gone and its pods' room is taken on their
    targets. Any other change to the cluster makes the index stale: the caller builds a new one.
    """

    def __init__(self, names: Sequence[str], free: npt.NDArray[np.int64]) -> None:
        self.names = list(names)
        self.row = {n: i for i, n in enumerate(self.names)}
        self._free = np.array(free, dtype=np.int64)  # mirror of `room`, for building new shape lists
        self.room = self._free.tolist()
        self.alive = [True] * len(self.names)
        self._lists: dict[tuple[int, ...], list[int]] = {}
        self._start: dict[tuple[int, ...], int] = {}  # rows before this index in a list are known not to fit

    def _rows_for(self, v: tuple[int, ...]) -> list[int]:
        hit = self._lists.get(v)
        if hit is None:
            ok = np.all(self._free >= np.asarray(v, dtype=np.int64), axis=1) if len(self._free) else np.zeros(0, bool)
            hit = self._lists[v] = np.flatnonzero(ok).tolist()
            self._start[v] = 0
        return hit

    def place(self, node: str, vecs: Sequence[tuple[int, ...]]) -> list[int] | None:
        """The row each pod (vectors in first-fit order) lands on, or None when one finds no room."""
        own = self.row.get(node, -1)
        used: dict[int, list[int]] = {}
        out: list[int] = []
        room, alive = self.room, self.alive
        k_range = range(len(vecs[0])) if vecs else range(0)
        for v in vecs:
            rows = self._rows_for(v)
            i = self._start[v]
            placed = -1
            while i < len(rows):
                r = rows[i]
                fr = room[r]
                if not alive[r] or any(fr[k] < v[k] for k in k_range):
                    if i == self._start[v]:
                        self._start[v] = i + 1  # never again: room only shrinks
                    i += 1
                    continue
                if r != own:
                    d = used.get(r)
                    if d is None:
                        used[r] = list(v)
                        placed = r
                        break
                    if all(fr[k] - d[k] >= v[k] for k in k_range):
                        for k in k_range:
                            d[k] += v[k]
                        placed = r
                        break
                i += 1
            if placed < 0:
                return None
            out.append(placed)
        return out

    def apply(self, node: str, rows: Sequence[int], vecs: Sequence[tuple[int, ...]]) -> None:
        """Record the delete of `node`, its pods (vectors) now running on `rows`."""
        own = self.row.get(node)
        if own is not None:
            self.alive[own] = False
        for r, v in zip(rows, vecs, strict=True):
            fr = self.room[r]
            for k, x in enumerate(v):
                fr[k] -= x
            self._free[r] -= np.asarray(v, dtype=np.int64)
