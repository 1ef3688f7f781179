"""Fixes as RFC 7386 JSON merge patches on an object's manifest, shown as YAML and as a unified diff."""

from __future__ import annotations

import copy
import difflib
from collections.abc import Mapping
from typing import Any

import yaml

from packing.advisor.finding import Fix

__all__ = ["make_fix", "merge_patch", "to_yaml"]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: an object patch merges key by key (null deletes the key), anything else replaces the target
    whole (lists included). Neither argument is changed."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    out: dict[str, Any] = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def to_yaml(doc: Any) -> str:
    return str(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, allow_unicode=True))


def _plain(value: Any) -> Any:
    """The manifest as plain dicts and lists (the readers may hand out other Mappings)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def make_fix(kind: str, name: str, manifest: Mapping[str, Any], patch: Mapping[str, Any]) -> Fix:
    before = _plain(manifest)
    after = merge_patch(before, patch)
    label = f"{kind.lower()}/{name}"
    diff = "".join(
        difflib.unified_diff(
            to_yaml(before).splitlines(keepends=True),
            to_yaml(after).splitlines(keepends=True),
            fromfile=f"a/{label}",
            tofile=f"b/{label}",
        )
    )
    return Fix(kind, name, _plain(patch), to_yaml(_plain(patch)), diff)
