"""Inputs Kubernetes accepts (issue 16 items 4, 5 and 8): pod-level resources, which pods are provisioned for
(scheduling gates, PodScheduled reasons), Gt/Lt tolerations, ReplicationControllers, duplicate objects, and
the bad input of each new field (exit 2, one line naming file, document and field)."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from packing.kubeobjects import Inputs, expand_workloads, parse_documents
from packing.plan_cli import main
from packing.resources import Resources
from packing.taints import Taint, Toleration, first_untolerated, taint_number

CATALOG = """
apiVersion: loadmaster.dev/v1alpha1
kind: InstanceType
metadata: {name: c-4x}
spec:
  capacity: {cpu: "4", memory: 8Gi, pods: "58"}
  labels: {kubernetes.io/arch: amd64, kubernetes.io/os: linux}
  offerings: [{zone: us-east-1a, capacityType: on-demand, price: 0.17}]
---
apiVersion: loadmaster.dev/v1alpha1
kind: InstanceType
metadata: {name: c-16x}
spec:
  capacity: {cpu: "16", memory: 32Gi, pods: "58"}
  labels: {kubernetes.io/arch: amd64, kubernetes.io/os: linux}
  offerings: [{zone: us-east-1a, capacityType: on-demand, price: 0.68}]
"""


def pool(taints: list[dict[str, str]] | None = None) -> str:
    spec: dict[str, Any] = {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"}}
    if taints:
        spec["taints"] = taints
    return yaml.safe_dump(
        {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
         "spec": {"template": {"spec": spec}}}
    )  # fmt: skip


def pod(name: str, *, cpu: str | None = "1", spec: dict[str, Any] | None = None,
        status: dict[str, Any] | None = None, namespace: str = "default") -> dict[str, Any]:  # fmt: skip
    container: dict[str, Any] = {"name": "c"}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu}}
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {"containers": [container], **(spec or {})},
    }
    if status is not None:
        doc["status"] = status
    return doc


def run(tmp_path: Path, *docs: dict[str, Any], taints: list[dict[str, str]] | None = None,
        output: str = "json", extra: str = "") -> tuple[int, str, str]:  # fmt: skip
    f = tmp_path / "in.yaml"
    f.write_text(CATALOG + "---\n" + pool(taints) + "---\n" + yaml.safe_dump_all(docs) + extra)
    out, err = io.StringIO(), io.StringIO()
    code = main([str(f), "--output", output], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def plan(tmp_path: Path, *docs: dict[str, Any], **kw: Any) -> dict[str, Any]:
    code, out, err = run(tmp_path, *docs, **kw)
    assert code == 0, err
    return dict(json.loads(out))


def bad(tmp_path: Path, *docs: dict[str, Any], **kw: Any) -> str:
    code, out, err = run(tmp_path, *docs, **kw)
    assert code == 2, out
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def claim_requests(data: dict[str, Any]) -> dict[str, str]:
    (c,) = data["nodeclaims"]
    return dict(c["requests"])


# ---------------------------------------------------------------- item 4: pod-level resources
def test_pod_level_requests_replace_the_container_sum(tmp_path: Path) -> None:
    p = pod("p", cpu="500m", spec={"resources": {"requests": {"cpu": "6", "memory": "1Gi"}}})
    data = plan(tmp_path, p)
    assert claim_requests(data) == {"cpu": "6", "memory": "1Gi", "pods": "1"}
    assert data["nodeclaims"][0]["instance_type"] == "c-16x"  # 6 cpu do not fit the 4-cpu type


def test_pod_level_limits_only_request_the_limits(tmp_path: Path) -> None:
    p = pod("p", cpu=None, spec={"resources": {"limits": {"cpu": "2", "memory": "3Gi"}}})
    assert claim_requests(plan(tmp_path, p)) == {"cpu": "2", "memory": "3Gi", "pods": "1"}


def test_pod_level_limit_defaults_to_the_containers_request_of_that_resource(tmp_path: Path) -> None:
    # the API server's defaulting: cpu is requested by a container (500m), memory by none (the limit)
    p = pod("p", cpu="500m", spec={"resources": {"limits": {"cpu": "2", "memory": "3Gi"}}})
    assert claim_requests(plan(tmp_path, p)) == {"cpu": "500m", "memory": "3Gi", "pods": "1"}


def test_pod_level_resources_keep_overhead_and_other_container_resources() -> None:
    p = pod("p", cpu="3", spec={"resources": {"requests": {"cpu": "1"}}, "overhead": {"cpu": "250m"}})
    p["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "1Gi"
    inp = Inputs()
    parse_documents(yaml.safe_dump(p), "f.yaml", inp)
    assert inp.pending[0].requests == Resources.parse({"cpu": "1250m", "ephemeral-storage": "1Gi", "pods": "1"})


@pytest.mark.parametrize(
    ("resources", "field", "says"),
    [
        ({"requests": {"nvidia.com/gpu": "1"}}, "spec.resources.requests.nvidia.com/gpu", "only cpu, memory"),
        ({"requests": {"cpu": "lots"}}, "spec.resources.requests.cpu", "lots"),
        ({"requests": {"cpu": "3"}, "limits": {"cpu": "2"}}, "spec.resources.requests.cpu", "limit 2"),
        ({"limits": ["cpu"]}, "spec.resources.limits", "must be an object"),
        ("big", "spec.resources", "must be an object"),
    ],
)
def test_bad_pod_level_resources(tmp_path: Path, resources: Any, field: str, says: str) -> None:
    err = bad(tmp_path, pod("p", spec={"resources": resources}))
    assert f"in.yaml: document 4 (Pod p): {field}: " in err and says in err, err


# ---------------------------------------------------------------- item 5: which pods are provisioned for
def test_gated_pods_are_listed_as_ignored_not_provisioned_for(tmp_path: Path) -> None:
    gated = pod("gated", spec={"schedulingGates": [{"name": "example.com/foo"}]})
    two = pod("two", namespace="b", spec={"schedulingGates": [{"name": "a.io/x"}, {"name": "a.io/y"}]})
    data = plan(tmp_path, gated, two, pod("p"))
    assert data["ignored"] == [
        {"pod": "b/two", "why": "scheduling gates a.io/x, a.io/y"},
        {"pod": "default/gated", "why": "scheduling gate example.com/foo"},
    ]
    assert data["summary"]["ignored"] == 2 and data["summary"]["pending_pods"] == 1
    assert [c["pods"] for c in data["nodeclaims"]] == [["default/p"]]


def test_daemonset_and_static_pods_and_terminating_pods_are_not_provisioned_for(tmp_path: Path) -> None:
    ds_pod = pod("agent-x")
    ds_pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u"}]
    static = pod("etcd-n1")
    static["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "n"}]
    leaving = pod("leaving")
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    data = plan(tmp_path, ds_pod, static, leaving, pod("p"))
    assert data["ignored"] == [
        {"pod": "default/agent-x", "why": "owned by DaemonSet agent"},
        {"pod": "default/etcd-n1", "why": "owned by Node n1"},
        {"pod": "default/leaving", "why": "terminating (metadata.deletionTimestamp is set)"},
    ]
    assert [c["pods"] for c in data["nodeclaims"]] == [["default/p"]]


def test_terminating_running_pods_count_in_no_spread_domain() -> None:
    from tests.engine_builders import ZONE, bound_pod, catalog, existing_node, on_demand_pool, spread
    from tests.engine_builders import pod as engine_pod
    from tests.engine_builders import solve as engine_solve

    zone = (spread(ZONE, app="w"),)
    nodes = [existing_node("n1", zone="us-east-1a", cpu="1", memory="1Gi")]
    old = [bound_pod(f"old-{i}", "n1", "10m", "16Mi", labels={"app": "w"}) for i in range(3)]
    new = [engine_pod(f"p{i}", "1", "1Gi", labels={"app": "w"}, spread=zone) for i in range(3)]
    kw = {"cat": catalog(), "existing_nodes": nodes}
    _, r = engine_solve(new, [on_demand_pool()], running_pods=old, **kw)
    assert not r.unschedulable and "us-east-1a" not in {c.zone for c in r.nodeclaims}
    for p in old:
        p.terminating = True
    _, r = engine_solve(new, [on_demand_pool()], running_pods=old, **kw)
    assert sorted(c.zone for c in r.nodeclaims for _ in c.pods) == ["us-east-1a", "us-east-1b", "us-east-1c"]


def test_match_label_keys_narrow_the_spread_to_the_pods_own_value() -> None:
    from packing.podspec import parse_pod_spec

    spread = {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "w"}},
              "matchLabelKeys": ["pod-template-hash", "absent"]}  # fmt: skip
    meta = {"labels": {"app": "w", "pod-template-hash": "abc"}}
    p = parse_pod_spec(meta, {"containers": [], "topologySpreadConstraints": [spread]}, "", name="p", namespace="d")
    (sc,) = p.spread
    assert sc.selector.matches({"app": "w", "pod-template-hash": "abc"})
    assert not sc.selector.matches({"app": "w", "pod-template-hash": "def"})
    assert not sc.selector.matches({"app": "w"})


def test_bad_match_label_keys_exit_2(tmp_path: Path) -> None:
    spread = {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "p"}},
              "matchLabelKeys": "pod-template-hash"}  # fmt: skip
    err = bad(tmp_path, pod("p", spec={"topologySpreadConstraints": [spread]}))
    assert "spec.topologySpreadConstraints[0].matchLabelKeys: " in err, err


@pytest.mark.parametrize(("policy", "honor"), [(None, True), ("Honor", True), ("Ignore", False)])
def test_node_affinity_policy_is_read(policy: str | None, honor: bool) -> None:
    from packing.podspec import parse_pod_spec

    spread: dict[str, Any] = {"maxSkew": 1, "topologyKey": "zone", "labelSelector": {"matchLabels": {"a": "b"}}}
    if policy:
        spread["nodeAffinityPolicy"] = policy
    p = parse_pod_spec({}, {"containers": [], "topologySpreadConstraints": [spread]}, "", name="p", namespace="d")
    assert p.spread[0].honor_node_affinity is honor


def test_honor_leaves_out_the_domains_of_nodes_the_pod_cannot_use() -> None:
    from tests.engine_builders import ZONE, catalog, existing_node, on_demand_pool, spread
    from tests.engine_builders import pod as engine_pod
    from tests.engine_builders import solve as engine_solve

    # a node in a zone no pool offers, whose labels the pods' nodeSelector refuses: it is no domain under Honor
    odd = existing_node("n1", zone="us-east-1z", cpu="100m", memory="128Mi", labels={"disk": "hdd"})
    sc = spread(ZONE, app="w")
    pods = [engine_pod(f"p{i}", "1", "1Gi", labels={"app": "w"}, spread=(sc,), node_selector={"disk": "ssd"})
            for i in range(6)]  # fmt: skip
    pool = on_demand_pool(labels={"disk": "ssd"})
    _, r = engine_solve(pods, [pool], cat=catalog(), existing_nodes=[odd])
    assert not r.unschedulable
    ignore = [engine_pod(p.name, "1", "1Gi", labels={"app": "w"}, node_selector={"disk": "ssd"},
                         spread=(dataclasses.replace(sc, honor_node_affinity=False),)) for p in pods]  # fmt: skip
    _, r = engine_solve(ignore, [pool], cat=catalog(), existing_nodes=[odd])
    assert len(r.unschedulable) == 3  # the empty zone us-east-1z caps every other zone at one pod


def test_only_gated_pods_launch_nothing(tmp_path: Path) -> None:
    data = plan(tmp_path, pod("gated", spec={"schedulingGates": [{"name": "example.com/foo"}]}))
    assert data["nodeclaims"] == [] and data["summary"]["pending_pods"] == 0


@pytest.mark.parametrize(
    ("conditions", "ignored"),
    [
        ([{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}], None),
        ([{"type": "Ready", "status": "False"}], None),  # no PodScheduled condition: today's rule
        ([], None),
        ([{"type": "PodScheduled", "status": "False", "reason": "SchedulerError"}], "reason SchedulerError"),
        ([{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}], "reason SchedulingGated"),
        ([{"type": "PodScheduled", "status": "True"}], "status True"),
    ],
)
def test_pod_scheduled_reason_decides(tmp_path: Path, conditions: list[Any], ignored: str | None) -> None:
    data = plan(tmp_path, pod("p", status={"phase": "Pending", "conditions": conditions}))
    if ignored is None:
        assert data["ignored"] == [] and data["summary"]["scheduled"] == 1
    else:
        assert [i["pod"] for i in data["ignored"]] == ["default/p"] and ignored in data["ignored"][0]["why"]
        assert data["nodeclaims"] == [] and data["summary"]["ignored"] == 1


def test_plans_without_ignored_pods_say_nothing_new_in_text(tmp_path: Path) -> None:
    code, out, _ = run(tmp_path, pod("p"), output="text")
    assert code == 0 and "ignored" not in out.lower()


def test_text_output_lists_ignored_pods(tmp_path: Path) -> None:
    code, out, err = run(tmp_path, pod("g", spec={"schedulingGates": [{"name": "example.com/foo"}]}), pod("p"),
                         output="text")  # fmt: skip
    assert code == 0, err
    assert "Not provisioned for (ignored):\n  default/g: scheduling gate example.com/foo\n" in out
    assert "1 pending, 1 scheduled, 0 unschedulable, 1 ignored;" in out


def deployment(gates: list[dict[str, str]] | None = None, replicas: int = 2) -> dict[str, Any]:
    tspec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    if gates is not None:
        tspec["schedulingGates"] = gates
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": tspec},
        },
    }


def test_a_gated_template_makes_ignored_pods(tmp_path: Path) -> None:
    data = plan(tmp_path, deployment([{"name": "example.com/foo"}]))
    assert [i["pod"] for i in data["ignored"]] == ["default/web-0", "default/web-1"]
    assert data["nodeclaims"] == [] and data["summary"]["pending_pods"] == 0


def test_a_workload_whose_pods_are_gated_is_not_expanded(tmp_path: Path) -> None:
    gated = pod("web-abc", spec={"schedulingGates": [{"name": "example.com/foo"}]})
    gated["metadata"]["labels"] = {"app": "web"}
    data = plan(tmp_path, deployment(), gated)
    assert [i["pod"] for i in data["ignored"]] == ["default/web-abc"]
    assert data["nodeclaims"] == [] and data["summary"]["pending_pods"] == 0


def test_running_and_finished_pods_keep_their_rules(tmp_path: Path) -> None:
    inp = Inputs()
    docs = [
        pod("done", status={"phase": "Succeeded", "conditions": [{"type": "PodScheduled", "status": "True"}]}),
        pod("run", spec={"nodeName": "n1"}, status={"phase": "Running",
                                                    "conditions": [{"type": "PodScheduled", "status": "True"}]}),
    ]  # fmt: skip
    parse_documents(yaml.safe_dump_all(docs), "f.yaml", inp)
    assert [p.key for p in inp.running] == ["default/run"] and not inp.pending and not inp.ignored


@pytest.mark.parametrize(
    ("spec", "status", "field", "says"),
    [
        ({"schedulingGates": {"name": "x"}}, None, "spec.schedulingGates", "must be a list"),
        ({"schedulingGates": [{}]}, None, "spec.schedulingGates[0].name", "is required"),
        ({"schedulingGates": [{"name": ""}]}, None, "spec.schedulingGates[0].name", "must not be empty"),
        ({"schedulingGates": ["x"]}, None, "spec.schedulingGates[0]", "must be an object"),
        ({}, {"conditions": {"type": "PodScheduled"}}, "status.conditions", "must be a list"),
        ({}, {"conditions": [{"type": "PodScheduled", "reason": []}]}, "status.conditions[0].reason", "string"),
    ],
)
def test_bad_gates_and_conditions(tmp_path: Path, spec: Any, status: Any, field: str, says: str) -> None:
    err = bad(tmp_path, pod("p", spec=spec, status=status))
    assert f"in.yaml: document 4 (Pod p): {field}: " in err and says in err, err


def test_bad_template_gates_name_the_template_field(tmp_path: Path) -> None:
    err = bad(tmp_path, deployment([{"name": 3.5}, {"nom": "x"}]))
    assert "(Deployment web): spec.template.spec.schedulingGates[1].name: is required" in err, err


# ---------------------------------------------------------------- item 8: Gt / Lt tolerations
@pytest.mark.parametrize(
    ("op", "tol", "taint", "tolerates"),
    [
        ("Gt", "3", "5", True),
        ("Gt", "5", "5", False),
        ("Gt", "7", "5", False),
        ("Lt", "9", "5", True),
        ("Lt", "5", "5", False),
        ("Lt", "2", "5", False),
        ("Gt", "3", "high", False),  # a taint value that is no integer is tolerated by no Gt/Lt
        ("Lt", "9", "05", False),
        ("Lt", "9", "", False),
        ("Gt", "9", "18446744073709551616", False),  # beyond int64
        ("Gt", "99999999999999999", "100000000000000000", True),  # compared as integers, not floats
    ],
)
def test_gt_lt_compare_integers(op: str, tol: str, taint: str, tolerates: bool) -> None:
    assert Toleration("tier", op, tol, "NoSchedule").tolerates(Taint("tier", taint, "NoSchedule")) is tolerates
    assert not Toleration("other", op, tol).tolerates(Taint("tier", taint, "NoSchedule"))


def test_gt_lt_honour_the_effect() -> None:
    assert not Toleration("tier", "Gt", "1", "NoExecute").tolerates(Taint("tier", "5", "NoSchedule"))
    assert Toleration("tier", "Gt", "1").tolerates(Taint("tier", "5", "NoExecute"))
    assert first_untolerated([Taint("tier", "5")], [Toleration("tier", "Lt", "6")]) is None


def test_taint_number() -> None:
    assert [taint_number(v) for v in ("1", "100", "0", "-1", "+1", "01", "1.5", "١", "9" * 19)] == [
        1, 100, None, None, None, None, None, None, None,
    ]  # fmt: skip
    assert taint_number(str(2**63 - 1)) == 2**63 - 1


def test_gt_toleration_places_on_the_tainted_pool(tmp_path: Path) -> None:
    taints = [{"key": "example.com/tier", "value": "5", "effect": "NoSchedule"}]
    ok = pod("ok", spec={"tolerations": [{"key": "example.com/tier", "operator": "Gt", "value": "3"}]})
    low = pod("low", spec={"tolerations": [{"key": "example.com/tier", "operator": "Lt", "value": "5"}]})
    data = plan(tmp_path, ok, low, taints=taints)
    assert [c["pods"] for c in data["nodeclaims"]] == [["default/ok"]]
    (u,) = data["unschedulable"]
    assert u["pod"] == "default/low" and "example.com/tier" in u["reasons"][0]["reason"]


@pytest.mark.parametrize(
    ("tol", "field", "says"),
    [
        ({"key": "k", "operator": "Gt", "value": "0"}, "value", "positive integer"),
        ({"key": "k", "operator": "Lt", "value": "007"}, "value", "leading zeros"),
        ({"key": "k", "operator": "Gt", "value": "high"}, "value", "high"),
        ({"key": "k", "operator": "Gt"}, "value", "positive integer"),
        ({"key": "k", "operator": "Gt", "value": "-3"}, "value", "positive integer"),
        ({"operator": "Lt", "value": "3"}, "key", "is required with operator Lt"),
        ({"key": "k", "operator": "Gte", "value": "3"}, "operator", "Equal, Exists, Gt, Lt"),
    ],
)
def test_bad_gt_lt_tolerations(tmp_path: Path, tol: dict[str, str], field: str, says: str) -> None:
    err = bad(tmp_path, pod("p", spec={"tolerations": [{"effect": "NoSchedule"}, tol]}))
    assert f"in.yaml: document 4 (Pod p): spec.tolerations[1].{field}: " in err and says in err, err


# ---------------------------------------------------------------- item 8: ReplicationControllers
def rc(selector: dict[str, str] | None, replicas: int = 3) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "template": {
            "metadata": {"labels": {"app": "legacy"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]},
        },
    }
    if selector is not None:
        spec["selector"] = selector
    return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "legacy"}, "spec": spec}


@pytest.mark.parametrize("selector", [{"app": "legacy"}, None])
def test_replication_controller_expands_like_a_replicaset(tmp_path: Path, selector: dict[str, str] | None) -> None:
    data = plan(tmp_path, rc(selector))
    assert data["summary"]["pending_pods"] == 3
    assert sorted(p for c in data["nodeclaims"] for p in c["pods"]) == [f"default/legacy-{i}" for i in range(3)]


def test_replication_controller_with_its_pods_is_not_expanded() -> None:
    inp = Inputs()
    mine = pod("legacy-x7k2p")
    mine["metadata"]["labels"] = {"app": "legacy"}
    parse_documents(yaml.safe_dump_all([rc({"app": "legacy"}), mine]), "f.yaml", inp)
    expand_workloads(inp)
    assert [p.key for p in inp.pending] == ["default/legacy-x7k2p"]
    assert inp.pending[0].requests == Resources.parse({"cpu": "1", "pods": "1"})


def test_bad_replication_controller_selector(tmp_path: Path) -> None:
    err = bad(tmp_path, rc({"matchLabels": {"app": "legacy"}}))  # type: ignore[dict-item]
    assert "(ReplicationController legacy): spec.selector.matchLabels: must be a string" in err, err


# ---------------------------------------------------------------- item 8: duplicate objects
def test_two_objects_of_one_kind_namespace_and_name_are_refused_naming_both(tmp_path: Path) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(CATALOG + "---\n" + pool() + "---\n" + yaml.safe_dump(pod("dup")))
    second.write_text(yaml.safe_dump_all([pod("other"), pod("dup", cpu="2")]))
    out, err = io.StringIO(), io.StringIO()
    assert main([str(first), str(second)], stdout=out, stderr=err) == 2
    assert err.getvalue() == (
        f"error: {second}: document 2 (Pod dup): metadata.name: Pod default/dup is defined more than once "
        f"(also {first}: document 4 (Pod dup))\n"
    )


def test_duplicates_in_a_list_and_of_cluster_scoped_kinds(tmp_path: Path) -> None:
    items = {"apiVersion": "v1", "kind": "List", "items": [pod("a"), pod("a")]}
    err = bad(tmp_path, items)
    assert "document 4 (Pod a): items[1].metadata.name: Pod default/a is defined more than once" in err, err
    assert "(also " in err and "document 4 (Pod a): items[0])" in err, err
    err = bad(tmp_path, extra="---\n" + pool())
    assert "(NodePool default): metadata.name: NodePool default is defined more than once" in err, err


def test_same_name_in_other_namespaces_or_kinds_is_fine(tmp_path: Path) -> None:
    same = pod("web", namespace="b")
    d = deployment()
    d["metadata"]["name"] = "web"
    data = plan(tmp_path, pod("web"), same, d)
    assert data["summary"]["pending_pods"] == 2


def test_live_objects_are_not_checked_for_duplicates() -> None:
    from packing.api import add_objects

    inp = Inputs()
    add_objects([pod("p"), pod("p")], inp)
    assert len(inp.pending) == 2 and not inp.skipped
