"""`python -m packing consolidate`: the JSON shape, the text output, the clock, and bad input (exit 2)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from packing.disruption.cli import main

ROOT = Path(__file__).resolve().parents[2]

CATALOG = """
apiVersion: loadmaster.dev/v1alpha1
kind: InstanceType
metadata: {name: m-4x}
spec:
  capacity: {cpu: "4", memory: 16Gi, pods: "58"}
  labels: {kubernetes.io/arch: amd64, kubernetes.io/os: linux, karpenter.k8s.aws/instance-family: m}
  offerings:
  - {zone: us-east-1a, capacityType: on-demand, price: 0.192}
  - {zone: us-east-1a, capacityType: spot, price: 0.08}
---
apiVersion: loadmaster.dev/v1alpha1
kind: InstanceType
metadata: {name: m-2x}
spec:
  capacity: {cpu: "2", memory: 8Gi, pods: "29"}
  labels: {kubernetes.io/arch: amd64, kubernetes.io/os: linux, karpenter.k8s.aws/instance-family: m}
  offerings:
  - {zone: us-east-1a, capacityType: on-demand, price: 0.096}
  - {zone: us-east-1a, capacityType: spot, price: 0.04}
"""

POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      expireAfter: 720h
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m
    budgets:
    - nodes: "100%"
"""


def node_doc(name: str, created: str = "2026-11-20T00:00:00Z", itype: str = "m-4x", extra: str = "") -> str:
    return f"""
apiVersion: v1
kind: Node
metadata:
  name: {name}
  creationTimestamp: "{created}"
  labels:
    karpenter.sh/nodepool: default
    karpenter.sh/initialized: "true"
    karpenter.sh/capacity-type: on-demand
    node.kubernetes.io/instance-type: {itype}
    topology.kubernetes.io/zone: us-east-1a
    kubernetes.io/hostname: {name}
{extra}
status:
  allocatable: {{cpu: "4", memory: 16Gi, pods: "58"}}
"""


def pod_doc(name: str, node: str, cpu: str = "1", annotations: str = "") -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  creationTimestamp: "2026-11-20T00:00:00Z"
  labels: {{app: web}}
{annotations}
spec:
  nodeName: {node}
  containers:
  - name: c
    resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}
