"""Converting the legacy objects of an input as a whole: each object by its kind's converter, then the kubelet
settings placed in the EC2NodeClasses (v1 keeps them there, not in the NodePool), and the hook through which
`plan` and `consolidate` read legacy objects as their v1 successors.

Kubelet placement, as Karpenter's v1 upgrade guide asks: when every NodePool that references a class carries the
same kubelet settings, they go into that class; when they differ (or some pools have none), each pool with
settings gets its own copy of the class (`<class>-<pool>`) holding them, so no pool's nodes change.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packing.fields import FieldError, InputError
from packing.legacy.classes import awsnodetemplate, ec2nodeclass_v1beta1
from packing.legacy.common import Converted, KubeletMove
from packing.legacy.pools import nodepool_v1beta1, provisioner
from packing.legacy.report import Action, Change

__all__ = [
    "LEGACY_KINDS",
    "Conversion",
    "Tagged",
    "convert_object",
    "convert_objects",
    "convert_tagged",
    "is_legacy",
    "legacy_objects",
]

# (apiVersion, kind) of the objects converted, each with its converter
LEGACY_KINDS: dict[tuple[str, str], Callable[[Mapping[str, Any]], Converted]] = {
    ("karpenter.sh/v1alpha5", "Provisioner"): provisioner,
    ("karpenter.k8s.aws/v1alpha1", "AWSNodeTemplate"): awsnodetemplate,
    ("karpenter.sh/v1beta1", "NodePool"): nodepool_v1beta1,
    ("karpenter.k8s.aws/v1beta1", "EC2NodeClass"): ec2nodeclass_v1beta1,
}
MAX_NAME = 253  # a Kubernetes object name (DNS subdomain)
_LEGACY_KIND_NAMES = frozenset(kind for _, kind in LEGACY_KINDS)


def is_legacy(obj: Mapping[str, Any]) -> bool:
    return (str(obj.get("apiVersion")), str(obj.get("kind"))) in LEGACY_KINDS


def convert_object(obj: Mapping[str, Any]) -> Converted:
    """One legacy object's v1 objects and report; FieldError naming the legacy field when it cannot be converted.
    Its kubelet settings are not placed (see convert_objects)."""
    converter = LEGACY_KINDS.get((str(obj.get("apiVersion")), str(obj.get("kind"))))
    if converter is None:
        raise FieldError("apiVersion", f"{str(obj.get('apiVersion'))[:60]} {str(obj.get('kind'))[:60]} is not a "
                         "legacy Karpenter object")
    return converter(obj)


@dataclass
class Conversion:
    objects: list[dict[str, Any]] = field(default_factory=list)  # every object, legacy ones replaced by v1 ones
    report: list[Change] = field(default_factory=list)
    converted: int = 0  # legacy objects converted

    def to_json(self) -> dict[str, Any]:
        return {"objects": self.objects, "report": [c.to_json() for c in self.report]}


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name", "")) if isinstance(meta, Mapping) else ""


def _is(obj: Mapping[str, Any], api: str, kind: str) -> bool:
    return obj.get("apiVersion") == api and obj.get("kind") == kind


@dataclass
class Tagged:
    """convert_tagged's answer: each object with the tag of the input object it came from, the report, and the
    problems (tag, FieldError) of the legacy objects that could not be converted."""

    objects: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)
    report: list[Change] = field(default_factory=list)
    problems: list[tuple[Any, FieldError]] = field(default_factory=list)
    converted: int = 0


def convert_tagged(items: Sequence[tuple[Any, Mapping[str, Any]]]) -> Tagged:
    """Every object of an input, (tag, object) in order, the tag being where the caller read it: legacy objects
    converted (their v1 objects keep its tag), others kept as they are; the kubelet settings placed."""
    out = Tagged()
    moves: list[KubeletMove] = []
    for tag, obj in items:
        if not is_legacy(obj):
            out.objects.append((tag, dict(obj)))
            continue
        try:
            done = convert_object(obj)
        except FieldError as e:
            out.problems.append((tag, e))
            continue
        out.converted += 1
        out.objects.extend((tag, o) for o in done.objects)
        out.report.extend(done.changes)
        if done.kubelet is not None:
            moves.append(done.kubelet)
    objects = [o for _, o in out.objects]
    tags = {id(o): t for t, o in out.objects}
    place_kubelets(objects, moves, out.report)
    placed: list[tuple[Any, dict[str, Any]]] = []
    for o in objects:  # a class's copy for one pool's kubelet comes right after the class, from the same place
        placed.append((tags.get(id(o), placed[-1][0] if placed else None), o))
    out.objects = placed
    return out


def convert_objects(items: Sequence[tuple[str, Mapping[str, Any]]]) -> Conversion:
    """Every object of an input, (where, object) in order: legacy ones converted, others kept as they are.
    InputError "where: field: message" at the first legacy object that cannot be converted."""
    done = convert_tagged(items)
    if done.problems:
        where, e = done.problems[0]
        raise InputError(f"{where}: {e.path}: {e.message}")
    return Conversion([o for _, o in done.objects], done.report, done.converted)


def _ref(pool: Mapping[str, Any]) -> dict[str, Any]:
    spec = pool.get("spec")
    template = spec.get("template") if isinstance(spec, Mapping) else None
    tspec = template.get("spec") if isinstance(template, Mapping) else None
    ref = tspec.get("nodeClassRef") if isinstance(tspec, Mapping) else None
    return ref if isinstance(ref, dict) else {}


def place_kubelets(objects: list[dict[str, Any]], moves: Sequence[KubeletMove], report: list[Change]) -> None:
    """Put each move's kubelet settings into the EC2NodeClass its pool references (module docstring)."""
    classes = {_name(o): o for o in objects if _is(o, "karpenter.k8s.aws/v1", "EC2NodeClass")}
    pools = [o for o in objects if _is(o, "karpenter.sh/v1", "NodePool")]
    by_class: dict[str, list[KubeletMove]] = {}
    for m in moves:
        by_class.setdefault(m.nodeclass, []).append(m)
    taken = {_name(o) for o in objects}
    for name, group in by_class.items():
        klass = classes.get(name)
        if klass is None:
            for m in group:
                report.append(Change(str(m.source), m.field, Action.DROPPED, dict(m.kubelet), None,
                                     f"EC2NodeClass {name} is not in the input: add these settings to its "
                                     "spec.kubelet (v1 keeps them in the EC2NodeClass)"))
            continue
        users = [p for p in pools if _ref(p).get("name") == name]
        existing = klass["spec"].get("kubelet")
        first = dict(group[0].kubelet)
        shared = (len(group) == len(users) and all(dict(m.kubelet) == first for m in group)
                  and existing in (None, first))
        if shared:
            klass["spec"]["kubelet"] = first
            for m in group:
                report.append(Change(str(m.source), m.field, Action.MOVED, dict(m.kubelet),
                                     f"EC2NodeClass/{name} spec.kubelet"))
            continue
        at = objects.index(klass)
        for m in group:
            copy_name = f"{name}-{m.pool}"[:MAX_NAME]
            while copy_name in taken:
                copy_name = f"{copy_name[:MAX_NAME - 8]}-kubelet"
            taken.add(copy_name)
            twin = copy.deepcopy(klass)
            twin["metadata"] = {**twin.get("metadata", {}), "name": copy_name}
            twin["spec"]["kubelet"] = dict(m.kubelet)
            at += 1
            objects.insert(at, twin)
            for p in users:
                if _name(p) == m.pool:
                    _ref(p)["name"] = copy_name
            report.append(Change(str(m.source), m.field, Action.CHANGED, dict(m.kubelet),
                                 f"EC2NodeClass/{copy_name} spec.kubelet (NodePool/{m.pool} now references it)",
                                 f"NodePools sharing EC2NodeClass {name} had different kubelet settings: v1 keeps "
                                 "them in the class, so this pool gets its own copy"))


