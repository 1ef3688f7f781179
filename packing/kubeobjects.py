"""Reading Kubernetes objects (YAML or JSON, multi-document or kind: List) into the engine's model.

Every problem is reported as one InputError naming the file, the document's index and the field, because the
CLI's users are debugging a dump they did not write by hand.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

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
from packing.quantity import QuantityError, parse_quantity
from packing.requirements import OPERATORS, Requirement, RequirementError, Requirements
from packing.resources import Resources
from packing.taints import EFFECTS, Taint, Toleration

__all__ = ["InputError", "Inputs", "load_files", "parse_documents"]

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

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())


# ---------------------------------------------------------------- typed field access
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


def _int(d: Any, path: str, default: int) -> int:
    if d is None:
        return default
    if isinstance(d, bool) or not isinstance(d, int):
        if isinstance(d, str) and d.strip().lstrip("-").isdigit():
            return int(d)
        raise _FieldError(path, f"must be an integer, got {d!r}")
    return d


def _str_map(d: Any, path: str) -> dict[str, str]:
    return {str(k): _str(v, f"{path}.{k}") for k, v in _obj(d, path).items()}


def _resources(d: Any, path: str) -> Resources:
    out: dict[str, int] = {}
    for k, v in _obj(d, path).items():
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise _FieldError(f"{path}.{k}", f"invalid quantity {v!r}")
        try:
            out[str(k)] = parse_quantity(v)
        except QuantityError as e:
            raise _FieldError(f"{path}.{k}", str(e)) from None
    return Resources(out)


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
            f"{path}.operator", f"unknown operator {op!r} (expected one of {', '.join(OPERATORS)})"
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
        raise _FieldError(f"{path}.effect", f"unknown effect {effect!r}")
    return Taint(
        _str(o.get("key"), f"{path}.key", required=True), _str(o.get("value"), f"{path}.value"), effect
    )


def _taints(d: Any, path: str) -> tuple[Taint, ...]:
    return tuple(_taint(t, f"{path}[{i}]") for i, t in enumerate(_list(d, path)))


def _toleration(d: Any, path: str) -> Toleration:
    o = _obj(d, path)
    op = _str(o.get("operator"), f"{path}.operator", default="Equal")
    if op not in ("Equal", "Exists"):
        raise _FieldError(f"{path}.operator", f"unknown operator {op!r} (expected Equal or Exists)")
    effect = _str(o.get("effect"), f"{path}.effect")
    if effect and effect not in EFFECTS:
        raise _FieldError(f"{path}.effect", f"unknown effect {effect!r}")
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
    requests = pod_requests(containers, inits, overhead)
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
        preferred.append((_int(to.get("weight"), f"{pp}[{i}].weight", 1), Requirements(exprs)))

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
                    _int(to.get("weight"), f"{tp}.weight", 1),
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
                f"{tp}.whenUnsatisfiable", f"must be DoNotSchedule or ScheduleAnyway, got {when!r}"
            )
        skew = _int(to.get("maxSkew"), f"{tp}.maxSkew", 1)
        if skew < 1:
            raise _FieldError(f"{tp}.maxSkew", "must be at least 1")
        sel = _label_selector(to.get("labelSelector"), f"{tp}.labelSelector") or LabelSelector(
            Requirements([Requirement.new("loadmaster.dev/never", "In", ["\x00"])])
        )
        spreads.append(
            TopologySpread(
                skew,
                _str(to.get("topologyKey"), f"{tp}.topologyKey", required=True),
                when,
                sel,
                _int(to.get("minDomains"), f"{tp}.minDomains", 1),
            )
        )
    ports = []
    for i, c in enumerate(_list(spec.get("containers"), f"{sp}.containers")):
        for j, p in enumerate(
            _list(_obj(c, f"{sp}.containers[{i}]").get("ports"), f"{sp}.containers[{i}].ports")
        ):
            po = _obj(p, f"{sp}.containers[{i}].ports[{j}]")
            hp = _int(po.get("hostPort"), f"{sp}.containers[{i}].ports[{j}].hostPort", 0)
            if hp:
                ports.append(
                    HostPort(
                        hp,
                        _str(po.get("protocol"), "protocol", default="TCP"),
                        _str(po.get("hostIP"), "hostIP"),
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


def _add_object(doc: Mapping[str, Any], out: Inputs) -> None:
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
        limits = _resources(spec.get("limits"), "spec.limits") if spec.get("limits") is not None else None
        ref = _obj(tspec.get("nodeClassRef"), "spec.template.spec.nodeClassRef")
        out.nodepools.append(
            NodePool(
                name=name,
                requirements=reqs,
                labels=_str_map(tmeta.get("labels"), "spec.template.metadata.labels"),
                taints=_taints(tspec.get("taints"), "spec.template.spec.taints"),
                startup_taints=_taints(tspec.get("startupTaints"), "spec.template.spec.startupTaints"),
                limits=limits,
                weight=_int(spec.get("weight"), "spec.weight", 0),
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
            price = oo.get("price")
            if price is not None and (isinstance(price, bool) or not isinstance(price, int | float)):
                try:
                    price = float(price)
                except (TypeError, ValueError):
                    raise _FieldError(f"{op}.price", f"must be a number, got {price!r}") from None
            avail = oo.get("available", True)
            if not isinstance(avail, bool):
                raise _FieldError(f"{op}.available", f"must be true or false, got {avail!r}")
            ct = _str(oo.get("capacityType"), f"{op}.capacityType", required=True)
            if ct not in ("spot", "on-demand", "reserved"):
                raise _FieldError(f"{op}.capacityType", f"must be spot or on-demand, got {ct!r}")
            offerings.append(
                Offering(
                    _str(oo.get("zone"), f"{op}.zone", required=True),
                    ct,
                    None if price is None else float(price),
                    avail,
                )
            )
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
            replicas = _int(spec.get("parallelism"), "spec.parallelism", 1)
            if spec.get("completions") is not None:
                replicas = min(replicas, _int(spec.get("completions"), "spec.completions", replicas))
        else:
            replicas = _int(spec.get("replicas"), "spec.replicas", 1)
        if replicas < 0:
            raise _FieldError("spec.replicas", "must not be negative")
        sel = _label_selector(spec.get("selector"), "spec.selector")
        owners = _list(meta.get("ownerReferences"), "metadata.ownerReferences")
        first = _obj(owners[0], "metadata.ownerReferences[0]") if owners else {}
        owner = (str(first.get("kind", "")), str(first.get("name", ""))) if first else None
        out.workloads.append(Workload(kind, ns, name, replicas, sel, pod, owner))
    elif kind == "PodDisruptionBudget" and group == "policy":
        _, name, ns = _meta(doc)
        spec = _obj(doc.get("spec"), "spec")
        out.pdbs.append(
            PodDisruptionBudget(
                ns,
                name,
                _obj(spec.get("selector"), "spec.selector"),
                None if spec.get("minAvailable") is None else str(spec.get("minAvailable")),
                None if spec.get("maxUnavailable") is None else str(spec.get("maxUnavailable")),
            )
        )
    else:
        out.skipped[kind] = out.skipped.get(kind, 0) + 1


def documents(text: str, filename: str) -> Iterator[tuple[int, Any]]:
    """The documents of a YAML or JSON text with their 1-based indexes, as error messages number them."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            pass
        else:
            if isinstance(data, list):
                for i, d in enumerate(data):
                    yield i + 1, d
            else:
                yield 1, data
            return
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    index = 0
    try:
        for d in yaml.load_all(text, Loader=loader):
            index += 1
            if d is None:
                continue
            yield index, d
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InputError(f"{filename}: document {index + 1}: invalid YAML{where}: {problem}") from None


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
    """' (Kind name)' for error messages."""
    meta = item.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return f" ({item.get('kind')} {name})" if name else f" ({item.get('kind')})"


def parse_documents(text: str, filename: str, out: Inputs) -> None:
    for where, prefix, item in kubernetes_objects(text, filename):
        try:
            _add_object(item, out)
        except _FieldError as e:
            raise InputError(f"{where}{object_label(item)}: {prefix}{e.path}: {e.message}") from None


def read_text(path: str) -> str:
    """A whole input file ('-' is stdin); InputError naming the file when it cannot be read."""
    try:
        if path == "-":
            return sys.stdin.read()
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise InputError(f"{path}: cannot read file: {reason}") from None


def load_files(paths: Sequence[str], out: Inputs | None = None) -> Inputs:
    out = out or Inputs()
    for path in paths:
        parse_documents(read_text(path), path, out)
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


def expand_workloads(inp: Inputs) -> None:
    """Pending pods for Deployments, StatefulSets, ReplicaSets and Jobs of which no pod was given."""
    given = inp.pending + inp.running
    names = {p.key for p in given}
    present = {(w.namespace, w.kind, w.name) for w in inp.workloads}
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
        for i in range(w.replicas):
            name = f"{w.name}-{i}"
            if f"{w.namespace}/{name}" in names:
                continue
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
