"""Tables that depend only on the catalog, the NodePools, the DaemonSets and the resource keys, kept across
Schedulers and consolidate runs by a caller that builds many of them over the same inputs (the replay).

A Scheduler builds a PoolTemplate per pool and the catalog's price map, and a consolidate run builds its type table
(packing.disruption.launchable), every time, though a caller that solves again and again over one catalog and one
set of pools gets the same tables each time. A TableCache given to them (an explicit parameter; no caller gets one
it did not pass) returns the table built for the same objects before. Entries are keyed by the identity of the input
objects, which the entry holds so that no identity is reused while it lives: a caller that builds new objects for a
changed catalog or pool simply misses. The tables are pure functions of those objects (their own lazily filled
caches included), so a hit gives what building them again would.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar, cast

__all__ = ["TableCache"]

T = TypeVar("T")

DEFAULT_ENTRIES = 256  # a few catalog versions times a few pools and key sets; older entries are dropped first


class TableCache:
    """What a table was built from (by identity, and a hashable extra such as resource keys) -> the table."""

    def __init__(self, entries: int = DEFAULT_ENTRIES) -> None:
        self.entries = entries
        self.hits = 0
        self.misses = 0
        self._tables: OrderedDict[tuple[str, tuple[int, ...], Hashable], tuple[tuple[object, ...], Any]] = (
            OrderedDict()
        )

    def get(self, kind: str, objects: Sequence[object], extra: Hashable, build: Callable[[], T]) -> T:
        """The `kind` table of `objects` (and `extra`): the one built before for the same objects, else build()'s."""
        held = tuple(objects)
        key = (kind, tuple(map(id, held)), extra)
        hit = self._tables.get(key)
        if hit is not None:
            self._tables.move_to_end(key)
            self.hits += 1
            return cast(T, hit[1])
        self.misses += 1
        value = build()
        self._tables[key] = (held, value)
        while len(self._tables) > self.entries:
            self._tables.popitem(last=False)
        return value
