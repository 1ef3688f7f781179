"""Reading Kubernetes objects (YAML or JSON, multi-document or kind: List) into the engine's model.

Every problem is reported as one InputError naming the file, the document's index and the field, because the
CLI's users are debugging a dump they did not write by hand. Values quoted in a message are cut to 60 characters
(packing.yamlinput.brief), and the input is bounded: the YAML reader's limits (aliases, nesting), quantities up
to packing.quantity.MAX_QUANTITY, integers strictly (ASCII digits, each field's range), at most MAX_REPLICAS pods
per workload and MAX_EXPANDED_PODS made from workloads in all, DEFAULT_MAX_INPUT_BYTES of files per run.

The field readers are packing.fields (shared with packing.disruption.inputs, which reads what disruption needs
from the same objects), pod specs are read by packing.podspec and files by packing.documents.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packing.buffers import BUFFER_KIND, CapacityBuffer, read_buffer, read_pod_template
from packing.commitmentdocs import read_commitment
from packing.commitments import Commitment
from packing.documents import (
    DEFAULT_MAX_INPUT_BYTES,
    ByteBudget,
    decode_text,
    kubernetes_objects,
    object_label,
)
from packing.fields import (
    MAX_PRICE,
    FieldError,
    InputError,
    as_int,
    as_list,
    as_object,
    as_str,
    cut,
    int_or_percent,
    price,
    quantities,
    resources,
    str_map,
    timestamp,
)
from packing.gcpause import gc_paused
from packing.instancetype import CAPACITY_TYPE_RESERVED, InstanceType, Offering, Reservation, ReservationType
from packing.legacy import legacy_objects
from packing.nodepool import (
    HOSTNAME_LABEL,
    INITIALIZED_LABEL,
    INSTANCE_TYPE_LABEL,
    STATIC_LIMIT_KEYS,
    DaemonSet,
    ExistingNodeSpec,
    NodePool,
    PodDisruptionBudget,
)
from packing.ondemandshare import NODEPOOL_KIND, POD_KIND, OnDemandShare, note_object, workload_key
from packing.overlay import NodeOverlay
from packing.overlaydocs import read_overlay
from packing.parallelread import read_in_two
from packing.pods import (
    NAMESPACE_NAME_LABEL,
    SELECTS_NOTHING,
    IgnoredPod,
    LabelSelector,
    Pod,
    PodAffinityTerm,
)
from packing.podspec import (
    label_selector,
    parse_pod_spec,
    parse_pod_template,
    requirement,
    scheduling_gates,
    taints,
)
from packing.poolschedule import SCHEDULES_ANNOTATION, PoolWindow, parse_windows
from packing.requirements import Requirement, Requirements
from packing.resources import Resources
from packing.streaming import Declined, is_json_object, json_bytes_objects, stream_objects
from packing.yamlinput import brief

__all__ = [
    "DEFAULT_MAX_INPUT_BYTES",
    "MAX_EXPANDED_PODS",
    "MAX_PRICE",
    "MAX_REPLICAS",
    "ByteBudget",
    "InputError",
    "Inputs",
    "ObjectReader",
    "Workload",
    "add_object",
    "expand_workloads",
    "expansion_plan",
    "inflight_claims",
    "load_files",
    "parse_documents",
    "parse_pod_spec",
]

INT64_MAX = 2**63 - 1  # spec.replicas is an int64 in Karpenter's CRD
MAX_REPLICAS = 10_000  # pods one workload (Deployment, ReplicaSet, Job...) may stand for (replicas, parallelism)
MAX_EXPANDED_PODS = 100_000  # pending pods made from workloads in one input, in all

WORKLOAD_KINDS = {
    ("apps", "Deployment"),
    ("apps", "StatefulSet"),
    ("apps", "ReplicaSet"),
    ("batch", "Job"),
    ("", "ReplicationController"),  # v1: a ReplicaSet with a plain-map selector
}

# Reads one more part of an object into wherever it keeps it (packing.disruption.inputs.read_extras); FieldError
# naming the field (its path includes the item's prefix inside a List) when that part is bad.
ObjectReader = Callable[[Mapping[str, Any], str], None]


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
    gates: tuple[str, ...] = ()  # the template's spec.schedulingGates: its pods are not provisioned for


@dataclass
class Inputs:
    pending: list[Pod] = field(default_factory=list)
    running: list[Pod] = field(default_factory=list)
    # pods without a node that are not provisioned for (scheduling gates, a PodScheduled reason other than
    # Unschedulable): listed in the plan's `ignored`, never given to the scheduler
    ignored: list[IgnoredPod] = field(default_factory=list)
    nodes: list[ExistingNodeSpec] = field(default_factory=list)
    nodeclaims: list[tuple[ExistingNodeSpec, str]] = field(default_factory=list)  # (spec, instance type name)
    nodepools: list[NodePool] = field(default_factory=list)
    nodeclasses: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    instance_types: list[InstanceType] = field(default_factory=list)
    daemonsets: list[DaemonSet] = field(default_factory=list)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    buffers: list[CapacityBuffer] = field(default_factory=list)  # packing.buffers: headroom as virtual pods
    pod_templates: dict[tuple[str, str], Pod] = field(default_factory=dict)  # (namespace, name) -> its pod
    # the labels of each v1 Namespace read, by name: what pod (anti-)affinity namespaceSelectors match
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    commitments: list[Commitment] = field(default_factory=list)  # loadmaster.dev Commitment (packing.commitmentdocs)
    overlays: list[NodeOverlay] = field(default_factory=list)  # karpenter.sh NodeOverlay (packing.overlaydocs)
    skipped: dict[str, int] = field(default_factory=dict)
    # where each InstanceType was read ("file: document N"), to name both places of a duplicate
    origins: dict[str, str] = field(default_factory=dict)
    # where each object read from a file was, by (kind, namespace, name): two of them are refused
    places: dict[tuple[str, str, str], str] = field(default_factory=dict)
    expanded: bool = False  # expand_workloads has run (it runs once)
    # one notice per legacy Karpenter object read as its v1 successors (packing.legacy), printed on stderr
    converted: list[str] = field(default_factory=list)
    # the on-demand shares asked for (packing.ondemandshare), by (kind, namespace, name): NodePools ("" namespace),
    # workloads, and pods whose template carried the annotations
    on_demand_shares: dict[tuple[str, str, str], OnDemandShare] = field(default_factory=dict)

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())


def _with_pods(r: Resources) -> Resources:
    # a hand-written node or type often leaves out the pod count; the kubelet's default maxPods is 110
    if r and "pods" not in r:
        return r + Resources({"pods": 110_000})
    return r


# ---------------------------------------------------------------- per kind
def _meta(doc: Mapping[str, Any]) -> tuple[Mapping[str, Any], str, str]:
    meta = as_object(doc.get("metadata"), "metadata")
    name = as_str(meta.get("name"), "metadata.name", required=True)
    ns = as_str(meta.get("namespace"), "metadata.namespace", default="default") or "default"
    return meta, name, ns


def _replicas(v: Any, path: str) -> int:
    n = as_int(v, path, 1, lo=0, hi=sys.maxsize)
    if n > MAX_REPLICAS:
        raise FieldError(path, f"{n} is more than the maximum {MAX_REPLICAS} pods per workload")
    return n


def _not_provisioned(gates: tuple[str, ...], status: Mapping[str, Any]) -> str:
    """Why a pod without a node is not provisioned for ("" when it is): as Karpenter, a pod with scheduling gates
    waits for them, and a pod the scheduler has judged must have been found Unschedulable. A pod without a
    PodScheduled condition (a manifest, or one the scheduler has not seen yet) is provisioned for."""
    if gates:
        names = ", ".join(cut(g, 60) for g in gates[:5]) + (", …" if len(gates) > 5 else "")
        return f"scheduling gate{'s' if len(gates) > 1 else ''} {names}"
    verdicts = []
    for i, c in enumerate(as_list(status.get("conditions"), "status.conditions")):
        cp = f"status.conditions[{i}]"
        co = as_object(c, cp)
        if as_str(co.get("type"), f"{cp}.type", required=True) != "PodScheduled":
            continue
        verdicts.append(
            (as_str(co.get("status"), f"{cp}.status"), as_str(co.get("reason"), f"{cp}.reason"))
        )
    if not verdicts or any(reason == "Unschedulable" for _, reason in verdicts):
        return ""
    cond, reason = verdicts[0]
    if reason:
        return f"PodScheduled condition reason {cut(reason, 60)} (not Unschedulable)"
    return f"PodScheduled condition status {cut(cond, 60) or '(none)'} without reason Unschedulable"


def _pod(doc: Mapping[str, Any], out: Inputs, where: str) -> None:
    meta, name, ns = _meta(doc)
    spec = as_object(doc.get("spec"), "spec")
    pod = parse_pod_spec(meta, spec, "", name=name, namespace=ns)
    note_object(out.on_demand_shares, (POD_KIND, ns, name), (meta.get("annotations"), "metadata.annotations"))
    gates = scheduling_gates(spec.get("schedulingGates"), "spec.schedulingGates")
    status = as_object(doc.get("status"), "status")
    if status.get("phase") in ("Succeeded", "Failed"):
        return
    if pod.node_name:
        out.running.append(pod)
        return
    why = _not_provisioned(gates, status)
    if not why and pod.owner_kind in ("DaemonSet", "Node"):
        # as Karpenter: a new node would not help a DaemonSet's pod (it waits for its node) or a static pod
        why = f"owned by {pod.owner_kind} {cut(pod.owner_name, 60)}"
    if not why and meta.get("deletionTimestamp"):
        why = "terminating (metadata.deletionTimestamp is set)"
    if why:
        out.ignored.append(IgnoredPod(pod, why))
    else:
        out.pending.append(pod)


def _namespace(doc: Mapping[str, Any], out: Inputs, where: str) -> None:
    meta, name, _ = _meta(doc)
    labels = str_map(meta.get("labels"), "metadata.labels")
    # the API server sets this label on every Namespace; a hand-written one may lack it
    labels.setdefault(NAMESPACE_NAME_LABEL, name)
    out.namespaces[name] = labels


def _node(doc: Mapping[str, Any], out: Inputs, where: str) -> None:
    meta, name, _ = _meta(doc)
    labels = str_map(meta.get("labels"), "metadata.labels")
    status = as_object(doc.get("status"), "status")
    spec = as_object(doc.get("spec"), "spec")
    alloc = _with_pods(resources(status.get("allocatable"), "status.allocatable"))
    cap = _with_pods(resources(status.get("capacity"), "status.capacity"))
    out.nodes.append(
        ExistingNodeSpec(
            name=name,
            labels=labels,
            allocatable=alloc or cap,
            taints=taints(spec.get("taints"), "spec.taints"),
            initialized=labels.get(INITIALIZED_LABEL) == "true",
            kind="Node",
            provider_id=as_str(spec.get("providerID"), "spec.providerID"),
            capacity=cap or alloc,
            deleting=bool(meta.get("deletionTimestamp")),
        )
    )


def _nodeclaim(doc: Mapping[str, Any], out: Inputs, where: str) -> None:
    meta, name, _ = _meta(doc)
    labels = str_map(meta.get("labels"), "metadata.labels")
    spec = as_object(doc.get("spec"), "spec")
    reqs = Requirements(
        requirement(r, f"spec.requirements[{i}]")
        for i, r in enumerate(as_list(spec.get("requirements"), "spec.requirements"))
    )
    merged = dict(reqs.pinned_labels())
    merged.update(labels)
    status = as_object(doc.get("status"), "status")
    all_taints = taints(spec.get("taints"), "spec.taints") + taints(spec.get("startupTaints"), "spec.startupTaints")
    alloc = resources(status.get("allocatable"), "status.allocatable")
    cap = resources(status.get("capacity"), "status.capacity")
    node_name = as_str(status.get("nodeName"), "status.nodeName")
    merged.setdefault(HOSTNAME_LABEL, node_name or name)
    spec_obj = ExistingNodeSpec(
        name=name,
        labels=merged,
        allocatable=alloc or cap,
        taints=all_taints,
        initialized=False,
        kind="NodeClaim",
        provider_id=as_str(status.get("providerID"), "status.providerID"),
        capacity=cap or None,
        deleting=bool(meta.get("deletionTimestamp")),
    )
    out.nodeclaims.append((spec_obj, node_name))


MAX_MIN_VALUES = 50  # Karpenter's CRD bound on a requirement's minValues


def pool_requirement(d: Any, path: str) -> Requirement:
    """A NodePool requirement: a node selector requirement plus its optional minValues (1 to 50; with In, at
    most as many as the values given), as Karpenter's CRD validates it."""
    r = requirement(d, path)
    mv_raw = as_object(d, path).get("minValues")
    if mv_raw is None:
        return r
    if isinstance(mv_raw, float) and mv_raw.is_integer():
        mv_raw = int(mv_raw)  # YAML 2.0, as the console stores it
    mv = as_int(mv_raw, f"{path}.minValues", 0, lo=1, hi=MAX_MIN_VALUES)
    if r.operator == "In" and mv > len(r.values):
        raise FieldError(f"{path}.minValues", f"minValues {mv} needs at least {mv} values, {len(r.values)} given")
    return dataclasses.replace(r, min_values=mv)


