"""The simulation's free-room matrices, kept up to date action by action, equal a rebuild from scratch."""

from __future__ import annotations

import numpy as np
import pytest

import packing.disruption.simulation as simulation
from packing.bench.catalogs import bench_catalog
from packing.bench.consolidate import AT, build
from packing.disruption import consolidate

KEYS = ("cpu", "memory", "pods")


@pytest.mark.parametrize("protected", [False, True])
def test_incremental_matrices_equal_a_rebuild(monkeypatch: pytest.MonkeyPatch, protected: bool) -> None:
    checked = 0
    real_apply = simulation.ClusterSim.apply

    def apply_and_check(self: simulation.ClusterSim, *a: object, **kw: object) -> None:
        nonlocal checked
        self.free_matrix(KEYS)
        self.first_fit_matrix(KEYS)  # cached before the action, so the action must update them
        real_apply(self, *a, **kw)  # type: ignore[arg-type]
        names, m = self.free_matrix(KEYS)
        pos, ff = self.first_fit_matrix(KEYS)
        ff_names = self.first_fit_names(KEYS)
        self._matrix_dirty()
        names2, m2 = self.free_matrix(KEYS)
        pos2, ff2 = self.first_fit_matrix(KEYS)
        assert names == names2 and np.array_equal(m, m2)
        assert pos == pos2 and ff_names == self.first_fit_names(KEYS) and np.array_equal(ff, ff2)
        checked += 1

    monkeypatch.setattr(simulation.ClusterSim, "apply", apply_and_check)
    bc = build(bench_catalog()[0], 1000, seed=5, protected=protected, pool_kind="full")
    report = consolidate(bc.cluster, AT)
    # deletes and repacks (new nodes among the old, pods into their room) all went through the check
    assert checked == len(report.actions) >= 4
    assert {a.method for a in report.actions} >= {"repack", "multi-node", "single-node"}
