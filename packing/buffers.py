"""CapacityBuffer (autoscaling.x-k8s.io/v1beta1, the SIG Autoscaling API Cluster Autoscaler and Karpenter share):
headroom kept in the cluster as virtual pods.

A buffer names the shape of one chunk of headroom, either a PodTemplate of its namespace (`podTemplateRef`) or a
workload whose pod template it copies (`scalableRef`: a Deployment, StatefulSet, ReplicaSet, ReplicationController
or Job of the input), and how many chunks: `replicas`, `percentage` of the workload's replicas (rounded down),
the larger of the two when both are given, capped by `limits` (as many chunks as fit in the total requests the
limits allow; with neither replicas nor percentage, that many). This is Cluster Autoscaler's reading of the
spec (cluster-autoscaler/capacitybuffer/translators). Only buffers of the strategy
`buffer.x-k8s.io/active-capacity` (the default) make pods, as only those are provisioned for there.

The virtual pods are never pods of the cluster: the planner adds them to every provisioning solve so that nodes
are launched (or kept) with their room, and the consolidation engine holds their room as it holds a pending
pod's, so no move removes it; they are never evicted, never listed as the cluster's pending or unschedulable
pods, and a plan reports them under its `buffers` key (BufferReport).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from packing.fields import FieldError, as_int, as_object, as_str, quantities
from packing.pods import Pod
from packing.podspec import parse_pod_template
from packing.resources import CPU, MEMORY, Resources
from packing.scheduling.results import Results

__all__ = [
    "ACTIVE_CAPACITY",
    "BUFFER_KIND",
    "BUFFER_LABEL",
    "BUFFER_NAMESPACE_LABEL",
    "MAX_BUFFER_REPLICAS",
    "BufferReport",
    "Place",
    "CapacityBuffer",
    "ResolvedBuffer",
    "ScalableRef",
    "buffer_reports",
    "held_reports",
    "occupied_share",
    "is_virtual",
    "read_buffer",
    "read_pod_template",
    "resolve_buffers",
    "without_virtual",
]

BUFFER_KIND = "CapacityBuffer"
ACTIVE_CAPACITY = "buffer.x-k8s.io/active-capacity"  # the CRD's default provisioningStrategy
BUFFER_LABEL = "autoscaling.x-k8s.io/buffer"  # on each virtual pod: its buffer's name
BUFFER_NAMESPACE_LABEL = "autoscaling.x-k8s.io/buffer-namespace"
# chunks one buffer may stand for: the bound a workload's replicas have (packing.kubeobjects.MAX_REPLICAS)
MAX_BUFFER_REPLICAS = 10_000
INT32_MAX = 2**31 - 1

# the API group each scalable kind the input can hold belongs to ("" is the core group)
SCALABLE_GROUPS = {
    "Deployment": "apps",
    "StatefulSet": "apps",
    "ReplicaSet": "apps",
    "ReplicationController": "",
    "Job": "batch",
}


@dataclass(frozen=True)
class ScalableRef:
    api_group: str
    kind: str
    name: str


@dataclass(frozen=True)
class CapacityBuffer:
    """One CapacityBuffer's spec, as its CRD validates it."""

    namespace: str
    name: str
    provisioning_strategy: str = ACTIVE_CAPACITY
    pod_template: str | None = None  # spec.podTemplateRef.name
    scalable: ScalableRef | None = None
    replicas: int | None = None
    percentage: int | None = None
    limits: Mapping[str, int] | None = None  # milli-units, as packing.fields.quantities reads them

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _ref_name(d: Any, path: str) -> str:
    name = as_str(as_object(d, path).get("name"), f"{path}.name", required=True)
    if not name:
        raise FieldError(f"{path}.name", "must be at least 1 character")  # the CRD's minLength 1
    return name


def _count(v: Any, path: str) -> int | None:
    if v is None:
        return None
    n = as_int(v, path, 0, lo=0, hi=INT32_MAX)  # int32, minimum 0
    if n > MAX_BUFFER_REPLICAS and path.endswith("replicas"):
        raise FieldError(path, f"{n} is more than the maximum {MAX_BUFFER_REPLICAS} pods per buffer")
    return n


