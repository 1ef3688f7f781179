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


def test_a_running_daemonset_pod_takes_its_room_once() -> None:
    """The what-ifs' compact view folds the room of pods no rule can see into their node; a DaemonSet pod so
    folded must not also be reserved as one that will come to the node (it once was: the pending pod below,
    which fits beside it, was sent to a new node)."""
    from packing.nodepool import DaemonSet, ExistingNodeSpec
    from packing.pods import Pod
    from packing.resources import Resources
    from packing.scheduling.scheduler import Scheduler

    def a_pod(name: str, cpu: str, node: str = "", **kw: str) -> Pod:
        return Pod(name, "kube-system", {}, Resources.parse({"cpu": cpu, "memory": "100Mi"}), node_name=node, **kw)

    ds = DaemonSet("kube-system", "agent", a_pod("agent", "500m", owner_kind="DaemonSet", owner_name="agent"))
    running = a_pod("agent-n1", "500m", "n1", owner_kind="DaemonSet", owner_name="agent")
    spec = ExistingNodeSpec("n1", {"kubernetes.io/hostname": "n1"}, Resources.parse({"cpu": "2", "memory": "4Gi"}),
                            (), True, "Node")
    pending = a_pod("web", "1500m")
    sim = simulation.ClusterSim(Scheduler([], bench_catalog()[0], (), (), [ds]), [spec], [running], [pending],
                                fixed={running.key})
    assert [p.key for p in sim.reserved_on["n1"]] == [pending.key]
    assert sim.free_room("n1") == Resources.parse({"cpu": "0", "memory": "3896Mi"})
