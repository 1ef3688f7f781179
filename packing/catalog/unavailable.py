"""Offerings that recently failed to launch, excluded for a while and then retried.

When CreateFleet answers InsufficientInstanceCapacity (or a similar capacity error) for a type in a zone
and capacity type, asking again at once fails again and delays the pod; asking never again would
forget that capacity comes back. Karpenter's answer, copied here: remember the failure for a TTL
(3 minutes by default) keyed by (type, zone, capacity type), then let the offering be tried again.
The clock is injectable so tests (and the simulator) control expiry.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["CAPACITY_ERROR_CODES", "DEFAULT_TTL", "UnavailableEntry", "UnavailableOfferings"]

DEFAULT_TTL = dt.timedelta(minutes=3)

# EC2 error codes that mean "no capacity for this offering right now" (not a configuration error)
CAPACITY_ERROR_CODES = frozenset(
    {
        "InsufficientInstanceCapacity",
        "InsufficientHostCapacity",
        "InsufficientReservedInstanceCapacity",
        "InsufficientCapacity",
        "MaxSpotInstanceCountExceeded",
        "SpotMaxPriceTooLow",
        "UnfulfillableCapacity",
        "Unsupported",
    }
)


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass(frozen=True)
class UnavailableEntry:
    instance_type: str
    zone: str
    capacity_type: str
    reason: str
    expires_at: dt.datetime


class UnavailableOfferings:
    """Thread-safe TTL cache of (instance type, zone, capacity type) that must not be launched right now."""

    def __init__(self, ttl: dt.timedelta = DEFAULT_TTL, clock: Callable[[], dt.datetime] = _utcnow) -> None:
        if ttl <= dt.timedelta(0):
            raise ValueError(f"unavailable-offerings TTL must be positive, got {ttl}")
        self.ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str, str], UnavailableEntry] = {}

    def mark_unavailable(
        self, instance_type: str, zone: str, capacity_type: str, reason: str = "InsufficientInstanceCapacity"
    ) -> UnavailableEntry:
        entry = UnavailableEntry(instance_type, zone, capacity_type, reason, self._clock() + self.ttl)
        with self._lock:
            self._entries[(instance_type, zone, capacity_type)] = entry
        return entry

    def is_unavailable(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        key = (instance_type, zone, capacity_type)
        now = self._clock()
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return False
            if entry.expires_at <= now:
                del self._entries[key]  # expired: the offering is retried
                return False
            return True

    def entries(self) -> list[UnavailableEntry]:
        """The live entries, soonest expiry first (for the console and `catalog` output)."""
        now = self._clock()
        with self._lock:
            for key in [k for k, e in self._entries.items() if e.expires_at <= now]:
                del self._entries[key]
            return sorted(self._entries.values(), key=lambda e: (e.expires_at, e.instance_type, e.zone))

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self.entries())
