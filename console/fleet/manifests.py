"""Conversion between fleet rows and Karpenter v1 manifests (the YAML operators already write).

Each model field maps to one path in the manifest (FIELD_PATHS); import, export, the change
history and error messages all use that one table, so "spec.template.spec.requirements[1].values"
means the same thing in an import error, a history entry and ``kubectl explain``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

NODEPOOL_API_VERSION = "karpenter.sh/v1"
NODECLASS_API_VERSION = "karpenter.k8s.aws/v1"
NODEPOOL_KIND = "NodePool"
NODECLASS_KIND = "EC2NodeClass"

NODEPOOL_PATHS: dict[str, tuple[str, ...]] = {
    "name": ("metadata", "name"),
    "template_labels": ("spec", "template", "metadata", "labels"),
    "template_annotations": ("spec", "template", "metadata", "annotations"),
    "taints": ("spec", "template", "spec", "taints"),
    "startup_taints": ("spec", "template", "spec", "startupTaints"),
    "requirements": ("spec", "template", "spec", "requirements"),
    "node_class_name": ("spec", "template", "spec", "nodeClassRef", "name"),
    "expire_after": ("spec", "template", "spec", "expireAfter"),
    "termination_grace_period": ("spec", "template", "spec", "terminationGracePeriod"),
    "consolidation_policy": ("spec", "disruption", "consolidationPolicy"),
    "consolidate_after": ("spec", "disruption", "consolidateAfter"),
    "budgets": ("spec", "disruption", "budgets"),
    "limits": ("spec", "limits"),
    "weight": ("spec", "weight"),
}
NODECLASS_PATHS: dict[str, tuple[str, ...]] = {
    "name": ("metadata", "name"),
    "ami_family": ("spec", "amiFamily"),
    "ami_selector_terms": ("spec", "amiSelectorTerms"),
    "subnet_selector_terms": ("spec", "subnetSelectorTerms"),
    "security_group_selector_terms": ("spec", "securityGroupSelectorTerms"),
    "role": ("spec", "role"),
    "instance_profile": ("spec", "instanceProfile"),
    "tags": ("spec", "tags"),
    "block_device_mappings": ("spec", "blockDeviceMappings"),
    "kubelet": ("spec", "kubelet"),
    "metadata_options": ("spec", "metadataOptions"),
    "user_data": ("spec", "userData"),
}
# Karpenter's defaults, applied on import when a field is absent (as the API server would).
NODEPOOL_DEFAULTS: dict[str, Any] = {
    "template_labels": {}, "template_annotations": {}, "taints": [], "startup_taints": [],
    "requirements": [], "expire_after": "720h", "termination_grace_period": "",
    "consolidation_policy": "WhenEmptyOrUnderutilized", "consolidate_after": "0s",
    "budgets": [{"nodes": "10%"}], "limits": {}, "weight": None,
}
NODECLASS_DEFAULTS: dict[str, Any] = {
    "ami_family": "", "ami_selector_terms": [], "subnet_selector_terms": [],
    "security_group_selector_terms": [], "role": "", "instance_profile": "", "tags": {},
    "block_device_mappings": [], "kubelet": {}, "metadata_options": {}, "user_data": "",
}
_EMPTY = (None, "", [], {})


def field_path(kind: str, field: str) -> str:
    paths = NODEPOOL_PATHS if kind == NODEPOOL_KIND else NODECLASS_PATHS
    return ".".join(paths.get(field, (field,)))


def _put(doc: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = doc
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = copy.deepcopy(value)


def _get(doc: Mapping[str, Any], path: tuple[str, ...]) -> tuple[bool, Any, str | None]:
    """(found, value, error) — error names the path element that is not a mapping."""
    node: Any = doc
    for depth, key in enumerate(path):
        if node is None:
            return False, None, None
        if not isinstance(node, Mapping):
            return False, None, f"{'.'.join(path[:depth])} must be a mapping"
        if key not in node:
            return False, None, None
        node = node[key]
    return True, node, None


def nodepool_to_manifest(values: Mapping[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = {"apiVersion": NODEPOOL_API_VERSION, "kind": NODEPOOL_KIND, "metadata": {}, "spec": {}}
    for field, path in NODEPOOL_PATHS.items():
        value = values.get(field)
        if field == "node_class_name":
            _put(doc, path[:-1], {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": value})
            continue
        if value in _EMPTY and field not in ("name", "budgets"):
            continue
        _put(doc, path, value)
    return doc


def nodeclass_to_manifest(values: Mapping[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = {"apiVersion": NODECLASS_API_VERSION, "kind": NODECLASS_KIND, "metadata": {}, "spec": {}}
    for field, path in NODECLASS_PATHS.items():
        value = values.get(field)
        if value in _EMPTY and field != "name":
            continue
        _put(doc, path, value)
    return doc


def _known_paths(paths: Mapping[str, tuple[str, ...]], extra: tuple[tuple[str, ...], ...]) -> set[tuple[str, ...]]:
    known: set[tuple[str, ...]] = set(extra)
    for path in paths.values():
        for i in range(1, len(path) + 1):
            known.add(path[:i])
    return known


# Parts of a manifest we accept and ignore: server-set metadata and status.
_IGNORED_TOP = {"status"}
_IGNORED_METADATA = {"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
                     "annotations", "labels", "finalizers", "namespace", "selfLink", "deletionTimestamp",
                     "deletionGracePeriodSeconds", "ownerReferences"}


def _unknown_fields(doc: Mapping[str, Any], known: set[tuple[str, ...]], leaves: set[tuple[str, ...]]) -> list[str]:
    """Paths present in the document that Karpenter's schema does not define (typos, mostly)."""
    unknown: list[str] = []

    def walk(node: Any, prefix: tuple[str, ...]) -> None:
        if not isinstance(node, Mapping) or prefix in leaves:
            return
        for key, child in node.items():
            path = (*prefix, str(key))
            if not prefix and key in ("apiVersion", "kind", *_IGNORED_TOP):
                continue
            if prefix == ("metadata",) and key in _IGNORED_METADATA:
                continue
            if path not in known:
                unknown.append(".".join(path))
                continue
            walk(child, path)

    walk(doc, ())
    return unknown


