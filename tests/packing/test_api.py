"""packing.api: the engine as the console and the loops call it, typed results, the CLIs' documents unchanged."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from packing import api
from packing.disruption import cli as consolidate_cli
from packing.plan_cli import main as plan_main

AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

CATALOG = """
apiVersion: loadmaster.dev/v1alpha1
kind: InstanceType
metadata: {name: m-4x}
spec:
  capacity: {cpu: "4", memory: 16Gi, pods: "58"}
  labels: {kubernetes.io/arch: amd64, kubernetes.io/os: linux}
  offerings:
  - {zone: us-east-1a, capacityType: on-demand, price: 0.192}
---
apiVersion: loadmaster.dev/v1alpha1
kind: InstanceType
metadata: {name: m-2x}
spec:
  capacity: {cpu: "2", memory: 8Gi, pods: "29"}
  labels: {kubernetes.io/arch: amd64, kubernetes.io/os: linux}
  offerings:
  - {zone: us-east-1a, capacityType: on-demand, price: 0.096}
"""

CLUSTER = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 0s, budgets: [{nodes: "100%"}]}
---
apiVersion: v1
kind: Node
metadata:
  name: idle
  creationTimestamp: "2026-11-20T00:00:00Z"
  labels: {karpenter.sh/nodepool: default, karpenter.sh/initialized: "true", karpenter.sh/capacity-type: on-demand,
           node.kubernetes.io/instance-type: m-4x, topology.kubernetes.io/zone: us-east-1a, kubernetes.io/hostname: idle}
spec:
  taints: [{key: dedicated, value: batch, effect: NoSchedule}]
status:
  allocatable: {cpu: "4", memory: 16Gi, pods: "58"}
---
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: shop}
spec:
  containers: [{name: c, resources: {requests: {cpu: "3", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop}
spec:
  containers: [{name: c, resources: {requests: {cpu: "3", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: huge, namespace: shop}
spec:
  containers: [{name: c, resources: {requests: {cpu: "64"}}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
"""


def files(tmp_path: Path) -> tuple[str, str]:
    cluster, catalog = tmp_path / "cluster.yaml", tmp_path / "catalog.yaml"
    cluster.write_text(CLUSTER)
    catalog.write_text(CATALOG)
    return str(cluster), str(catalog)


def cli(main: Any, args: list[str]) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    assert main(args, stdout=out, stderr=err) == 0, err.getvalue()
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


def untimed(doc: dict[str, Any]) -> dict[str, Any]:
    doc = json.loads(json.dumps(doc))
    doc["summary"].pop("solve_seconds")
    return doc


def test_plan_and_consolidate_are_the_clis(tmp_path: Path) -> None:
    cluster, catalog = files(tmp_path)
    inputs, extras = api.read_files([cluster])
    cat_inputs, _ = api.read_files([catalog])
    types = api.resolve_catalog(inputs, cat_inputs, "us-east-1")
    assert [t.name for t in types] == ["m-4x", "m-2x"]
    assert api.skipped_notice(inputs, cat_inputs) == "skipped 1 objects of other kinds (ConfigMap 1)"
    results = api.plan(api.fresh_inputs(inputs), types)
    assert isinstance(results, api.Results) and isinstance(results.nodeclaims[0], api.PlannedNodeClaim)
    assert untimed(api.plan_json(results)) == untimed(cli(plan_main, [cluster, "--catalog", catalog]))
    report = api.consolidate(api.build_cluster(inputs, extras, types), AT)
    assert isinstance(report, api.Report)
    expected = cli(consolidate_cli.main, [cluster, "--catalog", catalog, "--at", AT.isoformat()])
    assert untimed(api.report_json(report)) == untimed(expected)


def test_explanations_are_typed(tmp_path: Path) -> None:
    cluster, catalog = files(tmp_path)
    inputs, extras = api.read_files([cluster, catalog])
    types = api.resolve_catalog(inputs, api.Inputs(), "us-east-1")
    results = api.plan(api.fresh_inputs(inputs), types)
    placed = api.explain_pod(results, "shop/web-0")
    assert not placed.unschedulable and isinstance(placed.placed_on, api.PlannedNodeClaim) and placed.reasons == []
    refused = api.explain_pod(results, "shop/huge")
    assert refused.unschedulable and refused.placed_on is None
    assert [r.nodepool for r in refused.reasons] == ["default"] and "64 cpu" in refused.reasons[0].text
    assert refused.reasons[0].kind is api.ReasonKind.RESOURCES
    unknown = api.explain_pod(results, "shop/nope")
    assert (unknown.unschedulable, unknown.placed_on, unknown.reasons) == (False, None, [])
    report = api.consolidate(api.build_cluster(inputs, extras, types), AT)
    idle = api.explain_node(report, "idle")
    assert idle.order == 1 and idle.action is not None and idle.action.type == "delete" and idle.spared is None
    assert api.action_json(idle.action) == api.report_json(report)["actions"][0]
    assert api.explain_node(report, "nope") == api.NodeExplanation("nope")


