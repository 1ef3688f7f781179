"""Existing nodes pods may not go on: an uninitialized node ignores only the taints Karpenter expects to go away (its
known ephemeral taints, matched on key and effect, and any readiness.k8s.io/ taint), and a node marked for deletion takes none; initialized nodes are tried first."""

from __future__ import annotations

import pytest

from packing.scheduling.scheduler import Scheduler
from packing.taints import Taint, is_ephemeral
from tests.engine_builders import catalog, existing_node, on_demand_pool, pod


@pytest.mark.parametrize(("taint", "ephemeral"), [
    (Taint("node.kubernetes.io/not-ready", "", "NoSchedule"), True),
    (Taint("node.kubernetes.io/not-ready", "", "NoExecute"), True),
    (Taint("node.kubernetes.io/unreachable", "", "NoSchedule"), True),
    (Taint("node.kubernetes.io/unreachable", "", "NoExecute"), False),
    (Taint("node.cloudprovider.kubernetes.io/uninitialized", "true", "NoSchedule"), True),
    (Taint("karpenter.sh/unregistered", "", "NoExecute"), True),
    (Taint("karpenter.sh/unregistered", "", "NoSchedule"), False),
    (Taint("readiness.k8s.io/network", "", "NoSchedule"), True),
    (Taint("readiness.k8s.io/gpu", "", "NoExecute"), True),
    (Taint("example.com/readiness.k8s.io/x", "", "NoSchedule"), False),
])  # fmt: skip
def test_known_ephemeral_taints(taint: Taint, ephemeral: bool) -> None:
    assert is_ephemeral(taint) is ephemeral


@pytest.mark.parametrize(("taint", "placed_there"), [
    (Taint("karpenter.sh/unregistered", "", "NoExecute"), True),
    (Taint("readiness.k8s.io/network", "", "NoSchedule"), True),
    (Taint("node.kubernetes.io/unreachable", "", "NoExecute"), False),
])  # fmt: skip
def test_an_uninitialized_node_ignores_only_ephemeral_taints(taint: Taint, placed_there: bool) -> None:
    n = existing_node("n1", initialized=False, taints=(taint,))
    r = Scheduler([on_demand_pool()], catalog(), [n]).solve([pod("p", "100m", "128Mi")])
    assert (r.existing[0].pods != []) is placed_there
    assert (r.nodeclaims == []) is placed_there
    # once initialized, the taint holds
    n = existing_node("n1", initialized=True, taints=(taint,))
    r = Scheduler([on_demand_pool()], catalog(), [n]).solve([pod("p", "100m", "128Mi")])
    assert r.existing[0].pods == []


def test_a_node_marked_for_deletion_takes_no_pending_pod() -> None:
    import dataclasses

    n = existing_node("n1")
    r = Scheduler([on_demand_pool()], catalog(), [n]).solve([pod("p", "100m", "128Mi")])
    assert r.existing[0].pods != [] and r.nodeclaims == []
    gone = dataclasses.replace(n, deleting=True)
    r = Scheduler([on_demand_pool()], catalog(), [gone]).solve([pod("p", "100m", "128Mi")])
    assert r.existing[0].pods == [] and len(r.nodeclaims) == 1


def test_initialized_nodes_are_filled_first() -> None:
    booting = [existing_node(f"n{i}", initialized=False) for i in (1, 2, 4)]
    ready = existing_node("n3")
    r = Scheduler([on_demand_pool()], catalog(), [*booting, ready]).solve([pod("p", "100m", "128Mi")])
    assert [e.name for e in r.existing if e.pods] == ["n3"]
