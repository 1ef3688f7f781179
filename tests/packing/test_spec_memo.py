"""parse_pod_spec parses each distinct pod spec once (packing.podspec's memo): every pod, every error and every
plan is the same with the memo as without it."""

from __future__ import annotations

import io
import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from packing import podspec
from packing.bench.dump import NODEPOOL, pod_object
from packing.fields import FieldError
from packing.plan_cli import main as plan_main
from packing.podspec import parse_pod_spec


@pytest.fixture(autouse=True)
def fresh_memo() -> Iterator[None]:
    podspec.clear_spec_memo()
    yield
    podspec.clear_spec_memo()


def parsed(meta: dict[str, Any], spec: dict[str, Any], *, memo: bool, name: str = "p", ns: str = "default") -> Any:
    """The Pod parse_pod_spec makes, or the FieldError it raises as (path, message)."""
    saved = podspec.SPEC_MEMO_SIZE
    podspec.SPEC_MEMO_SIZE = saved if memo else 0
    try:
        return parse_pod_spec(meta, spec, "", name=name, namespace=ns)
    except FieldError as e:
        return (e.path, e.message)
    finally:
        podspec.SPEC_MEMO_SIZE = saved


def spec_of(cpu: str = "1", **more: Any) -> dict[str, Any]:
    return {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **more}


def test_pods_of_one_spec_share_its_parsed_parts() -> None:
    a = parsed({"labels": {"app": "a"}, "uid": "1"}, spec_of(), memo=True, name="a")
    b = parsed({"labels": {"app": "b"}, "uid": "2"}, spec_of(), memo=True, name="b")
    assert b.requests is a.requests and b.tolerations is a.tolerations
    assert (b.name, b.uid, b.labels) == ("b", "2", {"app": "b"})


def test_a_spread_with_match_label_keys_is_parsed_for_each_pods_labels() -> None:
    tsc = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "a"}}, "matchLabelKeys": ["pod-template-hash"]}]
    a = parsed({"labels": {"app": "a", "pod-template-hash": "1"}}, spec_of(topologySpreadConstraints=tsc), memo=True)
    b = parsed({"labels": {"app": "a", "pod-template-hash": "2"}}, spec_of(topologySpreadConstraints=tsc), memo=True)
    assert a.spread != b.spread
    assert b == parsed({"labels": {"app": "a", "pod-template-hash": "2"}}, spec_of(topologySpreadConstraints=tsc),
                       memo=False)


def test_affinity_terms_are_parsed_for_each_namespace() -> None:
    aff = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    a = parsed({}, spec_of(affinity=aff), memo=True, ns="one")
    b = parsed({}, spec_of(affinity=aff), memo=True, ns="two")
    assert a.anti_affinity[0].namespaces == frozenset({"one"})
    assert b.anti_affinity[0].namespaces == frozenset({"two"})


# specs and metadata from a few fragments, so that many pods repeat a spec and some are malformed
_cpus = st.sampled_from(["1", "250m", "1", "lots", 2, 1.5])
_ports = st.sampled_from([None, [{"containerPort": 80}], [{"containerPort": 80, "hostPort": 8080}],
                          [{"hostPort": "x"}], [{"hostPort": 9000, "protocol": "UDP", "hostIP": "10.0.0.1"}]])
_tolerations = st.sampled_from([None, [{"key": "a", "operator": "Exists"}], [{"key": "a", "operator": "Nope"}],
                                [{"key": "n", "operator": "Gt", "value": "5", "effect": "NoSchedule"}]])
_affinity = st.sampled_from([None, {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
    {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": {
        "labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}}]}}, {"nodeAffinity": 3}])
_spreads = st.sampled_from([None, [{"maxSkew": 1, "topologyKey": "zone", "labelSelector": {"matchLabels": {
    "app": "x"}}, "matchLabelKeys": ["hash"]}], [{"maxSkew": 0, "topologyKey": "zone"}]])
_specs = st.builds(
    lambda cpu, ports, tols, aff, tsc, node, init, pod_level: {
        k: v for k, v in {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}, "ports": ports}],
            "initContainers": init, "tolerations": tols, "affinity": aff, "topologySpreadConstraints": tsc,
            "nodeName": node, "resources": pod_level}.items() if v is not None},
    _cpus, _ports, _tolerations, _affinity, _spreads, st.sampled_from([None, "", "node-1", 5]),
    st.sampled_from([None, [{"name": "i", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}]]),
    st.sampled_from([None, {"requests": {"cpu": "2"}}, {"limits": {"gpu": "1"}}]),
)
_metas = st.builds(
    lambda labels, uid, owners, deleted: {k: v for k, v in {
        "labels": labels, "uid": uid, "ownerReferences": owners, "deletionTimestamp": deleted}.items()
        if v is not None},
    st.sampled_from([None, {"app": "x", "hash": "1"}, {"app": "x", "hash": "2"}, {"app": 3}, {"app": [1]}]),
    st.sampled_from([None, "u1", "u2", 7]),
    st.sampled_from([None, [{"kind": "ReplicaSet", "name": "rs"}], ["x"], {}]),
    st.sampled_from([None, "2026-01-01T00:00:00Z"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_metas, _specs, st.sampled_from(["a", "b"])), min_size=1, max_size=12))
def test_the_memo_changes_no_pod_and_no_error(pods: list[tuple[dict[str, Any], dict[str, Any], str]]) -> None:
    podspec.clear_spec_memo()
    for i, (meta, spec, ns) in enumerate(pods):
        assert parsed(meta, spec, memo=True, name=f"p{i}", ns=ns) == parsed(
            meta, spec, memo=False, name=f"p{i}", ns=ns
        )


# ---------------------------------------------------------------- whole plans
def plan_json(path: str, *, memo: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    podspec.clear_spec_memo()
    monkeypatch.setattr(podspec, "SPEC_MEMO_SIZE", podspec.SPEC_MEMO_SIZE if memo else 0)
    out = io.StringIO()
    assert plan_main([path], stdout=out, stderr=io.StringIO()) == 0
    monkeypatch.undo()
    doc = json.loads(out.getvalue())
    doc.pop("solve_seconds", None)
    doc.get("summary", {}).pop("solve_seconds", None)
    return doc


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("as_json", [False, True])
def test_plans_of_dumps_are_the_same_with_and_without_the_memo(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, seed: int, as_json: bool
) -> None:
    rnd = random.Random(seed)
    items = [pod_object(i, rnd) for i in range(300)]
    for i, item in enumerate(items):  # some pods of a spec differ in what the parse reads
        if i % 7 == 0:
            item["spec"]["topologySpreadConstraints"] = [{
                "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": item["metadata"]["labels"]["app"]}},
                "matchLabelKeys": ["pod-template-hash"]}]
        if i % 11 == 0:
            item["spec"]["nodeSelector"] = {"kubernetes.io/arch": "arm64"}
    dump = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": [NODEPOOL, *items]}
    path = tmp_path / ("dump.json" if as_json else "dump.yaml")
    path.write_text(json.dumps(dump) if as_json else yaml.safe_dump(dump, sort_keys=True))
    with_memo = plan_json(str(path), memo=True, monkeypatch=monkeypatch)
    assert with_memo == plan_json(str(path), memo=False, monkeypatch=monkeypatch)
    assert with_memo["summary"]["pending_pods"] == 300 and with_memo["nodeclaims"]
