"""The unavailable-offerings (ICE) cache: excluded for a TTL, then retried."""

from __future__ import annotations

import datetime as dt

import pytest

from packing.catalog import UnavailableOfferings, load_builtin


class Clock:
    def __init__(self) -> None:
        self.now = dt.datetime(2026, 11, 30, 10, 0, tzinfo=dt.UTC)

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **kw: float) -> None:
        self.now += dt.timedelta(**kw)


def test_ice_expires_after_three_minutes_by_default() -> None:
    clock = Clock()
    cache = UnavailableOfferings(clock=clock)
    cache.mark_unavailable("m5.large", "us-east-1a", "spot")
    assert cache.is_unavailable("m5.large", "us-east-1a", "spot")
    assert not cache.is_unavailable("m5.large", "us-east-1a", "on-demand")
    assert not cache.is_unavailable("m5.large", "us-east-1b", "spot")
    clock.advance(minutes=2, seconds=59)
    assert cache.is_unavailable("m5.large", "us-east-1a", "spot")
    clock.advance(seconds=1)
    assert not cache.is_unavailable("m5.large", "us-east-1a", "spot")
    assert cache.entries() == []


def test_configurable_ttl_and_remark_extends() -> None:
    clock = Clock()
    cache = UnavailableOfferings(ttl=dt.timedelta(seconds=30), clock=clock)
    cache.mark_unavailable("c7g.large", "us-east-1b", "on-demand", "InsufficientInstanceCapacity")
    clock.advance(seconds=20)
    cache.mark_unavailable("c7g.large", "us-east-1b", "on-demand")
    clock.advance(seconds=20)
    assert cache.is_unavailable("c7g.large", "us-east-1b", "on-demand")
    assert len(cache) == 1
    clock.advance(seconds=10)
    assert len(cache) == 0
    with pytest.raises(ValueError, match="TTL"):
        UnavailableOfferings(ttl=dt.timedelta(0))


def test_catalog_marks_offering_unavailable() -> None:
    clock = Clock()
    cache = UnavailableOfferings(clock=clock)
    cache.mark_unavailable("m5.large", "us-east-1a", "spot")
    t = next(t for t in load_builtin("us-east-1", unavailable=cache) if t.name == "m5.large")
    flags = {(o.zone, o.capacity_type): o.available for o in t.offerings}
    assert flags[("us-east-1a", "spot")] is False
    assert flags[("us-east-1a", "on-demand")] is True
    clock.advance(minutes=3)
    t = next(t for t in load_builtin("us-east-1", unavailable=cache) if t.name == "m5.large")
    assert all(o.available for o in t.offerings)