def _nodepool(doc: Mapping[str, Any], out: Inputs, where: str) -> None:
    meta, name, _ = _meta(doc)
    spec = as_object(doc.get("spec"), "spec")
    tmpl = as_object(spec.get("template"), "spec.template")
    tspec = as_object(tmpl.get("spec"), "spec.template.spec")
    tmeta = as_object(tmpl.get("metadata"), "spec.template.metadata")
    reqs = Requirements(
        pool_requirement(r, f"spec.template.spec.requirements[{i}]")
        for i, r in enumerate(as_list(tspec.get("requirements"), "spec.template.spec.requirements"))
    )
    limits = quantities(spec.get("limits"), "spec.limits") if spec.get("limits") is not None else None
    ref = as_object(tspec.get("nodeClassRef"), "spec.template.spec.nodeClassRef")
    replicas = None if spec.get("replicas") is None else as_int(spec["replicas"], "spec.replicas", 0, lo=0, hi=INT64_MAX)
    note_object(out.on_demand_shares, (NODEPOOL_KIND, "", name), (meta.get("annotations"), "metadata.annotations"))
    if replicas is not None:
        # the CRD's CEL rules on a static NodePool
        other = sorted(set(limits or {}) - STATIC_LIMIT_KEYS)
        if other:
            raise FieldError("spec.limits", f"only 'limits.nodes' is supported on static NodePools (got {', '.join(other)})")
        if spec.get("weight") is not None:
            raise FieldError("spec.weight", "'weight' is not supported on static NodePools")
    out.nodepools.append(
        NodePool(
            name=name,
            requirements=reqs,
            labels=str_map(tmeta.get("labels"), "spec.template.metadata.labels"),
            taints=taints(tspec.get("taints"), "spec.template.spec.taints"),
            startup_taints=taints(tspec.get("startupTaints"), "spec.template.spec.startupTaints"),
            limits=limits,
            weight=as_int(spec.get("weight"), "spec.weight", 0, lo=1, hi=100),
            node_class=as_str(ref.get("name"), "spec.template.spec.nodeClassRef.name"),
            replicas=replicas,
            windows=_pool_windows(meta, static=replicas is not None),
        )
    )


