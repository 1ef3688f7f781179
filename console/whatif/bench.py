"""Preview benchmark: a NodePool edit previewed on a synthetic cluster of N nodes and M pods.

The cluster is built in memory (nodes of the pool "default", pods bound to them, a tail of pending
pods), so the figure is the preview itself: parsing, provisioning and consolidation, before and after
(reading the objects from the cluster backend is not included).
"""

from __future__ import annotations

import random
import statistics
import time
from datetime import UTC, datetime
from typing import Any

from console.fleet.models import EC2NodeClass, NodePool
from console.whatif import selectors
from console.whatif.world import World

NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
TYPES = [("m5.2xlarge", 8, 30), ("c5.2xlarge", 8, 14), ("r5.xlarge", 4, 30), ("m5.4xlarge", 16, 62)]


def _node(i: int, rng: random.Random) -> tuple[dict[str, Any], int, int]:
    itype, cpu, mem = TYPES[i % len(TYPES)]
    name = f"node-{i:04d}"
    zone = f"us-east-1{'abc'[i % 3]}"
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              "karpenter.sh/nodepool": "default", "node.kubernetes.io/instance-type": itype,
              "karpenter.sh/capacity-type": "on-demand", "topology.kubernetes.io/zone": zone,
              "karpenter.sh/initialized": "true", "karpenter.sh/registered": "true"}
    alloc = {"cpu": f"{cpu * 1000 - 200}m", "memory": f"{mem}Gi", "pods": "58"}
    return ({"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": name, "labels": labels, "creationTimestamp": "2026-11-01T00:00:00Z"},
             "spec": {"providerID": f"aws:///{zone}/i-{i:017x}"},
             "status": {"capacity": alloc, "allocatable": alloc,
                        "conditions": [{"type": "Ready", "status": "True"}]}}, cpu * 1000 - 200, mem * 1024)


def _pod(name: str, app: str, cpu_m: int, mem_mi: int, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x", "resources": {
        "requests": {"cpu": f"{cpu_m}m", "memory": f"{mem_mi}Mi"}}}]}
    status: dict[str, Any] = {"phase": "Running"}
    if node:
        spec["nodeName"] = node
    else:
        status = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                       "reason": "Unschedulable"}]}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "bench", "labels": {"app": app},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": app,
                                              "controller": True, "uid": f"uid-{app}"}]},
            "spec": spec, "status": status}


def build_world(nodes: int = 500, pods: int = 5000, pending: int = 50, seed: int = 1) -> World:
    """nodes × pool "default" (on-demand c/m/r), pods bound to them about 70% full, `pending` unbound."""
    rng = random.Random(seed)
    workload: list[dict[str, Any]] = []
    running = pods - pending
    per_node = max(1, running // nodes)
    count = 0
    for i in range(nodes):
        doc, cpu_m, mem_mi = _node(i, rng)
        workload.append(doc)
        n = per_node if i < nodes - 1 else running - count
        for _ in range(n):
            c = max(50, int(cpu_m * 0.7 / max(n, 1)))
            m = max(64, int(mem_mi * 0.5 / max(n, 1)))
            workload.append(_pod(f"run-{count:05d}", f"app-{count % 40}", c, m, doc["metadata"]["name"]))
            count += 1
    for j in range(pending):
        workload.append(_pod(f"pend-{j:05d}", f"new-{j % 10}", rng.choice([250, 500, 1000, 2000]),
                             rng.choice([256, 512, 1024, 4096])))
    pool = NodePool(name="default", node_class_name="default", weight=10, consolidate_after="0s",
                    requirements=[{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                                  {"key": "karpenter.k8s.aws/instance-category", "operator": "In",
                                   "values": ["c", "m", "r"]},
                                  {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]}],
                    budgets=[{"nodes": "10%"}], limits={"cpu": "10000"})
    nodeclass = EC2NodeClass(name="default", ami_family="AL2023", ami_selector_terms=[{"alias": "al2023@latest"}],
                             role="KarpenterNodeRole-bench")
    return World(workload, [pool], [nodeclass], None, NOW)


def run(nodes: int = 500, pods: int = 5000, pending: int = 50, repeat: int = 3) -> dict[str, Any]:
    world = build_world(nodes, pods, pending)
    edit = {"requirements": [*world.pools[0].requirements,
                             {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
            "limits": {"cpu": "3000"}}
    selectors.preview_nodepool_change(values=edit, name="default", world=world)  # warm the catalog cache
    times = []
    result: dict[str, Any] = {}
    for _ in range(repeat):
        # A fresh World each time: a request parses the cluster anew, so parsing is part of the figure.
        fresh = World(world.workload, world.pools, world.classes, None, world.now)
        started = time.perf_counter()
        result = selectors.preview_nodepool_change(values=edit, name="default", world=fresh)
        times.append(time.perf_counter() - started)
    return {"nodes": nodes, "pods": pods, "pending": pending, "seconds_median": round(statistics.median(times), 3),
            "seconds_max": round(max(times), 3), "launch_after": len(result["after"]["launch"]),
            "remove_after": len(result["after"]["remove"]),
            "unschedulable_after": len(result["after"]["unschedulable"])}
