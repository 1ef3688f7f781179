"""CapacityBuffer in the engine: reading (the CRD's rules, exit 2 naming file, document, field), resolution into
virtual pods (Cluster Autoscaler's counting), plans that launch their room, consolidation that keeps it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packing.buffers import CapacityBuffer, ScalableRef, is_virtual, resolve_buffers
from packing.disruption.cli import main as consolidate_main
from packing.kubeobjects import Inputs, Workload, parse_documents
from packing.plan_cli import main as plan_main
from packing.planning import plan
from tests.disruption.test_cli import CATALOG, POOL, node_doc, pod_doc
from tests.engine_builders import catalog, pod, pool

TEMPLATE = """
apiVersion: v1
kind: PodTemplate
metadata: {name: spare, namespace: default}
template:
  metadata: {labels: {app: spare}}
  spec:
    containers:
    - name: pause
      resources: {requests: {cpu: "2", memory: 2Gi}}
"""


def buffer_doc(spec: str, name: str = "room") -> str:
    return f"""
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {{name: {name}, namespace: default}}
spec:
{spec}
"""


def run(main: object, args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(args, stdout=out, stderr=err)  # type: ignore[operator]
    return code, out.getvalue(), err.getvalue()


def files(tmp_path: Path, *docs: str) -> list[str]:
    cat = tmp_path / "catalog.yaml"
    cat.write_text(CATALOG)
    objs = tmp_path / "cluster.yaml"
    objs.write_text("---".join([POOL, *docs]))
    return [str(objs), "--catalog", str(cat)]


# ---------------------------------------------------------------- counting, as Cluster Autoscaler counts
def web(replicas: int) -> Workload:
    return Workload("Deployment", "default", "web", replicas, None, pod("web", cpu="1", memory="1Gi"))


@pytest.mark.parametrize(
    ("replicas", "percentage", "limits", "expected"),
    [
        (5, None, None, 5),
        (None, 200, None, 20),  # 200% of 10
        (None, 33, None, 3),  # rounded down
        (25, 200, None, 25),  # both: the larger
        (15, 200, None, 20),
        (25, None, {"cpu": 20_000}, 20),  # capped by limits
        (None, 250, {"cpu": 20_000}, 20),
        (None, None, {"cpu": 4_500}, 4),  # limits alone: as many as fit
        (None, 0, None, 0),
    ],
)
def test_chunks_count_as_cluster_autoscaler(
    replicas: int | None, percentage: int | None, limits: dict[str, int] | None, expected: int
) -> None:
    b = CapacityBuffer(
        "default",
        "b",
        scalable=ScalableRef("apps", "Deployment", "web"),
        replicas=replicas,
        percentage=percentage,
        limits=limits,
    )
    (r,) = resolve_buffers([b], {}, [web(10)])
    assert len(r.pods) == expected
    assert all(is_virtual(p) and p.requests == web(1).template.requests for p in r.pods)


def test_buffer_without_its_template_or_counts_makes_no_pods_and_says_why() -> None:
    missing = CapacityBuffer("default", "a", pod_template="nope", replicas=3)
    nothing = CapacityBuffer("default", "b", scalable=ScalableRef("apps", "Deployment", "web"))
    passive = CapacityBuffer(
        "default",
        "c",
        provisioning_strategy="example.com/other",
        replicas=3,
        scalable=ScalableRef("apps", "Deployment", "web"),
    )
    wrong_group = CapacityBuffer("default", "d", scalable=ScalableRef("", "Deployment", "web"), replicas=1)
    out = resolve_buffers([missing, nothing, passive, wrong_group], {}, [web(10)])
    assert [len(r.pods) for r in out] == [0, 0, 0, 0]
    assert "PodTemplate default/nope" in out[0].problem
    assert out[1].problem == "replicas, percentage and limits are not defined"
    assert "provisioningStrategy" in out[2].problem
    assert "is not in the input" in out[3].problem


# ---------------------------------------------------------------- reading: the CRD's rules
@pytest.mark.parametrize(
    ("spec", "error"),
    [
        (
            "  podTemplateRef: {name: spare}\n  scalableRef: {kind: Deployment, name: web}\n  replicas: 1",
            "document 2 (CapacityBuffer room): spec: You must define either PodTemplateRef or ScalableRef, but not both",
        ),
        (
            "  podTemplateRef: {name: spare}\n  percentage: 10",
            "document 2 (CapacityBuffer room): spec: If PodTemplateRef is set, replicas or limits must also be set",
        ),
        ("  podTemplateRef: {name: spare}\n  replicas: -1", "spec.replicas: "),
        ("  scalableRef: {kind: Deployment, name: web}\n  percentage: -5", "spec.percentage: "),
        ("  scalableRef: {kind: Deployment}\n  replicas: 1", "spec.scalableRef.name: is required"),
        (
            "  scalableRef: {kind: '', name: web}\n  replicas: 1",
            "spec.scalableRef.kind: must be at least 1 character",
        ),
        (
            "  podTemplateRef: {name: ''}\n  replicas: 1",
            "spec.podTemplateRef.name: must be at least 1 character",
        ),
        ("  podTemplateRef: {name: spare}\n  limits: {cpu: lots}", "spec.limits.cpu: "),
        (
            "  podTemplateRef: {name: spare}\n  replicas: 20000",
            "spec.replicas: 20000 is more than the maximum",
        ),
    ],
)
def test_bad_buffer_fields_exit_2_naming_file_document_and_field(
    tmp_path: Path, spec: str, error: str
) -> None:
    for main in (plan_main, consolidate_main):
        code, out, err = run(main, files(tmp_path, buffer_doc(spec)))
        assert code == 2, err
        assert err.startswith("error: ") and "cluster.yaml" in err and error in err
        assert err.count("\n") == 1


def test_spec_is_required() -> None:
    text = "apiVersion: autoscaling.x-k8s.io/v1beta1\nkind: CapacityBuffer\nmetadata: {name: x}\n"
    with pytest.raises(Exception, match=r"f.yaml: document 1 \(CapacityBuffer x\): spec: is required"):
        parse_documents(text, "f.yaml", Inputs())


# ---------------------------------------------------------------- plan
def test_plan_launches_room_for_the_buffer_and_reports_it_apart(tmp_path: Path) -> None:
    args = files(tmp_path, TEMPLATE, buffer_doc("  podTemplateRef: {name: spare}\n  replicas: 2"))
    code, out, err = run(plan_main, args)
    assert code == 0, err
    doc = json.loads(out)
    (b,) = doc["buffers"]
    assert (b["name"], b["replicas"], b["unplaced"], b["problem"]) == ("room", 2, 0, "")
    assert sum(b["nodeclaims"].values()) == 2 and doc["nodeclaims"]
    # the virtual pods are not the cluster's pending pods
    assert doc["summary"]["pending_pods"] == 0 and doc["summary"]["unschedulable"] == 0
    assert b["cost_per_hour"] > 0


def test_unplaceable_buffer_pods_are_not_unschedulable_pods_of_the_cluster(tmp_path: Path) -> None:
    big = TEMPLATE.replace('cpu: "2"', 'cpu: "64"')
    code, out, err = run(
        plan_main, files(tmp_path, big, buffer_doc("  podTemplateRef: {name: spare}\n  replicas: 1"))
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["unschedulable"] == [] and doc["buffers"][0]["unplaced"] == 1


def test_plan_without_buffers_has_no_buffers_key(tmp_path: Path) -> None:
    code, out, _ = run(plan_main, files(tmp_path, TEMPLATE))
    assert code == 0 and "buffers" not in json.loads(out)


def test_buffer_of_a_workload_takes_a_percentage_of_its_replicas(tmp_path: Path) -> None:
    deploy = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 10
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: c, resources: {requests: {cpu: 500m, memory: 1Gi}}}
"""
    spec = "  scalableRef: {apiGroup: apps, kind: Deployment, name: web}\n  percentage: 30"
    code, out, err = run(plan_main, files(tmp_path, deploy, buffer_doc(spec)))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["buffers"][0]["replicas"] == 3
    assert doc["summary"]["pending_pods"] == 10  # the Deployment's own pods, not the buffer's