def _pool_windows(meta: Mapping[str, Any], *, static: bool) -> tuple[PoolWindow, ...]:
    annotations = as_object(meta.get("annotations"), "metadata.annotations")
    if SCHEDULES_ANNOTATION not in annotations:
        return ()
    return parse_windows(annotations[SCHEDULES_ANNOTATION], static=static,
                         path=f"metadata.annotations[{SCHEDULES_ANNOTATION}]")


def _nodeclass(doc: Mapping[str, Any], out: Inputs, where: str) -> None:
    _, name, _ = _meta(doc)
    spec = as_object(doc.get("spec"), "spec")
    out.nodeclasses[name] = as_object(spec.get("kubelet"), "spec.kubelet")


def _instance_type(doc: Mapping[str, Any], out: Inputs, where: str) -> None:
    _, name, _ = _meta(doc)
    spec = as_object(doc.get("spec"), "spec")
    if spec.get("capacity") is None:
        raise FieldError("spec.capacity", "is required")
    offerings = []
    for i, o in enumerate(as_list(spec.get("offerings"), "spec.offerings")):
        op = f"spec.offerings[{i}]"
        oo = as_object(o, op)
        dollars = price(oo.get("price"), f"{op}.price")
        avail = oo.get("available", True)
        if not isinstance(avail, bool):
            raise FieldError(f"{op}.available", f"must be true or false, got {brief(avail)}")
        ct = as_str(oo.get("capacityType"), f"{op}.capacityType", required=True)
        if ct not in ("spot", "on-demand", CAPACITY_TYPE_RESERVED):
            raise FieldError(f"{op}.capacityType", f"must be spot, on-demand or reserved, got {brief(ct)}")
        zone = as_str(oo.get("zone"), f"{op}.zone", required=True)
        rsv = _reservation(oo, op) if ct == CAPACITY_TYPE_RESERVED else None
        offerings.append(Offering(zone, ct, dollars, avail, reservation=rsv))
    out.instance_types.append(
        InstanceType(
            name=name,
            capacity=_with_pods(resources(spec.get("capacity"), "spec.capacity")),
            overhead=resources(spec.get("overhead"), "spec.overhead"),
            labels=str_map(spec.get("labels"), "spec.labels"),
            offerings=tuple(offerings),
        )
    )