"""


def cluster_files(tmp_path: Path, *docs: str) -> list[str]:
    cat = tmp_path / "catalog.yaml"
    cat.write_text(CATALOG)
    objs = tmp_path / "cluster.yaml"
    objs.write_text("---".join([POOL, *docs]))
    return [str(objs), "--catalog", str(cat)]


def run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(args, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_json_shape(tmp_path: Path) -> None:
    files = cluster_files(
        tmp_path,
        node_doc("n1"), node_doc("n2"), node_doc("n3"), node_doc("n4", extra="  annotations: {karpenter.sh/do-not-disrupt: \"true\"}"),
        pod_doc("web-1", "n1", "3"), pod_doc("web-2", "n2", "500m"), pod_doc("web-4", "n4", "500m"),
    )
    code, out, err = run([*files, "--at", "2026-11-30T12:00:00Z"])
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc) == {"actions", "not_disrupted", "summary"}
    assert set(doc["summary"]) == {"nodes", "cost_per_hour_before", "cost_per_hour_after", "solve_seconds"}
    assert doc["summary"]["nodes"] == 4
    assert doc["summary"]["cost_per_hour_before"] == pytest.approx(0.768)
    first = doc["actions"][0]
    assert set(first) == {
        "type", "reason", "nodes", "replacements", "savings_per_hour", "moves", "why", "score", "score_threshold"
    }
    assert (first["score"], first["score_threshold"]) == (None, None)  # not a Balanced pool
    assert (first["type"], first["reason"], first["nodes"]) == ("delete", "empty", ["n3"])
    kinds = [(a["type"], a["reason"]) for a in doc["actions"]]
    assert ("delete", "underutilized") in kinds
    under = next(a for a in doc["actions"] if a["reason"] == "underutilized")
    # both pods fit on the do-not-disrupt node's free room, so both their nodes go in one multi-node action
    assert (sorted(under["nodes"]), under["moves"]) == (["n1", "n2"], {"default/web-1": "n4", "default/web-2": "n4"})
    n4 = next(n for n in doc["not_disrupted"] if n["node"] == "n4")
    assert set(n4) == {
        "node", "reason", "blocked_by", "savings_per_hour", "category", "cheapest_replacement", "score",
        "score_threshold",
    }
    assert (n4["category"], n4["cheapest_replacement"]) == ("do-not-disrupt", None)
    assert (n4["reason"], n4["blocked_by"]) == ("node n4 has do-not-disrupt", "do-not-disrupt")
    assert doc["summary"]["cost_per_hour_after"] < doc["summary"]["cost_per_hour_before"]


def test_replacement_is_plan_shaped(tmp_path: Path) -> None:
    files = cluster_files(tmp_path, node_doc("n1"), pod_doc("web-1", "n1", "500m"))
    code, out, _ = run([*files, "--at", "2026-11-30T12:00:00Z"])
    assert code == 0
    a = json.loads(out)["actions"][0]
    assert (a["type"], a["reason"]) == ("replace", "underutilized")
    claim = a["replacements"][0]
    assert claim["instance_type"] == "m-2x" and claim["capacity_type"] == "on-demand"
    assert set(claim) >= {
        "name", "nodepool", "instance_type", "instance_type_options", "capacity_type", "zone", "price_per_hour",
        "labels", "taints", "pods", "requests", "allocatable",
    }
    assert a["moves"] == {"default/web-1": claim["name"]}
    assert a["savings_per_hour"] == pytest.approx(0.096)


def test_clock_controls_consolidate_after_and_expiry(tmp_path: Path) -> None:
    files = cluster_files(tmp_path, node_doc("n1", created="2026-11-30T11:59:30Z"), node_doc("n2", created="2026-01-01T00:00:00Z"), pod_doc("web-2", "n2", "3"))
    code, out, _ = run([*files, "--at", "2026-11-30T12:00:00Z"])
    doc = json.loads(out)
    assert [(a["reason"], a["nodes"]) for a in doc["actions"]] == [("expired", ["n2"])]
    assert any("consolidateAfter 1m has not passed" in n["reason"] for n in doc["not_disrupted"] if n["node"] == "n1")
    code, out, _ = run([*files, "--at", "2026-11-30T12:05:00Z"])
    assert [a["reason"] for a in json.loads(out)["actions"]][0] == "empty"


def test_text_output(tmp_path: Path) -> None:
    files = cluster_files(tmp_path, node_doc("n1"), node_doc("n2"), pod_doc("web-1", "n1", "3"))
    code, out, _ = run([*files, "--at", "2026-11-30T12:00:00Z", "--output", "text"])
    assert code == 0
    assert "1. delete (empty) n2" in out
    assert "Not disrupted:" in out and "Cost: $0.3840/h" in out


def test_min_savings_flag(tmp_path: Path) -> None:
    files = cluster_files(tmp_path, node_doc("n1"), pod_doc("web-1", "n1", "500m"))
    _, out, _ = run([*files, "--at", "2026-11-30T12:00:00Z", "--min-savings", "0.5"])
    doc = json.loads(out)
    assert doc["actions"] == []
    assert "below --min-savings" in doc["not_disrupted"][0]["reason"]
    _, out, _ = run([*files, "--at", "2026-11-30T12:00:00Z", "--min-savings", "40%"])
    assert json.loads(out)["actions"]


@pytest.mark.parametrize(
    ("doc", "needle"),
    [
        ("apiVersion: v1\nkind: Node\nmetadata: {name: x, creationTimestamp: yesterday}\n", "document 2 (Node x): metadata.creationTimestamp: invalid timestamp"),
        ("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\nspec: {disruption: {consolidateAfter: 5 minutes}}\n", "document 2 (NodePool p): spec.disruption.consolidateAfter: invalid duration"),
        ("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\nspec: {disruption: {consolidationPolicy: Always}}\n", "spec.disruption.consolidationPolicy: must be one of"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {cpu: lots}}}]}\n", "document 2 (Pod p): spec.containers[0].resources.requests.cpu"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {priority: high, containers: []}\n", "spec.priority: must be an integer"),
        ("kind: [unclosed\n", "invalid YAML"),
    ],
)
def test_bad_input_exits_2_naming_file_document_and_field(tmp_path: Path, doc: str, needle: str) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(POOL + "---\n" + doc)
    code, out, err = run([str(f), "--catalog", str(cluster_files(tmp_path)[2])])
    assert code == 2
    assert out == ""
    assert str(f) in err and needle in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("args", [["--at", "tomorrow"], ["--min-savings", "cheap"], ["--output", "yaml"]])
def test_bad_flags_exit_2(tmp_path: Path, args: list[str]) -> None:
    files = cluster_files(tmp_path, node_doc("n1"))
    code, _, err = run([*files, *args])
    assert code == 2


def test_missing_file_exits_2(tmp_path: Path) -> None:
    code, _, err = run([str(tmp_path / "nope.yaml")])
    assert code == 2 and "cannot read file" in err


def test_module_entry_point(tmp_path: Path) -> None:
    files = cluster_files(tmp_path, node_doc("n1"))
    p = subprocess.run(
        [sys.executable, "-m", "packing", "consolidate", *files, "--at", "2026-11-30T12:00:00Z"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["actions"][0]["nodes"] == ["n1"]


def test_reads_kubectl_lists_with_status_annotations_and_pdb_status(tmp_path: Path) -> None:
    dump = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "creationTimestamp": "2026-11-20T00:00:00Z",
                             "labels": {"karpenter.sh/nodepool": "default", "karpenter.sh/initialized": "true",
                                        "karpenter.sh/capacity-type": "on-demand",
                                        "node.kubernetes.io/instance-type": "m-4x",
                                        "topology.kubernetes.io/zone": "us-east-1a"},
                             **({"deletionTimestamp": "2026-11-30T11:00:00Z"} if name == "dying" else {})},
                "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "58"},
                           "conditions": [{"type": "Ready", "status": "False" if name == "sick" else "True"}]},
            }
            for name in ("n1", "n2", "sick", "dying")
        ]
        + [
            {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"web-{i}", "labels": {"app": "web"}, "creationTimestamp": "2026-11-20T00:00:00Z"},
             "spec": {"nodeName": n, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
            for i, n in enumerate(("n1", "n2"))
        ]
        + [
            {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
             "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}},
             "status": {"disruptionsAllowed": 0}},
        ],
    }
    pool = POOL.replace('- nodes: "100%"', '- nodes: "3"')
    f = tmp_path / "dump.json"
    f.write_text(json.dumps(dump))
    p = tmp_path / "pool.yaml"
    p.write_text(pool)
    cat = tmp_path / "catalog.yaml"
    cat.write_text(CATALOG)
    code, out, err = run([str(f), str(p), "--catalog", str(cat), "--at", "2026-11-30T12:00:00Z"])
    assert code == 0, err
    doc = json.loads(out)
    why = {n["node"]: n["reason"] for n in doc["not_disrupted"]}
    assert why["n1"] == "pdb default/web blocks eviction of default/web-0"  # the cluster says 0 allowed
    assert why["dying"] == "already being disrupted"
    # "sick" is NotReady and "dying" is being deleted: two of the three nodes the budget allows are in use, and
    # the empty NotReady node is the one emptiness takes (it was already counted, so it is counted once)
    assert [(a["reason"], a["nodes"]) for a in doc["actions"]] == [("empty", ["sick"])]


def test_blocked_moves_carry_their_kind_and_saving(tmp_path: Path) -> None:
    pdb = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: web}}
"""
    files = cluster_files(
        tmp_path, pdb, node_doc("n1"), node_doc("n2"), pod_doc("web-1", "n1", "1"), pod_doc("web-2", "n2", "1")
    )
    code, out, err = run([*files, "--at", "2026-11-30T12:00:00Z"])
    assert code == 0, err
    doc = json.loads(out)
    assert doc["actions"] == []
    for n in doc["not_disrupted"]:
        assert n["blocked_by"] == "pdb" and n["reason"].startswith("pdb default/web blocks eviction")
        # either node's pod fits on the other: lifting the PDB would delete the node, saving its whole price
        assert n["savings_per_hour"] == pytest.approx(0.192)
    code, text, _ = run([*files, "--at", "2026-11-30T12:00:00Z", "--output", "text"])
    assert code == 0 and "blocked by pdb; would save $0.1920/h" in text