def read_buffer(doc: Mapping[str, Any], name: str, namespace: str) -> CapacityBuffer:
    """The spec of a CapacityBuffer object; FieldError naming the field as the CRD's rules would refuse it."""
    if doc.get("spec") is None:
        raise FieldError("spec", "is required")
    spec = as_object(doc.get("spec"), "spec")
    strategy = as_str(spec.get("provisioningStrategy"), "spec.provisioningStrategy", default=ACTIVE_CAPACITY)
    template = (
        _ref_name(spec["podTemplateRef"], "spec.podTemplateRef")
        if spec.get("podTemplateRef") is not None
        else None
    )
    scalable = None
    if spec.get("scalableRef") is not None:
        ref = as_object(spec["scalableRef"], "spec.scalableRef")
        kind = as_str(ref.get("kind"), "spec.scalableRef.kind", required=True)
        if not kind:
            raise FieldError("spec.scalableRef.kind", "must be at least 1 character")
        scalable = ScalableRef(
            as_str(ref.get("apiGroup"), "spec.scalableRef.apiGroup"), kind, _ref_name(ref, "spec.scalableRef")
        )
    replicas = _count(spec.get("replicas"), "spec.replicas")
    percentage = _count(spec.get("percentage"), "spec.percentage")
    limits = quantities(spec.get("limits"), "spec.limits") if spec.get("limits") is not None else None
    # the CRD's two CEL rules on the spec
    if template is not None and scalable is not None:
        raise FieldError("spec", "You must define either PodTemplateRef or ScalableRef, but not both")
    if template is not None and replicas is None and limits is None:
        raise FieldError("spec", "If PodTemplateRef is set, replicas or limits must also be set")
    return CapacityBuffer(namespace, name, strategy, template, scalable, replicas, percentage, limits)


def read_pod_template(doc: Mapping[str, Any], name: str, namespace: str) -> Pod:
    """The pod a core/v1 PodTemplate object describes (its `template`)."""
    return parse_pod_template(doc, "", name=name, namespace=namespace)


# ---------------------------------------------------------------- resolution
@dataclass
class ResolvedBuffer:
    """A buffer made into pods: `pods` its virtual pods (empty when `problem` says why it makes none)."""

    buffer: CapacityBuffer
    pods: list[Pod] = field(default_factory=list)
    problem: str = ""  # why the buffer makes no pods, or fewer than asked ("" when it makes what it asks)
    template: Pod | None = None

    @property
    def chunk(self) -> Resources:
        return self.template.requests if self.template is not None else Resources()


def _limit_count(requests: Resources, limits: Mapping[str, int]) -> int | None:
    """How many chunks of `requests` fit within `limits` (None: no limited resource is requested)."""
    best: int | None = None
    for k, v in requests.items():
        if v <= 0 or k not in limits:
            continue
        n = limits[k] // v
        best = n if best is None else min(best, n)
    return best


def _chunks(b: CapacityBuffer, template: Pod, scalable_replicas: int | None) -> tuple[int, str]:
    """(number of chunks, problem) as Cluster Autoscaler counts them."""
    count: int | None = None
    if b.replicas is not None:
        count = b.replicas
    if b.percentage is not None and scalable_replicas is not None:
        from_percent = b.percentage * scalable_replicas // 100
        count = from_percent if count is None else max(count, from_percent)
    if b.limits is not None:
        fit = _limit_count(template.requests, b.limits)
        if fit is None:
            return 0, "none of the resources in spec.limits is requested by the pod template"
        count = fit if count is None else min(count, fit)
    if count is None:
        return 0, "replicas, percentage and limits are not defined"
    if count > MAX_BUFFER_REPLICAS:
        return (
            MAX_BUFFER_REPLICAS,
            f"{count} chunks capped at the maximum {MAX_BUFFER_REPLICAS} pods per buffer",
        )
    return count, ""


def _virtual_pod(b: CapacityBuffer, template: Pod, i: int) -> Pod:
    labels = dict(template.labels)
    labels[BUFFER_LABEL] = b.name
    labels[BUFFER_NAMESPACE_LABEL] = b.namespace
    return Pod(
        name=f"{b.name}-buffer-{i}",
        namespace=b.namespace,
        labels=labels,
        requests=template.requests,
        node_selector=template.node_selector,
        required_terms=template.required_terms,
        preferred_terms=template.preferred_terms,
        tolerations=template.tolerations,
        spread=template.spread,
        affinity=template.affinity,
        anti_affinity=template.anti_affinity,
        preferred_affinity=template.preferred_affinity,
        preferred_anti_affinity=template.preferred_anti_affinity,
        host_ports=template.host_ports,
        owner_kind=BUFFER_KIND,
        owner_name=b.name,
    )


