"""Reading a pod spec (a Pod's, or a workload's or DaemonSet's template) and its parts: node requirements,
label selectors, taints, tolerations, affinity terms, topology spreads, containers and host ports.

Every reader takes the raw value and its path and raises packing.fields.FieldError naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packing.fields import (
    FieldError,
    as_int,
    as_list,
    as_object,
    as_str,
    bounded,
    resources,
    str_map,
    sub_path,
)
from packing.nodepool import HOSTNAME_LABEL
from packing.pods import (
    SELECTS_NOTHING,
    ContainerResources,
    HostPort,
    LabelSelector,
    Pod,
    PodAffinityTerm,
    TopologySpread,
    containers_requests,
    pod_requests,
)
from packing.quantity import format_quantity
from packing.requirements import OPERATORS, Requirement, RequirementError, Requirements
from packing.resources import Resources
from packing.taints import EFFECTS, TOLERATION_OPERATORS, Taint, Toleration, taint_number
from packing.yamlinput import brief

__all__ = [
    "affinity_term",
    "clear_spec_memo",
    "label_selector",
    "parse_pod_spec",
    "parse_pod_template",
    "pod_level_requests",
    "requirement",
    "scheduling_gates",
    "taint",
    "taints",
    "toleration",
]


def requirement(d: Any, path: str) -> Requirement:
    o = as_object(d, path)
    key = as_str(o.get("key"), f"{path}.key", required=True)
    op = as_str(o.get("operator"), f"{path}.operator", required=True)
    if op not in OPERATORS:
        raise FieldError(
            f"{path}.operator", f"unknown operator {brief(op)} (expected one of {', '.join(OPERATORS)})"
        )
    values = [as_str(v, f"{path}.values[{i}]") for i, v in enumerate(as_list(o.get("values"), f"{path}.values"))]
    try:
        return Requirement.new(key, op, values)
    except RequirementError as e:
        raise FieldError(f"{path}.values", str(e)) from None


def label_selector(d: Any, path: str) -> LabelSelector | None:
    if d is None:
        return None
    o = as_object(d, path)
    reqs = [
        Requirement.new(k, "In", [v])
        for k, v in str_map(o.get("matchLabels"), f"{path}.matchLabels").items()
    ]
    for i, e in enumerate(as_list(o.get("matchExpressions"), f"{path}.matchExpressions")):
        r = requirement(e, f"{path}.matchExpressions[{i}]")
        if r.operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise FieldError(
                f"{path}.matchExpressions[{i}].operator",
                f"operator {r.operator} not allowed in a label selector",
            )
        reqs.append(r)
    return LabelSelector(Requirements(reqs))


def taint(d: Any, path: str) -> Taint:
    o = as_object(d, path)
    effect = as_str(o.get("effect"), f"{path}.effect", required=True)
    if effect not in EFFECTS:
        raise FieldError(f"{path}.effect", f"unknown effect {brief(effect)}")
    return Taint(
        as_str(o.get("key"), f"{path}.key", required=True), as_str(o.get("value"), f"{path}.value"), effect
    )


def taints(d: Any, path: str) -> tuple[Taint, ...]:
    return tuple(taint(t, f"{path}[{i}]") for i, t in enumerate(as_list(d, path)))


def toleration(d: Any, path: str) -> Toleration:
    o = as_object(d, path)
    op = as_str(o.get("operator"), f"{path}.operator", default="Equal")
    if op not in TOLERATION_OPERATORS:
        raise FieldError(
            f"{path}.operator",
            f"unknown operator {brief(op)} (expected one of {', '.join(TOLERATION_OPERATORS)})",
        )
    effect = as_str(o.get("effect"), f"{path}.effect")
    if effect and effect not in EFFECTS:
        raise FieldError(f"{path}.effect", f"unknown effect {brief(effect)}")
    key = as_str(o.get("key"), f"{path}.key")
    value = as_str(o.get("value"), f"{path}.value")
    if op in ("Gt", "Lt"):
        # Kubernetes 1.35 (alpha): a key, and a value that is a positive integer without leading zeros
        if not key:
            raise FieldError(f"{path}.key", f"is required with operator {op}")
        if taint_number(value) is None:
            raise FieldError(
                f"{path}.value",
                f"must be a positive integer without leading zeros with operator {op}, got {brief(value)}",
            )
    return Toleration(key, op, value, effect)


def scheduling_gates(d: Any, path: str) -> tuple[str, ...]:
    """The names of spec.schedulingGates (a gated pod is not provisioned for until its gates are removed)."""
    names = []
    for i, g in enumerate(as_list(d, path)):
        name = as_str(as_object(g, f"{path}[{i}]").get("name"), f"{path}[{i}].name", required=True)
        if not name:
            raise FieldError(f"{path}[{i}].name", "must not be empty")
        names.append(name)
    return tuple(names)


# Kubernetes accepts pod-level requests and limits for these resources only
_POD_LEVEL_RESOURCES = ("cpu", "memory")
_POD_LEVEL_PREFIX = "hugepages-"


def pod_level_requests(d: Any, path: str, containers: Resources) -> Resources | None:
    """The requests pod-level resources (spec.resources) set, for the resources they name; None when there are
    none. As the API server defaults them: a resource with a pod-level limit but no pod-level request requests
    the containers' aggregate when a container requests it, else the limit. `containers` is that aggregate."""
    o = as_object(d, path)
    reqs = resources(o.get("requests"), f"{path}.requests")
    lims = resources(o.get("limits"), f"{path}.limits")
    for part, given in (("requests", o.get("requests")), ("limits", o.get("limits"))):
        for k in as_object(given, f"{path}.{part}"):
            key = str(k)
            if key not in _POD_LEVEL_RESOURCES and not key.startswith(_POD_LEVEL_PREFIX):
                raise FieldError(
                    sub_path(f"{path}.{part}", key), "pod-level resources support only cpu, memory and hugepages-*"
                )
    if not reqs and not lims:
        return None
    out = dict(reqs.as_dict())
    for k, v in lims.items():
        if k in out:
            if out[k] > v:
                raise FieldError(
                    f"{path}.requests.{k}", f"must be less than or equal to the limit {format_quantity(v, k)}"
                )
            continue
        out[k] = containers[k] if containers.get(k, 0) else v
    return Resources(out)