def fields_from_manifest(doc: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Read a NodePool or EC2NodeClass manifest into model-field values.

    Returns the values and a list of (yaml path, message) for structural problems; field values
    themselves are validated afterwards by the model, whose errors map back through FIELD_PATHS.
    """
    kind = doc.get("kind")
    paths = NODEPOOL_PATHS if kind == NODEPOOL_KIND else NODECLASS_PATHS
    defaults = NODEPOOL_DEFAULTS if kind == NODEPOOL_KIND else NODECLASS_DEFAULTS
    problems: list[tuple[str, str]] = []
    values: dict[str, Any] = {}
    for field, path in paths.items():
        if kind == NODEPOOL_KIND and field == "node_class_name":
            found, ref, err = _get(doc, path[:-1])
            if err:
                problems.append((".".join(path[:-1]), err))
                continue
            if not found or not isinstance(ref, Mapping):
                problems.append((".".join(path[:-1]), "nodeClassRef with group, kind and name is required"))
                continue
            if ref.get("group") != "karpenter.k8s.aws" or ref.get("kind") != "EC2NodeClass":
                problems.append((".".join(path[:-1]),
                                 f"must reference group karpenter.k8s.aws, kind EC2NodeClass "
                                 f"(got group {ref.get('group')!r}, kind {ref.get('kind')!r})"))
            values[field] = ref.get("name")
            continue
        found, value, err = _get(doc, path)
        if err:
            problems.append((".".join(path), err))
            continue
        if not found or value is None:
            if field == "name":
                problems.append(("metadata.name", "is required"))
            values[field] = copy.deepcopy(defaults.get(field))
        else:
            values[field] = copy.deepcopy(value)
    leaves = set(paths.values())
    extra: tuple[tuple[str, ...], ...] = ()
    if kind == NODEPOOL_KIND:
        leaves.discard(NODEPOOL_PATHS["node_class_name"])
        leaves.add(NODEPOOL_PATHS["node_class_name"][:-1])
        extra = (("spec", "template", "spec", "nodeClassRef"),)
    for path in _unknown_fields(doc, _known_paths(paths, extra), leaves):
        problems.append((path, "unknown field (not in the Karpenter v1 schema)"))
    if kind == NODEPOOL_KIND and isinstance(values.get("weight"), float) and values["weight"].is_integer():
        values["weight"] = int(values["weight"])
    return values, problems


def flatten(doc: Any, prefix: str = "") -> dict[str, Any]:
    """Leaf paths of a manifest, lists kept whole: the granularity of the change history."""
    if isinstance(doc, Mapping) and doc:
        out: dict[str, Any] = {}
        for key, value in doc.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: doc}


def diff_manifests(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> dict[str, list[Any]]:
    old, new = flatten(before or {}), flatten(after or {})
    return {path: [old.get(path), new.get(path)]
            for path in sorted(set(old) | set(new))
            if old.get(path) != new.get(path) and path not in ("apiVersion", "kind")}
