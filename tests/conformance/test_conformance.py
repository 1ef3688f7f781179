"""Karpenter conformance: data-driven cases run through `python -m packing plan --output json`.

Each YAML file in this folder (except `fixtures.yaml`) holds cases ported from one upstream Karpenter test
file or topic. The engine is driven only through the CLI entry point (`packing.plan_cli.main`), because the
JSON it prints is the stable contract. A file looks like:

    upstream: pkg/controllers/provisioning/scheduling/suite_test.go   # default for its cases
    cases:
    - name: short-unique-id
      upstream: "Custom Constraints > NodePool with Labels > should ..."  # Describe/Context/It path (required)
      file: pkg/controllers/.../topology_test.go    # only when it differs from the file's `upstream`
      xfail: "issue 16 item N: what Loadmaster does instead"   # strict: XPASS fails the suite;
                                                    # "not in issue 16: ..." for a gap the issue lacks
      differs: "<row of README's Differences from Karpenter table>"  # Loadmaster's behaviour is asserted
      ...inputs...
      expect: {...}

Inputs (all optional; they are written to files in tmp_path and passed to the CLI):

    catalog: fake            # fixture name or list of names from fixtures.yaml `catalogs` (default: fake)
    instance_types: [...]    # instead of / besides `catalog`: {name, cpu, memory, pods, arch, os, labels,
                             #  resources: {..}, overhead: {..}, price, spot_price, zones: [..],
                             #  offerings: [[zone, capacityType, price], ...]}
    pools: [default]         # fixture names (fixtures.yaml `pools`) or inline {name, weight, limits, labels,
                             #  requirements, taints, startupTaints}; default: [default]
    pods: [...]              # {name ("ns/name" or "name"), count (name-0..), labels, cpu, memory, requests,
                             #  limits, nodeSelector, affinity, tolerations, topologySpreadConstraints,
                             #  nodeName, hostPorts: [8080 | {hostPort, protocol, hostIP}], spec: {...}}
    nodes: [...]             # existing Nodes: {name, labels, cpu, memory, pods, taints, initialized (true),
                             #  nodepool, zone, instance_type, capacity_type}
    daemonsets: [...]        # {name, cpu, memory, requests, nodeSelector, affinity, tolerations, hostPorts, spec}
    objects: |               # raw Kubernetes YAML documents, used as they are
    args: [...]              # extra CLI arguments

Expectations (`expect`); pod patterns are `ns/name` or `name` (namespace default), fnmatch globs allowed:

    exit: 2                          # exit status (default 0); with `stderr: "substring"`
    summary: {scheduled: 3, ...}     # equal to the given keys of the JSON summary
    scheduled: [a, b-*]              # each pattern matches >= 1 placed pod and no unschedulable one
    all_scheduled: true              # nothing unschedulable (false: at least one pod is)
    unschedulable: [c] | {c: "substring" | [substrings]}   # reasons of any pool, joined, contain each
    nodeclaims: {count: 1, min: 1, max: 3, <node predicates applied to every new claim>}
    placed: {pod: <node predicates>} # the node each matching pod landed on (new claim or existing node)
    same_node: [[a, b]]              # all matching pods on one node
    different_nodes: [[a, b, c]]     # pairwise on different nodes
    same_zone / different_zones: [[...]]
    spread: [{pods: web-*, by: zone|hostname|capacity_type|instance_type|<label key>,
              counts: [2, 2, 1],     # placed pods per domain, sorted descending (domains with pods only)
              plus: {test-zone-1: 2},    # pods already running there, added before comparing
              domains: [a, b, c], max_skew: 1}]   # max - min over the domains with pods and `domains`
    existing: {node-name: [pods]}    # exactly these pending pods land on that existing node / NodeClaim
    ignored: {pod: "why substring"}  # listed under the plan's `ignored` key (not provisioned for)
    cost_max: 0.5                    # summary.cost_per_hour <= value

Node predicates: instance_type, instance_type_in, zone, zone_in, capacity_type, nodepool, existing (bool:
an existing Node or in-flight NodeClaim), node (its name), labels ({k: v}; v null = absent), has_labels
(keys present), options_include / options_exclude / options_within / options_match (a glob every option
matches) / options_min (at least that many instance_type_options), price, fields ({json key: value} of the
nodeclaim), taints_include, taints_exclude_key, requests ({resource: quantity}, equal), requests_max.

Other top-level keys of a YAML file (e.g. `anchors:`) only hold YAML anchors for its cases. `note:` explains a case.
"""