# ---------------------------------------------------------------- consolidation keeps the room
def test_consolidation_keeps_the_buffers_room(tmp_path: Path) -> None:
    # n1 runs a 3-cpu pod, n2 is empty: without a buffer n2 goes; a 2-cpu buffer needs n2's room
    docs = [node_doc("n1"), node_doc("n2"), pod_doc("web-1", "n1", "3")]
    code, out, err = run(consolidate_main, [*files(tmp_path, *docs), "--at", "2026-11-30T12:00:00Z"])
    assert code == 0, err
    assert any("n2" in a["nodes"] for a in json.loads(out)["actions"])
    with_buffer = [*docs, TEMPLATE, buffer_doc("  podTemplateRef: {name: spare}\n  replicas: 1")]
    code, out, err = run(consolidate_main, [*files(tmp_path, *with_buffer), "--at", "2026-11-30T12:00:00Z"])
    assert code == 0, err
    doc = json.loads(out)
    assert not any("n2" in a["nodes"] for a in doc["actions"])
    # never evicted: no action moves a virtual pod
    assert not any("room-buffer" in k for a in doc["actions"] for k in a["moves"])


def test_consolidate_json_says_where_each_buffers_room_is_held(tmp_path: Path) -> None:
    """`consolidate` JSON's `buffers` key, as the plan's: the room each buffer's virtual pods hold once the actions
    are taken, the pods no node holds, and a buffer that makes no pods with why; no key without buffers."""
    docs = [node_doc("n1"), node_doc("n2"), pod_doc("web-1", "n1", "3")]
    code, out, err = run(consolidate_main, [*files(tmp_path, *docs), "--at", "2026-11-30T12:00:00Z"])
    assert code == 0, err
    assert "buffers" not in json.loads(out)
    buffers = [
        TEMPLATE,
        buffer_doc("  podTemplateRef: {name: spare}\n  replicas: 3"),
        buffer_doc("  podTemplateRef: {name: gone}\n  replicas: 1", name="orphan"),
    ]
    code, out, err = run(consolidate_main, [*files(tmp_path, *docs, *buffers), "--at", "2026-11-30T12:00:00Z"])
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc) >= {"actions", "not_disrupted", "summary", "buffers"}
    orphan, room = doc["buffers"]
    assert orphan["name"] == "orphan" and orphan["replicas"] == 0
    assert orphan["problem"] == "PodTemplate default/gone is not in the input"
    assert room["name"] == "room" and room["replicas"] == 3 and room["chunk"]["cpu"] == "2"
    # n2 (4 cpu, empty) holds two 2-cpu chunks, n1 (1 cpu free) none; the third waits for the provisioner
    assert room["existing_nodes"] == {"n2": 2} and room["nodeclaims"] == {} and room["unplaced"] == 1
    assert room["existing_cost_per_hour"] > 0 and room["cost_per_hour"] == room["existing_cost_per_hour"]
    assert set(room) == set(plan_buffer_keys(tmp_path))


