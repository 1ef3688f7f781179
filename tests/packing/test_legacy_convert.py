"""Legacy Karpenter objects (v1alpha5 Provisioner, v1alpha1 AWSNodeTemplate, v1beta1 NodePool and EC2NodeClass):
`python -m packing convert`, its report, its bad input, and `plan` / `consolidate` reading them as their v1
successors (the same plan as the hand-written v1 objects)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from packing import convert_cli, plan_cli
from packing.disruption import cli as disruption_cli
from packing.durations import parse_duration
from packing.legacy import convert_objects
from packing.legacy.common import duration_of_seconds

# as Karpenter's v0.31 docs wrote them (a Provisioner with kubelet settings and a TTL, its AWSNodeTemplate)
PROVISIONER = """
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: default
spec:
  requirements:
    - key: karpenter.sh/capacity-type
      operator: In
      values: ["spot", "on-demand"]
    - key: karpenter.sh/provisioner-name
      operator: Exists
  labels:
    team: web
  annotations:
    karpenter.sh/do-not-consolidate: "true"
  taints:
    - key: dedicated
      value: web
      effect: NoSchedule
  limits:
    resources:
      cpu: "100"
  kubeletConfiguration:
    maxPods: 8
    containerRuntime: containerd
  ttlSecondsAfterEmpty: 30
  ttlSecondsUntilExpired: 2592000
  weight: 10
  providerRef:
    name: default
---
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata:
  name: default
spec:
  subnetSelector:
    karpenter.sh/discovery: my-cluster
  securityGroupSelector:
    aws-ids: "sg-0123456789abcdef0, sg-0fedcba9876543210"
  instanceProfile: KarpenterNodeInstanceProfile-my-cluster
  launchTemplate: my-template
  tags:
    team: web
"""

# what an operator writes by hand in v1 for the same pool
V1_EQUIVALENT = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    metadata:
      labels: {team: web}
      annotations: {karpenter.sh/do-not-disrupt: "true"}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      taints: [{key: dedicated, value: web, effect: NoSchedule}]
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
      expireAfter: 720h
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 30s}
  limits: {cpu: "100"}
  weight: 10
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: my-cluster}}]
  securityGroupSelectorTerms: [{id: sg-0123456789abcdef0}, {id: sg-0fedcba9876543210}]
  instanceProfile: KarpenterNodeInstanceProfile-my-cluster
  tags: {team: web}
  kubelet: {maxPods: 8}
"""

# v0.32-v0.37 (v1beta1) objects, as Karpenter's v1beta1 migration guide shows them
V1BETA1 = """
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata:
  name: general
spec:
  template:
    metadata:
      labels: {tier: general}
    spec:
      nodeClassRef:
        apiVersion: karpenter.k8s.aws/v1beta1
        kind: EC2NodeClass
        name: general
      requirements:
        - key: kubernetes.io/arch
          operator: In
          values: ["amd64"]
      kubelet:
        maxPods: 8
      resources:
        requests: {cpu: "1"}
  disruption:
    consolidationPolicy: WhenUnderutilized
    expireAfter: 168h
    budgets: [{nodes: "20%"}]
  limits:
    cpu: "100"
---
apiVersion: karpenter.k8s.aws/v1beta1
kind: EC2NodeClass
metadata:
  name: general
spec:
  amiFamily: AL2023
  role: KarpenterNodeRole-my-cluster
  subnetSelectorTerms:
    - tags: {karpenter.sh/discovery: my-cluster}
  securityGroupSelectorTerms:
    - tags: {karpenter.sh/discovery: my-cluster}
"""

CATALOG = """
apiVersion: loadmaster.dev/v1alpha1
kind: InstanceType
metadata: {name: c-4x}
spec:
  capacity: {cpu: "4", memory: 8Gi, pods: "58"}
  labels: {kubernetes.io/arch: amd64, kubernetes.io/os: linux, karpenter.k8s.aws/instance-family: c}
  offerings:
  - {zone: us-east-1a, capacityType: spot, price: 0.061}
  - {zone: us-east-1a, capacityType: on-demand, price: 0.17}
---
apiVersion: loadmaster.dev/v1alpha1
kind: InstanceType
metadata: {name: c-16x}
spec:
  capacity: {cpu: "16", memory: 32Gi, pods: "234"}
  labels: {kubernetes.io/arch: amd64, kubernetes.io/os: linux, karpenter.k8s.aws/instance-family: c}
  offerings:
  - {zone: us-east-1a, capacityType: spot, price: 0.244}
  - {zone: us-east-1a, capacityType: on-demand, price: 0.68}
"""

