"""The replay's provisioning solve, shown the compact picture of the cluster (packing.scheduling.compact), places
the pending pods as the solve shown every node and pod does: under pool limits on resources and on nodes, with
DaemonSets, in-flight nodes and their nominated pods."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from packing.nodepool import HOSTNAME_LABEL, NODEPOOL_LABEL, DaemonSet, NodePool
from packing.pods import Pod
from packing.replay.world import ReplayRun, SimNode
from packing.resources import Resources
from packing.scheduling.results import Results
from packing.scheduling.scheduler import Scheduler
from tests.engine_builders import catalog, mixed_capacity_pool, pod, spread

AT = datetime(2026, 11, 23, tzinfo=UTC)


def _node(name: str, pool: str, cpu: int, ready: bool) -> SimNode:
    alloc = Resources.parse({"cpu": str(cpu), "memory": f"{cpu * 4}Gi", "pods": "110"})
    labels = {NODEPOOL_LABEL: pool, HOSTNAME_LABEL: name, "karpenter.sh/capacity-type": "on-demand",
              "topology.kubernetes.io/zone": "us-east-1a", "kubernetes.io/arch": "amd64"}
    return SimNode(name, "m-4x", "us-east-1a", "on-demand", 0.2, pool, labels, (), alloc, AT, ready=ready)


def _cluster(rng: random.Random, agent: DaemonSet) -> list[SimNode]:
    nodes = []
    for i in range(14):
        n = _node(f"n{i:02d}", rng.choice(["default", "capped", "few"]), rng.choice([2, 4, 8]), rng.random() > 0.2)
        if n.ready:
            ds = Pod(f"agent-{n.name}", "kube-system", {}, agent.pod.requests, owner_kind="DaemonSet",
                     owner_name="agent", node_name=n.name)
            n.pods[ds.key] = ds
            n.use(ds.requests)
        for j in range(rng.randrange(4)):
            p = pod(f"run-{i}-{j}", rng.choice(["250m", "500m", "1", "1500m"]), rng.choice(["512Mi", "2Gi"]))
            if not (n.used + p.requests).fits(n.allocatable):
                continue
            if n.ready:
                n.pods[p.key] = p.on_node(n.name)
                n.use(p.requests)
            else:
                n.nominated[p.key] = p
        nodes.append(n)
    return nodes


def _placed(res: Results) -> tuple[object, ...]:
    return (
        sorted((p.key, e.name) for e in res.existing for p in e.pods),
        sorted((c.nodepool, c.instance_type, c.zone, c.capacity_type, sorted(p.key for p in c.pods))
               for c in res.nodeclaims),
        sorted(res.unschedulable_reasons),
    )


@pytest.mark.parametrize("seed", range(24))
def test_the_compact_picture_places_pods_as_the_full_one(seed: int) -> None:
    rng = random.Random(seed)
    agent = DaemonSet("kube-system", "agent", pod("agent", "500m", "128Mi", namespace="kube-system"))
    live = _cluster(rng, agent)
    # limits just above what each limited pool's nodes hold: the nodes the compact picture leaves out still count
    held = sum(n.allocatable.get("cpu", 0) for n in live if n.nodepool == "capped") // 1000
    few = sum(1 for n in live if n.nodepool == "few")
    pools: list[NodePool] = [
        mixed_capacity_pool("default"),
        mixed_capacity_pool("capped", limits=Resources.parse({"cpu": str(held + rng.choice([2, 4, 8]))}), weight=10),
        mixed_capacity_pool("few", limits=Resources.parse({"nodes": str(few + rng.choice([0, 1]))}), weight=20),
    ]
    pending = [pod(f"new-{i}", rng.choice(["500m", "1", "1500m", "3", "7"]), rng.choice(["1Gi", "6Gi"]))
               for i in range(rng.randrange(1, 9))]
    full_nodes = [n.spec() for n in live]
    full_running = [p for n in live for p in n.pods.values()]
    full_running += [p.on_node(n.name) for n in live for p in n.nominated.values()]
    full = Scheduler(pools, catalog(), full_nodes, full_running, [agent]).solve(pending)
    specs, running = ReplayRun._cluster_view(live, pending, pools)
    compact = Scheduler(pools, catalog(), specs, running, [agent]).solve(pending)
    assert _placed(compact) == _placed(full)
    assert len(specs) <= len(full_nodes) + 2 and len(running) <= len(full_running)


def test_pods_with_topology_rules_see_the_whole_cluster() -> None:
    live = _cluster(random.Random(1), DaemonSet("kube-system", "agent", pod("agent", "100m", "128Mi")))
    spreading = [pod("s", "1", spread=(spread("topology.kubernetes.io/zone", app="x"),), labels={"app": "x"})]
    specs, running = ReplayRun._cluster_view(live, spreading, [mixed_capacity_pool()])
    assert [s.name for s in specs] == [n.name for n in live]
    assert len(running) == sum(len(n.pods) + len(n.nominated) for n in live)


def test_a_daemonset_pod_is_counted_once_in_the_compact_picture() -> None:
    """A pending pod that fits exactly in the room a running DaemonSet pod and another pod leave binds there."""
    agent = DaemonSet("kube-system", "agent", pod("agent", "500m", "128Mi", namespace="kube-system"))
    n = _node("n1", "default", 2, True)
    for p in (Pod("agent-n1", "kube-system", {}, agent.pod.requests, owner_kind="DaemonSet", owner_name="agent",
                  node_name="n1"), pod("busy", "1", "1Gi", node_name="n1")):
        n.pods[p.key] = p
        n.use(p.requests)
    pools = [mixed_capacity_pool()]
    specs, running = ReplayRun._cluster_view([n], [pod("fits", "500m", "1Gi")], pools)
    res = Scheduler(pools, catalog(), specs, running, [agent]).solve([pod("fits", "500m", "1Gi")])
    assert [(e.name, [p.key for p in e.pods]) for e in res.existing] == [("n1", ["default/fits"])]
    assert not res.nodeclaims
