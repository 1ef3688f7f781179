"""`python -m packing plan`: both outputs, exit codes, and every kind of bad input."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from packing.plan_cli import main

ROOT = Path(__file__).resolve().parents[2]

CATALOG = """
apiVersion: loadmaster.dev/v1alpha1
kind: InstanceType
metadata: {name: c-4x}
spec:
  capacity: {cpu: "4", memory: 8Gi, pods: "58", nvidia.com/gpu: "0"}
  overhead: {cpu: 100m, memory: 512Mi}
  labels: {kubernetes.io/arch: amd64, kubernetes.io/os: linux, karpenter.k8s.aws/instance-family: c}
  offerings:
  - {zone: us-east-1a, capacityType: spot, price: 0.061, available: true}
  - {zone: us-east-1a, capacityType: on-demand, price: 0.17}
---
apiVersion: loadmaster.dev/v1alpha1
kind: InstanceType
metadata: {name: m-4x}
spec:
  capacity: {cpu: "4", memory: 16Gi, pods: "58"}
  labels: {kubernetes.io/arch: amd64, kubernetes.io/os: linux, karpenter.k8s.aws/instance-family: m}
  offerings:
  - {zone: us-east-1b, capacityType: spot, price: 0.08}
  - {zone: us-east-1b, capacityType: on-demand, price: 0.19}
"""

POOLS = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    metadata: {labels: {team: web}}
    spec:
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
      taints: [{key: k, value: v, effect: NoSchedule}]
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  limits: {cpu: "100"}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  template:
    spec:
      taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
"""

WORKLOADS = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      tolerations: [{key: k, operator: Equal, value: v, effect: NoSchedule}]
      containers:
      - name: c
        resources: {requests: {cpu: 500m, memory: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: big-0}
spec:
  tolerations: [{key: k, operator: Exists}]
  containers:
  - name: c
    resources: {limits: {cpu: "96", memory: 768Gi}}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
"""


def run(tmp_path: Path, *docs: str, args: tuple[str, ...] = ()) -> tuple[int, str, str]:
    files = []
    for i, d in enumerate(docs):
        f = tmp_path / f"in{i}.yaml"
        f.write_text(d)
        files.append(str(f))
    out, err = io.StringIO(), io.StringIO()
    code = main([*files, *args], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_json_output_shape(tmp_path: Path) -> None:
    code, out, err = run(tmp_path, CATALOG, POOLS, WORKLOADS)
    assert code == 0
    data = json.loads(out)
    assert set(data) >= {"nodeclaims", "existing_nodes", "unschedulable", "summary"}
    [nc] = data["nodeclaims"]
    assert nc["name"] == "default-1" and nc["nodepool"] == "default"
    assert nc["instance_type"] == "c-4x" and nc["instance_type_options"] == ["c-4x", "m-4x"]
    assert nc["capacity_type"] == "spot" and nc["zone"] == "us-east-1a" and nc["price_per_hour"] == 0.061
    assert nc["labels"]["karpenter.sh/nodepool"] == "default"
    assert nc["labels"]["node.kubernetes.io/instance-type"] == "c-4x"
    assert nc["labels"]["topology.kubernetes.io/zone"] == "us-east-1a"
    assert nc["labels"]["karpenter.sh/capacity-type"] == "spot"
    assert nc["labels"]["kubernetes.io/arch"] == "amd64" and nc["labels"]["team"] == "web"
    assert nc["taints"] == [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    assert nc["pods"] == ["default/web-0", "default/web-1", "default/web-2"]
    assert nc["requests"] == {"cpu": "1500m", "memory": "3Gi", "pods": "3"}
    assert nc["allocatable"] == {"cpu": "3900m", "memory": "7680Mi", "pods": "58"}
    [u] = data["unschedulable"]
    assert u["pod"] == "default/big-0"
    # nodepool and reason as ever; kind and detail added for tools (keys are added, never renamed)
    assert [(r["nodepool"], r["reason"], r["kind"]) for r in u["reasons"]] == [
        ("default", "no instance type has 96 cpu and 768Gi memory available (largest offered: 4 cpu, 16Gi)", "resources"),
        ("gpu", "taint nvidia.com/gpu=true:NoSchedule not tolerated", "taint"),
    ]
    assert u["reasons"][1]["detail"] == {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    assert u["reasons"][0]["detail"]["requests"]["cpu"] == 96_000
    s = data["summary"]
    assert (s["pending_pods"], s["scheduled"], s["unschedulable"], s["new_nodeclaims"]) == (4, 3, 1, 1)
    assert s["cost_per_hour"] == 0.061 and 0 < s["lower_bound_per_hour"] <= 0.061
    assert s["solve_seconds"] >= 0
    assert err.strip() == "skipped 2 objects of other kinds (ConfigMap 1, Service 1)"


def test_text_output(tmp_path: Path) -> None:
    code, out, _ = run(tmp_path, CATALOG, POOLS, WORKLOADS, args=("--output", "text"))
    assert code == 0
    assert "default-1" in out and "c-4x" in out and "us-east-1a" in out and "spot" in out
    assert "default/web-0" in out
    assert "default/big-0" in out and "taint nvidia.com/gpu=true:NoSchedule not tolerated" in out
    assert "Total cost: $0.0610/h" in out and "Lower bound" in out


def test_catalog_flag_and_kind_list(tmp_path: Path) -> None:
    cat = tmp_path / "cat.yaml"
    cat.write_text(CATALOG)
    listed = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "List",
            "items": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "solo"},
                    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
                },
                {
                    "apiVersion": "karpenter.sh/v1",
                    "kind": "NodePool",
                    "metadata": {"name": "default"},
                    "spec": {},
                },
            ],
        }
    )
    code, out, _ = run(tmp_path, listed, args=("--catalog", str(cat)))
    assert code == 0
    assert json.loads(out)["nodeclaims"][0]["pods"] == ["default/solo"]


def test_existing_nodes_nodeclaims_and_initialization(tmp_path: Path) -> None:
    objs = (
        POOLS
        + """
---
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-1-5
  labels: {karpenter.sh/nodepool: default, topology.kubernetes.io/zone: us-east-1a,
           node.kubernetes.io/instance-type: c-4x, karpenter.sh/capacity-type: spot}
spec:
  providerID: aws:///us-east-1a/i-1
  taints: [{key: node.kubernetes.io/not-ready, effect: NoSchedule}]
status:
  allocatable: {cpu: 3900m, memory: 7680Mi, pods: "58"}
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: default-abc, labels: {karpenter.sh/nodepool: default}}
spec:
  requirements:
  - {key: node.kubernetes.io/instance-type, operator: In, values: [m-4x]}
  - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1b]}
  - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
  taints: [{key: k, value: v, effect: NoSchedule}]