# small pods: with maxPods 8 (the kubelet setting the conversion carries to the EC2NodeClass) the plan needs more
# nodes than without it, so a lost kubelet shows in the plan
WORKLOAD = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 30
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      tolerations: [{key: dedicated, operator: Equal, value: web, effect: NoSchedule}]
      containers:
      - name: c
        resources: {requests: {cpu: 100m, memory: 128Mi}}
"""


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _convert(tmp_path: Path, text: str, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = convert_cli.main([_write(tmp_path, "in.yaml", text), *args], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _entry(report: list[dict], obj: str, field: str) -> dict:
    found = [e for e in report if e["object"] == obj and e["field"] == field]
    assert len(found) == 1, (obj, field, report)
    return found[0]


def test_provisioner_and_template_convert_to_the_hand_written_v1_objects(tmp_path: Path) -> None:
    code, out, err = _convert(tmp_path, PROVISIONER, "--output", "json")
    assert code == 0, err
    got = json.loads(out)
    assert got["objects"] == list(yaml.safe_load_all(V1_EQUIVALENT))
    report = got["report"]
    assert all(set(e) == {"object", "field", "action", "from", "to", "note"} for e in report)
    ttl = _entry(report, "Provisioner/default", "spec.ttlSecondsAfterEmpty")
    assert (ttl["action"], ttl["from"]) == ("changed", 30) and "WhenEmpty" in ttl["to"] and "30s" in ttl["to"]
    assert _entry(report, "Provisioner/default", "spec.ttlSecondsUntilExpired")["to"].endswith("expireAfter = 720h")
    assert _entry(report, "Provisioner/default", "spec.kubeletConfiguration")["to"] == "EC2NodeClass/default spec.kubelet"
    assert _entry(report, "Provisioner/default", "spec.kubeletConfiguration.containerRuntime")["action"] == "dropped"
    assert _entry(report, "Provisioner/default", "spec.providerRef")["action"] == "changed"
    assert _entry(report, "Provisioner/default", "spec.requirements[1]")["action"] == "dropped"
    assert _entry(report, "Provisioner/default", "spec.annotations.karpenter.sh/do-not-consolidate")["action"] == "changed"
    assert _entry(report, "AWSNodeTemplate/default", "spec.launchTemplate")["action"] == "dropped"
    family = _entry(report, "AWSNodeTemplate/default", "spec.amiFamily")
    assert family["action"] == "defaulted" and "al2@latest" in family["to"]


def test_yaml_output_is_a_multi_document_stream_and_the_report_goes_to_stderr(tmp_path: Path) -> None:
    code, out, err = _convert(tmp_path, PROVISIONER)
    assert code == 0
    assert list(yaml.safe_load_all(out)) == list(yaml.safe_load_all(V1_EQUIVALENT))
    assert "Provisioner/default: spec.ttlSecondsAfterEmpty: changed -> NodePool/default" in err
    assert "AWSNodeTemplate/default: spec.launchTemplate: dropped" in err


def test_v1beta1_objects_convert_as_the_v1_migration_guide_says(tmp_path: Path) -> None:
    code, out, err = _convert(tmp_path, V1BETA1, "--output", "json")
    assert code == 0, err
    pool, klass = json.loads(out)["objects"]
    assert pool["apiVersion"] == "karpenter.sh/v1" and klass["apiVersion"] == "karpenter.k8s.aws/v1"
    assert pool["spec"]["disruption"] == {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s",
                                          "budgets": [{"nodes": "20%"}]}
    tspec = pool["spec"]["template"]["spec"]
    assert tspec["expireAfter"] == "168h"
    assert tspec["nodeClassRef"] == {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "general"}
    assert "kubelet" not in tspec and "resources" not in tspec
    assert klass["spec"]["kubelet"] == {"maxPods": 8}
    assert klass["spec"]["amiSelectorTerms"] == [{"alias": "al2023@latest"}] and "amiFamily" not in klass["spec"]
    report = json.loads(out)["report"]
    assert _entry(report, "NodePool/general", "spec.disruption.expireAfter")["action"] == "moved"
    assert _entry(report, "NodePool/general", "spec.template.spec.resources")["action"] == "dropped"
    assert _entry(report, "NodePool/general", "spec.disruption.consolidationPolicy")["from"] == "WhenUnderutilized"


def test_pools_with_different_kubelets_on_one_class_get_a_copy_each() -> None:
    docs = list(yaml.safe_load_all(V1BETA1))
    other = json.loads(json.dumps(docs[0]))
    other["metadata"]["name"] = "batch"
    other["spec"]["template"]["spec"]["kubelet"] = {"maxPods": 110}
    done = convert_objects([(f"in.yaml: document {i}", d) for i, d in enumerate([docs[0], other, docs[1]], 1)])
    by_name = {o["metadata"]["name"]: o for o in done.objects}
    assert sorted(by_name) == ["batch", "general", "general-batch", "general-general"]
    assert by_name["general-batch"]["spec"]["kubelet"] == {"maxPods": 110}
    assert by_name["general-general"]["spec"]["kubelet"] == {"maxPods": 8}
    assert by_name["batch"]["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "general-batch"
    assert "kubelet" not in by_name["general"]["spec"]


def test_a_kubelet_whose_class_is_not_in_the_input_is_reported_dropped() -> None:
    pool = yaml.safe_load(V1BETA1.split("---")[0])
    done = convert_objects([("in.yaml: document 1", pool)])
    entry = next(c for c in done.report if c.field == "spec.template.spec.kubelet")
    assert entry.action.value == "dropped" and "general is not in the input" in entry.note


@pytest.mark.parametrize(("text", "expected"), [
    (PROVISIONER.replace("  ttlSecondsAfterEmpty: 30", "  ttlSecondsAfterEmpty: soon"),
     "document 1 (Provisioner default): spec.ttlSecondsAfterEmpty: must be an integer, got 'soon'"),
    (PROVISIONER.replace("  ttlSecondsAfterEmpty: 30", "  consolidation: {enabled: true}\n  ttlSecondsAfterEmpty: 30"),
     "document 1 (Provisioner default): spec.consolidation.enabled: consolidation and ttlSecondsAfterEmpty are "
     "mutually exclusive"),
    (PROVISIONER.replace("  providerRef:\n    name: default\n", ""),
     "document 1 (Provisioner default): spec.providerRef: is required"),
    (V1BETA1.replace("amiFamily: AL2023", "amiFamily: Ubuntu"),
     "document 2 (EC2NodeClass general): spec.amiFamily: Karpenter v1 has no Ubuntu alias"),
    (V1BETA1.replace("WhenUnderutilized", "Sometimes"),
     "document 1 (NodePool general): spec.disruption.consolidationPolicy: must be WhenEmpty or WhenUnderutilized"),
])
def test_bad_legacy_input_exits_2_naming_file_document_and_field(tmp_path: Path, text: str, expected: str) -> None:
    code, out, err = _convert(tmp_path, text)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {tmp_path / 'in.yaml'}: ") and expected in err and err.count("\n") == 1


def test_objects_of_other_kinds_are_printed_as_they_are(tmp_path: Path) -> None:
    code, out, err = _convert(tmp_path, WORKLOAD, "--output", "json")
    assert code == 0 and json.loads(out) == {"objects": [yaml.safe_load(WORKLOAD)], "report": []}


def _plan(tmp_path: Path, name: str, text: str) -> tuple[dict, str]:
    # the built-in catalog: its allocatable follows the EC2NodeClass's kubelet settings, which the conversion moves
    out, err = io.StringIO(), io.StringIO()
    assert plan_cli.main([_write(tmp_path, name, text)], stdout=out, stderr=err) == 0, err.getvalue()
    got = json.loads(out.getvalue())
    got["summary"].pop("solve_seconds")
    return got, err.getvalue()


def test_plan_reads_legacy_objects_as_the_hand_written_v1_ones(tmp_path: Path) -> None:
    legacy, notice = _plan(tmp_path, "legacy.yaml", PROVISIONER + "---\n" + WORKLOAD)
    v1, quiet = _plan(tmp_path, "v1.yaml", V1_EQUIVALENT + "---\n" + WORKLOAD)
    assert legacy == v1
    assert "converted karpenter.sh/v1alpha5 Provisioner to NodePool default" in notice
    assert "converted karpenter.k8s.aws/v1alpha1 AWSNodeTemplate to EC2NodeClass default" in notice
    assert "converted" not in quiet
    # the kubelet's maxPods reached the plan: without it the same pods need other nodes
    no_kubelet, _ = _plan(tmp_path, "v1-default.yaml", V1_EQUIVALENT.replace("  kubelet: {maxPods: 8}\n", "")
                          + "---\n" + WORKLOAD)
    assert no_kubelet["nodeclaims"] != v1["nodeclaims"]


NODE = """
apiVersion: v1
kind: Node
metadata:
  name: old-node
  creationTimestamp: "2026-11-01T00:00:00Z"
  labels:
    karpenter.sh/nodepool: general
    karpenter.sh/initialized: "true"
    karpenter.sh/capacity-type: on-demand
    node.kubernetes.io/instance-type: c-4x
    topology.kubernetes.io/zone: us-east-1a
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    tier: general
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "58"}
  allocatable: {cpu: "4", memory: 8Gi, pods: "58"}
