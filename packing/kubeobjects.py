"""Reading Kubernetes objects (YAML or JSON, multi-document or kind: List) into the engine's model.

Every problem is reported as one InputError naming the file, the document's index and the field, because the
CLI's users are debugging a dump they did not write by hand. Values quoted in a message are cut to 60 characters
(packing.yamlinput.brief), and the input is bounded: the YAML reader's limits (aliases, nesting), quantities up
to packing.quantity.MAX_QUANTITY, integers strictly (ASCII digits, each field's range), at most MAX_REPLICAS pods
per workload and MAX_EXPANDED_PODS made from workloads in all, DEFAULT_MAX_INPUT_BYTES of files per run.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from packing import yamlinput
from packing.instancetype import InstanceType, Offering
from packing.nodepool import (
    HOSTNAME_LABEL,
    INITIALIZED_LABEL,
    INSTANCE_TYPE_LABEL,
    DaemonSet,
    ExistingNodeSpec,
    NodePool,
    PodDisruptionBudget,
)
from packing.pods import (
    ContainerResources,
    HostPort,
    LabelSelector,
    Pod,
    PodAffinityTerm,
    TopologySpread,
    pod_requests,
)
from packing.quantity import MAX_QUANTITY, QuantityError, format_quantity, parse_quantity
from packing.requirements import OPERATORS, Requirement, RequirementError, Requirements
from packing.resources import Resources
from packing.taints import EFFECTS, Taint, Toleration
from packing.yamlinput import brief

__all__ = [
    "DEFAULT_MAX_INPUT_BYTES",
    "MAX_EXPANDED_PODS",
    "MAX_PRICE",
    "MAX_REPLICAS",
    "ByteBudget",
    "InputError",
    "Inputs",
    "load_files",
    "parse_documents",
]

MAX_REPLICAS = 10_000  # pods one Deployment/StatefulSet/ReplicaSet/Job may stand for (replicas, parallelism)
MAX_EXPANDED_PODS = 100_000  # pending pods made from workloads in one input, in all
DEFAULT_MAX_INPUT_BYTES = 64 * 2**20  # files read per CLI run, in all (--max-input-bytes raises it)
MAX_PRICE = 1_000_000.0  # dollars per hour of one offering
INT32_MAX = 2**31 - 1
_INT_TEXT = re.compile(r"[+-]?[0-9]{1,18}", re.ASCII)

WORKLOAD_KINDS = {("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "ReplicaSet"), ("batch", "Job")}


class InputError(ValueError):
    """Bad input; str() is the one-line message the CLI prints."""


class _FieldError(InputError):
    """A bad field inside one object; parse_documents adds the file and document index to it.

    It is an InputError (a ValueError) so that callers of parse_pod_spec can catch the public type.
    """

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


@dataclass
class Workload:
    kind: str
    namespace: str
    name: str
    replicas: int
    selector: LabelSelector | None
    template: Pod
    owner: tuple[str, str] | None = None  # (kind, name) of the controller, e.g. a ReplicaSet's Deployment
    where: str = ""  # "file: document N (Kind name): " for error messages, when read from a file


@dataclass
class Inputs:
    pending: list[Pod] = field(default_factory=list)
    running: list[Pod] = field(default_factory=list)
    nodes: list[ExistingNodeSpec] = field(default_factory=list)
    nodeclaims: list[tuple[ExistingNodeSpec, str]] = field(default_factory=list)  # (spec, instance type name)
    nodepools: list[NodePool] = field(default_factory=list)
    nodeclasses: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    instance_types: list[InstanceType] = field(default_factory=list)
    daemonsets: list[DaemonSet] = field(default_factory=list)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    # where each InstanceType was read ("file: document N"), to name both places of a duplicate
    origins: dict[str, str] = field(default_factory=dict)
    expanded: bool = False  # expand_workloads has run (it runs once)

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())


# ---------------------------------------------------------------- typed field access
def _sub(path: str, key: Any) -> str:
    """path.key for a message, the key cut to 60 characters (keys are input too)."""
    k = str(key)
    return f"{path}.{k if len(k) <= 60 else k[:59] + '…'}"


def _obj(d: Any, path: str) -> Mapping[str, Any]:
    if d is None:
        return {}
    if not isinstance(d, Mapping):
        raise _FieldError(path, f"must be an object, got {type(d).__name__}")
    return d


def _list(d: Any, path: str) -> list[Any]:
    if d is None:
        return []
    if not isinstance(d, list):
        raise _FieldError(path, f"must be a list, got {type(d).__name__}")
    return d


def _str(d: Any, path: str, *, required: bool = False, default: str = "") -> str:
    if d is None:
        if required:
            raise _FieldError(path, "is required")
        return default
    if isinstance(d, bool) or not isinstance(d, str | int | float):
        raise _FieldError(path, f"must be a string, got {type(d).__name__}")
    return str(d)


def _int(d: Any, path: str, default: int, *, lo: int | None = None, hi: int = INT32_MAX) -> int:
    """An integer field: an int, or a string of ASCII digits ("3"); within [lo, hi] (hi defaults to int32's)."""
    if d is None:
        return default
    if isinstance(d, bool) or not isinstance(d, int):
        if not (isinstance(d, str) and _INT_TEXT.fullmatch(d.strip())):
            raise _FieldError(path, f"must be an integer, got {brief(d)}")
        d = d.strip()
    value = int(d)
    if lo is not None and value < lo:
        raise _FieldError(path, f"must be at least {lo}, got {brief(value)}")
    if value > hi:
        raise _FieldError(path, f"must be at most {hi}, got {brief(value)}")
    return value


def _str_map(d: Any, path: str) -> dict[str, str]:
    return {str(k): _str(v, _sub(path, k)) for k, v in _obj(d, path).items()}


def _resources(d: Any, path: str) -> Resources:
    """A map of quantities (requests, capacity...): each within [0, MAX_QUANTITY]; zeros dropped."""
    return Resources(_quantities(d, path))


def _quantities(d: Any, path: str) -> dict[str, int]:
    """A map of quantities, each within [0, MAX_QUANTITY], zeros kept (a NodePool limit of 0 allows nothing)."""
    out: dict[str, int] = {}
    for k, v in _obj(d, path).items():
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise _FieldError(_sub(path, k), f"invalid quantity {brief(v)}")
        try:
            milli = parse_quantity(v)
        except QuantityError as e:
            raise _FieldError(_sub(path, k), str(e)) from None
        if milli < 0:
            raise _FieldError(_sub(path, k), f"must not be negative, got {brief(v)}")
        out[str(k)] = milli
    return out


def _bounded(r: Resources, path: str) -> Resources:
    """A sum of quantities (a pod's containers) within MAX_QUANTITY per resource, as each quantity is."""
    for k, v in r.items():
        if v > MAX_QUANTITY * 1000:
            raise _FieldError(_sub(path, k), f"adds up to {format_quantity(v, k)}, more than the maximum 1Pi (2^50)")
    return r


def _with_pods(r: Resources) -> Resources:
    # a hand-written node or type often leaves out the pod count; the kubelet's default maxPods is 110
    if r and "pods" not in r:
        return r + Resources({"pods": 110_000})
    return r


def _requirement(d: Any, path: str) -> Requirement:
    o = _obj(d, path)
    key = _str(o.get("key"), f"{path}.key", required=True)
    op = _str(o.get("operator"), f"{path}.operator", required=True)
    if op not in OPERATORS:
        raise _FieldError(
            f"{path}.operator", f"unknown operator {brief(op)} (expected one of {', '.join(OPERATORS)})"
        )
    values = [_str(v, f"{path}.values[{i}]") for i, v in enumerate(_list(o.get("values"), f"{path}.values"))]
    try:
        return Requirement.new(key, op, values)
    except RequirementError as e:
        raise _FieldError(f"{path}.values", str(e)) from None


def _label_selector(d: Any, path: str) -> LabelSelector | None:
    if d is None:
        return None
    o = _obj(d, path)
    reqs = [
        Requirement.new(k, "In", [v])
        for k, v in _str_map(o.get("matchLabels"), f"{path}.matchLabels").items()
    ]
    for i, e in enumerate(_list(o.get("matchExpressions"), f"{path}.matchExpressions")):
        r = _requirement(e, f"{path}.matchExpressions[{i}]")
        if r.operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise _FieldError(
                f"{path}.matchExpressions[{i}].operator",
                f"operator {r.operator} not allowed in a label selector",
            )
        reqs.append(r)
    return LabelSelector(Requirements(reqs))


def _taint(d: Any, path: str) -> Taint:
    o = _obj(d, path)
    effect = _str(o.get("effect"), f"{path}.effect", required=True)
    if effect not in EFFECTS:
        raise _FieldError(f"{path}.effect", f"unknown effect {brief(effect)}")
    return Taint(
        _str(o.get("key"), f"{path}.key", required=True), _str(o.get("value"), f"{path}.value"), effect
    )


def _taints(d: Any, path: str) -> tuple[Taint, ...]:
    return tuple(_taint(t, f"{path}[{i}]") for i, t in enumerate(_list(d, path)))


def _toleration(d: Any, path: str) -> Toleration:
    o = _obj(d, path)
    op = _str(o.get("operator"), f"{path}.operator", default="Equal")
    if op not in ("Equal", "Exists"):
        raise _FieldError(f"{path}.operator", f"unknown operator {brief(op)} (expected Equal or Exists)")
    effect = _str(o.get("effect"), f"{path}.effect")
    if effect and effect not in EFFECTS:
        raise _FieldError(f"{path}.effect", f"unknown effect {brief(effect)}")
    return Toleration(_str(o.get("key"), f"{path}.key"), op, _str(o.get("value"), f"{path}.value"), effect)


def _affinity_term(d: Any, path: str, namespace: str) -> PodAffinityTerm:
    o = _obj(d, path)
    sel = _label_selector(o.get("labelSelector"), f"{path}.labelSelector")
    nss = frozenset(
        _str(v, f"{path}.namespaces[{i}]")
        for i, v in enumerate(_list(o.get("namespaces"), f"{path}.namespaces"))
    )
    key = _str(o.get("topologyKey"), f"{path}.topologyKey", required=True)
    # a null selector selects nothing; model it as a requirement no pod can meet
    selector = sel or LabelSelector(Requirements([Requirement.new("loadmaster.dev/never", "In", ["\x00"])]))
    return PodAffinityTerm(selector, key, nss or frozenset({namespace}))


def _containers(d: Any, path: str, *, init: bool) -> list[ContainerResources]:
    out = []
    for i, c in enumerate(_list(d, path)):
        cp = f"{path}[{i}]"
        co = _obj(c, cp)
        res = _obj(co.get("resources"), f"{cp}.resources")
        out.append(
            ContainerResources(
                _resources(res.get("requests"), f"{cp}.resources.requests"),
                _resources(res.get("limits"), f"{cp}.resources.limits"),
                restart_always=init and co.get("restartPolicy") == "Always",
            )
        )
    return out


def parse_pod_spec(
    meta: Mapping[str, Any], spec: Mapping[str, Any], path: str, *, name: str, namespace: str
) -> Pod:
    sp = f"{path}spec"
    containers = _containers(spec.get("containers"), f"{sp}.containers", init=False)
    inits = _containers(spec.get("initContainers"), f"{sp}.initContainers", init=True)
    overhead = _resources(spec.get("overhead"), f"{sp}.overhead")
    requests = _bounded(pod_requests(containers, inits, overhead), f"{sp}.containers[*].resources.requests")
    labels = _str_map(meta.get("labels"), f"{path}metadata.labels")
    node_selector = _str_map(spec.get("nodeSelector"), f"{sp}.nodeSelector")
    aff = _obj(spec.get("affinity"), f"{sp}.affinity")
    na = _obj(aff.get("nodeAffinity"), f"{sp}.affinity.nodeAffinity")
    rp = f"{sp}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    req = _obj(na.get("requiredDuringSchedulingIgnoredDuringExecution"), rp)
    terms = []
    for i, t in enumerate(_list(req.get("nodeSelectorTerms"), f"{rp}.nodeSelectorTerms")):
        tp = f"{rp}.nodeSelectorTerms[{i}]"
        to = _obj(t, tp)
        exprs = [
            _requirement(e, f"{tp}.matchExpressions[{j}]")
            for j, e in enumerate(_list(to.get("matchExpressions"), f"{tp}.matchExpressions"))
        ]
        for j, e in enumerate(_list(to.get("matchFields"), f"{tp}.matchFields")):
            r = _requirement(e, f"{tp}.matchFields[{j}]")
            # metadata.name is the only matchFields key; on a node it equals the hostname label
            exprs.append(
                Requirement(HOSTNAME_LABEL, r.complement, r.values, r.allow_absent, r.gt, r.lt, r.operator)
            )
        terms.append(Requirements(exprs))
    pp = f"{sp}.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    preferred = []
    for i, t in enumerate(_list(na.get("preferredDuringSchedulingIgnoredDuringExecution"), pp)):
        to = _obj(t, f"{pp}[{i}]")
        pref = _obj(to.get("preference"), f"{pp}[{i}].preference")
        exprs = [
            _requirement(e, f"{pp}[{i}].preference.matchExpressions[{j}]")
            for j, e in enumerate(
                _list(pref.get("matchExpressions"), f"{pp}[{i}].preference.matchExpressions")
            )
        ]
        preferred.append((_int(to.get("weight"), f"{pp}[{i}].weight", 1, lo=1, hi=100), Requirements(exprs)))

    def pod_terms(kind: str) -> tuple[tuple[PodAffinityTerm, ...], tuple[tuple[int, PodAffinityTerm], ...]]:
        base = f"{sp}.affinity.{kind}"
        o = _obj(aff.get(kind), base)
        rq = tuple(
            _affinity_term(t, f"{base}.requiredDuringSchedulingIgnoredDuringExecution[{i}]", namespace)
            for i, t in enumerate(
                _list(
                    o.get("requiredDuringSchedulingIgnoredDuringExecution"),
                    f"{base}.requiredDuringSchedulingIgnoredDuringExecution",
                )
            )
        )
        pf = []
        for i, t in enumerate(
            _list(
                o.get("preferredDuringSchedulingIgnoredDuringExecution"),
                f"{base}.preferredDuringSchedulingIgnoredDuringExecution",
            )
        ):
            tp = f"{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            to = _obj(t, tp)
            pf.append(
                (
                    _int(to.get("weight"), f"{tp}.weight", 1, lo=1, hi=100),
                    _affinity_term(to.get("podAffinityTerm"), f"{tp}.podAffinityTerm", namespace),
                )
            )
        return rq, tuple(pf)

    affinity, pref_aff = pod_terms("podAffinity")
    anti, pref_anti = pod_terms("podAntiAffinity")
    spreads = []
    for i, t in enumerate(_list(spec.get("topologySpreadConstraints"), f"{sp}.topologySpreadConstraints")):
        tp = f"{sp}.topologySpreadConstraints[{i}]"
        to = _obj(t, tp)
        when = _str(to.get("whenUnsatisfiable"), f"{tp}.whenUnsatisfiable", default="DoNotSchedule")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            raise _FieldError(
                f"{tp}.whenUnsatisfiable", f"must be DoNotSchedule or ScheduleAnyway, got {brief(when)}"
            )
        skew = _int(to.get("maxSkew"), f"{tp}.maxSkew", 1, lo=1)
        sel = _label_selector(to.get("labelSelector"), f"{tp}.labelSelector") or LabelSelector(
            Requirements([Requirement.new("loadmaster.dev/never", "In", ["\x00"])])
        )
        spreads.append(
            TopologySpread(
                skew,
                _str(to.get("topologyKey"), f"{tp}.topologyKey", required=True),
                when,
                sel,
                _int(to.get("minDomains"), f"{tp}.minDomains", 1, lo=1),
            )
        )
    ports = []
    for i, c in enumerate(_list(spec.get("containers"), f"{sp}.containers")):
        for j, p in enumerate(
            _list(_obj(c, f"{sp}.containers[{i}]").get("ports"), f"{sp}.containers[{i}].ports")
        ):
            po = _obj(p, f"{sp}.containers[{i}].ports[{j}]")
            hp = _int(po.get("hostPort"), f"{sp}.containers[{i}].ports[{j}].hostPort", 0, lo=0, hi=65535)
            if hp:
                ports.append(
                    HostPort(
                        hp,
                        _str(po.get("protocol"), f"{sp}.containers[{i}].ports[{j}].protocol", default="TCP"),
                        _str(po.get("hostIP"), f"{sp}.containers[{i}].ports[{j}].hostIP"),
                    )
                )
    owners = _list(meta.get("ownerReferences"), f"{path}metadata.ownerReferences")
    owner = _obj(owners[0], f"{path}metadata.ownerReferences[0]") if owners else {}
    return Pod(
        name=name,
        namespace=namespace,
        labels=labels,
        requests=requests,
        node_selector=node_selector,
        required_terms=tuple(terms),
        preferred_terms=tuple(preferred),
        tolerations=tuple(
            _toleration(t, f"{sp}.tolerations[{i}]")
            for i, t in enumerate(_list(spec.get("tolerations"), f"{sp}.tolerations"))
        ),
        spread=tuple(spreads),
        affinity=affinity,
        anti_affinity=anti,
        preferred_affinity=pref_aff,
        preferred_anti_affinity=pref_anti,
        host_ports=tuple(ports),
        node_name=_str(spec.get("nodeName"), f"{sp}.nodeName"),
        owner_kind=str(owner.get("kind", "")),
        owner_name=str(owner.get("name", "")),
        uid=_str(meta.get("uid"), f"{path}metadata.uid"),
    )


# ---------------------------------------------------------------- per kind
def _meta(doc: Mapping[str, Any]) -> tuple[Mapping[str, Any], str, str]:
    meta = _obj(doc.get("metadata"), "metadata")
    name = _str(meta.get("name"), "metadata.name", required=True)
    ns = _str(meta.get("namespace"), "metadata.namespace", default="default") or "default"
    return meta, name, ns


_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?", re.ASCII)


def _price(v: Any, path: str) -> float | None:
    """An offering's price: a finite number of dollars per hour in [0, MAX_PRICE] (a NaN would make the pod
    look scheduled and placed nowhere, a negative one a plan that earns money)."""
    if v is None:
        return None
    if isinstance(v, str) and len(v) <= 40 and _NUMBER_TEXT.fullmatch(v.strip()):
        v = float(v)
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise _FieldError(path, f"must be a number, got {brief(v)}")
    given = v
    if isinstance(v, int) and abs(v) > MAX_PRICE:
        v = math.inf if v > 0 else -math.inf  # float() of a 400-digit integer raises
    price = float(v)
    if math.isnan(price):
        raise _FieldError(path, "must be a number, got NaN")
    if price < 0:
        raise _FieldError(path, f"must not be negative, got {brief(given)}")
    if price > MAX_PRICE:
        raise _FieldError(path, f"must be at most {MAX_PRICE:.0f} dollars per hour, got {brief(given)}")
    return price


_BUDGET_TEXT = re.compile(r"[0-9]{1,10}%?", re.ASCII)


def _int_or_percent(v: Any, path: str) -> str | None:
    """A PDB's minAvailable / maxUnavailable: a count or a percentage ("50%"), as a string."""
    if v is None:
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        return str(_int(v, path, 0, lo=0))
    if isinstance(v, str) and _BUDGET_TEXT.fullmatch(v.strip()):
        text = v.strip()
        if text.endswith("%") and int(text[:-1]) > 100:
            raise _FieldError(path, f"must be a percentage from 0% to 100%, got {brief(v)}")
        if not text.endswith("%"):
            _int(text, path, 0, lo=0)
        return text
    raise _FieldError(path, f"must be a count or a percentage such as '50%', got {brief(v)}")


def _template_pod(spec: Mapping[str, Any], name: str, namespace: str) -> Pod:
    """The pod a DaemonSet or workload stamps out from spec.template."""
    tmpl = _obj(spec.get("template"), "spec.template")
    return parse_pod_spec(
        _obj(tmpl.get("metadata"), "spec.template.metadata"),
        _obj(tmpl.get("spec"), "spec.template.spec"),
        "spec.template.",
        name=name,
        namespace=namespace,
    )


def _replicas(v: Any, path: str) -> int:
    n = _int(v, path, 1, lo=0, hi=sys.maxsize)
    if n > MAX_REPLICAS:
        raise _FieldError(path, f"{n} is more than the maximum {MAX_REPLICAS} pods per workload")
    return n


def _add_object(doc: Mapping[str, Any], out: Inputs, where: str = "") -> None:
    """One object into `out`; _FieldError (an InputError) naming the field when it is bad. `where` ("file:
    document N (Kind name): ") is kept with the objects whose problems can only be seen later (workloads)."""
    api = _str(doc.get("apiVersion"), "apiVersion", required=True)
    kind = _str(doc.get("kind"), "kind", required=True)
    group = api.rsplit("/", 1)[0] if "/" in api else ""
    if kind == "Pod" and group == "":
        meta, name, ns = _meta(doc)
        pod = parse_pod_spec(meta, _obj(doc.get("spec"), "spec"), "", name=name, namespace=ns)
        phase = _obj(doc.get("status"), "status").get("phase")
        if phase in ("Succeeded", "Failed"):
            return
        (out.running if pod.node_name else out.pending).append(pod)
    elif kind == "Node" and group == "":
        meta, name, _ = _meta(doc)
        labels = _str_map(meta.get("labels"), "metadata.labels")
        status = _obj(doc.get("status"), "status")
        spec = _obj(doc.get("spec"), "spec")
        alloc = _with_pods(_resources(status.get("allocatable"), "status.allocatable"))
        cap = _with_pods(_resources(status.get("capacity"), "status.capacity"))
        out.nodes.append(
            ExistingNodeSpec(
                name=name,
                labels=labels,
                allocatable=alloc or cap,
                taints=_taints(spec.get("taints"), "spec.taints"),
                initialized=labels.get(INITIALIZED_LABEL) == "true",
                kind="Node",
                provider_id=_str(spec.get("providerID"), "spec.providerID"),
                capacity=cap or alloc,
            )
        )
    elif kind == "NodeClaim" and group == "karpenter.sh":
        meta, name, _ = _meta(doc)
        labels = _str_map(meta.get("labels"), "metadata.labels")
        spec = _obj(doc.get("spec"), "spec")
        reqs = Requirements(
            _requirement(r, f"spec.requirements[{i}]")
            for i, r in enumerate(_list(spec.get("requirements"), "spec.requirements"))
        )
        merged = dict(reqs.pinned_labels())
        merged.update(labels)
        status = _obj(doc.get("status"), "status")
        taints = _taints(spec.get("taints"), "spec.taints") + _taints(
            spec.get("startupTaints"), "spec.startupTaints"
        )
        alloc = _resources(status.get("allocatable"), "status.allocatable")
        cap = _resources(status.get("capacity"), "status.capacity")
        node_name = _str(status.get("nodeName"), "status.nodeName")
        merged.setdefault(HOSTNAME_LABEL, node_name or name)
        spec_obj = ExistingNodeSpec(
            name=name,
            labels=merged,
            allocatable=alloc or cap,
            taints=taints,
            initialized=False,
            kind="NodeClaim",
            provider_id=_str(status.get("providerID"), "status.providerID"),
            capacity=cap or None,
        )
        out.nodeclaims.append((spec_obj, node_name))
    elif kind == "NodePool" and group == "karpenter.sh":
        meta, name, _ = _meta(doc)
        spec = _obj(doc.get("spec"), "spec")
        tmpl = _obj(spec.get("template"), "spec.template")
        tspec = _obj(tmpl.get("spec"), "spec.template.spec")
        tmeta = _obj(tmpl.get("metadata"), "spec.template.metadata")
        reqs = Requirements(
            _requirement(r, f"spec.template.spec.requirements[{i}]")
            for i, r in enumerate(_list(tspec.get("requirements"), "spec.template.spec.requirements"))
        )
        limits = _quantities(spec.get("limits"), "spec.limits") if spec.get("limits") is not None else None
        ref = _obj(tspec.get("nodeClassRef"), "spec.template.spec.nodeClassRef")
        out.nodepools.append(
            NodePool(
                name=name,
                requirements=reqs,
                labels=_str_map(tmeta.get("labels"), "spec.template.metadata.labels"),
                taints=_taints(tspec.get("taints"), "spec.template.spec.taints"),
                startup_taints=_taints(tspec.get("startupTaints"), "spec.template.spec.startupTaints"),
                limits=limits,
                weight=_int(spec.get("weight"), "spec.weight", 0, lo=1, hi=100),
                node_class=_str(ref.get("name"), "spec.template.spec.nodeClassRef.name"),
            )
        )
    elif kind == "EC2NodeClass" and group == "karpenter.k8s.aws":
        _, name, _ = _meta(doc)
        spec = _obj(doc.get("spec"), "spec")
        out.nodeclasses[name] = _obj(spec.get("kubelet"), "spec.kubelet")
    elif kind == "InstanceType" and group == "loadmaster.dev":
        _, name, _ = _meta(doc)
        spec = _obj(doc.get("spec"), "spec")
        if spec.get("capacity") is None:
            raise _FieldError("spec.capacity", "is required")
        offerings = []
        for i, o in enumerate(_list(spec.get("offerings"), "spec.offerings")):
            op = f"spec.offerings[{i}]"
            oo = _obj(o, op)
            price = _price(oo.get("price"), f"{op}.price")
            avail = oo.get("available", True)
            if not isinstance(avail, bool):
                raise _FieldError(f"{op}.available", f"must be true or false, got {brief(avail)}")
            ct = _str(oo.get("capacityType"), f"{op}.capacityType", required=True)
            if ct not in ("spot", "on-demand", "reserved"):
                raise _FieldError(f"{op}.capacityType", f"must be spot or on-demand, got {brief(ct)}")
            offerings.append(Offering(_str(oo.get("zone"), f"{op}.zone", required=True), ct, price, avail))
        out.instance_types.append(
            InstanceType(
                name=name,
                capacity=_with_pods(_resources(spec.get("capacity"), "spec.capacity")),
                overhead=_resources(spec.get("overhead"), "spec.overhead"),
                labels=_str_map(spec.get("labels"), "spec.labels"),
                offerings=tuple(offerings),
            )
        )
    elif kind == "DaemonSet" and group == "apps":
        meta, name, ns = _meta(doc)
        spec = _obj(doc.get("spec"), "spec")
        pod = _template_pod(spec, name, ns)
        out.daemonsets.append(DaemonSet(ns, name, pod))
    elif (group, kind) in WORKLOAD_KINDS:
        meta, name, ns = _meta(doc)
        spec = _obj(doc.get("spec"), "spec")
        pod = _template_pod(spec, name, ns)
        if kind == "Job":
            # a Job runs `parallelism` pods at once (default 1), never more than it has completions left
            replicas = _replicas(spec.get("parallelism"), "spec.parallelism")
            if spec.get("completions") is not None:
                replicas = min(replicas, _int(spec.get("completions"), "spec.completions", replicas, lo=0))
        else:
            replicas = _replicas(spec.get("replicas"), "spec.replicas")
        sel = _label_selector(spec.get("selector"), "spec.selector")
        owners = _list(meta.get("ownerReferences"), "metadata.ownerReferences")
        first = _obj(owners[0], "metadata.ownerReferences[0]") if owners else {}
        owner = (str(first.get("kind", "")), str(first.get("name", ""))) if first else None
        out.workloads.append(Workload(kind, ns, name, replicas, sel, pod, owner, where))
    elif kind == "PodDisruptionBudget" and group == "policy":
        _, name, ns = _meta(doc)
        spec = _obj(doc.get("spec"), "spec")
        out.pdbs.append(
            PodDisruptionBudget(
                ns,
                name,
                _obj(spec.get("selector"), "spec.selector"),
                _int_or_percent(spec.get("minAvailable"), "spec.minAvailable"),
                _int_or_percent(spec.get("maxUnavailable"), "spec.maxUnavailable"),
            )
        )
    else:
        out.skipped[kind] = out.skipped.get(kind, 0) + 1


def _mark_where(e: Any) -> str:
    mark = getattr(e, "problem_mark", None)
    return f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""


def documents(text: str, filename: str) -> Iterator[tuple[int, Any]]:
    """The documents of a YAML or JSON text with their 1-based indexes, as error messages number them.

    A JSON array is a list of documents. Read by packing.yamlinput (bounded aliases and nesting, duplicate keys
    refused, tags checked); a problem is one InputError naming the file, the document and the line."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            data = yamlinput.load_json(text)
        except yamlinput.NotJson:
            pass  # not plain JSON: the YAML reader below gives the exact error (or reads it, as YAML)
        else:
            if isinstance(data, list):
                for i, d in enumerate(data):
                    yield i + 1, d
            else:
                yield 1, data
            return
    index = 0
    try:
        for d in yamlinput.load_all(text):
            index += 1
            if d is None:
                continue
            yield index, d
    except yaml.YAMLError as e:
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InputError(
            f"{filename}: document {index + 1}: invalid YAML{_mark_where(e)}: {_cut(str(problem))}"
        ) from None


def _cut(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def kubernetes_objects(text: str, filename: str) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """Every Kubernetes object of a text, `kind: List` items included, as (where, prefix, object):
    `where` names the file and document, `prefix` the item inside a List — the parts of an error message."""
    for index, doc in documents(text, filename):
        where = f"{filename}: document {index}"
        if not isinstance(doc, Mapping) or "apiVersion" not in doc or "kind" not in doc:
            missing = "apiVersion" if not isinstance(doc, Mapping) or "apiVersion" not in doc else "kind"
            raise InputError(f"{where}: {missing}: not a Kubernetes object (needs apiVersion and kind)")
        items: Sequence[tuple[str, Any]]
        if doc.get("kind") == "List" or str(doc.get("kind", "")).endswith("List") and "items" in doc:
            raw = doc.get("items")
            if raw is None:
                raw = []
            if not isinstance(raw, list):
                raise InputError(f"{where}: items: must be a list")
            items = [(f"items[{i}].", it) for i, it in enumerate(raw)]
        else:
            items = [("", doc)]
        for prefix, item in items:
            if not isinstance(item, Mapping) or "apiVersion" not in item or "kind" not in item:
                raise InputError(
                    f"{where}: {prefix or ''}apiVersion: not a Kubernetes object (needs apiVersion and kind)"
                )
            yield where, prefix, item


def object_label(item: Mapping[str, Any]) -> str:
    """' (Kind name)' for error messages, each part cut to 60 characters."""
    meta = item.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    kind = _cut(str(item.get("kind")), 60)
    return f" ({kind} {_cut(str(name), 60)})" if name else f" ({kind})"


def parse_documents(text: str, filename: str, out: Inputs) -> None:
    for where, prefix, item in kubernetes_objects(text, filename):
        label = object_label(item)
        try:
            add_object(item, out, f"{where}{label}: {prefix}")
        except _FieldError as e:
            raise InputError(f"{where}{label}: {prefix}{e.path}: {e.message}") from None


def add_object(item: Mapping[str, Any], out: Inputs, where: str) -> None:
    """_add_object, plus what needs the object's place: an InstanceType defined twice is refused, naming both."""
    types = len(out.instance_types)
    _add_object(item, out, where)
    if len(out.instance_types) > types:
        name = out.instance_types[-1].name
        first = out.origins.get(name)
        if first is not None:
            raise _FieldError("metadata.name", f"InstanceType {_cut(name, 60)} is defined more than once (also {first})")
        out.origins[name] = where.rstrip(": ")


def read_text(path: str, max_bytes: int | None = None, *, limit: int | None = None) -> str:
    """A whole input file ('-' is stdin); InputError naming the file when it cannot be read or holds more than
    `max_bytes` bytes (read no further than that: the limit protects memory). `limit` is the run's whole
    --max-input-bytes, for the message, when `max_bytes` is what other files left of it."""
    try:
        if path == "-":
            stream = getattr(sys.stdin, "buffer", None)
            n = -1 if max_bytes is None else max_bytes + 1
            data = stream.read(n) if stream is not None else sys.stdin.read(n).encode("utf-8")
        else:
            with open(path, "rb") as f:
                if max_bytes is not None and os.fstat(f.fileno()).st_size > max_bytes:
                    data = b""
                    too_big = True
                else:
                    data = f.read(-1 if max_bytes is None else max_bytes + 1)
                    too_big = False
            if too_big:
                raise _TooBig
        if max_bytes is not None and len(data) > max_bytes:
            raise _TooBig
        return data.decode("utf-8")
    except _TooBig:
        total = limit if limit is not None else max_bytes
        raise InputError(
            f"{path}: the input is larger than {total} bytes (the limit of --max-input-bytes, for all files together)"
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise InputError(f"{path}: cannot read file: {_cut(reason)}") from None


class _TooBig(Exception):
    pass


class ByteBudget:
    """What is left of one run's --max-input-bytes (None: no limit), shared by every file the run reads."""

    def __init__(self, total: int | None = DEFAULT_MAX_INPUT_BYTES) -> None:
        self.total = total
        self.left = total

    def read(self, path: str) -> str:
        text = read_text(path, self.left, limit=self.total)
        if self.left is not None:
            self.left -= len(text.encode("utf-8"))
        return text


def load_files(paths: Sequence[str], out: Inputs | None = None, budget: ByteBudget | None = None) -> Inputs:
    out = out or Inputs()
    budget = budget or ByteBudget(None)
    for path in paths:
        parse_documents(budget.read(path), path, out)
    return out


def inflight_claims(inp: Inputs, catalog: Sequence[InstanceType]) -> list[ExistingNodeSpec]:
    """NodeClaims not yet registered as Nodes, sized from the catalog when they carry no allocatable."""
    by_name = {it.name: it for it in catalog}
    node_names = {n.name for n in inp.nodes}
    out: list[ExistingNodeSpec] = []
    for spec, node_name in inp.nodeclaims:
        if node_name and node_name in node_names:
            continue  # already registered as a Node: the Node is the truth
        if not spec.allocatable:
            it = by_name.get(spec.labels.get(INSTANCE_TYPE_LABEL, ""))
            if it is not None:
                spec.allocatable = it.allocatable
                spec.capacity = it.capacity
        out.append(spec)
    return out


def expansion_plan(inp: Inputs) -> list[tuple[Workload, list[int]]]:
    """Which workloads expand_workloads stamps pods out of, and the ordinals of those pods; InputError naming
    the workload at which the pods made would pass MAX_EXPANDED_PODS (checked before any pod is made)."""
    given = inp.pending + inp.running
    names = {p.key for p in given}
    present = {(w.namespace, w.kind, w.name) for w in inp.workloads}
    plan: list[tuple[Workload, list[int]]] = []
    total = 0
    for w in sorted(inp.workloads, key=lambda w: (w.namespace, w.name, w.kind)):
        # a ReplicaSet (or Job) whose controller is in the input too would be counted twice
        if w.owner is not None and (w.namespace, *w.owner) in present:
            continue
        if any(
            p.namespace == w.namespace and w.selector is not None and w.selector.matches(p.labels)
            for p in given
        ):
            continue
        if any(p.namespace == w.namespace and p.owner_name in (w.name,) for p in given):
            continue
        ordinals = [i for i in range(w.replicas) if f"{w.namespace}/{w.name}-{i}" not in names]
        total += len(ordinals)
        if total > MAX_EXPANDED_PODS:
            where = w.where or f"{w.kind} {w.namespace}/{w.name}: "
            field_ = "spec.parallelism" if w.kind == "Job" else "spec.replicas"
            raise InputError(
                f"{where}{field_}: the workloads without pods of their own would make more than "
                f"{MAX_EXPANDED_PODS} pending pods in all (the maximum)"
            )
        plan.append((w, ordinals))
    return plan


def expand_workloads(inp: Inputs) -> None:
    """Pending pods for Deployments, StatefulSets, ReplicaSets and Jobs of which no pod was given (once: a second
    call does nothing). InputError past MAX_EXPANDED_PODS."""
    if inp.expanded:
        return
    plan = expansion_plan(inp)
    inp.expanded = True
    for w, ordinals in plan:
        for i in ordinals:
            name = f"{w.name}-{i}"
            t = w.template
            inp.pending.append(
                Pod(
                    name=name,
                    namespace=w.namespace,
                    labels=dict(t.labels),
                    requests=t.requests,
                    node_selector=t.node_selector,
                    required_terms=t.required_terms,
                    preferred_terms=t.preferred_terms,
                    tolerations=t.tolerations,
                    spread=t.spread,
                    affinity=t.affinity,
                    anti_affinity=t.anti_affinity,
                    preferred_affinity=t.preferred_affinity,
                    preferred_anti_affinity=t.preferred_anti_affinity,
                    host_ports=t.host_ports,
                    owner_kind=w.kind,
                    owner_name=w.name,
                )
            )