from __future__ import annotations

import fnmatch
import io
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from packing.plan_cli import main

HERE = Path(__file__).resolve().parent
FIXTURES: dict[str, Any] = yaml.safe_load((HERE / "fixtures.yaml").read_text())
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
BY_KEY = {
    "zone": ZONE,
    "hostname": HOSTNAME,
    "capacity_type": "karpenter.sh/capacity-type",
    "instance_type": "node.kubernetes.io/instance-type",
    "arch": "kubernetes.io/arch",
}
CASE_KEYS = {
    "name", "upstream", "file", "xfail", "differs", "note", "catalog", "instance_types", "pools", "pods",
    "nodes", "daemonsets", "objects", "args", "expect",
}  # fmt: skip
EXPECT_KEYS = {
    "exit", "stderr", "summary", "scheduled", "all_scheduled", "unschedulable", "nodeclaims", "placed",
    "same_node", "different_nodes", "same_zone", "different_zones", "spread", "existing", "cost_max", "ignored",
}  # fmt: skip


@dataclass(frozen=True)
class Case:
    file: str
    upstream_file: str
    data: Mapping[str, Any]

    @property
    def id(self) -> str:
        return f"{Path(self.file).stem}::{self.data['name']}"


def load_cases() -> Iterator[Case]:
    for path in sorted(HERE.glob("*.yaml")):
        if path.name == "fixtures.yaml":
            continue
        doc = yaml.safe_load(path.read_text())
        for c in doc["cases"]:
            yield Case(path.name, c.get("file", doc["upstream"]), c)


CASES = list(load_cases())


def params() -> Iterator[Any]:
    for c in CASES:
        marks = []
        if c.data.get("xfail"):
            marks.append(pytest.mark.xfail(strict=True, reason=c.data["xfail"]))
        yield pytest.param(c, id=c.id, marks=marks)


# ---------------------------------------------------------------- building input documents
def _qty_map(spec: Mapping[str, Any], *keys: str) -> dict[str, str]:
    out = {k: str(spec[k]) for k in keys if spec.get(k) is not None}
    return out


def _pod_docs(p: Mapping[str, Any]) -> list[dict[str, Any]]:
    full = str(p["name"])
    ns, _, name = full.rpartition("/")
    ns = ns or "default"
    requests = {**_qty_map(p, "cpu", "memory"), **{k: str(v) for k, v in (p.get("requests") or {}).items()}}
    container: dict[str, Any] = {"name": "c", "image": "registry.k8s.io/pause"}
    res: dict[str, Any] = {}
    if requests:
        res["requests"] = requests
    if p.get("limits"):
        res["limits"] = {k: str(v) for k, v in p["limits"].items()}
    if res:
        container["resources"] = res
    if p.get("hostPorts"):
        container["ports"] = [
            {"containerPort": hp, "hostPort": hp}
            if isinstance(hp, int)
            else {"containerPort": hp["hostPort"], **hp}
            for hp in p["hostPorts"]
        ]
    spec: dict[str, Any] = {"containers": [container]}
    for k in ("nodeSelector", "affinity", "tolerations", "topologySpreadConstraints", "nodeName"):
        if p.get(k) is not None:
            spec[k] = p[k]
    spec.update(p.get("spec") or {})
    names = [name] if p.get("count") is None else [f"{name}-{i}" for i in range(int(p["count"]))]
    docs = []
    for n in names:
        meta: dict[str, Any] = {"name": n, "namespace": ns}
        if p.get("labels"):
            meta["labels"] = dict(p["labels"])
        doc: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        if p.get("nodeName"):
            doc["status"] = {"phase": "Running"}
        docs.append(doc)
    return docs


def _daemonset_doc(d: Mapping[str, Any]) -> dict[str, Any]:
    full = str(d["name"])
    ns, _, name = full.rpartition("/")
    pod = _pod_docs({**d, "name": name, "labels": d.get("labels") or {"ds": name}})[0]
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": ns or "kube-system"},
        "spec": {
            "selector": {"matchLabels": pod["metadata"]["labels"]},
            "template": {"metadata": {"labels": pod["metadata"]["labels"]}, "spec": pod["spec"]},
        },
    }