def _reservation(oo: Mapping[str, Any], op: str) -> Reservation:
    """The reservation behind a `reserved` offering: reservationId, reservationCapacity (its free instances,
    Karpenter's ReservationCapacity), reservationEnds, reservationType (default or capacity-block)."""
    rid = as_str(oo.get("reservationId"), f"{op}.reservationId", required=True)
    if oo.get("reservationCapacity") is None:
        raise FieldError(f"{op}.reservationCapacity", "is required on a reserved offering")
    free = as_int(oo.get("reservationCapacity"), f"{op}.reservationCapacity", 0, lo=0)
    rtype = as_str(oo.get("reservationType"), f"{op}.reservationType", default=ReservationType.DEFAULT.value)
    if rtype not in tuple(ReservationType):
        raise FieldError(f"{op}.reservationType", f"must be default or capacity-block, got {brief(rtype)}")
    ends = timestamp(oo.get("reservationEnds"), f"{op}.reservationEnds")
    if rtype == ReservationType.CAPACITY_BLOCK and ends is None:
        raise FieldError(f"{op}.reservationEnds", "is required on a capacity-block reservation")
    interruptible = oo.get("reservationInterruptible", False)
    if not isinstance(interruptible, bool):
        raise FieldError(f"{op}.reservationInterruptible", f"must be true or false, got {brief(interruptible)}")
    return Reservation(rid, free, ends=ends, type=ReservationType(rtype), interruptible=interruptible)