def legacy_objects(
    objects: Iterator[tuple[str, str, Mapping[str, Any]]],
    label: Callable[[Mapping[str, Any]], str],
    notices: list[str],
    nodeclasses: dict[str, Mapping[str, Any]],
) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """The objects of a text as the engine reads them: a legacy object is replaced by its v1 objects (a notice
    each in `notices`); once all are read, the kubelet settings of converted NodePools go into `nodeclasses`
    (the kubelet of each EC2NodeClass, by name, as packing.kubeobjects keeps them) where the class has none.
    Pools that give one class different settings: the first pool's are used, with a notice (`convert` splits
    the class instead)."""
    moves: list[KubeletMove] = []
    for where, prefix, item in objects:
        # the kind first: a dump's objects are Pods and Nodes, one set lookup each (50,000 of them are read)
        if item.get("kind") not in _LEGACY_KIND_NAMES or not is_legacy(item):
            yield where, prefix, item
            continue
        place = f"{where}{label(item)}: {prefix}"
        try:
            done = convert_object(item)
        except FieldError as e:
            raise InputError(f"{place}{e.path}: {e.message}") from None
        made = ", ".join(f"{o['kind']} {_name(o)}" for o in done.objects)
        notices.append(f"{place}converted {item.get('apiVersion')} {item.get('kind')} to {made} "
                       f"({len(done.changes)} field(s) moved, changed, defaulted or dropped; "
                       "`python -m packing convert` shows them)")
        if done.kubelet is not None:
            moves.append(done.kubelet)
        for obj in done.objects:
            yield where, prefix, obj
    chosen: dict[str, KubeletMove] = {}
    for m in moves:
        first = chosen.setdefault(m.nodeclass, m)
        if first is not m and dict(first.kubelet) != dict(m.kubelet):
            notices.append(f"NodePools {first.pool} and {m.pool} give EC2NodeClass {m.nodeclass} different kubelet "
                           f"settings: the plan uses {first.pool}'s (`python -m packing convert` splits the class)")
    for name, m in chosen.items():
        if not nodeclasses.get(name):
            nodeclasses[name] = dict(m.kubelet)
