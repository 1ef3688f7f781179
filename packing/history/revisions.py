"""The NodePool and EC2NodeClass manifests of a history's Revision events, checked by the engine's own readers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packing.disruption.inputs import Extras, read_extras
from packing.fields import FieldError
from packing.history.events import ManifestKind
from packing.kubeobjects import Inputs, add_object
from packing.yamlinput import brief

__all__ = ["API_VERSIONS", "check_manifest", "manifest_identity"]

API_VERSIONS = {ManifestKind.NODEPOOL: "karpenter.sh/v1", ManifestKind.NODECLASS: "karpenter.k8s.aws/v1"}


def manifest_identity(doc: Mapping[str, Any]) -> tuple[ManifestKind, str] | None:
    """(kind, name) of a NodePool or EC2NodeClass object, None for any other object."""
    api = str(doc.get("apiVersion", ""))
    group = api.rsplit("/", 1)[0] if "/" in api else ""
    for kind, version in API_VERSIONS.items():
        if doc.get("kind") == kind.value and group == version.rsplit("/", 1)[0]:
            meta = doc.get("metadata")
            name = meta.get("name") if isinstance(meta, Mapping) else None
            return (kind, str(name)) if name else None
    return None


def check_manifest(doc: Mapping[str, Any], kind: ManifestKind, name: str, path: str) -> None:
    """FieldError (its path after `path`) unless `doc` is a `kind` named `name` that the engine reads."""
    if doc.get("apiVersion") != API_VERSIONS[kind]:
        raise FieldError(f"{path}.apiVersion", f"must be {API_VERSIONS[kind]}, got {brief(doc.get('apiVersion'))}")
    if doc.get("kind") != kind.value:
        raise FieldError(f"{path}.kind", f"must be {kind.value} (the line's kind), got {brief(doc.get('kind'))}")
    meta = doc.get("metadata")
    if not isinstance(meta, Mapping) or meta.get("name") != name:
        got = meta.get("name") if isinstance(meta, Mapping) else None
        raise FieldError(f"{path}.metadata.name", f"must be {brief(name)} (the line's name), got {brief(got)}")
    try:
        add_object(doc, Inputs())
        read_extras(doc, Extras())
    except FieldError as e:
        raise FieldError(f"{path}.{e.path}", e.message) from None
