"""The history file (packing.history): events written and read back unchanged, pod templates that rebuild the
engine's Pod, the strict reader's one-line errors, and `python -m packing history` over kubectl dumps."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from packing.__main__ import main as packing_main
from packing.history import (
    Header,
    HistoryError,
    HistoryWriter,
    InterruptionKind,
    ManifestKind,
    NodeInterrupted,
    NodeLaunched,
    NodeTerminated,
    OfferingPrice,
    PodArrived,
    PodBound,
    PodDeparted,
    PodEnd,
    Prices,
    Revision,
    engine_pod,
    read_history,
    spec_id,
    template_of,
)
from packing.kubeobjects import Inputs, add_object

T0 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)

POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web-1", "namespace": "shop", "uid": "u-1", "labels": {"app": "web"},
                 "annotations": {"karpenter.sh/do-not-disrupt": "true", "cni/ip": "10.0.0.7"},
                 "ownerReferences": [{"kind": "ReplicaSet", "name": "web-abc", "controller": True}]},
    "spec": {
        "containers": [{"name": "c", "image": "nginx", "env": [{"name": "A", "value": "b"}],
                        "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                        "ports": [{"containerPort": 80}, {"containerPort": 8080, "hostPort": 8080}]}],
        "initContainers": [{"name": "i", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}],
        "nodeSelector": {"kubernetes.io/arch": "amd64"},
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}},
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                       "whenUnsatisfiable": "DoNotSchedule",
                                       "labelSelector": {"matchLabels": {"app": "web"}}}],
        "priority": 1000, "terminationGracePeriodSeconds": 60,
        "volumes": [{"name": "v", "emptyDir": {}}],
    },
}  # fmt: skip


def _engine_pod_of(obj: dict[str, Any]) -> Any:
    inp = Inputs()
    add_object(obj, inp)
    return (inp.pending + inp.running)[0]


def test_a_template_rebuilds_the_pod_the_engine_reads() -> None:
    template = template_of(POD)
    assert "volumes" not in template["spec"] and "env" not in template["spec"]["containers"][0]
    assert template["metadata"]["annotations"] == {"karpenter.sh/do-not-disrupt": "true"}
    rebuilt = engine_pod(template, namespace="shop", name="web-1", uid="u-1", owner_kind="ReplicaSet",
                         owner_name="web-abc")
    assert rebuilt == _engine_pod_of(POD)


def test_replicas_share_one_template() -> None:
    other = json.loads(json.dumps(POD))
    other["metadata"].update(name="web-2", uid="u-2")
    other["metadata"]["annotations"]["cni/ip"] = "10.0.0.8"
    other["spec"]["nodeName"] = "n1"
    assert spec_id(template_of(POD)) == spec_id(template_of(other))


def _events() -> tuple[list[Any], dict[str, Any]]:
    template = template_of(POD)
    sid = spec_id(template)
    manifest = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
                "spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                                "name": "default"}, "requirements": []}}}}
    t = [T0 + timedelta(seconds=s) for s in range(10)]
    events = [
        Revision(t[0], ManifestKind.NODEPOOL, "default", manifest, 3),
        Prices(t[0], (OfferingPrice("m5.large", "us-east-1a", "spot", 0.04),
                      OfferingPrice("m5.large", "us-east-1a", "on-demand", None))),
        NodeLaunched(t[0], "n1", "m5.large", "us-east-1a", "spot", 0.04, nodepool="default", provider_id="aws:///i-1",
                     labels={"a": "b"}, taints=({"key": "k", "value": "v", "effect": "NoSchedule"},),
                     allocatable={"cpu": "1930m"}, capacity={"cpu": "2"}),
        PodArrived(t[1], "shop", "web-1", sid, uid="u-1", owner_kind="ReplicaSet", owner_name="web-abc"),
        PodBound(t[2].replace(microsecond=250_000), "shop", "web-1", "n1"),
        Prices(t[3], (), (("m5.large", "us-east-1a", "on-demand"),)),
        NodeInterrupted(t[4], "n1", InterruptionKind.SPOT_INTERRUPTION),
        PodDeparted(t[5], "shop", "web-1", PodEnd.SUCCEEDED),
        NodeTerminated(t[5], "n1", "spot interruption"),
        Revision(t[6], ManifestKind.NODEPOOL, "default", None),
    ]  # fmt: skip
    return events, {sid: template}


def _write(events: list[Any], templates: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = HistoryWriter(out, Header(source="test", start=T0))
    for sid, template in templates.items():
        writer.add_template(sid, template)
    writer.write_all(events)
    return out.getvalue()


def test_events_written_are_read_back_unchanged() -> None:
    events, templates = _events()
    text = _write(events, templates)
    history = read_history(text.splitlines(keepends=True), "h.jsonl")
    assert history.events == events
    assert history.templates == templates
    assert history.header.source == "test" and history.header.start == T0
    lines = text.splitlines()
    assert json.loads(lines[0]) == {"format": "loadmaster.dev/history", "version": 1, "source": "test",
                                    "start": "2026-12-03T09:00:00Z"}
    assert sum('"event":"PodSpec"' in line for line in lines) == 1


def _bad(lines: list[str], replace: int, new: Any) -> list[str]:
    out = list(lines)
    out[replace] = new if isinstance(new, str) else json.dumps(new)
    return out


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda ls: _bad(ls, 0, {"format": "other", "version": 1}), "h.jsonl: line 1: format: must be"),
    (lambda ls: _bad(ls, 0, {"format": "loadmaster.dev/history", "version": 2}), "h.jsonl: line 1: version:"),
    (lambda ls: _bad(ls, 3, "{not json"), "h.jsonl: line 4: (line): not JSON"),
    (lambda ls: _bad(ls, 3, "[1, 2]"), "h.jsonl: line 4: (line): must be one JSON object"),
    (lambda ls: _bad(ls, 3, ""), "h.jsonl: line 4: (line): empty line"),
    (lambda ls: _bad(ls, 3, {**json.loads(ls[3]), "price": "cheap"}), "h.jsonl: line 4: price: must be a number"),
    (lambda ls: _bad(ls, 3, {**json.loads(ls[3]), "zone": 3}), "h.jsonl: line 4: zone: must be a string"),
    (lambda ls: _bad(ls, 3, {**json.loads(ls[3]), "colour": "red"}), "h.jsonl: line 4: colour: unknown field"),
    (lambda ls: _bad(ls, 3, {**json.loads(ls[3]), "event": "NodeExploded"}), "h.jsonl: line 4: event: unknown event"),
    (lambda ls: _bad(ls, 3, {**json.loads(ls[3]), "at": "yesterday"}), "h.jsonl: line 4: at: must be an RFC 3339"),
    (lambda ls: _bad(ls, 3, {**json.loads(ls[3]), "at": "2026-12-03T09:00:00"}), "h.jsonl: line 4: at: must be"),
    (lambda ls: _bad(ls, 6, {**json.loads(ls[6]), "at": "2026-12-03T08:00:00Z"}), "h.jsonl: line 7: at: "),
    (lambda ls: _bad(ls, 4, {**json.loads(ls[4]), "template": {"spec": {"containers": [
        {"resources": {"requests": {"cpu": "lots"}}}]}}}),
     "h.jsonl: line 5: template.spec.containers[0].resources.requests.cpu:"),
    (lambda ls: _bad(ls, 5, {**json.loads(ls[5]), "spec": "nope"}), "h.jsonl: line 6: spec: no PodSpec line"),
    (lambda ls: _bad(ls, 5, {**json.loads(ls[5]), "owner": {"kind": 1}}), "h.jsonl: line 6: owner.kind: must be"),
    (lambda ls: _bad(ls, 9, {**json.loads(ls[9]), "end": "Exploded"}), "h.jsonl: line 10: end: must be one of"),
    (lambda ls: _bad(ls, 9, {**json.loads(ls[9]), "name": "web-9"}), "h.jsonl: line 10: name: pod 'shop/web-9' leaves"),
    (lambda ls: _bad(ls, 10, {**json.loads(ls[10]), "name": "n9"}), "h.jsonl: line 11: name: node 'n9' ends"),
    (lambda ls: _bad(ls, 1, {**json.loads(ls[1]), "manifest": {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
                                                               "metadata": {"name": "other"}}}),
     "h.jsonl: line 2: manifest.metadata.name: must be 'default'"),
    (lambda ls: _bad(ls, 1, {**json.loads(ls[1]), "manifest": {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
                                                               "metadata": {"name": "default"},
                                                               "spec": {"weight": 500}}}),
     "h.jsonl: line 2: manifest.spec.weight:"),
    (lambda ls: [*ls[:5], ls[5], ls[5], *ls[6:]], "h.jsonl: line 7: name: pod 'shop/web-1' arrives while"),
])  # fmt: skip
def test_the_reader_names_file_line_and_field(edit: Any, expected: str) -> None:
    events, templates = _events()
    lines = _write(events, templates).splitlines()
    with pytest.raises(HistoryError) as e:
        read_history(edit(lines), "h.jsonl")
    assert str(e.value).startswith(expected), str(e.value)
    assert "\n" not in str(e.value)


# ---------------------------------------------------------------- python -m packing history
def _node(name: str, created: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "creationTimestamp": created,
                         "labels": {"karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "on-demand",
                                    "node.kubernetes.io/instance-type": "m5.large",
                                    "topology.kubernetes.io/zone": "us-east-1a"}},
            "spec": {"providerID": f"aws:///us-east-1a/i-{name}"},
            "status": {"allocatable": {"cpu": "1930m", "memory": "7Gi", "pods": "29"},
                       "capacity": {"cpu": "2", "memory": "8Gi", "pods": "29"}}}  # fmt: skip


def _pod(name: str, created: str, node: str = "", scheduled: str = "", phase: str = "Running") -> dict[str, Any]:
    obj = json.loads(json.dumps(POD))
    obj["metadata"].update(name=name, uid=f"u-{name}", creationTimestamp=created)
    status: dict[str, Any] = {"phase": phase}
    if node:
        obj["spec"]["nodeName"] = node
    if scheduled:
        status["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": scheduled}]
    obj["status"] = status
    return obj


def _dump(path: Path, *items: dict[str, Any]) -> str:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items),
                                "metadata": {"resourceVersion": ""}}, indent=4))
    return str(path)


def test_dumps_are_diffed_into_a_history(tmp_path: Path, capsys: Any) -> None:
    d2 = _dump(tmp_path / "dump-20261203T091000Z.json", _node("n1", "2026-12-01T00:00:00Z"),
               _node("n2", "2026-12-03T09:04:00Z"),
               _pod("b", "2026-12-03T09:05:00Z", "n2", "2026-12-03T09:05:30Z"),
               _pod("c", "2026-12-03T09:06:00Z"),
               _pod("d", "2026-12-03T08:00:00Z", "n1", phase="Succeeded"))
    d1 = _dump(tmp_path / "dump-2026-12-03T09-00-00Z.json", _node("n1", "2026-12-01T00:00:00Z"),
               _node("n3", "2026-12-02T00:00:00Z"),
               _pod("a", "2026-12-03T08:00:00Z", "n1"), _pod("d", "2026-12-03T08:00:00Z", "n1"))
    assert packing_main(["history", d2, d1]) == 0  # taken in time order, whatever the order given
    history = read_history(capsys.readouterr().out.splitlines(), "out")
    got = [(type(e).__name__, e.at.strftime("%H:%M:%S"), getattr(e, "name", "")) for e in history.events]
    assert got == [
        ("NodeLaunched", "09:00:00", "n1"), ("NodeLaunched", "09:00:00", "n3"),
        ("PodArrived", "09:00:00", "a"), ("PodArrived", "09:00:00", "d"),
        ("NodeLaunched", "09:04:00", "n2"),
        ("PodArrived", "09:05:00", "b"), ("PodBound", "09:05:30", "b"),
        ("PodArrived", "09:06:00", "c"),
        ("PodDeparted", "09:10:00", "a"), ("PodDeparted", "09:10:00", "d"),
        ("NodeTerminated", "09:10:00", "n3"),
    ]  # fmt: skip
    first = history.events[0]
    assert isinstance(first, NodeLaunched) and first.price is not None and first.capacity_type == "on-demand"
    arrived = history.events[2]
    assert isinstance(arrived, PodArrived) and arrived.node == "n1" and arrived.owner_name == "web-abc"
    finished = history.events[9]
    assert isinstance(finished, PodDeparted) and finished.end is PodEnd.SUCCEEDED


def test_a_bad_dump_exits_2_naming_file_document_and_field(tmp_path: Path, capsys: Any) -> None:
    bad = _pod("b", "2026-12-03T09:05:00Z")
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    d1 = _dump(tmp_path / "a.json", bad)
    out = tmp_path / "h.jsonl"
    assert packing_main(["history", d1, "--at", "2026-12-03T09:00:00Z", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {d1}: document 1 (Pod b): items[0].spec.containers[0].resources.requests.cpu:")
    assert "\n" not in err and not out.exists()


def test_a_dump_without_a_time_exits_2(tmp_path: Path, capsys: Any) -> None:
    d1 = _dump(tmp_path / "a.json", _node("n1", "2026-12-01T00:00:00Z"))
    assert packing_main(["history", d1]) == 2
    assert "no time: give --at" in capsys.readouterr().err
    assert packing_main(["history", d1, "--at", "2026-12-03T09:00:00Z", "--at", "2026-12-03T09:10:00Z"]) == 2
    assert "--at: given 2 times for 1 dumps" in capsys.readouterr().err


def test_a_dumps_time_may_be_its_lists_annotation(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "a.yaml"
    path.write_text("apiVersion: v1\nitems: []\nkind: List\nmetadata:\n  annotations:\n"
                    "    loadmaster.dev/captured-at: '2026-12-03T09:30:00Z'\n")
    assert packing_main(["history", str(path)]) == 0
    history = read_history(capsys.readouterr().out.splitlines(), "out")
    assert history.header.start == datetime(2026, 12, 3, 9, 30, tzinfo=UTC)
    path.write_text("apiVersion: v1\nitems: []\nkind: List\nmetadata:\n  annotations:\n"
                    "    loadmaster.dev/captured-at: soon\n")
    assert packing_main(["history", str(path)]) == 2
    assert "document 1: metadata.annotations.loadmaster.dev/captured-at: invalid timestamp" in capsys.readouterr().err


def test_check_reads_a_history_strictly(tmp_path: Path, capsys: Any) -> None:
    events, templates = _events()
    path = tmp_path / "h.jsonl"
    path.write_text(_write(events, templates))
    assert packing_main(["history", "--check", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)[str(path)]
    assert report["events"]["PodArrived"] == 1 and report["templates"] == 1
    assert report["pods_at_end"] == 0 and report["first"] == "2026-12-03T09:00:00Z"
    lines = path.read_text().splitlines()
    lines[3] = lines[3].replace('"zone":"us-east-1a"', '"zone":3')
    path.write_text("\n".join(lines) + "\n")
    assert packing_main(["history", "--check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {path}: line 4: zone: must be a string, got 3\n"
