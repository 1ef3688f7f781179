"""Advisor runs over YAML texts, on the provisioning tests' catalog (tests/engine_builders.catalog)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from packing.advisor import Advice, Context, advise
from packing.advisor.reading import manifests_of
from packing.disruption.inputs import parse_texts
from packing.instancetype import InstanceType
from tests.engine_builders import catalog


def run(text: str, types: Sequence[InstanceType] | None = None, **kw: Any) -> Advice:
    inp, ex = parse_texts([("test.yaml", text)])
    docs = [d for d in yaml.safe_load_all(text) if d]
    return advise(Context(inp, ex, catalog() if types is None else types, manifests_of(docs), **kw))


def codes(advice: Advice) -> list[str]:
    return [f.code for f in advice.findings]


def one(advice: Advice, code: str) -> Any:
    found = [f for f in advice.findings if f.code == code]
    assert len(found) == 1, codes(advice)
    return found[0]


def nodepool(name: str = "default", *, reqs: str = "", extra_spec: str = "", template: str = "", weight: str = "") -> str:
    return f"""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: {name}}}
spec:
{weight}
  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
{template}
      requirements:
      - {{key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}}
{reqs}
{extra_spec}
---
"""


def deployment(name: str, replicas: int = 2, *, cpu: str = "1", namespace: str = "default", spec: str = "",
               kind: str = "Deployment", requests: bool = True) -> str:
    res = f"resources: {{requests: {{cpu: '{cpu}', memory: 1Gi}}}}" if requests else "resources: {}"
    return f"""
apiVersion: apps/v1
kind: {kind}
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
{spec}
      containers: [{{name: c, image: x, {res}}}]
---
"""


def node(name: str, pool: str = "default", itype: str = "m-4x", zone: str = "us-east-1a", ct: str = "on-demand",
         cpu: str = "4", memory: str = "16Gi") -> str:
    return f"""
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{karpenter.sh/nodepool: {pool}, node.kubernetes.io/instance-type: {itype},
           topology.kubernetes.io/zone: {zone}, karpenter.sh/capacity-type: {ct}, karpenter.sh/initialized: "true",
           kubernetes.io/arch: amd64}}
status:
  capacity: {{cpu: "{cpu}", memory: {memory}, pods: "110"}}
  allocatable: {{cpu: "{cpu}", memory: {memory}, pods: "110"}}
---
"""


def pod(name: str, node_name: str, *, app: str = "web", cpu: str = "500m", annotations: str = "",
        namespace: str = "default", owner: str = "ReplicaSet") -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {namespace}
  labels: {{app: {app}}}
  annotations: {{{annotations}}}
  ownerReferences: [{{apiVersion: apps/v1, kind: {owner}, name: {app}, uid: u-{app}}}]
spec:
  nodeName: {node_name}
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: {cpu}, memory: 512Mi}}}}}}]
---
"""


def pdb(name: str, app: str, *, min_available: str | None = None, max_unavailable: str | None = None,
        namespace: str = "default") -> str:
    field = f"minAvailable: {min_available}" if min_available is not None else f"maxUnavailable: {max_unavailable}"
    return f"""
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  {field}
  selector: {{matchLabels: {{app: {app}}}}}
---
"""


def patch_of(finding: Any) -> Any:
    return yaml.safe_load(finding.fix.patch_yaml)