"""


def test_consolidate_reads_legacy_objects_too(tmp_path: Path) -> None:
    converted = convert_cli.dump_yaml(convert_objects([("", d) for d in yaml.safe_load_all(V1BETA1)]).objects)
    outs = []
    for name, text in (("legacy.yaml", V1BETA1), ("v1.yaml", converted)):
        out, err = io.StringIO(), io.StringIO()
        files = [_write(tmp_path, name, text + "---\n" + NODE), "--catalog", _write(tmp_path, "catalog.yaml", CATALOG),
                 "--at", "2026-12-01T00:00:00Z"]
        assert disruption_cli.main(files, stdout=out, stderr=err) == 0, err.getvalue()
        got = json.loads(out.getvalue())
        got["summary"].pop("solve_seconds")
        outs.append((got, err.getvalue()))
    assert outs[0][0] == outs[1][0]
    assert outs[0][0]["actions"], outs[0][0]  # the empty node goes (its pool consolidates WhenEmptyOrUnderutilized)
    assert "converted karpenter.sh/v1beta1 NodePool to NodePool general" in outs[0][1]
    assert "converted" not in outs[1][1]


# --- properties -----------------------------------------------------------------------------------

_SECONDS = st.integers(min_value=0, max_value=10 * 365 * 24 * 3600)


@given(_SECONDS)
def test_a_ttl_in_seconds_becomes_the_same_duration(seconds: int) -> None:
    assert parse_duration(duration_of_seconds(seconds)).total_seconds() == seconds  # type: ignore[union-attr]


@given(empty=st.one_of(st.none(), _SECONDS), expire=st.one_of(st.none(), _SECONDS),
       consolidate=st.booleans(), weight=st.one_of(st.none(), st.integers(1, 100)),
       kubelet=st.one_of(st.none(), st.integers(1, 250)))
def test_converting_twice_changes_nothing_more(empty: int | None, expire: int | None, consolidate: bool,
                                               weight: int | None, kubelet: int | None) -> None:
    """The v1 objects a Provisioner and its AWSNodeTemplate become are not legacy: a second conversion returns them
    as they are, with an empty report; and the policy keeps what the TTLs meant."""
    docs = list(yaml.safe_load_all(PROVISIONER))
    spec = docs[0]["spec"]
    for key in ("ttlSecondsAfterEmpty", "ttlSecondsUntilExpired", "weight", "kubeletConfiguration"):
        spec.pop(key)
    if consolidate:
        spec["consolidation"] = {"enabled": True}
    elif empty is not None:
        spec["ttlSecondsAfterEmpty"] = empty
    if expire is not None:
        spec["ttlSecondsUntilExpired"] = expire
    if weight is not None:
        spec["weight"] = weight
    if kubelet is not None:
        spec["kubeletConfiguration"] = {"maxPods": kubelet}
    once = convert_objects([(f"document {i}", d) for i, d in enumerate(docs, 1)])
    twice = convert_objects([("", o) for o in once.objects])
    assert twice.objects == once.objects and twice.report == [] and twice.converted == 0
    pool = once.objects[0]["spec"]
    policy = pool["disruption"]["consolidationPolicy"]
    assert policy == ("WhenEmptyOrUnderutilized" if consolidate else "WhenEmpty")
    after = pool["disruption"]["consolidateAfter"]
    assert after == ("0s" if consolidate else "Never" if empty is None else duration_of_seconds(empty))
    assert pool["template"]["spec"]["expireAfter"] == ("Never" if expire is None else duration_of_seconds(expire))
    assert once.objects[1]["spec"].get("kubelet") == (None if kubelet is None else {"maxPods": kubelet})


def test_a_v1beta1_class_with_ami_terms_keeps_them_and_its_family() -> None:
    klass = yaml.safe_load(V1BETA1.split("---")[1])
    klass["spec"]["amiSelectorTerms"] = [{"id": "ami-0123456789abcdef0"}]
    done = convert_objects([("in.yaml: document 1", klass)])
    assert done.objects[0]["spec"]["amiFamily"] == "AL2023"
    assert done.objects[0]["spec"]["amiSelectorTerms"] == [{"id": "ami-0123456789abcdef0"}]
    del klass["spec"]["amiFamily"]
    done = convert_objects([("in.yaml: document 1", klass)])
    assert done.objects[0]["spec"]["amiFamily"] == "AL2"  # v1 requires a family beside non-alias terms
    assert [c.action.value for c in done.report if c.field == "spec.amiFamily"] == ["defaulted"]