def _node_doc(n: Mapping[str, Any]) -> dict[str, Any]:
    labels = {HOSTNAME: n["name"], "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}
    for short, key in (
        ("nodepool", "karpenter.sh/nodepool"),
        ("zone", ZONE),
        ("instance_type", "node.kubernetes.io/instance-type"),
        ("capacity_type", "karpenter.sh/capacity-type"),
    ):
        if n.get(short):
            labels[key] = str(n[short])
    if n.get("nodepool") and n.get("initialized", True):
        labels["karpenter.sh/initialized"] = "true"
        labels["karpenter.sh/registered"] = "true"
    labels.update({k: str(v) for k, v in (n.get("labels") or {}).items()})
    alloc = {
        "cpu": str(n.get("cpu", "4")),
        "memory": str(n.get("memory", "4Gi")),
        "pods": str(n.get("pods", 110)),
    }
    alloc.update({k: str(v) for k, v in (n.get("resources") or {}).items()})
    spec: dict[str, Any] = {"providerID": f"fake:///{n['name']}"}
    if n.get("taints"):
        spec["taints"] = n["taints"]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": n["name"], "labels": labels},
        "spec": spec,
        "status": {"allocatable": alloc, "capacity": alloc},
    }


def _pool_doc(p: Mapping[str, Any]) -> dict[str, Any]:
    tspec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
    }
    for k in ("requirements", "taints", "startupTaints"):
        if p.get(k) is not None:
            tspec[k] = p[k]
    tmpl: dict[str, Any] = {"spec": tspec}
    if p.get("labels"):
        tmpl["metadata"] = {"labels": p["labels"]}
    spec: dict[str, Any] = {"template": tmpl}
    if p.get("weight") is not None:
        spec["weight"] = p["weight"]
    if p.get("limits") is not None:
        spec["limits"] = {k: str(v) for k, v in p["limits"].items()}
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": p["name"]},
        "spec": spec,
    }


def _instance_type_doc(t: Mapping[str, Any]) -> dict[str, Any]:
    cap = {"cpu": str(t.get("cpu", 4)), "memory": str(t.get("memory", "4Gi")), "pods": str(t.get("pods", 5))}
    cap.update({k: str(v) for k, v in (t.get("resources") or {}).items()})
    labels = {"kubernetes.io/arch": t.get("arch", "amd64"), "kubernetes.io/os": t.get("os", "linux")}
    labels.update({k: str(v) for k, v in (t.get("labels") or {}).items()})
    if t.get("offerings"):
        offerings = [
            {"zone": z, "capacityType": ct, "price": price, "available": bool(rest[0]) if rest else True}
            for z, ct, price, *rest in t["offerings"]
        ]
    else:
        price = float(t.get("price", 0.1))
        spot = float(t.get("spot_price", round(price * 0.4, 6)))
        zones = t.get("zones", ["test-zone-1", "test-zone-2", "test-zone-3"])
        offerings = [{"zone": z, "capacityType": "on-demand", "price": price} for z in zones]
        offerings += [{"zone": z, "capacityType": "spot", "price": spot} for z in t.get("spot_zones", zones)]
    overhead = t.get("overhead", {"cpu": "100m", "memory": "10Mi"})
    return {
        "apiVersion": "loadmaster.dev/v1alpha1",
        "kind": "InstanceType",
        "metadata": {"name": t["name"]},
        "spec": {"capacity": cap, "overhead": overhead, "labels": labels, "offerings": offerings},
    }


