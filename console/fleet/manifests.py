"""Conversion between fleet rows and Karpenter v1 manifests (the YAML operators already write).

Each model field maps to one path in the manifest (the field table, fieldtable.py, gives NODEPOOL_PATHS
and NODECLASS_PATHS, the CRD defaults and each field's kind); import, export, the change history and
error messages all use that one table, so
"spec.template.spec.requirements[1].values" means the same thing in an import error, a history
entry and ``kubectl explain``.

Import reads a manifest the way the API server would: absent fields get the CRD's defaults,
required ones must be there, fields outside the v1 schema are refused with their path; the name,
labels and annotations of metadata are kept, the server-set rest of it and status are ignored. Export writes what Karpenter accepts and
what imports back to the very same field values.

Two deliberate choices keep that round trip exact:

* ``metadataOptions`` is stored as written; an absent block (or an absent key inside it) means
  Karpenter's default (httpEndpoint enabled, httpProtocolIPv6 disabled, hop limit 1, httpTokens
  required), which Karpenter itself fills in when the export is applied. The forms use the same
  convention ("(default: enabled)").
* ``budgets: []`` (no budget: disruption unlimited) is exported explicitly, because an absent
  ``budgets`` means the default ``[{nodes: 10%}]``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from console.fleet import fieldtable
from packing import api
from packing.api import BUDGET_NODES_DEFAULT, brief

NODEPOOL_API_VERSION = "karpenter.sh/v1"
NODECLASS_API_VERSION = "karpenter.k8s.aws/v1"
NODEPOOL_KIND = "NodePool"
NODECLASS_KIND = "EC2NodeClass"
NODECLASS_GROUP = "karpenter.k8s.aws"

NODEPOOL_PATHS: dict[str, tuple[str, ...]] = fieldtable.paths(fieldtable.NODEPOOL_FIELDS)
NODECLASS_PATHS: dict[str, tuple[str, ...]] = fieldtable.paths(fieldtable.NODECLASS_FIELDS)
# Karpenter's CRD defaults, applied on import when a field is absent (as the API server would).
# Fields without one (the name, nodeClassRef) must be in the manifest.
NODEPOOL_DEFAULTS: dict[str, Any] = fieldtable.defaults(fieldtable.NODEPOOL_FIELDS)
NODECLASS_DEFAULTS: dict[str, Any] = fieldtable.defaults(fieldtable.NODECLASS_FIELDS)
_SPECS = {NODEPOOL_KIND: fieldtable.NODEPOOL, NODECLASS_KIND: fieldtable.NODECLASS}
# Fields whose absence the API server refuses (the CRD's "required" lists): the parents of the table's
# fields here, the fields themselves marked in the table.
_REQUIRED_PARENTS: dict[str, dict[tuple[str, ...], str]] = {
    NODEPOOL_KIND: {("spec",): "spec is required", ("spec", "template"): "template is required",
                    ("spec", "template", "spec"): "template spec is required"},
    NODECLASS_KIND: {("spec",): "spec is required"},
}


def _required(kind: str) -> dict[tuple[str, ...], str]:
    required = dict(_REQUIRED_PARENTS[kind])
    for spec in _SPECS[kind].values():
        if spec.crd_required:
            hint = f" ({spec.required_hint})" if spec.required_hint else ""
            required[spec.path] = f"{spec.path[-1]} is required{hint}"
    return required


_REQUIRED = {kind: _required(kind) for kind in (NODEPOOL_KIND, NODECLASS_KIND)}
# Fields of the Karpenter v1beta1 schema that moved in v1: refused with a message that says where to.
_KNOWN_ELSEWHERE: dict[str, dict[str, str]] = {
    NODEPOOL_KIND: {
        "spec.template.spec.kubelet": "kubelet moved to the EC2NodeClass (spec.kubelet) in Karpenter v1",
        "spec.disruption.expireAfter": "expireAfter moved to spec.template.spec.expireAfter in Karpenter v1",
        "spec.template.spec.resources": "resources cannot be set in a NodePool template",
    },
    NODECLASS_KIND: {},
}
# Lists and mappings that an absent field is stored as []/{} for, but whose explicit []/{} the CRD refuses (a
# CEL rule fails on it).
_EMPTY_REFUSED: dict[str, dict[tuple[str, ...], str]] = {
    NODEPOOL_KIND: {},
    NODECLASS_KIND: {("spec", "capacityReservationSelectorTerms"):
                     "may not be empty (Karpenter's CRD refuses []): leave capacityReservationSelectorTerms out",
                     ("spec", "connectionTracking"):
                     "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set",
                     ("spec", "placementGroupSelector"): "expected at least one, got none, ['name', 'id']"},
}


def field_path(kind: str, field: str) -> str:
    paths = NODEPOOL_PATHS if kind == NODEPOOL_KIND else NODECLASS_PATHS
    return ".".join(paths.get(field, (field,)))


def _put(doc: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = doc
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = copy.deepcopy(value)


def _get(doc: Mapping[str, Any], path: tuple[str, ...]) -> tuple[bool, Any, str | None]:
    """(found, value, error) -- error names the path element that is not a mapping."""
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


# --- export -----------------------------------------------------------------------------------------

# Key order of list items in an export, as Karpenter's documentation writes them (the table's item_keys).
# PostgreSQL's jsonb does not keep key order, so without this an export would read differently per database.
_ITEM_KEY_ORDER: dict[str, tuple[str, ...]] = {
    spec.name: spec.item_keys for specs in _SPECS.values() for spec in specs.values() if spec.item_keys}


def _ordered(field: str, value: Any, spec: fieldtable.FieldSpec | None = None) -> Any:
    if spec is not None and spec.parts and isinstance(value, Mapping):
        # a mapping edited in parts is written in the parts' order (PostgreSQL's jsonb keeps no key order)
        keys = [p.key for p in spec.parts]
        return {**{k: value[k] for k in keys if k in value}, **{k: v for k, v in value.items() if k not in keys}}
    order = _ITEM_KEY_ORDER.get(field)
    if order is None or not isinstance(value, list):
        return value
    return [{**{k: item[k] for k in order if k in item}, **{k: v for k, v in item.items() if k not in order}}
            if isinstance(item, Mapping) else item for item in value]


def _to_manifest(kind: str, api_version: str, values: Mapping[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": {}, "spec": {}}
    for spec in _SPECS[kind].values():
        value = values.get(spec.name)
        if spec.kind is fieldtable.Kind.REFERENCE:  # nodeClassRef: the reference's group and kind are fixed
            _put(doc, spec.path[:-1], {"group": NODECLASS_GROUP, "kind": NODECLASS_KIND, "name": value})
            continue
        if spec.export_empty:
            _put(doc, spec.path, [] if value is None and spec.kind is not fieldtable.Kind.NAME
                 else _ordered(spec.name, value))
            continue
        if value is None or value == "" or value == [] or value == {}:
            continue
        _put(doc, spec.path, _ordered(spec.name, value, spec))
    return doc


def nodepool_to_manifest(values: Mapping[str, Any]) -> dict[str, Any]:
    return _to_manifest(NODEPOOL_KIND, NODEPOOL_API_VERSION, values)


def nodeclass_to_manifest(values: Mapping[str, Any]) -> dict[str, Any]:
    return _to_manifest(NODECLASS_KIND, NODECLASS_API_VERSION, values)


# --- YAML dialect -----------------------------------------------------------------------------------

def load_yaml_documents(text: str) -> list[Any]:
    """All documents of a YAML stream, read by packing.yamlinput as kubectl reads YAML (timestamps stay strings,
    keys are strings, a key given twice is an error) and bounded (aliases, nesting, tags: see that module).
    Raises yaml.YAMLError (with problem and problem_mark) when malformed or refused."""
    return list(api.load_all(text))


class _Dumper(yaml.SafeDumper):
    pass


# Strings that Go's YAML 1.1 reader (kubectl, sigs.k8s.io/yaml) would take for a bool or a number
# although PyYAML writes them bare: quote them so "y" stays a label value and "1e3" stays a string.
_GO_AMBIGUOUS = re.compile(r"^([yYnN]|[-+]?([0-9][0-9_]*)?\.?[0-9_]*[eE][-+]?[0-9]+|0[xXoObB][0-9a-fA-F_]+)$")


def _represent_str(dumper: _Dumper, value: str) -> yaml.ScalarNode:
    # YAML 1.1 line breaks other than \n: written raw, libyaml (the reader) folds them; escaped in double quotes
    if _GO_AMBIGUOUS.match(value) or any(c in value for c in "\x85\u2028\u2029"):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_str(value)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(docs: list[dict[str, Any]]) -> str:
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                         explicit_start=True, allow_unicode=True)


# --- import -----------------------------------------------------------------------------------------

def _known_paths(paths: Mapping[str, tuple[str, ...]], extra: tuple[tuple[str, ...], ...]) -> set[tuple[str, ...]]:
    known: set[tuple[str, ...]] = set(extra)
    for path in paths.values():
        for i in range(1, len(path) + 1):
            known.add(path[:i])
    return known


# Parts of a manifest we accept and ignore: server-set or cluster-side metadata, and status.
_IGNORED_TOP = {"apiVersion", "kind", "status"}
_IGNORED_METADATA = {"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "finalizers", "namespace", "selfLink", "deletionTimestamp",
                     "deletionGracePeriodSeconds", "ownerReferences", "generateName"}
_NODECLASS_REF = fieldtable.NODEPOOL["node_class_name"].path[:-1]  # ("spec", "template", "spec", "nodeClassRef")


def _unknown_fields(doc: Mapping[str, Any], known: set[tuple[str, ...]], leaves: set[tuple[str, ...]]) -> list[str]:
    """Paths present in the document that Karpenter's schema does not define (typos, mostly)."""
    unknown: list[str] = []

    def walk(node: Any, prefix: tuple[str, ...]) -> None:
        if not isinstance(node, Mapping) or prefix in leaves:
            return
        for key, child in node.items():
            path = (*prefix, str(key))
            if not prefix and key in _IGNORED_TOP:
                continue
            if prefix == ("metadata",) and key in _IGNORED_METADATA:
                continue
            if path not in known:
                unknown.append(".".join(p if len(p) <= 60 else p[:59] + "…" for p in path))
                continue
            walk(child, path)

    walk(doc, ())
    return unknown


