"""The live cluster as record_metrics samples it and the dashboards and /metrics show it: every node
(managed or not) with what its pods request against its allocatable, priced by the launch its
NodeClaim recorded, else by the catalog when instance type, zone and capacity type are known.

A read needs, of each pod, only its node, its phase, its owner's kind and its requests. Those are
read here from the pod objects (the requests with the engine's own rules, packing.pods.pod_requests)
rather than by the engine's parser, which builds the pod's whole scheduling model (affinities,
tolerations, spreads, ports) and is what made a read of 10,000 pods take seconds. The loops that
plan with the pods parse them in full themselves (record_metrics does, for the lower bound)."""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from console import adapters
from console.backends.base import ClusterBackend, KubeObject
from console.fleet.models import NodeClaim
from packing.instancetype import InstanceType
from packing.pods import ContainerResources, pod_requests
from packing.quantity import MAX_QUANTITY, QuantityError, parse_quantity
from packing.resources import CPU, MEMORY, PODS, Resources

NODEPOOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
EKS_CAPACITY_TYPE_LABEL = "eks.amazonaws.com/capacityType"  # managed node groups: ON_DEMAND | SPOT
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
EKS_CAPACITY = {"ON_DEMAND": "on-demand", "SPOT": "spot"}
# A pod in one of these phases has finished: its requests no longer hold any node's capacity.
FINISHED_PHASES = ("Succeeded", "Failed")


def capacity_type_of(labels: Mapping[str, str]) -> str:
    """Karpenter's label, else an EKS managed node group's; "" when neither says (price unknown)."""
    value = labels.get(CAPACITY_TYPE_LABEL)
    if value in ("spot", "on-demand", "reserved"):
        return value
    return EKS_CAPACITY.get(labels.get(EKS_CAPACITY_TYPE_LABEL, ""), "")


def offering_price(types: Mapping[str, InstanceType], itype: str, zone: str,
                   capacity_type: str) -> tuple[float | None, str]:
    """The catalog's price of one offering and where it comes from; (None, "") when unknown."""
    t = types.get(itype)
    if t is None:
        return None, ""
    for o in t.offerings:
        if o.zone == zone and o.capacity_type == capacity_type:
            return o.price, o.price_source
    return None, ""


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


@dataclass(frozen=True)
class NodeRow:
    """One live node: what its pods request against its allocatable (milli-units as the engine keeps
    them in the dicts; cpu in millicores, memory in bytes, pods in pods in the scalar fields)."""

    name: str
    nodepool: str             # "" for a node no NodePool manages
    instance_type: str
    capacity_type: str        # "" when no label says
    zone: str
    cpu_requested: int
    cpu_allocatable: int
    memory_requested: int
    memory_allocatable: int
    pods_requested: int
    pods_allocatable: int
    price: float | None       # None: unknown (shown as such, counted nowhere)
    estimated: bool
    age: timedelta | None
    claim: NodeClaim | None = None
    allocatable: Mapping[str, int] = field(default_factory=dict)
    pod_requests: Mapping[str, int] = field(default_factory=dict)     # every pod, DaemonSet pods included
    daemon_requests: Mapping[str, int] = field(default_factory=dict)  # DaemonSet-owned pods only
    on_demand_price: float | None = None
    created_at: datetime | None = None

    @property
    def managed(self) -> bool:
        return bool(self.nodepool)

    @property
    def cpu_fraction(self) -> float:
        return min(1.0, _ratio(self.cpu_requested, self.cpu_allocatable) or 0.0)

    @property
    def memory_fraction(self) -> float:
        return min(1.0, _ratio(self.memory_requested, self.memory_allocatable) or 0.0)

    @property
    def pods_fraction(self) -> float:
        return min(1.0, _ratio(self.pods_requested, self.pods_allocatable) or 0.0)

    @property
    def packing(self) -> float:
        """How full the node is on its binding resource: what sorts worst-packed first."""
        return max(self.cpu_fraction, self.memory_fraction)

    @property
    def stranded(self) -> float:
        """$/h of this node nobody requested: the price times the share neither resource needs."""
        return (self.price or 0.0) * (1.0 - self.packing)


@dataclass
class LiveCluster:
    """One read of the cluster: the node rows, and the objects as listed (the pods and nodes the
    rows were made from, for what the rows do not keep)."""

    nodes: list[NodeRow]
    pods: list[KubeObject]
    node_objects: list[KubeObject]


class _Refused(Exception):
    """A pod whose requests the engine's parser refuses: it is left out, as the parser leaves it out."""


@functools.lru_cache(maxsize=65536)
def _milli(quantity: str | int | float) -> int:
    # Pods of one workload repeat the same quantity strings.
    try:
        milli = parse_quantity(quantity)
    except QuantityError:
        raise _Refused from None
    if milli < 0:
        raise _Refused
    return milli


def _amounts(raw: Any) -> Resources:
    # As the engine reads a map of quantities: an object of str/int/float values, each in [0, 1Pi].
    if raw is None:
        return Resources()
    if not isinstance(raw, Mapping):
        raise _Refused
    out = {}
    for name, quantity in raw.items():
        if isinstance(quantity, bool) or not isinstance(quantity, str | int | float):
            raise _Refused
        out[str(name)] = _milli(quantity)
    return Resources(out)


