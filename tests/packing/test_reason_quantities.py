"""Quantities in unschedulable reasons read as a person writes them, and never misstate which side is larger."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packing.quantity import parse_quantity
from packing.scheduling.reasons import human_quantity
from packing.scheduling.scheduler import Scheduler
from tests.engine_builders import catalog, instance_type, on_demand_pool, pod

GI = 2**30 * 1000  # one GiB in milli-bytes


@pytest.mark.parametrize(
    ("milli", "key", "round_up", "text"),
    [
        (382_970, "cpu", False, "382.97"),
        (31_900, "cpu", False, "31.9"),
        (64_000, "cpu", True, "64"),
        (1_500, "cpu", True, "1.5"),
        (250, "cpu", False, "250m"),
        (1_000, "nvidia.com/gpu", False, "1"),
        (768 * GI, "memory", True, "768Gi"),
        (261_888 * 2**20 * 1000, "memory", False, "255.75Gi"),
        # 15.0159...Gi: an offer is shown rounded down, a request rounded up
        (16_123_456_789_000, "memory", False, "15.01Gi"),
        (16_123_456_789_000, "memory", True, "15.02Gi"),
        (3 * 1024 * GI // 2, "ephemeral-storage", False, "1.5Ti"),
        (512 * 1000, "memory", False, "512"),  # below 1Ki: plain bytes, as the canonical form has them
    ],
)
def test_human_quantity(milli: int, key: str, round_up: bool, text: str) -> None:
    assert human_quantity(milli, key, round_up=round_up) == text


@given(st.integers(1, 10**9))
def test_cpu_is_shown_exactly(milli: int) -> None:
    assert parse_quantity(human_quantity(milli, "cpu", round_up=False)) == milli


@given(st.integers(2**20, 2**50), st.integers(2**20, 2**50))
def test_a_request_larger_than_the_offer_never_reads_as_no_larger(request_b: int, offer_b: int) -> None:
    req, off = request_b * 1000, offer_b * 1000
    shown_req = parse_quantity(human_quantity(req, "memory", round_up=True))
    shown_off = parse_quantity(human_quantity(off, "memory", round_up=False))
    assert req <= shown_req <= req * 1.01 and off * 0.99 <= shown_off <= off
    if req > off:
        assert shown_req > shown_off


def test_too_big_reason_shows_large_cpu_in_cores() -> None:
    cat = [*catalog(), instance_type("x-384x", 384, 3072, 20.0)]
    s = Scheduler([on_demand_pool()], cat)
    r = s.solve([pod("huge", "500", "1Gi")])
    assert r.unschedulable["default/huge"] == [
        (
            "default",
            "no instance type has 500 cpu and 1Gi memory available (largest offered: 383.9 cpu, 2.99Ti)",
        )
    ]