def _daemonset(doc: Mapping[str, Any], out: Inputs, where: str) -> None:
    meta, name, ns = _meta(doc)
    spec = as_object(doc.get("spec"), "spec")
    pod = parse_pod_template(spec, "spec.", name=name, namespace=ns)
    out.daemonsets.append(DaemonSet(ns, name, pod))


def _workload(doc: Mapping[str, Any], out: Inputs, where: str) -> None:
    kind = str(doc.get("kind"))
    meta, name, ns = _meta(doc)
    spec = as_object(doc.get("spec"), "spec")
    pod = parse_pod_template(spec, "spec.", name=name, namespace=ns)
    tspec = as_object(as_object(spec.get("template"), "spec.template").get("spec"), "spec.template.spec")
    gates = scheduling_gates(tspec.get("schedulingGates"), "spec.template.spec.schedulingGates")
    if kind == "Job":
        # a Job runs `parallelism` pods at once (default 1), never more than it has completions left
        replicas = _replicas(spec.get("parallelism"), "spec.parallelism")
        if spec.get("completions") is not None:
            replicas = min(replicas, as_int(spec.get("completions"), "spec.completions", replicas, lo=0))
    else:
        replicas = _replicas(spec.get("replicas"), "spec.replicas")
    if kind == "ReplicationController":
        # a plain map of labels; the API server defaults it to the template's labels
        labels = str_map(spec.get("selector"), "spec.selector") or dict(pod.labels)
        sel = label_selector({"matchLabels": labels}, "spec.selector") if labels else None
    else:
        sel = label_selector(spec.get("selector"), "spec.selector")
    owners = as_list(meta.get("ownerReferences"), "metadata.ownerReferences")
    first = as_object(owners[0], "metadata.ownerReferences[0]") if owners else {}
    owner = (str(first.get("kind", "")), str(first.get("name", ""))) if first else None
    tmeta = as_object(as_object(spec.get("template"), "spec.template").get("metadata"), "spec.template.metadata")
    note_object(out.on_demand_shares, workload_key(kind, ns, name, owner),
                (tmeta.get("annotations"), "spec.template.metadata.annotations"),
                (meta.get("annotations"), "metadata.annotations"))
    out.workloads.append(Workload(kind, ns, name, replicas, sel, pod, owner, where, gates))