class ScalableWorkload(Protocol):
    """What a buffer reads of a workload (packing.kubeobjects.Workload)."""

    kind: str
    namespace: str
    name: str
    replicas: int
    template: Pod


@dataclass
class _SeenWorkload:
    """A workload known only by its pods (a live cluster's pods, without the workload object)."""

    kind: str
    namespace: str
    name: str
    replicas: int
    template: Pod


def _owned(p: Pod, namespace: str, kind: str, name: str) -> bool:
    if p.namespace != namespace:
        return False
    if kind == "Deployment":  # its pods belong to its ReplicaSets, named <deployment>-<pod-template-hash>
        if p.owner_kind != "ReplicaSet" or not p.owner_name.startswith(f"{name}-"):
            return False
        return p.owner_name[len(name) + 1 :].isalnum()
    return p.owner_kind == kind and p.owner_name == name


def _from_pods(pods: Sequence[Pod], namespace: str, kind: str, name: str) -> _SeenWorkload | None:
    mine = sorted((p for p in pods if _owned(p, namespace, kind, name)), key=lambda p: p.name)
    if not mine:
        return None
    return _SeenWorkload(kind, namespace, name, len(mine), mine[0])


def resolve_buffers(
    buffers: Sequence[CapacityBuffer],
    templates: Mapping[tuple[str, str], Pod],
    workloads: Sequence[ScalableWorkload],
    pods: Sequence[Pod] = (),
) -> list[ResolvedBuffer]:
    """Each buffer's virtual pods, from the PodTemplates (by (namespace, name)) and workloads of the input. A
    scalableRef whose workload object is not in the input is read from the workload's pods among `pods` (its
    replicas the pods counted, its template the first of them by name), as a live cluster's pods show it."""
    by_ref: dict[tuple[str, str, str], ScalableWorkload] = {(w.namespace, w.kind, w.name): w for w in workloads}
    out: list[ResolvedBuffer] = []
    for b in sorted(buffers, key=lambda b: (b.namespace, b.name)):
        if b.provisioning_strategy != ACTIVE_CAPACITY:
            out.append(
                ResolvedBuffer(
                    b, problem=f"provisioningStrategy {b.provisioning_strategy} is not {ACTIVE_CAPACITY}"
                )
            )
            continue
        template: Pod | None
        scalable_replicas: int | None = None
        if b.pod_template is not None:
            template = templates.get((b.namespace, b.pod_template))
            if template is None:
                out.append(
                    ResolvedBuffer(
                        b, problem=f"PodTemplate {b.namespace}/{b.pod_template} is not in the input"
                    )
                )
                continue
        elif b.scalable is not None:
            s = b.scalable
            w = by_ref.get((b.namespace, s.kind, s.name)) or _from_pods(pods, b.namespace, s.kind, s.name)
            if w is None or SCALABLE_GROUPS.get(s.kind) != s.api_group:
                group = f"{s.api_group}/" if s.api_group else ""
                out.append(
                    ResolvedBuffer(b, problem=f"{group}{s.kind} {b.namespace}/{s.name} is not in the input")
                )
                continue
            template = w.template
            scalable_replicas = w.replicas
        else:
            out.append(ResolvedBuffer(b, problem="neither podTemplateRef nor scalableRef is set"))
            continue
        if b.percentage is not None and b.replicas is None and b.limits is None and scalable_replicas is None:
            out.append(
                ResolvedBuffer(b, problem="percentage applies only with scalableRef", template=template)
            )
            continue
        n, problem = _chunks(b, template, scalable_replicas)
        out.append(ResolvedBuffer(b, [_virtual_pod(b, template, i) for i in range(n)], problem, template))
    return out


def is_virtual(p: Pod) -> bool:
    return p.owner_kind == BUFFER_KIND


