"""Hypothesis strategies for the CLIs' inputs: valid Kubernetes/Karpenter documents, then mutations of them.

`cluster_texts()` draws a small, valid cluster (a catalog of InstanceTypes, NodePools, Nodes, Pods, workloads,
a DaemonSet, a PDB) as multi-document YAML or JSON, and then, most of the time, damages it: a field's value
replaced by a hostile one (wrong types, unicode digits, huge or negative quantities, NaN, deep nesting), a key
dropped or given twice, an operator misspelt, an explicit YAML tag, an alias (or an alias bomb), a
document cut short. The CLIs must answer each with exit 0, or 2 and one line.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml
from hypothesis import strategies as st

ZONES = ("us-east-1a", "us-east-1b")
ARCH = "kubernetes.io/arch"
NAMES = st.sampled_from(["a", "web", "db", "x-1", "batch"])
QUANTITIES = st.sampled_from(["100m", "1", "2", "500m", "1Gi", "512Mi", "3", "0"])

# values a mutation puts where a field was: each was, or is like, an input that once crashed a CLI
HOSTILE: list[Any] = [
    None, True, False, 0, -1, 1.5, -0.0, "", "x", "²", "٣", "1e30", "-100", "1Pi", "8Ei", "1e400", ".nan",
    float("nan"), float("inf"), float("-inf"), 10**30, -(10**30), 10**400, 2**63, "9" * 400, "1_000",
    " 3 ", "0x10", "Never", "720h", "99999999999999h", "@daily", "0 0 31 2 *", "In", "Gt", "Equal", "Exists",
    "NoSchedule", "DoNotSchedule", "100%", "101%", "-5%", "spot", "on-demand", [], {}, [[]], [{}],
    {"a": 1}, ["a", "b"], "x" * 5000, "\u2028", "\x85", "null", "~", "2026-11-30T05:00:00Z",
]
TAGS = ["!!int", "!!float", "!!bool", "!!timestamp", "!!str", "!!null", "!!binary", "!!set", "!!omap", "!foo",
        "!!python/object:os.system", "!!map", "!!seq"]


def _labels(zone: str, itype: str, pool: str) -> dict[str, str]:
    return {
        "karpenter.sh/nodepool": pool, "karpenter.sh/initialized": "true", "karpenter.sh/capacity-type": "on-demand",
        "node.kubernetes.io/instance-type": itype, "topology.kubernetes.io/zone": zone, ARCH: "amd64",
    }


@st.composite
def instance_type(draw: st.DrawFn, i: int) -> dict[str, Any]:
    cpu = draw(st.sampled_from([2, 4, 8]))
    return {
        "apiVersion": "loadmaster.dev/v1alpha1", "kind": "InstanceType", "metadata": {"name": f"t{i}-{cpu}x"},
        "spec": {
            "capacity": {"cpu": str(cpu), "memory": f"{cpu * 4}Gi", "pods": "58"},
            "overhead": {"cpu": "100m", "memory": "256Mi"},
            "labels": {ARCH: draw(st.sampled_from(["amd64", "arm64"])), "kubernetes.io/os": "linux"},
            "offerings": [
                {"zone": z, "capacityType": ct, "price": round(cpu * draw(st.floats(0.01, 0.05)), 4)}
                for z in ZONES for ct in draw(st.sampled_from([["on-demand"], ["spot", "on-demand"]]))
            ],
        },
    }


@st.composite
def requirement(draw: st.DrawFn) -> dict[str, Any]:
    return draw(st.sampled_from([
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
        {"key": ARCH, "operator": "In", "values": ["amd64"]},
        {"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": ["us-east-1b"]},
        {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["1"]},
        {"key": "example.com/team", "operator": "Exists"},
    ]))


@st.composite
def nodepool(draw: st.DrawFn, name: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "template": {
            "metadata": {"labels": {"team": "web"}} if draw(st.booleans()) else {},
            "spec": {
                "requirements": draw(st.lists(requirement(), max_size=2)),
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                **({"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]} if draw(st.booleans()) else {}),
                "expireAfter": draw(st.sampled_from(["720h", "Never"])),
            },
        },
        "disruption": {
            "consolidationPolicy": draw(st.sampled_from(["WhenEmpty", "WhenEmptyOrUnderutilized"])),
            "consolidateAfter": draw(st.sampled_from(["0s", "1m"])),
            "budgets": [{"nodes": draw(st.sampled_from(["10%", "100%", "1"]))}],
        },
    }
    if draw(st.booleans()):
        spec["limits"] = {"cpu": draw(st.sampled_from(["100", "16"]))}
    if draw(st.booleans()):
        spec["weight"] = draw(st.integers(1, 100))
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec}


@st.composite
def pod_spec(draw: st.DrawFn, app: str) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "resources": {"requests": {"cpu": draw(QUANTITIES), "memory": draw(QUANTITIES)}}}
    if draw(st.booleans()):
        container["ports"] = [{"containerPort": 80, "hostPort": draw(st.sampled_from([8080, 9090]))}]
    spec: dict[str, Any] = {"containers": [container]}
    extras = draw(st.sets(st.sampled_from(["tolerate", "selector", "affinity", "spread", "anti", "init", "numeric",
                                           "gated", "podres"]), max_size=3))
    if "tolerate" in extras:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    if "numeric" in extras:  # issue 16 item 8: Gt/Lt tolerations
        spec.setdefault("tolerations", []).append(
            {"key": "example.com/tier", "operator": draw(st.sampled_from(["Gt", "Lt"])), "value": "5"})
    if "gated" in extras:  # issue 16 item 5
        spec["schedulingGates"] = [{"name": "example.com/quota"}]
    if "podres" in extras:  # issue 16 item 4: pod-level resources
        spec["resources"] = draw(st.sampled_from([{"requests": {"cpu": "1", "memory": "1Gi"}},
                                                  {"limits": {"cpu": "2", "memory": "2Gi"}}]))
    if "selector" in extras:
        spec["nodeSelector"] = {ARCH: "amd64"}
    if "affinity" in extras:
        spec.setdefault("affinity", {})["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": list(ZONES)}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "preference": {"matchExpressions": [{"key": ARCH, "operator": "In", "values": ["arm64"]}]}}],
        }
    if "anti" in extras:
        spec.setdefault("affinity", {})["podAntiAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 50, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                               "labelSelector": {"matchLabels": {"app": app}}}}]}
    if "spread" in extras:
        spec["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "minDomains": 1,
            "whenUnsatisfiable": draw(st.sampled_from(["DoNotSchedule", "ScheduleAnyway"])),
            "labelSelector": {"matchLabels": {"app": app}}}]
    if "init" in extras:
        spec["initContainers"] = [{"name": "i", "resources": {"limits": {"cpu": "1"}}}]
    return spec


@st.composite
def cluster(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A small valid cluster: every document the CLIs read, each kind at most a few times."""
    types = [draw(instance_type(i)) for i in range(draw(st.integers(1, 3)))]
    pools = [draw(nodepool(n)) for n in draw(st.lists(st.sampled_from(["default", "spot", "gpu"]), min_size=1,
                                                        max_size=2, unique=True))]
    docs: list[dict[str, Any]] = [*types, *pools]
    nodes = []
    for i in range(draw(st.integers(0, 2))):
        t = draw(st.sampled_from(types))
        name = f"node-{i}"
        nodes.append(name)
        docs.append({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "creationTimestamp": "2026-11-20T00:00:00Z",
                         "labels": {**_labels(ZONES[i % 2], t["metadata"]["name"], pools[0]["metadata"]["name"]),
                                    "kubernetes.io/hostname": name}},
            "status": {"allocatable": dict(t["spec"]["capacity"])},
        })
    for i in range(draw(st.integers(0, 4))):
        app = draw(NAMES)
        pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
                               "metadata": {"name": f"{app}-{i}", "namespace": "default", "labels": {"app": app}},
                               "spec": draw(pod_spec(app))}
        if nodes and draw(st.booleans()):
            pod["spec"]["nodeName"] = draw(st.sampled_from(nodes))
            pod["metadata"]["creationTimestamp"] = "2026-11-20T00:00:00Z"
        elif draw(st.booleans()):  # issue 16 item 5: the scheduler's verdict decides whether it is provisioned for
            pod["status"] = {"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False",
                 "reason": draw(st.sampled_from(["Unschedulable", "SchedulerError"]))}]}
        docs.append(pod)
    for i in range(draw(st.integers(0, 2))):
        app = f"wl{i}"
        kind, api = draw(st.sampled_from([("Deployment", "apps/v1"), ("StatefulSet", "apps/v1"),
                                          ("ReplicaSet", "apps/v1"), ("Job", "batch/v1"),
                                          ("ReplicationController", "v1")]))
        count_key = "parallelism" if kind == "Job" else "replicas"
        selector = {"app": app} if kind == "ReplicationController" else {"matchLabels": {"app": app}}
        docs.append({"apiVersion": api, "kind": kind, "metadata": {"name": app, "namespace": "default"},
                     "spec": {count_key: draw(st.integers(0, 4)), "selector": selector,
                              "template": {"metadata": {"labels": {"app": app}}, "spec": draw(pod_spec(app))}}})
    if draw(st.booleans()):
        docs.append({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "kube-system"},
                     "spec": {"template": {"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}]}}}})
    if draw(st.booleans()):
        docs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "pdb", "namespace": "default"},
                     "spec": {draw(st.sampled_from(["minAvailable", "maxUnavailable"])): draw(st.sampled_from([1, "50%"])),
                              "selector": {"matchLabels": {"app": draw(NAMES)}}}})
    return docs


