"""Regression: a pool's limit must not be used up by the size reservations of the first claims.

Twelve zone-spread pods of 500m under a 100-cpu limit used to leave nine unschedulable, because each
claim reserved the capacity of the largest type it could still become."""

from __future__ import annotations

import json
from pathlib import Path

from packing.plan_cli import main

CLUSTER = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
  limits: {cpu: "%(limit)s"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: %(replicas)d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      topologySpreadConstraints:
        - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule,
           labelSelector: {matchLabels: {app: web}}}
      containers: [{name: web, image: nginx, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
"""


def plan(tmp_path: Path, capsys: object, *, limit: str, replicas: int) -> dict[str, object]:
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER % {"limit": limit, "replicas": replicas})
    assert main([str(path), "--output", "json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[attr-defined]


def test_spread_pods_all_fit_under_a_roomy_limit(tmp_path: Path, capsys: object) -> None:
    result = plan(tmp_path, capsys, limit="100", replicas=12)
    assert result["unschedulable"] == []
    claims = result["nodeclaims"]
    assert sum(len(c["pods"]) for c in claims) == 12                     # type: ignore[index, union-attr]
    assert len({c["zone"] for c in claims}) >= 4                          # type: ignore[index, union-attr]


def test_a_tight_limit_still_holds(tmp_path: Path, capsys: object) -> None:
    from packing.quantity import parse_quantity

    result = plan(tmp_path, capsys, limit="4", replicas=12)
    claims = result["nodeclaims"]
    # Whatever type each claim launches as, the pool's cpu capacity stays within the limit.
    from packing.catalog import load_builtin

    cpu = {t.name: t.capacity.get("cpu", 0) for t in load_builtin("us-east-1")}
    assert sum(cpu[c["instance_type"]] for c in claims) <= parse_quantity("4")   # type: ignore[index, union-attr]
    assert result["unschedulable"]                                         # the rest cannot fit, and says so


def test_a_pod_refused_for_a_limit_is_retried_once_claims_shrink_to_their_type() -> None:
    """An open NodeClaim in a pool with limits reserves the largest type it could still become; once the open
    claims are finalized their reservations shrink, and a pod the limit refused meanwhile gets a later NodeClaim
    of that pool (as Karpenter checks limits per new NodeClaim and retries failed pods)."""
    from packing.pods import PodAffinityTerm
    from packing.scheduling.scheduler import Scheduler
    from packing.scheduling.verify import check_plan
    from tests.engine_builders import HOST, catalog, on_demand_pool, pod, sel

    apart = (PodAffinityTerm(sel(app="h"), HOST, frozenset({"default"})),)
    pods = [pod(f"h{i}", "1", "1Gi", labels={"app": "h"}, anti_affinity=apart) for i in range(4)]
    s = Scheduler([on_demand_pool("a", limits={"cpu": 12_000})], catalog())
    r = s.solve(pods)
    assert check_plan(s, pods, r) == []
    assert not r.unschedulable and len(r.nodeclaims) == 4
    assert sum(int(c.allocatable["cpu"]) for c in r.nodeclaims) <= 12_000
    # the limit still holds: a fifth 2-cpu node would pass it
    pods.append(pod("h4", "1", "1Gi", labels={"app": "h"}, anti_affinity=apart))
    pods += [pod(f"h{i}", "1", "1Gi", labels={"app": "h"}, anti_affinity=apart) for i in range(5, 8)]
    r = s.solve(pods)
    assert check_plan(s, pods, r) == []
    assert len(r.nodeclaims) == 6 and len(r.unschedulable) == 2
    assert all("limit cpu=12" in why for _, why in r.unschedulable["default/h7"])
    # and the other pool takes what the limited one refuses
    s2 = Scheduler([on_demand_pool("a", limits={"cpu": 12_000}, weight=50), on_demand_pool("b")], catalog())
    r = s2.solve(pods)
    assert not r.unschedulable and {c.nodepool for c in r.nodeclaims} == {"a", "b"}