def test_termination_grace_period_is_read_from_the_nodepool(tmp_path: Path) -> None:
    # n2 is past expireAfter with a pod marked do-not-disrupt: spared, unless the pool sets terminationGracePeriod.
    dnd = '  annotations: {karpenter.sh/do-not-disrupt: "true"}'
    docs = (node_doc("n2", created="2026-01-01T00:00:00Z"), pod_doc("web-2", "n2", "3", annotations=dnd))
    files = cluster_files(tmp_path, *docs)
    _, out, _ = run([*files, "--at", "2026-11-30T12:00:00Z"])
    assert "expired" not in [a["reason"] for a in json.loads(out)["actions"]]
    objs = tmp_path / "cluster.yaml"
    objs.write_text(objs.read_text().replace("expireAfter: 720h", "expireAfter: 720h\n      terminationGracePeriod: 1h", 1))
    _, out, _ = run([*files, "--at", "2026-11-30T12:00:00Z"])
    assert [(a["reason"], a["nodes"]) for a in json.loads(out)["actions"]][:1] == [("expired", ["n2"])]
    objs.write_text(objs.read_text().replace("terminationGracePeriod: 1h", "terminationGracePeriod: soon", 1))
    code, _, err = run([*files, "--at", "2026-11-30T12:00:00Z"])
    assert code == 2 and "spec.template.spec.terminationGracePeriod" in err