def _pdb(doc: Mapping[str, Any], out: Inputs, where: str) -> None:
    _, name, ns = _meta(doc)
    spec = as_object(doc.get("spec"), "spec")
    out.pdbs.append(
        PodDisruptionBudget(
            ns,
            name,
            as_object(spec.get("selector"), "spec.selector"),
            int_or_percent(spec.get("minAvailable"), "spec.minAvailable"),
            int_or_percent(spec.get("maxUnavailable"), "spec.maxUnavailable"),
        )
    )


def _buffer(doc: Mapping[str, Any], out: Inputs, where: str) -> None:
    _, name, ns = _meta(doc)
    out.buffers.append(read_buffer(doc, name, ns))


def _pod_template(doc: Mapping[str, Any], out: Inputs, where: str) -> None:
    _, name, ns = _meta(doc)
    out.pod_templates[(ns, name)] = read_pod_template(doc, name, ns)


# (API group, kind) -> its reader; any other kind is counted in Inputs.skipped
_READERS: dict[tuple[str, str], Callable[[Mapping[str, Any], Inputs, str], None]] = {
    ("", "Pod"): _pod,
    ("", "Node"): _node,
    ("", "Namespace"): _namespace,
    ("karpenter.sh", "NodeClaim"): _nodeclaim,
    ("karpenter.sh", "NodePool"): _nodepool,
    ("karpenter.k8s.aws", "EC2NodeClass"): _nodeclass,
    ("loadmaster.dev", "InstanceType"): _instance_type,
    ("apps", "DaemonSet"): _daemonset,
    ("policy", "PodDisruptionBudget"): _pdb,
    ("autoscaling.x-k8s.io", BUFFER_KIND): _buffer,
    ("", "PodTemplate"): _pod_template,
    ("karpenter.sh", "NodeOverlay"): lambda doc, out, where: out.overlays.append(read_overlay(doc)),
    ("loadmaster.dev", "Commitment"): lambda doc, out, where: out.commitments.append(
        read_commitment(doc, source=where.split(": ")[0])
    ),
    **{key: _workload for key in WORKLOAD_KINDS},
}


