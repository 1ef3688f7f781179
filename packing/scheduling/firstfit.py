"""First-fit over nodes or NodeClaims: which of them, in order, have room for a pod, found with one numpy
comparison instead of a Python test per candidate."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Generic, Protocol, TypeVar

import numpy as np

from packing.scheduling.vectors import Vec

__all__ = ["FirstFitIndex", "HasRoom"]


class HasRoom(Protocol):
    """What the index holds: an ExistingNode or a NodeClaim, its position in the index and its free room."""

    pos: int

    def free_room(self) -> Vec: ...


RoomT = TypeVar("RoomT", bound=HasRoom)


class FirstFitIndex(Generic[RoomT]):
    """Nodes or NodeClaims in first-fit order, with their free rooms as the rows of one matrix.

    First-fit over thousands of candidates would test every one for every pod in Python; here one numpy
    comparison finds, in order, those whose free room holds the pod. Callers add the pod to at most one
    candidate and then stop iterating, so the list found when iteration starts stays exact (update() is
    called after every change of an item's room).
    """

    def __init__(self, items: Iterable[RoomT] = ()) -> None:
        self.items: list[RoomT] = []
        self._free = np.zeros((0, 0), dtype=np.int64)
        for it in items:
            self.append(it)

    def append(self, item: RoomT) -> None:
        item.pos = len(self.items)
        self.items.append(item)
        free = item.free_room()
        if self._free.shape[1] != len(free) or item.pos >= self._free.shape[0]:
            grown = np.zeros((max(16, 2 * item.pos + 1), len(free)), dtype=np.int64)
            if self._free.shape[1] == len(free):
                grown[: item.pos] = self._free[: item.pos]
            self._free = grown
        self._free[item.pos] = free

    def update(self, item: RoomT) -> None:
        self._free[item.pos] = item.free_room()

    def rebuild(self) -> None:
        items = self.items
        self.items = []
        self._free = np.zeros((0, 0), dtype=np.int64)
        for c in items:
            self.append(c)

    def candidates(self, vec: Vec) -> Iterator[RoomT]:
        n = len(self.items)
        if not n:
            return iter(())
        hold = np.flatnonzero((self._free[:n] >= np.asarray(vec, dtype=np.int64)).all(axis=1))
        items = self.items
        return iter([items[i] for i in hold.tolist()])

    def __iter__(self) -> Iterator[RoomT]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)