# ---------------------------------------------------------------- in a plan
@dataclass(frozen=True)
class BufferReport:
    """What one buffer reserved in a plan: its chunks and where they are held."""

    namespace: str
    name: str
    provisioning_strategy: str
    replicas: int  # virtual pods made (status.replicas as Cluster Autoscaler reports it)
    chunk: Resources  # what one virtual pod requests
    on_nodeclaims: dict[str, int]  # new NodeClaim name -> virtual pods held there
    on_nodes: dict[str, int]  # existing node name -> virtual pods held there
    unplaced: int  # virtual pods no node can hold
    problem: str = ""
    # the share of the cost of the nodes holding its pods that they occupy: per node, its price times the larger
    # of the pods' cpu and memory shares of its allocatable (a node whose price is unknown counts $0)
    cost_per_hour: float = 0.0
    held_cost_per_hour: float = 0.0  # the part of cost_per_hour on existing nodes (what the room costs now)

    def json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "provisioningStrategy": self.provisioning_strategy,
            "replicas": self.replicas,
            "chunk": self.chunk.to_strings(),
            "nodeclaims": dict(sorted(self.on_nodeclaims.items())),
            "existing_nodes": dict(sorted(self.on_nodes.items())),
            "unplaced": self.unplaced,
            "cost_per_hour": round(self.cost_per_hour, 6),
            "existing_cost_per_hour": round(self.held_cost_per_hour, 6),
            "problem": self.problem,
        }


def occupied_share(requests: Resources, allocatable: Resources) -> float:
    """The larger of the cpu and memory shares of `allocatable` that `requests` take, within [0, 1]."""
    share = 0.0
    for k in (CPU, MEMORY):
        if allocatable.get(k, 0) > 0:
            share = max(share, requests.get(k, 0) / allocatable[k])
    return min(1.0, share)


@dataclass(frozen=True)
class Place:
    """A node (existing, or new: a NodeClaim) and the pods it holds, for BufferReport."""

    name: str
    new: bool
    pods: Sequence[Pod]
    price_per_hour: float
    allocatable: Resources


def buffer_reports(
    resolved: Sequence[ResolvedBuffer], res: Results, allocatable: Mapping[str, Resources]
) -> list[BufferReport]:
    """Where `res` (a plan made with the buffers' virtual pods) holds each buffer's pods, and the cost of that
    room; `allocatable` is that of the existing nodes, by name."""
    places = [Place(c.name, True, c.pods, c.price_per_hour, c.allocatable) for c in res.nodeclaims]
    places += [
        Place(e.name, False, e.pods, e.price_per_hour or 0.0, allocatable.get(e.name, Resources()))
        for e in res.existing
    ]
    return held_reports(resolved, places, lambda r: sum(1 for p in r.pods if p.key in res.unschedulable_reasons))


def held_reports(
    resolved: Sequence[ResolvedBuffer], places: Sequence[Place], unplaced: Callable[[ResolvedBuffer], int]
) -> list[BufferReport]:
    """Each buffer's virtual pods among `places`, and the share of those nodes' cost they take; `unplaced` counts
    a buffer's pods no place holds (the plan's and the consolidation's reports, packing/disruption/output.py)."""
    cost: dict[str, float] = {}
    held: dict[str, float] = {}
    claims: dict[str, dict[str, int]] = {}
    nodes: dict[str, dict[str, int]] = {}
    for place in places:
        where = claims if place.new else nodes
        mine: dict[str, Resources] = {}
        for p in place.pods:
            if is_virtual(p):
                key = f"{p.namespace}/{p.owner_name}"
                d = where.setdefault(key, {})
                d[place.name] = d.get(place.name, 0) + 1
                mine[key] = mine.get(key, Resources()) + p.requests
        for key, req in mine.items():
            share = place.price_per_hour * occupied_share(req, place.allocatable)
            cost[key] = cost.get(key, 0.0) + share
            if not place.new:
                held[key] = held.get(key, 0.0) + share
    out = []
    for r in resolved:
        b = r.buffer
        out.append(
            BufferReport(
                b.namespace,
                b.name,
                b.provisioning_strategy,
                len(r.pods),
                r.chunk,
                claims.get(b.key, {}),
                nodes.get(b.key, {}),
                unplaced(r),
                r.problem,
                cost.get(b.key, 0.0),
                held.get(b.key, 0.0),
            )
        )
    return out


def without_virtual(res: Results, resolved: Sequence[ResolvedBuffer]) -> None:
    """Drop the virtual pods from the plan's unschedulable pods and its pending count: they are not the cluster's
    pods (where they are held stays in the NodeClaims and placements, which is what reserved their room)."""
    keys = [p.key for r in resolved for p in r.pods]
    for k in keys:
        res.unschedulable_reasons.pop(k, None)
    res.pending -= len(keys)