---
apiVersion: v1
kind: Pod
metadata: {name: api-1}
spec:
  tolerations: [{key: k, operator: Exists}]
  containers: [{name: c, resources: {requests: {cpu: "3", memory: 6Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: api-2}
spec:
  tolerations: [{key: k, operator: Exists}]
  containers: [{name: c, resources: {requests: {cpu: "3", memory: 6Gi}}}]
"""
    )
    code, out, _ = run(tmp_path, CATALOG, objs)
    assert code == 0
    data = json.loads(out)
    placed = {e["name"]: e["pods"] for e in data["existing_nodes"]}
    # the node is not initialized (no karpenter.sh/initialized=true), so its not-ready taint is ignored
    assert placed["ip-10-0-1-5"] == ["default/api-1"]
    assert placed["default-abc"] == ["default/api-2"]
    assert data["nodeclaims"] == []
    initialized = objs.replace(
        "karpenter.sh/capacity-type: spot}",
        "karpenter.sh/capacity-type: spot, karpenter.sh/initialized: 'true'}",
    )
    code, out, _ = run(tmp_path, CATALOG, initialized)
    placed = {e["name"]: e["pods"] for e in json.loads(out)["existing_nodes"]}
    assert placed["ip-10-0-1-5"] == []


def test_workload_not_expanded_when_its_pods_are_given(tmp_path: Path) -> None:
    pod = """
---
apiVersion: v1
kind: Pod
metadata: {name: web-abc, labels: {app: web}}
spec:
  tolerations: [{key: k, operator: Exists}]
  containers: [{name: c, resources: {requests: {cpu: 500m}}}]
"""
    code, out, _ = run(tmp_path, CATALOG, POOLS, WORKLOADS + pod)
    pods = [p for nc in json.loads(out)["nodeclaims"] for p in nc["pods"]]
    assert pods == ["default/web-abc"]


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ("kind: Pod\nmetadata: {name: x}\n", "document 1: apiVersion"),
        ("- just\n- a list\n", "document 1: apiVersion"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: [unclosed\n", "document 1: invalid YAML"),
        ("apiVersion: v1\nkind: Pod\nspec: {}\n", "document 1 (Pod): metadata.name: is required"),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - resources: {requests: {cpu: lots}}\n",
            "document 1 (Pod x): spec.containers[0].resources.requests.cpu: invalid quantity 'lots'",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\napiVersion: karpenter.sh/v1\nkind: NodePool\n"
            "metadata: {name: p}\nspec:\n  template:\n    spec:\n      requirements:\n"
            "      - {key: a, operator: Near, values: [b]}\n",
            "document 2 (NodePool p): spec.template.spec.requirements[0].operator: unknown operator 'Near'",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  tolerations: [{key: k, effect: Sometimes}]\n",
            "document 1 (Pod x): spec.tolerations[0].effect: unknown effect 'Sometimes'",
        ),
        (
            "apiVersion: loadmaster.dev/v1alpha1\nkind: InstanceType\nmetadata: {name: t}\nspec:\n  capacity: {cpu: '1'}\n"
            "  offerings: [{zone: a, capacityType: spot, price: cheap}]\n",
            "document 1 (InstanceType t): spec.offerings[0].price: must be a number",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: 5}\n",
            "spec.containers: must be a list",
        ),
    ],
)
def test_bad_input_exits_2_naming_file_document_and_field(tmp_path: Path, doc: str, expected: str) -> None:
    code, out, err = run(tmp_path, doc)
    assert code == 2 and out == ""
    assert "in0.yaml" in err and expected in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_unreadable_file(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    missing = tmp_path / "nope.yaml"
    assert main([str(missing)], stdout=out, stderr=err) == 2
    assert str(missing) in err.getvalue() and "cannot read" in err.getvalue()


def test_bad_arguments_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--output", "xml", "x.yaml"]) == 2
    assert main([]) == 2


def test_builtin_catalog_used_without_instance_types(tmp_path: Path) -> None:
    pytest.importorskip("packing.catalog")
    code, out, err = run(tmp_path, POOLS.split("---")[0], WORKLOADS)
    assert code == 0, err
    data = json.loads(out)
    assert data["summary"]["scheduled"] >= 3
    code, _, err = run(tmp_path, POOLS.split("---")[0], args=("--region", "xx-nowhere-9"))
    assert code == 2 and "error" in err


def test_module_entry_point_and_subcommands(tmp_path: Path) -> None:
    f = tmp_path / "in.yaml"
    f.write_text(CATALOG + "---\n" + POOLS + "---\n" + WORKLOADS)
    r = subprocess.run(
        [sys.executable, "-m", "packing", "plan", str(f)], cwd=ROOT, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    assert (
        json.loads(r.stdout)["summary"]["new_nodeclaims"] == 1
    )  # nothing else on stdout (e.g. solver banners)
    r2 = subprocess.run(
        [sys.executable, "-m", "packing", "frobnicate"], cwd=ROOT, capture_output=True, text=True
    )
    assert r2.returncode == 2 and "unknown subcommand" in r2.stderr


def test_daemonset_overhead_and_job_expansion(tmp_path: Path) -> None:
    objs = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec: {template: {spec: {}}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: a, resources: {requests: {cpu: 200m, memory: 256Mi}}}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: crunch, namespace: batch}
spec:
  parallelism: 2
  template:
    spec:
      containers: [{name: c, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: c, resources: {requests: {cpu: 100m}}}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: db}
spec: {minAvailable: 1, selector: {matchLabels: {app: db}}}
"""
    code, out, err = run(tmp_path, CATALOG, objs)
    assert code == 0, err
    data = json.loads(out)
    pods = sorted(p for nc in data["nodeclaims"] for p in nc["pods"])
    assert pods == ["batch/crunch-0", "batch/crunch-1", "default/db-0"]
    [nc] = data["nodeclaims"]
    # 2.1 cpu of pods plus the DaemonSet's 200m
    assert nc["requests"]["cpu"] == "2300m" and nc["requests"]["pods"] == "4"
    assert err == ""


def test_catalog_subcommand_is_delegated() -> None:
    pytest.importorskip("packing.catalog.cli")
    r = subprocess.run(
        [sys.executable, "-m", "packing", "catalog", "--help"], cwd=ROOT, capture_output=True, text=True
    )
    assert "not installed" not in r.stderr


def test_affinity_spread_and_ports_parsed_from_yaml(tmp_path: Path) -> None:
    catalog = "\n---\n".join(
        f"""apiVersion: loadmaster.dev/v1alpha1
kind: InstanceType
metadata: {{name: m-{z}}}
spec:
  capacity: {{cpu: "4", memory: 16Gi, pods: "58"}}
  labels: {{kubernetes.io/arch: amd64, kubernetes.io/os: linux}}
  offerings: [{{zone: us-east-1{z}, capacityType: on-demand, price: 0.2}}]"""
        for z in "abc"
    )
    objs = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec: {template: {spec: {}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: spread}
spec:
  replicas: 3
  selector: {matchLabels: {app: spread}}
  template:
    metadata: {labels: {app: spread}}
    spec:
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule,
         labelSelector: {matchLabels: {app: spread}}}
      containers: [{name: c, resources: {requests: {cpu: 100m}}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: anti}
spec:
  replicas: 2
  selector: {matchLabels: {app: anti}}
  template:
    metadata: {labels: {app: anti}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - {topologyKey: kubernetes.io/hostname, labelSelector: {matchExpressions: [{key: app, operator: In, values: [anti]}]}}
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions: [{key: topology.kubernetes.io/zone, operator: NotIn, values: [us-east-1c]}]
      containers: [{name: c, resources: {requests: {cpu: 100m}}, ports: [{containerPort: 80, hostPort: 8080}]}]
"""
    code, out, err = run(tmp_path, catalog, objs)
    assert code == 0, err
    data = json.loads(out)
    zone_of = {p: nc["zone"] for nc in data["nodeclaims"] for p in nc["pods"]}
    node_of = {p: nc["name"] for nc in data["nodeclaims"] for p in nc["pods"]}
    assert sorted(zone_of[f"default/spread-{i}"] for i in range(3)) == [
        "us-east-1a",
        "us-east-1b",
        "us-east-1c",
    ]
    assert node_of["default/anti-0"] != node_of["default/anti-1"]
    assert zone_of["default/anti-0"] != "us-east-1c" and zone_of["default/anti-1"] != "us-east-1c"
    assert not data["unschedulable"]


def test_conflicting_requirement_reason(tmp_path: Path) -> None:
    pool = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]
---
apiVersion: v1
kind: Pod
metadata: {name: armed}
spec:
  nodeSelector: {kubernetes.io/arch: arm64}
  containers: [{name: c}]
"""
    code, out, _ = run(tmp_path, CATALOG, pool)
    assert code == 0
    [u] = json.loads(out)["unschedulable"]
    [r] = u["reasons"]
    assert (r["nodepool"], r["reason"], r["kind"]) == (
        "default",
        "requirement kubernetes.io/arch In [arm64] conflicts with nodepool requirement kubernetes.io/arch In [amd64]",
        "requirement_conflict",
    )
    assert (r["detail"]["key"], r["detail"]["values"], r["detail"]["nodepool_values"]) == (
        "kubernetes.io/arch", ["arm64"], ["amd64"]
    )


def test_replicaset_of_a_given_deployment_is_not_expanded_twice(tmp_path: Path) -> None:
    rs = """
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-5d8f
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: x}]
spec:
  replicas: 3
  selector: {matchLabels: {app: web, pod-template-hash: 5d8f}}
  template:
    metadata: {labels: {app: web, pod-template-hash: 5d8f}}
    spec:
      tolerations: [{key: k, operator: Exists}]
      containers: [{name: c, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
"""
    code, out, _ = run(tmp_path, CATALOG, POOLS, WORKLOADS + rs)
    assert code == 0
    assert json.loads(out)["summary"]["pending_pods"] == 4


# --- the exit contract (issue 14, items 18 and 20): exit 2 is ONE line, input is bounded ------------------------

@pytest.mark.parametrize("argv", [
    ["plan", "--output", "xml", "x.yaml"], ["plan"], ["plan", "--max-input-bytes", "lots", "x.yaml"],
    ["consolidate", "--frobnicate", "x.yaml"], [], ["frobnicate"],
])
def test_usage_errors_are_one_line(argv: list[str]) -> None:
    r = subprocess.run([sys.executable, "-m", "packing", *argv], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("error: "), r.stderr


def test_input_is_capped_in_all_files_together(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text(WORKLOADS)
    size = len(WORKLOADS.encode())
    code, _, err = run(tmp_path, CATALOG, POOLS, args=("--max-input-bytes", str(len(CATALOG) + len(POOLS) + 10),
                                                         str(big)))
    assert code == 2 and err.strip() == (
        f"error: {big}: the input is larger than {len(CATALOG) + len(POOLS) + 10} bytes "
        "(the limit of --max-input-bytes, for all files together)")
    code, out, _ = run(tmp_path, CATALOG, POOLS, args=("--max-input-bytes", str(len(CATALOG) + len(POOLS) + size),
                                                         str(big)))
    assert code == 0 and json.loads(out)["summary"]["pending_pods"] == 4
    assert run(tmp_path, CATALOG, POOLS, WORKLOADS, args=("--max-input-bytes", "0"))[0] == 0  # 0: no limit
    r = subprocess.run([sys.executable, "-m", "packing", "plan", "-", "--max-input-bytes", "100"], cwd=ROOT,
                       input=WORKLOADS, capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr == "error: -: the input is larger than 100 bytes (the limit of " \
                                             "--max-input-bytes, for all files together)\n"


def test_the_default_cap_is_64_mib() -> None:
    from packing.kubeobjects import DEFAULT_MAX_INPUT_BYTES

    assert DEFAULT_MAX_INPUT_BYTES == 64 * 2**20
    assert "default 67108864, 64 MiB" in " ".join(build_help().split())


def build_help() -> str:
    from packing.plan_cli import build_parser

    return build_parser().format_help()


def test_an_error_is_not_preceded_by_the_skipped_notice(tmp_path: Path) -> None:
    # the notice "skipped 2 objects of other kinds" came first: an exit 2 with two lines
    dup = CATALOG + "---\n" + CATALOG.split("---")[0]
    code, _, err = run(tmp_path, dup, WORKLOADS)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "in0.yaml: document 3 (InstanceType c-4x): metadata.name: InstanceType c-4x is defined more than once " \
           "(also " in err and "in0.yaml: document 1 (InstanceType c-4x))" in err


def test_files_may_follow_the_flags(tmp_path: Path) -> None:
    cat = tmp_path / "cat.yaml"
    cat.write_text(CATALOG)
    pools = tmp_path / "pools.yaml"
    pools.write_text(POOLS)
    code, out, _ = run(tmp_path, WORKLOADS, args=("--catalog", str(cat), str(pools)))
    assert code == 0 and json.loads(out)["summary"]["new_nodeclaims"] == 1


def test_integers_as_ascii_digit_strings_still_read(tmp_path: Path) -> None:
    code, out, err = run(tmp_path, CATALOG, POOLS, WORKLOADS.replace("replicas: 3", "replicas: '3'"))
    assert code == 0, err
    assert json.loads(out)["summary"]["pending_pods"] == 4


def test_expansion_is_checked_before_any_pod_is_made(tmp_path: Path) -> None:
    from packing import kubeobjects

    many = "---\n".join(WORKLOADS.split("---")[0].replace("name: web,", f"name: web{i},").replace("replicas: 3", "replicas: 9000")
                        for i in range(12))
    inp = kubeobjects.Inputs()
    kubeobjects.parse_documents(many, "many.yaml", inp)
    with pytest.raises(kubeobjects.InputError, match=r"^many.yaml: document 10 \(Deployment web9\): spec.replicas: "
                                                     r"the workloads without pods of their own would make more than "
                                                     r"100000 pending pods in all \(the maximum\)$"):
        kubeobjects.expand_workloads(inp)
    assert inp.pending == []


def test_a_commitment_document_prices_the_plan(tmp_path: Path) -> None:
    """A Reserved Instance for one c-4x in us-east-1a, given with the pods, makes that node cost nothing more: the
    plan takes it over the cheaper-listed spot offering and says what covers it (issue 19)."""
    cat = tmp_path / "catalog.yaml"
    cat.write_text(CATALOG)
    objs = tmp_path / "cluster.yaml"
    objs.write_text("""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
---
apiVersion: loadmaster.dev/v1alpha1
kind: Commitment
metadata: {name: ri-c4x}
spec: {type: ReservedInstances, instanceType: c-4x, zone: us-east-1a, count: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers:
  - name: c
    resources: {requests: {cpu: "1", memory: 1Gi}}
""")
    out, err = io.StringIO(), io.StringIO()
    assert main([str(objs), "--catalog", str(cat)], stdout=out, stderr=err) == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    (claim,) = doc["nodeclaims"]
    assert (claim["instance_type"], claim["capacity_type"], claim["zone"]) == ("c-4x", "on-demand", "us-east-1a")
    assert claim["covered_by"] == ["ri-c4x"] and claim["effective_price_per_hour"] == 0
    (use,) = doc["summary"]["commitments"]
    assert use["name"] == "ri-c4x" and use["left"] == 0


def test_an_error_naming_an_object_with_a_line_separator_is_one_line(tmp_path: Path) -> None:
    """A name holding U+2028 (or any character str.splitlines breaks at) is written as an escape: the fuzz test
    found such a pod's error printed on two lines."""
    bad = tmp_path / "pods.yaml"
    bad.write_text('apiVersion: v1\nkind: Pod\nmetadata: {name: "a\\u2028b", namespace: default}\n'
                   'spec: {containers: [{name: c, resources: {requests: {cpu: lots}}}]}\n', encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert main([str(bad)], stdout=out, stderr=err) == 2
    assert len(err.getvalue().splitlines()) == 1 and "\\u2028" in err.getvalue()