# ---------------------------------------------------------------- mutations
def _slots(node: Any, out: list[tuple[Any, Any]]) -> None:
    """Every (container, key-or-index) of a document tree, containers before their contents."""
    if isinstance(node, dict):
        for k in node:
            out.append((node, k))
            _slots(node[k], out)
    elif isinstance(node, list):
        for i in range(len(node)):
            out.append((node, i))
            _slots(node[i], out)


@st.composite
def mutated_tree(draw: st.DrawFn, docs: list[dict[str, Any]]) -> list[Any]:
    docs = copy.deepcopy(docs)
    for _ in range(draw(st.integers(1, 3))):
        slots: list[tuple[Any, Any]] = []
        _slots(docs, slots)
        if not slots:
            break
        parent, key = slots[draw(st.integers(0, len(slots) - 1))]
        action = draw(st.sampled_from(["replace", "replace", "replace", "delete", "wrap", "deep", "copy"]))
        if action == "replace":
            parent[key] = copy.deepcopy(draw(st.sampled_from(HOSTILE)))
        elif action == "delete":
            del parent[key]
        elif action == "wrap":
            parent[key] = [parent[key]] if draw(st.booleans()) else {"x": parent[key]}
        elif action == "deep":
            value: Any = "x"
            for _ in range(draw(st.sampled_from([5, 50, 99, 150]))):
                value = [value]
            parent[key] = value
        else:  # the same subtree twice: a list grows, a second object of one name appears
            if isinstance(parent, list):
                parent.append(copy.deepcopy(parent[key]))
            else:
                docs.append(copy.deepcopy(docs[draw(st.integers(0, len(docs) - 1))]))
    return docs


