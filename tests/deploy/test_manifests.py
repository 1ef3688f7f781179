"""deploy/: every manifest the kustomization lists is valid Kubernetes (strict schema), the ClusterRole
grants exactly what the Kubernetes backend calls, and the Deployments run the commands that exist."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"

# Kubernetes client methods the backend calls -> (apiGroup, resource, verb) they need.
CLIENT_CALLS = {
    "list_pod_for_all_namespaces": ("", "pods", "list"),
    "create_namespaced_pod_eviction": ("", "pods/eviction", "create"),
    "list_node": ("", "nodes", "list"),
    "read_node": ("", "nodes", "get"),
    "patch_node": ("", "nodes", "patch"),
    "delete_node": ("", "nodes", "delete"),
    "delete_namespaced_pod": ("", "pods", "delete"),
    "list_pod_disruption_budget_for_all_namespaces": ("policy", "poddisruptionbudgets", "list"),
    "list_daemon_set_for_all_namespaces": ("apps", "daemonsets", "list"),
    "list_pod_template_for_all_namespaces": ("", "podtemplates", "list"),
}


def documents() -> list[dict[str, Any]]:
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    docs: list[dict[str, Any]] = []
    for name in kustomization["resources"]:
        docs += [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]
    return docs


@pytest.mark.parametrize("doc", documents(), ids=lambda d: f"{d['kind']}/{d['metadata']['name']}")
def test_manifest_is_valid_kubernetes(doc: dict[str, Any]) -> None:
    import kubernetes_validate

    kubernetes_validate.validate(doc, "1.31", strict=True)   # raises ValidationError with the field


def test_clusterrole_grants_exactly_what_the_code_calls() -> None:
    source = (ROOT / "console/backends/kubernetes.py").read_text()
    # Every Kubernetes API call goes through the typed clients held as self.core/self.policy/self.apps.
    calls = set(re.findall(r"self\.(?:core|policy|apps)\.([a-z_]+)", source))
    needed = {CLIENT_CALLS[m] for m in calls if m in CLIENT_CALLS}
    if "watch=True" in source or '"watch": True' in source:
        needed |= {("", "pods", "watch"), ("", "nodes", "watch")}
    unknown = calls - set(CLIENT_CALLS)
    assert not unknown, f"map these client calls to RBAC: {unknown}"
    role = next(d for d in documents() if d["kind"] == "ClusterRole")
    granted = {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
               for resource in rule["resources"] for verb in rule["verbs"]}
    assert granted == needed


def test_deployments_run_existing_commands() -> None:
    commands = {d["metadata"]["name"]: d["spec"]["template"]["spec"]["containers"][0]["command"]
                for d in documents() if d["kind"] in ("Deployment", "Job")}
    assert commands["loadmaster-watch"][-1] == "watch"
    assert (ROOT / "console/control/management/commands/watch.py").exists()
    assert commands["loadmaster-web"][1] == "console.wsgi:application"
    assert (ROOT / "console/wsgi.py").exists()
    beat = next(d for d in documents() if d["metadata"]["name"] == "loadmaster-beat")
    assert beat["spec"]["replicas"] == 1 and beat["spec"]["strategy"]["type"] == "Recreate"