def test_launch_lower_bound_covers_only_new_capacity(tmp_path: Path) -> None:
    cluster, catalog = files(tmp_path)
    inputs, _ = api.read_files([cluster, catalog])
    types = api.resolve_catalog(inputs, api.Inputs(), "us-east-1")
    api.expand_workloads(inputs)
    sched = api.Scheduler(inputs.nodepools, types, api.existing_nodes(inputs, types), inputs.running,
                          inputs.daemonsets)
    results = sched.solve(inputs.pending)
    assert api.launch_lower_bound(sched, api.Results()) == 0.0
    bound = api.launch_lower_bound(sched, results)
    assert 0 < bound <= results.cost_per_hour


def test_fresh_inputs_share_objects_not_lists(tmp_path: Path) -> None:
    cluster, _ = files(tmp_path)
    inputs, extras = api.read_files([cluster])
    copy = api.fresh_inputs(inputs)
    copy.pending.append(copy.pending[0])
    assert len(inputs.pending) == 3 and copy.pending[0] is inputs.pending[0]
    extras_copy = api.fresh_extras(extras)
    extras_copy.node_created["other"] = None
    assert "other" not in extras.node_created and extras_copy.node_created["idle"] == extras.node_created["idle"]


def test_parse_texts_reports_the_first_bad_object_before_any_bad_disruption_field() -> None:
    bad_time = "apiVersion: v1\nkind: Node\nmetadata: {name: n, creationTimestamp: soon}\n"
    bad_cpu = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {cpu: lots}}}]}\n"
    with pytest.raises(api.InputError, match=r"^a.yaml: document 1 \(Node n\): metadata.creationTimestamp: invalid"):
        api.parse_texts([("a.yaml", bad_time)])
    # an object the engine cannot read wins over a disruption field of an earlier object of the same file
    with pytest.raises(api.InputError, match=r"^a.yaml: document 2 \(Pod p\): spec.containers\[0\]"):
        api.parse_texts([("a.yaml", bad_time + "---\n" + bad_cpu)])
    # ... and files are read in order: the first file's problem is the one reported
    with pytest.raises(api.InputError, match=r"^a.yaml: document 1 \(Node n\)"):
        api.parse_texts([("a.yaml", bad_time), ("b.yaml", bad_cpu)])


def test_a_list_item_names_its_place() -> None:
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": {"a": None}}, "spec": {}}]})
    with pytest.raises(api.InputError) as err:
        api.parse_texts([("l.json", text)])
    assert str(err.value) == "l.json: document 1 (Pod p): items[0].metadata.annotations.a: must be a string, got NoneType"


def test_add_objects_leaves_out_what_it_cannot_read() -> None:
    good = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ok"}, "spec": {}}
    bad = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad"},
           "spec": {"containers": [{"resources": {"requests": {"cpu": "lots"}}}]}}
    odd = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "creationTimestamp": 7}}
    refused: list[tuple[str, Exception]] = []
    inputs, extras = api.Inputs(), api.Extras()
    api.add_objects([good, bad, odd], inputs, extras, on_refused=lambda o, e: refused.append((o["metadata"]["name"], e)))
    assert [p.key for p in inputs.pending] == ["default/ok"]
    assert inputs.skipped == {"invalid Pod": 1, "invalid Node": 1}
    assert [name for name, _ in refused] == ["bad", "n"] and all(isinstance(e, api.FieldError) for _, e in refused)
    # the Node was read for provisioning; only its disruption fields were bad
    assert [n.name for n in inputs.nodes] == ["n"] and "n" not in extras.node_created
    without = api.Inputs()
    api.add_objects([odd], without)  # no extras asked for: nothing to refuse
    assert without.skipped == {} and [n.name for n in without.nodes] == ["n"]


def test_check_object_names_the_field() -> None:
    api.check_object({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "p"}})
    with pytest.raises(api.FieldError) as err:
        api.check_object({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
                          "spec": {"weight": 500}})
    assert (err.value.path, err.value.message) == ("spec.weight", "must be at most 100, got 500")


def test_catalog_problems_are_typed_errors() -> None:
    with pytest.raises(api.CatalogUnavailable, match="^built-in catalog: unknown region 'xx-nowhere-1'"):
        api.resolve_catalog(api.Inputs(), api.Inputs(), "xx-nowhere-1")
    one, two = api.parse_texts([("a.yaml", CATALOG)])[0], api.parse_texts([("b.yaml", CATALOG)])[0]
    with pytest.raises(api.InputError, match=r"^b.yaml: document 2 .*m-2x is defined more than once \(also a.yaml: document 2"):
        api.resolve_catalog(one, two, "us-east-1")
    unplaced = api.Inputs()
    api.add_objects([{"apiVersion": "loadmaster.dev/v1alpha1", "kind": "InstanceType", "metadata": {"name": "t"},
                      "spec": {"capacity": {"cpu": "1"}}}] * 2, unplaced)
    with pytest.raises(api.InputError, match="^InstanceType t is defined more than once$"):
        api.resolve_catalog(unplaced, api.Inputs(), "us-east-1")
