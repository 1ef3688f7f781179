"""Pod (anti-)affinity namespaceSelector and namespaces, as kube-scheduler reads them: an empty selector ({})
selects every namespace, a non-empty one the namespaces whose labels match (the labels of the v1 Namespace
objects in the input, else only kubernetes.io/metadata.name), and the pod's own namespace counts only when
neither field is given."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import yaml

from packing.plan_cli import main
from packing.pods import NamespaceScope
from tests.engine_builders import HOST, pod, sel, solve
from tests.packing.test_kubernetes_inputs import CATALOG, pool


def k8s_pod(name: str, namespace: str, labels: dict[str, str], affinity: dict[str, Any] | None = None,
            ) -> dict[str, Any]:  # fmt: skip
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    if affinity:
        spec["affinity"] = affinity
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": spec}  # fmt: skip


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def term(ns_selector: dict[str, Any] | None, namespaces: list[str] | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {"labelSelector": {"matchLabels": {"app": "target"}}, "topologyKey": HOST}
    if ns_selector is not None:
        t["namespaceSelector"] = ns_selector
    if namespaces is not None:
        t["namespaces"] = namespaces
    return t


def affine(t: dict[str, Any]) -> dict[str, Any]:
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [t]}}


def plan(tmp_path: Path, *docs: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
    f = tmp_path / "in.yaml"
    f.write_text(CATALOG + "---\n" + pool() + "---\n" + yaml.safe_dump_all(docs))
    out, err = io.StringIO(), io.StringIO()
    code = main([str(f)], stdout=out, stderr=err)
    return code, (json.loads(out.getvalue()) if code == 0 else {}), err.getvalue()


def together(data: dict[str, Any]) -> bool:
    """True when the target and the follower share a NodeClaim."""
    return any({"other/target", "default/follower"} <= set(c["pods"]) for c in data["nodeclaims"])


def unschedulable(data: dict[str, Any]) -> list[str]:
    return sorted(u["pod"] for u in data["unschedulable"])


TARGET = k8s_pod("target", "other", {"app": "target"})


def test_an_empty_namespace_selector_selects_every_namespace(tmp_path: Path) -> None:
    code, data, err = plan(tmp_path, TARGET, k8s_pod("follower", "default", {}, affine(term({}))))
    assert code == 0, err
    assert together(data) and not data["unschedulable"]


def test_without_namespace_objects_a_selector_matches_the_name_label_only(tmp_path: Path) -> None:
    by_name = term({"matchLabels": {"kubernetes.io/metadata.name": "other"}})
    code, data, err = plan(tmp_path, TARGET, k8s_pod("follower", "default", {}, affine(by_name)))
    assert code == 0, err
    assert together(data)
    by_team = term({"matchLabels": {"team": "a"}})
    code, data, err = plan(tmp_path, TARGET, k8s_pod("follower", "default", {}, affine(by_team)))
    assert code == 0, err
    assert unschedulable(data) == ["default/follower"]


def test_namespace_objects_give_the_labels_a_selector_matches(tmp_path: Path) -> None:
    by_team = term({"matchLabels": {"team": "a"}})
    follower = k8s_pod("follower", "default", {}, affine(by_team))
    code, data, err = plan(tmp_path, namespace("other", team="a"), TARGET, follower)
    assert code == 0, err
    assert together(data) and not data["unschedulable"]
    assert "skipped" not in err
    # as `kubectl get ns -o yaml` prints them: a List; another team's label matches nothing
    listed = {"apiVersion": "v1", "kind": "List", "items": [namespace("other", team="b"), namespace("default")]}
    code, data, err = plan(tmp_path, listed, TARGET, follower)
    assert code == 0, err
    assert unschedulable(data) == ["default/follower"]


def test_a_selector_leaves_out_the_own_namespace_unless_it_matches(tmp_path: Path) -> None:
    same_ns_target = k8s_pod("target", "default", {"app": "target"})
    follower = k8s_pod("follower", "default", {}, affine(term({"matchLabels": {"team": "a"}})))
    code, data, err = plan(tmp_path, namespace("default"), same_ns_target, follower)
    assert code == 0, err
    assert unschedulable(data) == ["default/follower"]
    # the namespaces list and the selector add up
    follower = k8s_pod("follower", "default", {}, affine(term({"matchLabels": {"team": "a"}}, ["other"])))
    code, data, err = plan(tmp_path, TARGET, follower)
    assert code == 0, err
    assert together(data)


def test_anti_affinity_with_an_empty_selector_keeps_away_from_every_namespace() -> None:
    target = pod("target", namespace="other", labels={"app": "target"})
    from packing.pods import PodAffinityTerm

    avoid = PodAffinityTerm(sel(app="target"), HOST, frozenset(), sel())
    avoider = pod("avoider", anti_affinity=(avoid,))
    _, r = solve([target, avoider])
    assert len(r.nodeclaims) == 2


def test_namespace_scope() -> None:
    assert NamespaceScope(frozenset({"a"})).contains("a")
    assert not NamespaceScope(frozenset({"a"})).contains("b")
    assert NamespaceScope(frozenset(), sel()).contains("anything")
    assert NamespaceScope(frozenset(), sel(**{"kubernetes.io/metadata.name": "b"})).contains("b")
    assert not NamespaceScope(frozenset(), sel(team="a")).contains("b")


def test_bad_namespace_selector_and_namespace(tmp_path: Path) -> None:
    follower = k8s_pod("follower", "default", {}, affine(term({"matchLabels": {"team": [1]}})))
    code, _, err = plan(tmp_path, TARGET, follower)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "namespaceSelector.matchLabels.team: must be a string" in err, err
    code, _, err = plan(tmp_path, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x", "labels": []}})
    assert code == 2 and "(Namespace x): metadata.labels:" in err, err


def test_the_lower_bound_counts_hostname_anti_affinity_only_among_pods_it_selects(tmp_path: Path) -> None:
    # Three pods of namespace "a" avoid app=x pods of namespace b only (no Namespace objects: the selector is
    # matched against the name label): they do not repel each other, so one node may hold all three and the
    # bound must not ask for three nodes.
    avoid = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": HOST,
         "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "b"}}}]}}
    docs = [k8s_pod(f"p{i}", "a", {"app": "x"}, avoid) for i in range(3)]
    code, data, err = plan(tmp_path, *docs)
    assert code == 0, err
    assert data["summary"]["unschedulable"] == 0
    bound, cost = data["summary"]["lower_bound_per_hour"], data["summary"]["cost_per_hour"]
    assert bound is not None and 0 < bound <= cost + 1e-9
    assert len(data["nodeclaims"]) == 1
