"""Conversion between Commitment rows and their documents (loadmaster.dev/v1alpha1 Commitment, docs/commitments.md).

Import reads a document as the engine does, fields outside the spec refused with their path; where a row came
from (its source and external id, e.g. an AWS Reserved Instances id) and the operator's note travel as
annotations, so an export imports back to the very same row. The field rules are the engine's
(packing.api.read_commitment), run by the model's clean().
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from packing.api import COMMITMENT_API_VERSION, COMMITMENT_KIND, brief, read_commitment

API_VERSION = COMMITMENT_API_VERSION
KIND = COMMITMENT_KIND
SOURCE_ANNOTATION = "loadmaster.dev/source"
EXTERNAL_ID_ANNOTATION = "loadmaster.dev/external-id"
NOTE_ANNOTATION = "loadmaster.dev/note"
CONSOLE_SOURCE = "console"  # recorded by an operator (form, API, import)

# model field -> the document path it is stored at (the path errors name), in the document's key order
PATHS: dict[str, str] = {
    "name": "metadata.name",
    "source": f"metadata.annotations.{SOURCE_ANNOTATION}",
    "external_id": f"metadata.annotations.{EXTERNAL_ID_ANNOTATION}",
    "note": f"metadata.annotations.{NOTE_ANNOTATION}",
    "type": "spec.type",
    "instance_type": "spec.instanceType",
    "instance_family": "spec.instanceFamily",
    "zone": "spec.zone",
    "region": "spec.region",
    "count": "spec.count",
    "hourly_commitment": "spec.hourlyCommitment",
    "rates": "spec.rates",
    "starts": "spec.starts",
    "ends": "spec.ends",
}
FIELDS = tuple(PATHS)
_SPEC = {p.removeprefix("spec."): f for f, p in PATHS.items() if p.startswith("spec.")}


def field_for_path(path: str) -> str:
    for field, p in PATHS.items():
        if path == p or path.startswith(p + "."):
            return field
    return "__all__"


def _decimal(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return text


def _time(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def to_manifest(values: Mapping[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": values.get("type") or ""}
    for key in ("instanceType", "instanceFamily", "zone", "region"):
        if values.get(_SPEC[key]):
            spec[key] = values[_SPEC[key]]
    if values.get("count") is not None:
        spec["count"] = values["count"]
    hourly = values.get("hourly_commitment")
    if hourly is not None:
        spec["hourlyCommitment"] = _decimal(hourly) if isinstance(hourly, Decimal) else str(hourly)
    if values.get("rates"):
        spec["rates"] = {str(k): str(v) for k, v in sorted(dict(values["rates"]).items())}
    for key in ("starts", "ends"):
        t = values.get(key)
        if t is not None:
            spec[key] = _time(t) if isinstance(t, datetime) else str(t)
    annotations = {}
    if values.get("source") and values.get("source") != CONSOLE_SOURCE:
        annotations[SOURCE_ANNOTATION] = values["source"]
    if values.get("external_id"):
        annotations[EXTERNAL_ID_ANNOTATION] = values["external_id"]
    if values.get("note"):
        annotations[NOTE_ANNOTATION] = values["note"]
    meta: dict[str, Any] = {"name": values.get("name") or ""}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": meta, "spec": spec}


def fields_from_manifest(doc: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Model-field values of a Commitment document and its problems (path, message). The document is read by the
    engine's reader first (every rule at its field), then turned into the row's values."""
    meta = doc.get("metadata")
    if not isinstance(meta, Mapping):
        return {}, [("metadata", "metadata with a name is required")]
    try:
        parsed = read_commitment(doc)
    except ValueError as exc:  # packing.api.FieldError
        return {}, [(getattr(exc, "path", ""), getattr(exc, "message", str(exc)))]
    spec = doc["spec"]
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), Mapping) else {}
    assert isinstance(annotations, Mapping)
    values: dict[str, Any] = {
        "name": meta.get("name"),
        "source": str(annotations.get(SOURCE_ANNOTATION) or CONSOLE_SOURCE),
        "external_id": str(annotations.get(EXTERNAL_ID_ANNOTATION) or ""),
        "note": str(annotations.get(NOTE_ANNOTATION) or ""),
    }
    for key, field in _SPEC.items():
        v = spec.get(key)
        if field in ("instance_type", "instance_family", "zone", "region", "type"):
            values[field] = "" if v is None else str(v)
        elif field == "count":
            values[field] = None if v is None else int(v)
        elif field == "hourly_commitment":
            try:
                values[field] = None if v is None else Decimal(str(v))
            except InvalidOperation:
                return {}, [("spec.hourlyCommitment", f"must be a decimal number, got {brief(v)}")]
        elif field == "rates":
            values[field] = {str(k): str(r) for k, r in (v or {}).items()}
        else:  # starts, ends: as the engine read them (aware datetimes)
            values[field] = getattr(parsed, field)
    return values, []