def affinity_term(d: Any, path: str, namespace: str) -> PodAffinityTerm:
    o = as_object(d, path)
    sel = label_selector(o.get("labelSelector"), f"{path}.labelSelector")
    nss = frozenset(
        as_str(v, f"{path}.namespaces[{i}]")
        for i, v in enumerate(as_list(o.get("namespaces"), f"{path}.namespaces"))
    )
    ns_sel = label_selector(o.get("namespaceSelector"), f"{path}.namespaceSelector")
    key = as_str(o.get("topologyKey"), f"{path}.topologyKey", required=True)
    # a null selector selects nothing; model it as a requirement no pod can meet
    selector = sel or SELECTS_NOTHING
    if ns_sel is not None:
        # with a namespaceSelector the pod's own namespace counts only when listed or matched
        return PodAffinityTerm(selector, key, nss, ns_sel)
    return PodAffinityTerm(selector, key, nss or frozenset({namespace}))


def _containers(d: Any, path: str, *, init: bool) -> list[ContainerResources]:
    out = []
    for i, c in enumerate(as_list(d, path)):
        cp = f"{path}[{i}]"
        co = as_object(c, cp)
        res = as_object(co.get("resources"), f"{cp}.resources")
        out.append(
            ContainerResources(
                resources(res.get("requests"), f"{cp}.resources.requests"),
                resources(res.get("limits"), f"{cp}.resources.limits"),
                restart_always=init and co.get("restartPolicy") == "Always",
            )
        )
    return out