def add_object(doc: Mapping[str, Any], out: Inputs, where: str = "") -> None:
    """One object into `out`; FieldError (an InputError) naming the field when it is bad.

    `where` ("file: document N (Kind name): ") is the object's place in the input: kept with the objects whose
    problems can only be seen later (workloads), and, when given, an InstanceType defined twice is refused
    naming both places. Objects of a live cluster have no place (and no InstanceTypes)."""
    api = as_str(doc.get("apiVersion"), "apiVersion", required=True)
    kind = as_str(doc.get("kind"), "kind", required=True)
    group = api.rsplit("/", 1)[0] if "/" in api else ""
    reader = _READERS.get((group, kind))
    if reader is None:
        out.skipped[kind] = out.skipped.get(kind, 0) + 1
        return
    key = _object_key(doc, kind) if where else None
    if key is not None and kind != "InstanceType":  # an InstanceType's own message follows
        first_place = out.places.get(key)
        if first_place is not None:
            _, ns, name = key
            named = f"{cut(ns, 60)}/{cut(name, 60)}" if ns else cut(name, 60)
            raise FieldError(
                "metadata.name", f"{cut(kind, 60)} {named} is defined more than once (also {first_place})"
            )
    types = len(out.instance_types)
    reader(doc, out, where)
    if key is not None:
        out.places.setdefault(key, where.rstrip(": ."))
    if where and len(out.instance_types) > types:
        name = out.instance_types[-1].name
        first = out.origins.get(name)
        if first is not None:
            raise FieldError("metadata.name", f"InstanceType {cut(name, 60)} is defined more than once (also {first})")
        out.origins[name] = where.rstrip(": ")


# kinds whose objects have no namespace: a stray metadata.namespace does not make two of them different
_CLUSTER_SCOPED = frozenset(
    {"Namespace", "Node", "NodeClaim", "NodePool", "EC2NodeClass", "InstanceType", "NodeOverlay", "Commitment"}
)


def _object_key(doc: Mapping[str, Any], kind: str) -> tuple[str, str, str]:
    """(kind, namespace, name) of an object the readers accept (its metadata already read by them)."""
    _, name, ns = _meta(doc)
    return kind, "" if kind in _CLUSTER_SCOPED else ns, name


# ---------------------------------------------------------------- texts and files
def parse_documents(
    text: str, filename: str, out: Inputs, *, also: ObjectReader | None = None, parallel: bool = False
) -> None:
    """Every object of a text into `out`; InputError `file: document N (Kind name): field: message` at the
    first bad one.

    `also` reads more of each object (the disruption extras) in the same pass. Its problems are reported only
    when every object of the text could be read (as if it read the text after this parser), the first one.

    The text is read one object at a time (packing.streaming) when it can be; on any problem, or a text the
    streaming reader is not sure of, `out` is put back as it was and the text is read whole, which decides and
    words every error exactly as it always has. `parallel`: a large text may be read on two cores
    (packing.parallelread), with the same result."""
    before = _snapshot(out)
    if parallel and also is None:
        try:
            with gc_paused():
                if read_in_two(text, filename, out, lambda objects, into: _read_objects(objects, into, None)):
                    return
        except (Declined, InputError):
            pass
        _restore(out, before)  # read again on one core, which words any error
    try:
        with gc_paused():  # the objects are trees: no cycles to find (gcpause.py)
            _read_objects(stream_objects(text, filename), out, also)
        return
    except (Declined, InputError):
        _restore(out, before)
    _read_objects(kubernetes_objects(text, filename), out, also)


def _read_objects(
    objects: Iterator[tuple[str, str, Mapping[str, Any]]], out: Inputs, also: ObjectReader | None
) -> None:
    deferred: InputError | None = None
    for where, prefix, item in legacy_objects(objects, object_label, out.converted, out.nodeclasses):
        label = object_label(item)
        try:
            add_object(item, out, f"{where}{label}: {prefix}")
        except FieldError as e:
            raise InputError(f"{where}{label}: {prefix}{e.path}: {e.message}") from None
        if also is not None and deferred is None:
            try:
                also(item, prefix)
            except FieldError as e:
                # the kind and name uncut, as the consolidate CLI has always printed these lines
                deferred = InputError(f"{where}{object_label(item, None)}: {e.path}: {e.message}")
    if deferred is not None:
        raise deferred


def _snapshot(out: Inputs) -> dict[str, Any]:
    """What `out` holds, one level deep (its lists and dicts copied): readers only append and set entries."""
    state = {}
    for f in dataclasses.fields(out):
        value = getattr(out, f.name)
        state[f.name] = value.copy() if isinstance(value, list | dict | set) else value
    return state