def _node_class_ref(doc: Mapping[str, Any], problems: list[tuple[str, str]]) -> Any:
    where = ".".join(_NODECLASS_REF)
    found, ref, err = _get(doc, _NODECLASS_REF)
    if err:
        return None  # reported by the caller for the enclosing path
    if not found or ref is None:
        if not isinstance(_get(doc, _NODECLASS_REF[:-1])[1], Mapping):
            return None  # the missing template spec is reported instead
        problems.append((where, "nodeClassRef is required: group karpenter.k8s.aws, kind EC2NodeClass, name"))
        return None
    if not isinstance(ref, Mapping):
        problems.append((where, "must be a mapping with group, kind and name"))
        return None
    for key in sorted(set(map(str, ref)) - {"group", "kind", "name"}):
        hint = " (v1 uses group instead of apiVersion)" if key == "apiVersion" else ""
        problems.append((f"{where}.{key if len(key) <= 60 else key[:59] + '…'}", f"unknown field{hint}"))
    for key in ("group", "kind", "name"):
        if ref.get(key) in (None, ""):
            problems.append((f"{where}.{key}", f"{key} may not be empty"))
        elif not isinstance(ref[key], str):
            problems.append((f"{where}.{key}", "must be a string"))
    if ref.get("group") not in (None, "", NODECLASS_GROUP):
        problems.append((f"{where}.group", f"must be {NODECLASS_GROUP} (got {brief(ref.get('group'))})"))
    if ref.get("kind") not in (None, "", NODECLASS_KIND):
        problems.append((f"{where}.kind", f"must be {NODECLASS_KIND} (got {brief(ref.get('kind'))})"))
    return ref.get("name")