# Pods of one ReplicaSet or Job have the same spec: parse_pod_spec parses each distinct spec once and the pods
# share the parsed parts (a Pod and all it holds are immutable). The memo is keyed by the repr of exactly what
# the parse reads, so equal keys mean equal inputs (the readers give plain dicts, lists and scalars, whose repr
# tells them apart), and a parse that failed is never remembered. Bounded: cleared when full.
SPEC_MEMO_SIZE = 4096
_spec_memo: dict[tuple[str, str, str], Pod] = {}


def clear_spec_memo() -> None:
    """Forget the specs parsed so far."""
    _spec_memo.clear()


def _spec_key(
    meta: Mapping[str, Any], spec: Mapping[str, Any], path: str, namespace: str
) -> tuple[str, str, str] | None:
    """What parse_pod_spec reads of a pod except its own fields (name, uid, owner, nodeName, deletion), or None
    when the spec is not the plain shape the key can vouch for (the parse then runs, and words any error)."""
    if type(spec) is not dict or type(meta) is not dict:
        return None
    tsc = spec.get("topologySpreadConstraints")
    # the labels matter to the spec's parse only through a spread's matchLabelKeys
    parts: list[Any] = [meta.get("labels") if tsc else None]
    for field in ("containers", "initContainers"):
        cs = spec.get(field)
        if cs is None:
            parts.append(None)
            continue
        if type(cs) is not list:
            return None
        if any(type(c) is not dict for c in cs):
            return None
        parts.append([(c.get("resources"), c.get("ports"), c.get("restartPolicy")) for c in cs])
    get = spec.get
    parts.extend(
        (
            get("overhead"),
            get("resources"),
            get("nodeSelector"),
            get("affinity"),
            tsc,
            get("tolerations"),
        )
    )
    return path, namespace, repr(parts)


def parse_pod_spec(
    meta: Mapping[str, Any], spec: Mapping[str, Any], path: str, *, name: str, namespace: str
) -> Pod:
    key = _spec_key(meta, spec, path, namespace) if SPEC_MEMO_SIZE else None
    if key is None:
        return _parse_pod_spec(meta, spec, path, name=name, namespace=namespace)
    seen = _spec_memo.get(key)
    if seen is None:
        pod = _parse_pod_spec(meta, spec, path, name=name, namespace=namespace)
        if len(_spec_memo) >= SPEC_MEMO_SIZE:
            _spec_memo.clear()
        _spec_memo[key] = pod
        return pod
    # the spec's fields were read without error for `seen`; the pod's own (labels first) in the parse's order
    sp = f"{path}spec"
    labels = str_map(meta.get("labels"), f"{path}metadata.labels")
    owners = as_list(meta.get("ownerReferences"), f"{path}metadata.ownerReferences")
    owner = as_object(owners[0], f"{path}metadata.ownerReferences[0]") if owners else {}
    return Pod(
        name, namespace, labels, seen.requests, seen.node_selector, seen.required_terms, seen.preferred_terms,
        seen.tolerations, seen.spread, seen.affinity, seen.anti_affinity, seen.preferred_affinity,
        seen.preferred_anti_affinity, seen.host_ports,
        as_str(spec.get("nodeName"), f"{sp}.nodeName"),
        str(owner.get("kind", "")),
        str(owner.get("name", "")),
        as_str(meta.get("uid"), f"{path}metadata.uid"),
        bool(meta.get("deletionTimestamp")),
    )  # fmt: skip