def _restore(out: Inputs, state: dict[str, Any]) -> None:
    for name, value in state.items():
        current = getattr(out, name)
        if isinstance(current, list) and isinstance(value, list):
            current[:] = value  # in place: a caller may hold the list
        elif isinstance(current, dict | set) and type(current) is type(value):
            current.clear()
            current.update(value)
        else:
            setattr(out, name, value)


def load_files(
    paths: Sequence[str],
    out: Inputs | None = None,
    budget: ByteBudget | None = None,
    *,
    also: ObjectReader | None = None,
    parallel: bool = False,
) -> Inputs:
    """parse_documents over files ('-' is stdin), read within one ByteBudget (None: no limit)."""
    out = out or Inputs()
    budget = budget or ByteBudget(None)
    for path in paths:
        data = budget.read_bytes(path)
        if is_json_object(data):
            # streamed from the bytes: a JSON dump decoded whole would hold its bytes and its text at once
            before = _snapshot(out)
            try:
                with gc_paused():
                    _read_objects(json_bytes_objects(data, path), out, also)
                continue
            except (Declined, InputError):
                _restore(out, before)
        text = decode_text(data, path)
        del data  # not held while the text is read
        parse_documents(text, path, out, also=also, parallel=parallel)
    return out


# ---------------------------------------------------------------- after reading
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
    given = inp.pending + inp.running + [i.pod for i in inp.ignored]
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
    """Pending pods for Deployments, StatefulSets, ReplicaSets, ReplicationControllers and Jobs of which no pod was
    given (once: a second call does nothing); a template with scheduling gates makes ignored pods instead.
    InputError past MAX_EXPANDED_PODS."""
    if inp.expanded:
        return
    plan = expansion_plan(inp)
    inp.expanded = True
    for w, ordinals in plan:
        for i in ordinals:
            name = f"{w.name}-{i}"
            t = w.template
            pod = Pod(
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
            if w.gates:
                inp.ignored.append(IgnoredPod(pod, _not_provisioned(w.gates, {})))
            else:
                inp.pending.append(pod)
    _resolve_namespace_selectors(inp)


def _resolve_namespace_selectors(inp: Inputs) -> None:
    """Turn each non-empty podAffinityTerm.namespaceSelector into the namespaces it selects, matched against the
    labels of the Namespace objects read (a namespace known only from its pods has just its
    kubernetes.io/metadata.name label, which is also what the engine assumes when no term is resolved). Only the
    namespaces of the input can hold a pod the term counts. An empty selector ({}) selects every namespace and is
    left as it is. Runs after the workloads' pods are stamped out."""
    if not inp.namespaces:
        return
    known = dict.fromkeys(
        [p.namespace for p in (*inp.pending, *inp.running, *(i.pod for i in inp.ignored))], None
    )
    labels = {ns: {NAMESPACE_NAME_LABEL: ns} for ns in known} | inp.namespaces

    def resolved(t: PodAffinityTerm) -> PodAffinityTerm:
        sel = t.namespace_selector
        if sel is None or sel is SELECTS_NOTHING or not sel.requirements:
            return t
        picked = frozenset(ns for ns, lab in labels.items() if sel.matches(lab))
        return dataclasses.replace(t, namespaces=t.namespaces | picked, namespace_selector=SELECTS_NOTHING)

    for p in (*inp.pending, *inp.running, *(i.pod for i in inp.ignored)):
        terms = (
            *p.affinity,
            *p.anti_affinity,
            *(t for _, t in p.preferred_affinity),
            *(t for _, t in p.preferred_anti_affinity),
        )
        if all(t.namespace_selector is None for t in terms):
            continue
        p.affinity = tuple(resolved(t) for t in p.affinity)
        p.anti_affinity = tuple(resolved(t) for t in p.anti_affinity)
        p.preferred_affinity = tuple((w, resolved(t)) for w, t in p.preferred_affinity)
        p.preferred_anti_affinity = tuple((w, resolved(t)) for w, t in p.preferred_anti_affinity)