def plan_buffer_keys(tmp_path: Path) -> list[str]:
    code, out, err = run(plan_main, files(tmp_path, TEMPLATE, buffer_doc("  podTemplateRef: {name: spare}\n  replicas: 1")))
    assert code == 0, err
    return list(json.loads(out)["buffers"][0])


# ---------------------------------------------------------------- invariants
@given(
    replicas=st.none() | st.integers(0, 30),
    percentage=st.none() | st.integers(0, 300),
    workload=st.integers(0, 20),
    limit_cpu=st.none() | st.integers(0, 40_000),
)
def test_chunk_count_invariants(
    replicas: int | None, percentage: int | None, workload: int, limit_cpu: int | None
) -> None:
    b = CapacityBuffer(
        "default",
        "b",
        scalable=ScalableRef("apps", "Deployment", "web"),
        replicas=replicas,
        percentage=percentage,
        limits=None if limit_cpu is None else {"cpu": limit_cpu},
    )
    (r,) = resolve_buffers([b], {}, [web(workload)])
    asked = [n for n in (replicas, None if percentage is None else percentage * workload // 100) if n is not None]
    if limit_cpu is not None:
        # never more than the limits allow, and as many as they allow when nothing else is asked
        assert sum(p.requests["cpu"] for p in r.pods) <= limit_cpu
        assert len(r.pods) == min([*([max(asked)] if asked else []), limit_cpu // 1000])
    else:
        assert len(r.pods) == (max(asked) if asked else 0)


@settings(max_examples=25, deadline=None)
@given(n_pending=st.integers(0, 6), chunks=st.integers(0, 6), cpu=st.sampled_from(["500m", "1", "3"]))
def test_a_plans_buffer_pods_are_all_accounted_for_and_never_the_clusters(
    n_pending: int, chunks: int, cpu: str
) -> None:
    def inputs(with_buffer: bool) -> Inputs:
        inp = Inputs(nodepools=[pool()], pending=[pod(f"p{i}", cpu="1") for i in range(n_pending)])
        if with_buffer:
            inp.pod_templates[("default", "t")] = pod("t", cpu=cpu)
            inp.buffers.append(CapacityBuffer("default", "room", pod_template="t", replicas=chunks))
        return inp

    plain = plan(inputs(False), catalog())
    res = plan(inputs(True), catalog())
    (b,) = res.buffers
    assert b.replicas == chunks
    assert sum(b.on_nodeclaims.values()) + sum(b.on_nodes.values()) + b.unplaced == chunks
    assert (res.pending, res.scheduled, set(res.unschedulable)) == (
        plain.pending, plain.scheduled, set(plain.unschedulable))
    assert res.cost_per_hour >= plain.cost_per_hour - 1e-9
    assert 0 <= b.cost_per_hour <= res.cost_per_hour + 1e-9