def _containers(raw: Any, *, init: bool) -> list[ContainerResources]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _Refused
    out = []
    for c in raw:
        if c is None:
            c = {}
        elif not isinstance(c, Mapping):
            raise _Refused
        res = c.get("resources")
        if res is None:
            res = {}
        elif not isinstance(res, Mapping):
            raise _Refused
        out.append(ContainerResources(_amounts(res.get("requests")), _amounts(res.get("limits")),
                                      restart_always=init and c.get("restartPolicy") == "Always"))
    return out


def pod_requests_of(spec: Mapping[str, Any]) -> Resources | None:
    """A pod's requests (containers, sidecars and init containers, overhead, one pod) as the engine
    computes them; None when the engine's parser would refuse them (a malformed quantity)."""
    try:
        total = pod_requests(_containers(spec.get("containers"), init=False),
                             _containers(spec.get("initContainers"), init=True), _amounts(spec.get("overhead")))
    except _Refused:
        return None
    if any(v > MAX_QUANTITY * 1000 for v in total.values()):
        return None
    return total


def node_and_owner(pod: Mapping[str, Any]) -> tuple[str, str, Mapping[str, Any]] | None:
    """(node name, first owner's kind, spec) of a pod still holding a node's capacity; None for a pod
    not bound to a node, finished, or not an object."""
    spec, status, meta = pod.get("spec"), pod.get("status"), pod.get("metadata")
    if not isinstance(spec, Mapping) or not isinstance(meta, Mapping):
        return None
    node = spec.get("nodeName")
    if not node or isinstance(node, bool) or not isinstance(node, str | int | float):
        return None
    if isinstance(status, Mapping) and status.get("phase") in FINISHED_PHASES:
        return None
    refs = meta.get("ownerReferences")
    owner = refs[0] if isinstance(refs, list) and refs and isinstance(refs[0], Mapping) else {}
    return str(node), str(owner.get("kind", "")), spec


def _add(into: dict[str, int], requests: Mapping[str, int]) -> None:
    for resource, amount in requests.items():
        into[resource] = into.get(resource, 0) + amount


def _created(node: Mapping[str, Any]) -> datetime | None:
    raw = (node.get("metadata") or {}).get("creationTimestamp")
    try:
        return parse_datetime(raw) if isinstance(raw, str) else None
    except ValueError:
        return None


def node_rows(*, pods: Sequence[KubeObject], node_objects: Sequence[KubeObject], now: datetime) -> list[NodeRow]:
    """The rows of listed pods and nodes, worst-packed first (see the module's docstring)."""
    nodes = adapters.cluster_inputs(pods=(), nodes=node_objects).nodes
    created = {str((n.get("metadata") or {}).get("name")): _created(n) for n in node_objects}
    types = {t.name: t for t in adapters.instance_types(settings.LOADMASTER_AWS_REGION)}
    claims = {c.node_name: c for c in NodeClaim.objects.active().exclude(node_name="")}
    requested: dict[str, dict[str, int]] = defaultdict(dict)
    daemon: dict[str, dict[str, int]] = defaultdict(dict)
    for pod in pods:
        bound = node_and_owner(pod)
        if bound is None:
            continue
        node_name, owner_kind, spec = bound
        requests = pod_requests_of(spec)
        if requests is None:
            continue
        items = requests.as_dict()
        _add(requested[node_name], items)
        # Karpenter counts a pod as a DaemonSet's by its owner reference's kind.
        if owner_kind == "DaemonSet":
            _add(daemon[node_name], items)
    rows = []
    for node in nodes:
        labels = node.labels
        itype, zone = labels.get(INSTANCE_TYPE_LABEL, ""), labels.get(ZONE_LABEL, "")
        capacity_type = capacity_type_of(labels)
        claim = claims.get(node.name)
        price: float | None
        if claim is not None and claim.price_per_hour is not None:
            price, source = float(claim.price_per_hour), claim.price_source
        elif itype and zone and capacity_type:
            price, source = offering_price(types, itype, zone, capacity_type)
        else:
            price, source = None, ""
        on_demand, _ = offering_price(types, itype, zone, "on-demand")
        req, alloc = requested.get(node.name, {}), dict(node.allocatable)
        born = created.get(node.name) or (claim.created_at if claim is not None else None)
        rows.append(NodeRow(
            name=node.name, nodepool=labels.get(NODEPOOL_LABEL, ""), instance_type=itype,
            capacity_type=capacity_type, zone=zone,
            cpu_requested=req.get(CPU, 0), cpu_allocatable=alloc.get(CPU, 0),
            memory_requested=req.get(MEMORY, 0) // 1000, memory_allocatable=alloc.get(MEMORY, 0) // 1000,
            pods_requested=req.get(PODS, 0) // 1000, pods_allocatable=alloc.get(PODS, 0) // 1000,
            price=price, estimated=price is None or source == "estimate",
            age=now - born if born is not None else None, claim=claim, allocatable=alloc,
            pod_requests=dict(req), daemon_requests=dict(daemon.get(node.name, {})), on_demand_price=on_demand,
            created_at=born))
    rows.sort(key=lambda r: (r.packing, -(r.price or 0.0), r.name))
    return rows


def live_cluster(*, cluster: ClusterBackend, now: datetime | None = None) -> LiveCluster:
    """List the cluster's pods and nodes once and make their rows."""
    pods, _ = cluster.list_pods()
    node_objects, _ = cluster.list_nodes()
    return LiveCluster(nodes=node_rows(pods=pods, node_objects=node_objects, now=now or timezone.now()),
                       pods=pods, node_objects=node_objects)
