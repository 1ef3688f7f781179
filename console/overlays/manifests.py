"""Conversion between NodeOverlay rows and their manifests (karpenter.sh/v1alpha1 NodeOverlay).

Import reads a manifest as the API server would: fields outside the v1alpha1 spec refused with their path,
metadata other than the name (and the Loadmaster note annotation), and status, ignored. Export writes every stored
field, so an export imports back to the very same row. The field rules are the engine's (packing.api.read_overlay),
run by the model's clean().
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packing.api import NODEOVERLAY_API_VERSION, NODEOVERLAY_KIND, brief

API_VERSION = NODEOVERLAY_API_VERSION
KIND = NODEOVERLAY_KIND
NOTE_ANNOTATION = "loadmaster.dev/note"  # the operator's own words (e.g. "Compute Savings Plan, 3 years")

# model field -> the manifest path it is stored at (the path errors name), in the manifest's key order
PATHS: dict[str, str] = {
    "name": "metadata.name",
    "note": f"metadata.annotations.{NOTE_ANNOTATION}",
    "requirements": "spec.requirements",
    "price": "spec.price",
    "price_adjustment": "spec.priceAdjustment",
    "capacity": "spec.capacity",
    "weight": "spec.weight",
}
FIELDS = tuple(PATHS)
_SPEC_KEYS = {"requirements", "price", "priceAdjustment", "capacity", "weight"}


def field_for_path(path: str) -> str:
    """The model field an error at manifest `path` belongs to ("__all__" for the spec as a whole)."""
    for field, p in PATHS.items():
        if path == p or path.startswith(p + ".") or path.startswith(p + "["):
            return field
    return "__all__"


def to_manifest(values: Mapping[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if values.get("requirements"):
        spec["requirements"] = [dict(r) for r in values["requirements"]]
    if values.get("price") not in (None, ""):
        spec["price"] = values["price"]
    if values.get("price_adjustment") not in (None, ""):
        spec["priceAdjustment"] = values["price_adjustment"]
    if values.get("capacity"):
        spec["capacity"] = dict(values["capacity"])
    if values.get("weight") is not None:
        spec["weight"] = values["weight"]
    meta: dict[str, Any] = {"name": values.get("name") or ""}
    if values.get("note"):
        meta["annotations"] = {NOTE_ANNOTATION: values["note"]}
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": meta, "spec": spec}


def _int(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _text(value: Any) -> Any:
    """A string field YAML may have read as a number (price: 0.25): kept as the text it was written as."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    return str(value)


def fields_from_manifest(doc: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Model-field values of a NodeOverlay manifest and the structural problems (path, message): missing name or
    spec, wrong shapes, fields outside the schema. Values are checked by the model afterwards."""
    meta = doc.get("metadata")
    if not isinstance(meta, Mapping):
        return {}, [("metadata", "metadata with a name is required")]
    spec = doc.get("spec")
    if spec is None:
        return {}, [("spec", "spec is required")]
    if not isinstance(spec, Mapping):
        return {}, [("spec", f"must be a mapping, got {brief(spec)}")]
    problems: list[tuple[str, str]] = []
    for key in sorted(set(map(str, spec)) - _SPEC_KEYS):
        problems.append((f"spec.{key}", "unknown field (not in the NodeOverlay v1alpha1 schema)"))
    annotations = meta.get("annotations")
    note = annotations.get(NOTE_ANNOTATION, "") if isinstance(annotations, Mapping) else ""
    values: dict[str, Any] = {
        "name": meta.get("name"),
        "note": note if isinstance(note, str) else str(note),
        "requirements": spec.get("requirements") or [],
        "price": _text(spec.get("price")) if spec.get("price") is not None else "",
        "price_adjustment": _text(spec.get("priceAdjustment")) if spec.get("priceAdjustment") is not None else "",
        "capacity": spec.get("capacity") or {},
        "weight": _int(spec.get("weight")),
    }
    if not isinstance(values["name"], str) or not values["name"]:
        problems.append(("metadata.name", "name is required"))
    if not isinstance(values["requirements"], list):
        problems.append(("spec.requirements", f"must be a list, got {brief(values['requirements'])}"))
    elif not all(isinstance(r, Mapping) for r in values["requirements"]):
        problems.append(("spec.requirements", "every requirement must be a mapping with key, operator and values"))
    else:
        values["requirements"] = [_requirement(r) for r in values["requirements"]]
    for key in ("price", "price_adjustment"):
        if not isinstance(values[key], str):
            problems.append((PATHS[key], f"must be a string, got {brief(values[key])}"))
    capacity = values["capacity"]
    if not isinstance(capacity, Mapping):
        problems.append(("spec.capacity", f"must be a mapping of resource quantities, got {brief(capacity)}"))
    else:
        values["capacity"] = {str(k): v if isinstance(v, str) else str(_int(v)) for k, v in capacity.items()}
    weight = values["weight"]
    if weight is not None and (isinstance(weight, bool) or not isinstance(weight, int)):
        problems.append(("spec.weight", f"must be an integer, got {brief(weight)}"))
    return values, problems


def _requirement(r: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"key": r.get("key"), "operator": r.get("operator")}
    if r.get("values") is not None:
        vals = r["values"]
        out["values"] = [v if isinstance(v, str) else str(_int(v)) for v in vals] if isinstance(vals, list) else vals
    return out