def _as_list(v: Any) -> list[Any]:
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def build_documents(case: Mapping[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """(generated documents, raw YAML of `objects`)."""
    docs: list[dict[str, Any]] = []
    types = list(case.get("instance_types") or [])
    cats = _as_list(case.get("catalog", None if types else "fake"))
    for c in cats:
        types.extend(FIXTURES["catalogs"][c])
    docs.extend(_instance_type_doc(t) for t in types)
    pools = case.get("pools", ["default"])
    for p in _as_list(pools):
        docs.append(_pool_doc(FIXTURES["pools"][p] if isinstance(p, str) else p))
    for n in case.get("nodes") or []:
        docs.append(_node_doc(n))
    for d in case.get("daemonsets") or []:
        docs.append(_daemonset_doc(d))
    for p in case.get("pods") or []:
        docs.extend(_pod_docs(p))
    return docs, str(case.get("objects") or "")


# ---------------------------------------------------------------- reading the result
@dataclass
class NodeView:
    name: str
    existing: bool
    labels: dict[str, str]
    nodepool: str | None
    instance_type: str | None
    zone: str | None
    capacity_type: str | None
    options: list[str]
    taints: list[dict[str, Any]]
    requests: dict[str, str]
    price: float = 0.0
    raw: Mapping[str, Any] | None = None


def _input_node_labels(docs: list[dict[str, Any]], raw: str) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    all_docs = list(docs) + [d for d in yaml.safe_load_all(raw) if isinstance(d, dict)]
    for d in all_docs:
        if d.get("kind") == "Node":
            out[d["metadata"]["name"]] = dict(d["metadata"].get("labels") or {})
        elif d.get("kind") == "NodeClaim":
            labels = dict(d["metadata"].get("labels") or {})
            for r in (d.get("spec") or {}).get("requirements") or []:
                if r.get("operator") == "In" and len(r.get("values") or []) == 1:
                    labels.setdefault(r["key"], r["values"][0])
            out[d["metadata"]["name"]] = labels
    return out


class Result:
    def __init__(self, data: Mapping[str, Any], node_labels: Mapping[str, Mapping[str, str]]) -> None:
        self.data = data
        self.nodes: dict[str, NodeView] = {}
        self.where: dict[str, str] = {}
        for c in data["nodeclaims"]:
            self.nodes[c["name"]] = NodeView(
                c["name"], False, dict(c["labels"]), c["nodepool"], c["instance_type"], c["zone"],
                c["capacity_type"], list(c["instance_type_options"]), list(c["taints"]), dict(c["requests"]),
                c["price_per_hour"], c,
            )  # fmt: skip
            for p in c["pods"]:
                self.where[p] = c["name"]
        for e in data["existing_nodes"]:
            labels = dict(node_labels.get(e["name"], {}))
            self.nodes[e["name"]] = NodeView(
                e["name"], True, labels, labels.get("karpenter.sh/nodepool"),
                labels.get("node.kubernetes.io/instance-type"), labels.get(ZONE),
                labels.get("karpenter.sh/capacity-type"), [], [], {},
            )  # fmt: skip
            for p in e["pods"]:
                self.where[p] = e["name"]
        self.reasons = {
            u["pod"]: "; ".join(f"{r['nodepool']}: {r['reason']}" for r in u["reasons"])
            for u in data["unschedulable"]
        }

    def known(self) -> list[str]:
        return sorted({*self.where, *self.reasons})

    def match(self, pattern: str, *, required: bool = True) -> list[str]:
        pat = pattern if "/" in pattern else f"default/{pattern}"
        found = [p for p in self.known() if fnmatch.fnmatchcase(p, pat)]
        if required:
            assert found, f"no pod matches {pattern!r} (pods in the plan: {self.known()})"
        return found

    def node_of(self, pod: str) -> NodeView:
        assert pod in self.where, f"{pod} is not placed: {self.reasons.get(pod, 'not in the plan')}"
        return self.nodes[self.where[pod]]

    def label(self, node: NodeView, by: str) -> str | None:
        key = BY_KEY.get(by, by)
        if key == HOSTNAME:
            return node.name
        if key == ZONE and node.zone:
            return node.zone
        return node.labels.get(key)


_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9, "m": 1e-3}


def qty(v: Any) -> float:
    s = str(v)
    m = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", s)
    assert m, f"bad quantity {s!r}"
    return float(m.group(1)) * _UNITS.get(m.group(2), 1)


def check_node(node: NodeView, pred: Mapping[str, Any], what: str) -> None:
    for k, v in pred.items():
        if k in ("count", "min", "max"):
            continue
        ctx = f"{what} ({node.name}: {node.instance_type} {node.zone} {node.capacity_type} pool {node.nodepool})"
        if k == "instance_type":
            assert node.instance_type == v, ctx
        elif k == "instance_type_in":
            assert node.instance_type in v, ctx
        elif k == "zone":
            assert node.zone == v, ctx
        elif k == "zone_in":
            assert node.zone in v, ctx
        elif k == "capacity_type":
            assert node.capacity_type == v, ctx
        elif k == "nodepool":
            assert node.nodepool == v, ctx
        elif k == "existing":
            assert node.existing == v, ctx
        elif k == "node":
            assert node.name == v, ctx
        elif k == "labels":
            for lk, lv in v.items():
                got = node.labels.get(lk)
                assert got == (None if lv is None else str(lv)), f"{ctx}: label {lk}={got!r}, want {lv!r}"
        elif k == "options_include":
            missing = set(v) - set(node.options)
            assert not missing, f"{ctx}: options {node.options} lack {sorted(missing)}"
        elif k == "options_exclude":
            extra = set(v) & set(node.options)
            assert not extra, f"{ctx}: options {node.options} include {sorted(extra)}"
        elif k == "options_within":
            extra = set(node.options) - set(v)
            assert not extra, f"{ctx}: options {node.options} outside {v}"
        elif k == "taints_include":
            for t in v:
                want = {"key": t["key"], "value": t.get("value", ""), "effect": t["effect"]}
                have = [
                    {"key": x["key"], "value": x.get("value", ""), "effect": x["effect"]} for x in node.taints
                ]
                assert want in have, f"{ctx}: taints {have} lack {want}"
        elif k == "options_match":
            bad = [o for o in node.options if not fnmatch.fnmatchcase(o, v)]
            assert not bad, f"{ctx}: options {bad} do not match {v!r}"
        elif k == "options_min":
            assert len(node.options) >= v, f"{ctx}: {len(node.options)} options {node.options}, want >= {v}"
        elif k == "price":
            assert abs(node.price - float(v)) < 1e-9, f"{ctx}: price {node.price}, want {v}"
        elif k == "has_labels":
            absent = [lk for lk in v if lk not in node.labels]
            assert not absent, f"{ctx}: labels {sorted(node.labels)} lack {absent}"
        elif k == "fields":
            for fk, fv in v.items():
                got = (node.raw or {}).get(fk)
                assert got == fv, f"{ctx}: nodeclaim field {fk} = {got!r}, want {fv!r}"
        elif k == "taints_exclude_key":
            assert all(x["key"] != v for x in node.taints), f"{ctx}: taints {node.taints} include key {v}"
        elif k == "requests":
            for r, q in v.items():
                assert r in node.requests and qty(node.requests[r]) == qty(q), (
                    f"{ctx}: requests {node.requests}"
                )
        elif k == "requests_max":
            for r, q in v.items():
                assert qty(node.requests.get(r, 0)) <= qty(q), f"{ctx}: requests {node.requests}"
        else:
            raise AssertionError(f"unknown node predicate {k!r}")


def check(expect: Mapping[str, Any], code: int, out: str, err: str, res_labels: Any) -> None:
    unknown = set(expect) - EXPECT_KEYS
    assert not unknown, f"unknown expectation keys {sorted(unknown)}"
    assert code == expect.get("exit", 0), f"exit {code}: {err.strip()}"
    if "stderr" in expect:
        assert expect["stderr"] in err, err
    if code != 0:
        return
    r = Result(json.loads(out), res_labels)
    summary = r.data["summary"]
    for k, v in (expect.get("summary") or {}).items():
        assert summary.get(k, "<absent>") == v, (
            f"summary.{k} = {summary.get(k, '<absent>')}, want {v} (unschedulable: {r.reasons})"
        )
    for pat in expect.get("scheduled") or []:
        for p in r.match(pat):
            assert p in r.where, f"{p} unschedulable: {r.reasons.get(p)}"
    if "all_scheduled" in expect:
        assert (not r.reasons) == expect["all_scheduled"], f"unschedulable: {r.reasons}"
    uns = expect.get("unschedulable")
    if uns:
        items = uns.items() if isinstance(uns, Mapping) else ((p, None) for p in uns)
        for pat, subs in items:
            for p in r.match(pat):
                assert p in r.reasons, f"{p} was placed on {r.where.get(p)}, want unschedulable"
                for s in _as_list(subs):
                    assert s in r.reasons[p], f"{p}: reason {r.reasons[p]!r} lacks {s!r}"
    if "nodeclaims" in expect:
        nc = expect["nodeclaims"]
        claims = [n for n in r.nodes.values() if not n.existing]
        desc = [
            (n.instance_type, n.zone, n.capacity_type, sorted(p for p, w in r.where.items() if w == n.name))
            for n in claims
        ]
        if "count" in nc:
            assert len(claims) == nc["count"], f"{len(claims)} nodeclaims, want {nc['count']}: {desc}"
        if "min" in nc:
            assert len(claims) >= nc["min"], f"{len(claims)} nodeclaims, want >= {nc['min']}: {desc}"
        if "max" in nc:
            assert len(claims) <= nc["max"], f"{len(claims)} nodeclaims, want <= {nc['max']}: {desc}"
        for n in claims:
            check_node(n, nc, "nodeclaim")
    for pat, pred in (expect.get("placed") or {}).items():
        for p in r.match(pat):
            check_node(r.node_of(p), pred, p)
    for group in expect.get("same_node") or []:
        pods = [p for g in group for p in r.match(g)]
        nodes = {r.node_of(p).name for p in pods}
        assert len(nodes) == 1, f"{pods} on {nodes}, want one node"
    for group in expect.get("different_nodes") or []:
        pods = [p for g in group for p in r.match(g)]
        node_list = [r.node_of(p).name for p in pods]
        assert len(set(node_list)) == len(node_list), f"{list(zip(pods, node_list, strict=True))} share nodes"
    for group in expect.get("same_zone") or []:
        pods = [p for g in group for p in r.match(g)]
        zones = {r.label(r.node_of(p), "zone") for p in pods}
        assert len(zones) == 1, f"{pods} in zones {zones}"
    for group in expect.get("different_zones") or []:
        pods = [p for g in group for p in r.match(g)]
        zone_list = [r.label(r.node_of(p), "zone") for p in pods]
        assert len(set(zone_list)) == len(zone_list), f"{list(zip(pods, zone_list, strict=True))} share zones"
    for s in expect.get("spread") or []:
        counts: dict[str | None, int] = {}
        pods = [p for pat in _as_list(s["pods"]) for p in r.match(pat)]
        for p in pods:
            if p not in r.where:
                continue  # unschedulable pods are asserted with `summary` / `unschedulable`
            d = r.label(r.node_of(p), s["by"])
            counts[d] = counts.get(d, 0) + 1
        for d, n in (s.get("plus") or {}).items():
            counts[d] = counts.get(d, 0) + n
        for d in s.get("domains") or []:
            counts.setdefault(d, 0)
        got = sorted(counts.values(), reverse=True)
        if "counts" in s:
            assert got == list(s["counts"]), f"pods per {s['by']}: {counts}, want counts {s['counts']}"
        if "max_skew" in s:
            assert got[0] - got[-1] <= s["max_skew"], (
                f"pods per {s['by']}: {counts}, skew above {s['max_skew']}"
            )
    for node, pats in (expect.get("existing") or {}).items():
        want = sorted({p for pat in pats for p in r.match(pat)})
        on_node = sorted(p for p, w in r.where.items() if w == node)
        assert on_node == want, f"pods on {node}: {on_node}, want {want}"
    if "ignored" in expect:
        got_ignored = {i["pod"]: i.get("why", "") for i in r.data.get("ignored", [])}
        for pat, why in expect["ignored"].items():
            pod = pat if "/" in pat else f"default/{pat}"
            assert pod in got_ignored, (
                f"{pod} not ignored (ignored: {got_ignored}, placed on {r.where.get(pod)})"
            )
            assert str(why) in got_ignored[pod], f"{pod}: why {got_ignored[pod]!r} lacks {why!r}"
    if "cost_max" in expect:
        assert summary["cost_per_hour"] <= expect["cost_max"] + 1e-9, f"cost {summary['cost_per_hour']}"


@pytest.mark.parametrize("case", list(params()))
def test_case(case: Case, tmp_path: Path) -> None:
    data = case.data
    unknown = set(data) - CASE_KEYS
    assert not unknown, f"unknown case keys {sorted(unknown)}"
    assert data.get("upstream"), "every case names the upstream test it mirrors"
    docs, raw = build_documents(data)
    files = []
    if docs:
        f = tmp_path / "generated.yaml"
        f.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        files.append(str(f))
    if raw.strip():
        f = tmp_path / "objects.yaml"
        f.write_text(raw)
        files.append(str(f))
    out, err = io.StringIO(), io.StringIO()
    code = main([*files, *map(str, data.get("args") or []), "--output", "json"], stdout=out, stderr=err)
    check(data.get("expect") or {}, code, out.getvalue(), err.getvalue(), _input_node_labels(docs, raw))


def readme_differences() -> set[str]:
    """The `where` column of README's "Differences from Karpenter" table."""
    text = (HERE.parents[1] / "README.md").read_text()
    section = text.split("## Differences from Karpenter", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| ")]
    return set(rows[1:])  # the header row is not a difference


def test_cases_are_well_formed() -> None:
    rows = readme_differences()
    names = [c.id for c in CASES]
    assert len(names) == len(set(names)), "case names are unique within a file"
    for c in CASES:
        assert c.data.get("expect"), f"{c.id} asserts something"
        assert c.upstream_file.startswith("pkg/"), c.id
        if c.data.get("xfail"):
            assert str(c.data["xfail"]).startswith(("issue 16 item ", "not in issue 16: ")), c.id
        if c.data.get("differs"):
            assert c.data["differs"] in rows, f"{c.id}: differs names no row of README's table {sorted(rows)}"