def _dump(docs: list[Any], as_json: bool) -> str:
    if as_json:
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    return yaml.safe_dump_all(docs, sort_keys=False)


@st.composite
def mutated_text(draw: st.DrawFn, text: str) -> str:
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 2))):
        i = draw(st.integers(0, max(0, len(lines) - 1)))
        line = lines[i]
        action = draw(st.sampled_from(["tag", "tag", "dupkey", "alias", "bomb", "deep", "cut", "junk"]))
        if action == "tag" and ": " in line:
            key, _, value = line.partition(": ")
            lines[i] = f"{key}: {draw(st.sampled_from(TAGS))} {value}"
        elif action == "dupkey" and ": " in line:
            lines.insert(i + 1, line)
        elif action == "alias" and ": " in line and not line.startswith((" ", "-")):
            key, _, value = line.partition(": ")
            lines[i] = f"{key}: &a {value}"
            lines.insert(i + 1, "x-copy: *a")
        elif action == "bomb":
            levels = draw(st.integers(1, 7))
            bomb = ["x-b0: &b0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
            bomb += [f"x-b{n}: &b{n} [{', '.join([f'*b{n - 1}'] * 9)}]" for n in range(1, levels)]
            target = draw(st.sampled_from(["spec", "metadata", "x-use"]))
            lines = [*bomb, f"{target}: *b{levels - 1}", *lines]
        elif action == "cut":
            lines = lines[: i + 1]
            lines[-1] = lines[-1][: len(lines[-1]) // 2]
        elif action == "deep":
            depth = draw(st.sampled_from([99, 101, 990, 5000]))
            lines.insert(i, "x-deep: " + "[" * depth + "]" * depth)
        elif action == "junk":
            lines.insert(i, draw(st.sampled_from(["\t- x", "{", "]", "? [a]\n: b", "%YAML 1.1", "&a", "*nowhere",
                                                  "- !!python/name:os.system", "\x00"])))
    return "\n".join(lines)


@st.composite
def cluster_texts(draw: st.DrawFn) -> str:
    """A cluster as YAML or JSON text; a valid one a fifth of the time, damaged otherwise."""
    docs = draw(cluster())
    how = draw(st.sampled_from(["valid", "tree", "tree", "text", "text"]))
    as_json = draw(st.booleans()) if how != "text" else False
    if how == "tree":
        docs = draw(mutated_tree(docs))
    text = _dump(docs, as_json)
    return draw(mutated_text(text)) if how == "text" else text