def _integral_floats_to_ints(value: Any) -> Any:
    """10.0 -> 10 throughout, as the API server's schema validation counts 10.0 as an integer."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_integral_floats_to_ints(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _integral_floats_to_ints(v) for k, v in value.items()}
    return value


def fields_from_manifest(doc: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Read a NodePool or EC2NodeClass manifest into model-field values.

    Returns the values and a list of (yaml path, message) for structural problems: missing required
    parts, wrong types of scalar fields, fields outside the v1 schema. Field values themselves are
    validated afterwards by the model (validation.py), whose errors map back through the path tables.
    """
    kind = doc.get("kind")
    nodepool = kind == NODEPOOL_KIND
    specs = _SPECS[NODEPOOL_KIND if nodepool else NODECLASS_KIND]
    paths = NODEPOOL_PATHS if nodepool else NODECLASS_PATHS
    problems: list[tuple[str, str]] = []
    values: dict[str, Any] = {}

    for path, message in _REQUIRED[NODEPOOL_KIND if nodepool else NODECLASS_KIND].items():
        found, value, err = _get(doc, path)
        parent_ok = all(_get(doc, path[:i])[1] is not None for i in range(1, len(path)))
        if not err and parent_ok and (not found or value is None):
            problems.append((".".join(path), message))

    for field, spec in specs.items():
        if spec.kind is fieldtable.Kind.REFERENCE:
            values[field] = _node_class_ref(doc, problems)
            continue
        found, value, err = _get(doc, spec.path)
        if err:
            where, message = err.split(" ", 1)
            if (where, message) not in problems:
                problems.append((where, message))
            continue
        if not found or value is None:
            if not spec.has_default:
                problems.append((spec.yaml_path, f"{spec.path[-1]} is required"))
            values[field] = spec.fresh_default() if spec.has_default else None
            continue
        # Only the empty value of the field's own type ([] for a list): another type is refused as such below.
        if value == spec.default and value in ([], {}) and spec.path in _EMPTY_REFUSED[NODEPOOL_KIND if nodepool else NODECLASS_KIND]:
            problems.append((spec.yaml_path, _EMPTY_REFUSED[NODEPOOL_KIND if nodepool else NODECLASS_KIND][spec.path]))
            continue
        if spec.kind in fieldtable.STRING_KINDS and not isinstance(value, str):
            problems.append((spec.yaml_path, f"must be a string, got {brief(value)}"))
            continue
        value = _integral_floats_to_ints(value)
        if spec.kind is fieldtable.Kind.INT and (not isinstance(value, int) or isinstance(value, bool)):
            span = f" from {spec.int_range[0]} to {spec.int_range[1]}" if spec.int_range else ""
            problems.append((spec.yaml_path, f"must be an integer{span}, got {brief(value)}"))
            continue
        values[field] = copy.deepcopy(value)

    # a field kept inside another field's mapping (an annotation edited on its own) is taken out of that mapping
    for spec in specs.values():
        for parent in specs.values():
            if parent.path == spec.path[:-1] and isinstance(values.get(parent.name), dict):
                values[parent.name].pop(spec.path[-1], None)

    if nodepool:
        found, disruption, _ = _get(doc, ("spec", "disruption"))
        if found and isinstance(disruption, Mapping) and disruption.get("consolidateAfter") is None:
            # The disruption block's default ({consolidateAfter: 0s}) only applies when the block is absent.
            problems.append(("spec.disruption.consolidateAfter", "consolidateAfter is required when disruption is set "
                                                                 "(e.g. '0s', '5m' or 'Never')"))
        budgets = values.get("budgets")
        if isinstance(budgets, list):  # the CRD defaults a budget's nodes to 10%
            values["budgets"] = [
                {"nodes": BUDGET_NODES_DEFAULT, **{k: v for k, v in b.items() if k != "nodes"}}
                if isinstance(b, Mapping) and b.get("nodes") is None else b
                for b in budgets]

    leaves = set(paths.values())
    extra: tuple[tuple[str, ...], ...] = ()
    if nodepool:
        leaves.discard(NODEPOOL_PATHS["node_class_name"])
        leaves.add(_NODECLASS_REF)
        extra = (_NODECLASS_REF,)
    hints = _KNOWN_ELSEWHERE[NODEPOOL_KIND if nodepool else NODECLASS_KIND]
    for unknown in _unknown_fields(doc, _known_paths(paths, extra), leaves):
        problems.append((unknown, hints.get(unknown, "unknown field (not in the Karpenter v1 schema)")))
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