def _parse_pod_spec(
    meta: Mapping[str, Any], spec: Mapping[str, Any], path: str, *, name: str, namespace: str
) -> Pod:
    sp = f"{path}spec"
    containers = _containers(spec.get("containers"), f"{sp}.containers", init=False)
    inits = _containers(spec.get("initContainers"), f"{sp}.initContainers", init=True)
    overhead = resources(spec.get("overhead"), f"{sp}.overhead")
    pod_level = pod_level_requests(spec.get("resources"), f"{sp}.resources", containers_requests(containers, inits))
    requests = bounded(
        pod_requests(containers, inits, overhead, pod_level),
        f"{sp}.resources.requests" if pod_level else f"{sp}.containers[*].resources.requests",
    )
    labels = str_map(meta.get("labels"), f"{path}metadata.labels")
    node_selector = str_map(spec.get("nodeSelector"), f"{sp}.nodeSelector")
    aff = as_object(spec.get("affinity"), f"{sp}.affinity")
    na = as_object(aff.get("nodeAffinity"), f"{sp}.affinity.nodeAffinity")
    rp = f"{sp}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    req = as_object(na.get("requiredDuringSchedulingIgnoredDuringExecution"), rp)
    terms = []
    for i, t in enumerate(as_list(req.get("nodeSelectorTerms"), f"{rp}.nodeSelectorTerms")):
        tp = f"{rp}.nodeSelectorTerms[{i}]"
        to = as_object(t, tp)
        exprs = [
            requirement(e, f"{tp}.matchExpressions[{j}]")
            for j, e in enumerate(as_list(to.get("matchExpressions"), f"{tp}.matchExpressions"))
        ]
        for j, e in enumerate(as_list(to.get("matchFields"), f"{tp}.matchFields")):
            r = requirement(e, f"{tp}.matchFields[{j}]")
            # metadata.name is the only matchFields key; on a node it equals the hostname label
            exprs.append(
                Requirement(HOSTNAME_LABEL, r.complement, r.values, r.allow_absent, r.gt, r.lt, r.operator)
            )
        terms.append(Requirements(exprs))
    pp = f"{sp}.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    preferred = []
    for i, t in enumerate(as_list(na.get("preferredDuringSchedulingIgnoredDuringExecution"), pp)):
        to = as_object(t, f"{pp}[{i}]")
        pref = as_object(to.get("preference"), f"{pp}[{i}].preference")
        exprs = [
            requirement(e, f"{pp}[{i}].preference.matchExpressions[{j}]")
            for j, e in enumerate(
                as_list(pref.get("matchExpressions"), f"{pp}[{i}].preference.matchExpressions")
            )
        ]
        preferred.append((as_int(to.get("weight"), f"{pp}[{i}].weight", 1, lo=1, hi=100), Requirements(exprs)))

    def pod_terms(kind: str) -> tuple[tuple[PodAffinityTerm, ...], tuple[tuple[int, PodAffinityTerm], ...]]:
        base = f"{sp}.affinity.{kind}"
        o = as_object(aff.get(kind), base)
        rq = tuple(
            affinity_term(t, f"{base}.requiredDuringSchedulingIgnoredDuringExecution[{i}]", namespace)
            for i, t in enumerate(
                as_list(
                    o.get("requiredDuringSchedulingIgnoredDuringExecution"),
                    f"{base}.requiredDuringSchedulingIgnoredDuringExecution",
                )
            )
        )
        pf = []
        for i, t in enumerate(
            as_list(
                o.get("preferredDuringSchedulingIgnoredDuringExecution"),
                f"{base}.preferredDuringSchedulingIgnoredDuringExecution",
            )
        ):
            tp = f"{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            to = as_object(t, tp)
            pf.append(
                (
                    as_int(to.get("weight"), f"{tp}.weight", 1, lo=1, hi=100),
                    affinity_term(to.get("podAffinityTerm"), f"{tp}.podAffinityTerm", namespace),
                )
            )
        return rq, tuple(pf)

    affinity, pref_aff = pod_terms("podAffinity")
    anti, pref_anti = pod_terms("podAntiAffinity")
    spreads = []
    for i, t in enumerate(as_list(spec.get("topologySpreadConstraints"), f"{sp}.topologySpreadConstraints")):
        tp = f"{sp}.topologySpreadConstraints[{i}]"
        to = as_object(t, tp)
        when = as_str(to.get("whenUnsatisfiable"), f"{tp}.whenUnsatisfiable", default="DoNotSchedule")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            raise FieldError(
                f"{tp}.whenUnsatisfiable", f"must be DoNotSchedule or ScheduleAnyway, got {brief(when)}"
            )
        skew = as_int(to.get("maxSkew"), f"{tp}.maxSkew", 1, lo=1)
        policy = as_str(to.get("nodeAffinityPolicy"), f"{tp}.nodeAffinityPolicy", default="Honor")
        if policy not in ("Honor", "Ignore"):
            raise FieldError(f"{tp}.nodeAffinityPolicy", f"must be Honor or Ignore, got {brief(policy)}")
        sel = label_selector(to.get("labelSelector"), f"{tp}.labelSelector") or SELECTS_NOTHING
        keys = [
            as_str(k, f"{tp}.matchLabelKeys[{j}]")
            for j, k in enumerate(as_list(to.get("matchLabelKeys"), f"{tp}.matchLabelKeys"))
        ]
        # as the API server does: each key the pod carries narrows the selector to the pod's own value (a
        # Deployment's pod-template-hash spreads each revision on its own); a key it lacks is ignored
        extra = [Requirement.new(k, "In", [labels[k]]) for k in keys if k in labels]
        if extra and sel is not SELECTS_NOTHING:
            sel = LabelSelector(Requirements([*sel.requirements.values(), *extra]))
        spreads.append(
            TopologySpread(
                skew,
                as_str(to.get("topologyKey"), f"{tp}.topologyKey", required=True),
                when,
                sel,
                as_int(to.get("minDomains"), f"{tp}.minDomains", 1, lo=1),
                honor_node_affinity=policy == "Honor",
            )
        )
    ports = []
    for i, c in enumerate(as_list(spec.get("containers"), f"{sp}.containers")):
        for j, p in enumerate(
            as_list(as_object(c, f"{sp}.containers[{i}]").get("ports"), f"{sp}.containers[{i}].ports")
        ):
            po = as_object(p, f"{sp}.containers[{i}].ports[{j}]")
            hp = as_int(po.get("hostPort"), f"{sp}.containers[{i}].ports[{j}].hostPort", 0, lo=0, hi=65535)
            if hp:
                ports.append(
                    HostPort(
                        hp,
                        as_str(po.get("protocol"), f"{sp}.containers[{i}].ports[{j}].protocol", default="TCP"),
                        as_str(po.get("hostIP"), f"{sp}.containers[{i}].ports[{j}].hostIP"),
                    )
                )
    owners = as_list(meta.get("ownerReferences"), f"{path}metadata.ownerReferences")
    owner = as_object(owners[0], f"{path}metadata.ownerReferences[0]") if owners else {}
    return Pod(
        name=name,
        namespace=namespace,
        labels=labels,
        requests=requests,
        node_selector=node_selector,
        required_terms=tuple(terms),
        preferred_terms=tuple(preferred),
        tolerations=tuple(
            toleration(t, f"{sp}.tolerations[{i}]")
            for i, t in enumerate(as_list(spec.get("tolerations"), f"{sp}.tolerations"))
        ),
        spread=tuple(spreads),
        affinity=affinity,
        anti_affinity=anti,
        preferred_affinity=pref_aff,
        preferred_anti_affinity=pref_anti,
        host_ports=tuple(ports),
        node_name=as_str(spec.get("nodeName"), f"{sp}.nodeName"),
        owner_kind=str(owner.get("kind", "")),
        owner_name=str(owner.get("name", "")),
        uid=as_str(meta.get("uid"), f"{path}metadata.uid"),
        terminating=bool(meta.get("deletionTimestamp")),
    )


def parse_pod_template(holder: Mapping[str, Any], path: str, *, name: str, namespace: str) -> Pod:
    """The pod a template stamps out: ``holder["template"]`` with its metadata and spec (a DaemonSet's or a
    workload's ``spec.template``, a PodTemplate's ``template``); ``path`` is where ``holder`` sits, so field
    errors name ``spec.template.spec...`` or ``template.spec...``."""
    where = f"{path}template"
    tmpl = as_object(holder.get("template"), where)
    return parse_pod_spec(
        as_object(tmpl.get("metadata"), f"{where}.metadata"),
        as_object(tmpl.get("spec"), f"{where}.spec"),
        f"{where}.",
        name=name,
        namespace=namespace,
    )
