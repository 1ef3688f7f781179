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