# --- legacy objects (Karpenter v1alpha5 / v1beta1), converted on import with ?convert=1 ---------------------------

LEGACY_HINT = ("a legacy Karpenter object: import with conversion (?convert=1, or the import page's "
               "'Convert legacy objects' box) or convert it first with `python -m packing convert`")


def is_legacy(doc: Any) -> bool:
    """A karpenter.sh/v1alpha5 Provisioner, karpenter.k8s.aws/v1alpha1 AWSNodeTemplate, or a v1beta1 NodePool or
    EC2NodeClass: what the import converts to v1 when asked to."""
    return isinstance(doc, Mapping) and api.is_legacy(doc)


def legacy_problem(doc: Mapping[str, Any]) -> str:
    """The import's message for a legacy object it was not asked to convert."""
    kind, version = str(doc.get("kind"))[:60], str(doc.get("apiVersion"))[:60]
    expected = NODEPOOL_API_VERSION if version.startswith("karpenter.sh/") else NODECLASS_API_VERSION
    return f"unsupported apiVersion {version!r} for {kind}; expected {expected} ({LEGACY_HINT})"


def convert_documents(
    docs: Sequence[tuple[Any, Any]],
) -> tuple[list[tuple[Any, Any]], list[dict[str, Any]], list[tuple[Any, str, str]]]:
    """Documents (tag, document), each tag distinct and hashable, with the legacy ones converted to v1 (each v1 object keeps its document's tag;
    kubelet settings placed in the EC2NodeClasses, packing.legacy): (documents, the report as JSON entries,
    problems (tag, path, message) of the legacy documents that could not be converted)."""
    mappings = [(tag, doc) for tag, doc in docs if isinstance(doc, Mapping)]
    done = api.convert_tagged(mappings)
    converted = iter(done.objects)
    out: list[tuple[Any, Any]] = []
    pending = next(converted, None)
    failed = {tag for tag, _ in done.problems}
    for tag, doc in docs:
        if not isinstance(doc, Mapping):
            out.append((tag, doc))
            continue
        if tag in failed:
            continue
        while pending is not None and pending[0] == tag:
            out.append(pending)
            pending = next(converted, None)
    return out, [c.to_json() for c in done.report], [(tag, e.path, e.message) for tag, e in done.problems]
