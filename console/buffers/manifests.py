"""Conversion between CapacityBuffer rows and their manifests (autoscaling.x-k8s.io/v1beta1, the object Cluster
Autoscaler and Karpenter read).

Import reads a manifest as the API server would: the CRD's default provisioningStrategy when absent, fields
outside the v1beta1 schema refused with their path, metadata other than name and namespace, and status,
ignored. Export writes every stored field (provisioningStrategy too), so an export imports back to the very same
row. The field rules themselves are the engine's (packing.api.check_buffer), run by the model's clean().
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packing.api import ACTIVE_CAPACITY, BUFFER_KIND, brief

API_VERSION = "autoscaling.x-k8s.io/v1beta1"
KIND = BUFFER_KIND

# model field -> the manifest path it is stored at (the path errors name)
PATHS: dict[str, str] = {
    "name": "metadata.name",
    "namespace": "metadata.namespace",
    "provisioning_strategy": "spec.provisioningStrategy",
    "pod_template_ref": "spec.podTemplateRef.name",
    "scalable_api_group": "spec.scalableRef.apiGroup",
    "scalable_kind": "spec.scalableRef.kind",
    "scalable_name": "spec.scalableRef.name",
    "replicas": "spec.replicas",
    "percentage": "spec.percentage",
    "limits": "spec.limits",
}
FIELDS = tuple(PATHS)
_SPEC_KEYS = {"provisioningStrategy", "podTemplateRef", "scalableRef", "replicas", "percentage", "limits"}


def field_for_path(path: str) -> str:
    """The model field an error at manifest `path` belongs to ("__all__" for the spec as a whole)."""
    best = ""
    for field, p in PATHS.items():
        if (path == p or path.startswith(p + ".")) and len(p) > len(PATHS.get(best, "")):
            best = field
    if not best and path.startswith("spec.podTemplateRef"):
        return "pod_template_ref"
    if not best and path.startswith("spec.scalableRef"):
        return "scalable_kind"
    return best or "__all__"


def to_manifest(values: Mapping[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"provisioningStrategy": values.get("provisioning_strategy") or ACTIVE_CAPACITY}
    if values.get("pod_template_ref"):
        spec["podTemplateRef"] = {"name": values["pod_template_ref"]}
    if values.get("scalable_kind") or values.get("scalable_name"):
        ref: dict[str, Any] = {}
        if values.get("scalable_api_group"):
            ref["apiGroup"] = values["scalable_api_group"]
        ref["kind"] = values.get("scalable_kind") or ""
        ref["name"] = values.get("scalable_name") or ""
        spec["scalableRef"] = ref
    for key in ("replicas", "percentage", "limits"):
        if values.get(key) is not None:
            spec[key] = values[key]
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": values.get("name") or "", "namespace": values.get("namespace") or "default"},
        "spec": spec,
    }


def _int(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def fields_from_manifest(doc: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Model-field values of a CapacityBuffer manifest and the structural problems (path, message): missing
    name or spec, wrong shapes, fields outside the schema. Values are checked by the model afterwards."""
    problems: list[tuple[str, str]] = []
    meta = doc.get("metadata")
    if not isinstance(meta, Mapping):
        return {}, [("metadata", "metadata with a name is required")]
    spec = doc.get("spec")
    if spec is None:
        return {}, [("spec", "spec is required")]
    if not isinstance(spec, Mapping):
        return {}, [("spec", f"must be a mapping, got {brief(spec)}")]
    for key in sorted(set(map(str, spec)) - _SPEC_KEYS):
        problems.append((f"spec.{key}", "unknown field (not in the CapacityBuffer v1beta1 schema)"))
    values: dict[str, Any] = {
        "name": meta.get("name"),
        "namespace": meta.get("namespace") or "default",
        "provisioning_strategy": spec.get("provisioningStrategy", ACTIVE_CAPACITY),
        "pod_template_ref": "",
        "scalable_api_group": "",
        "scalable_kind": "",
        "scalable_name": "",
        "replicas": _int(spec.get("replicas")),
        "percentage": _int(spec.get("percentage")),
        "limits": spec.get("limits"),
    }
    for key, allowed in (("podTemplateRef", {"name"}), ("scalableRef", {"apiGroup", "kind", "name"})):
        ref = spec.get(key)
        if ref is None:
            continue
        if not isinstance(ref, Mapping):
            problems.append((f"spec.{key}", f"must be a mapping, got {brief(ref)}"))
            continue
        for extra in sorted(set(map(str, ref)) - allowed):
            problems.append((f"spec.{key}.{extra}", "unknown field (not in the CapacityBuffer v1beta1 schema)"))
        for sub in sorted(allowed):
            if ref.get(sub) is not None and not isinstance(ref.get(sub), str):
                problems.append((f"spec.{key}.{sub}", f"must be a string, got {brief(ref.get(sub))}"))
        if key == "podTemplateRef":
            values["pod_template_ref"] = ref.get("name") if ref.get("name") is not None else ""
            if not values["pod_template_ref"]:
                problems.append(("spec.podTemplateRef.name", "name is required"))
        else:
            values["scalable_api_group"] = ref.get("apiGroup") or ""
            values["scalable_kind"] = ref.get("kind") or ""
            values["scalable_name"] = ref.get("name") or ""
            for sub in ("kind", "name"):
                if not ref.get(sub):
                    problems.append((f"spec.scalableRef.{sub}", f"{sub} is required"))
    for key in ("name", "namespace", "provisioning_strategy"):
        if values[key] is not None and not isinstance(values[key], str):
            problems.append((PATHS[key], f"must be a string, got {brief(values[key])}"))
    if not values["name"]:
        problems.append(("metadata.name", "name is required"))
    for key in ("replicas", "percentage"):
        v = values[key]
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            problems.append((PATHS[key], f"must be an integer, got {brief(v)}"))
    limits = values["limits"]
    if limits is not None:
        if not isinstance(limits, Mapping):
            problems.append(("spec.limits", f"must be a mapping of resource quantities, got {brief(limits)}"))
        else:
            values["limits"] = {str(k): v if isinstance(v, str) else str(_int(v)) for k, v in limits.items()}
    return values, problems
