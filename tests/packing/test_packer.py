"""The balanced vector packer: exact fit, every pod once, deterministic, and it pairs cpu- and memory-heavy pods."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packing.scheduling.packer import _fill_balanced, pack


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 4000), st.integers(1, 16000), st.integers(0, 2)), min_size=1, max_size=80
    ),
    st.tuples(st.integers(4000, 16000), st.integers(16000, 64000), st.integers(2, 3)),
    st.integers(1, 8),
)
def test_fill_balanced_never_overcommits_and_places_every_pod_once(
    shapes: list[tuple[int, int, int]], alloc_t: tuple[int, int, int], window: int
) -> None:
    pods = np.array(shapes, dtype=np.int64)
    alloc = np.array(alloc_t, dtype=np.int64)
    pods = np.minimum(pods, alloc)  # every pod fits the node on its own
    bins = _fill_balanced(pods, alloc, window=window)
    assert sorted(i for b in bins for i in b) == list(range(len(pods)))
    for b in bins:
        assert b and bool((pods[b].sum(axis=0) <= alloc).all())
    assert _fill_balanced(pods, alloc, window=window) == bins


def test_fill_balanced_pairs_cpu_heavy_with_memory_heavy_pods() -> None:
    # 4 cpu-heavy (3 cpu, 1Gi) and 4 memory-heavy (1 cpu, 11Gi) pods on 4-cpu/12Gi nodes: pairs fill 4 nodes
    cpu_heavy = [[3000, 1024, 1]] * 4
    mem_heavy = [[1000, 11 * 1024, 1]] * 4
    pods = np.array(cpu_heavy + mem_heavy, dtype=np.int64)
    bins = _fill_balanced(pods, np.array([4000, 12 * 1024, 10], dtype=np.int64))
    assert len(bins) == 4


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 8000), st.integers(1, 32000)), min_size=1, max_size=60))
def test_pack_never_overcommits(shapes: list[tuple[int, int]]) -> None:
    pods = np.array([[c, m, 1] for c, m in shapes], dtype=np.int64)
    allocs = np.array(
        [[8000, 16000, 58], [8000, 32000, 58], [16000, 32000, 110], [2000, 8000, 20]], dtype=np.int64
    )
    prices = [0.34, 0.4, 0.6, 0.09]
    fits = (pods[:, None, :] <= allocs[None, :, :]).all(axis=2).any(axis=1)
    pods = pods[fits]
    bins = pack(pods, allocs, prices)
    assert sorted(i for b in bins for i in b.pods) == list(range(len(pods)))
    for b in bins:
        assert bool((pods[list(b.pods)].sum(axis=0) <= allocs[b.option]).all())


def test_pack_assigned_falls_back_to_first_fit_on_huge_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    from packing.scheduling import packer

    rng = np.random.default_rng(5)
    pods = np.stack(
        [rng.integers(100, 4000, 300), rng.integers(100, 16000, 300), np.ones(300, dtype=np.int64)], 1
    )
    allocs = np.array([[8000, 32000, 58], [16000, 32000, 110]], dtype=np.int64)
    assign = np.zeros(300, dtype=np.int64)
    price = np.array([0.4, 0.6])
    monkeypatch.setattr(packer, "BALANCED_MAX_WORK", 0.0)
    bins = packer._pack_assigned(pods, allocs, price, assign, balanced=True)
    assert sorted(i for b in bins for i in b.pods) == list(range(300))
    for b in bins:
        assert bool((pods[list(b.pods)].sum(axis=0) <= allocs[b.option]).all())
