"""The live cluster as record_metrics samples it and the dashboards and /metrics show it: every node
(managed or not) with what its pods request against its allocatable, priced by the launch its
NodeClaim recorded, else by the catalog when instance type, zone and capacity type are known.

A read needs, of each pod, only its node, its phase, its owner's kind and its requests. Those are
read here from the pod objects (the requests by the engine's rule, packing.pods.pod_requests, over
plain dicts) rather than by the engine's parser, which builds the pod's whole scheduling model
(affinities, tolerations, spreads, ports, Resources vectors): several times the cost of the rest of the
read, for fields it never looks at. The loops that plan with the pods parse them in full themselves
(record_metrics does, for the lower bound)."""

from __future__ import annotations

import contextlib
import functools
import gc
import threading
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeGuard

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from console import adapters
from console.backends.base import ClusterBackend, KubeObject
from console.fleet.models import NodeClaim
from packing.api import CPU, EFFECTS, MAX_QUANTITY, MEMORY, PODS, InstanceType, QuantityError, parse_quantity

NODEPOOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
EKS_CAPACITY_TYPE_LABEL = "eks.amazonaws.com/capacityType"  # managed node groups: ON_DEMAND | SPOT
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
EKS_CAPACITY = {"ON_DEMAND": "on-demand", "SPOT": "spot"}
# A pod in one of these phases has finished: its requests no longer hold any node's capacity.
FINISHED_PHASES = ("Succeeded", "Failed")
# What a row keeps of its node's NodeClaim (NodeRow.claim has only these loaded).
CLAIM_FIELDS = ("id", "name", "node_name", "price_per_hour", "price_source", "created_at", "initialized_at",
                "disrupting_at", "drifted_at")
# The kubelet's default maxPods, which the engine's parser gives a node that names no pod capacity.
DEFAULT_MAX_PODS = 110


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


def _is_object(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return type(value) is dict or isinstance(value, Mapping)  # JSON gives dicts: skip the ABC check


def _amounts(raw: Any) -> dict[str, int]:
    """A map of quantities as the engine reads one: an object of str/int/float values, each in
    [0, 1Pi], in milli-units; zeros left out (as Resources leaves them out)."""
    if raw is None:
        return {}
    if not _is_object(raw):
        raise _Refused
    out = {}
    for name, quantity in raw.items():
        if type(quantity) is bool or not isinstance(quantity, str | int | float):
            raise _Refused
        milli = _milli(quantity)
        if milli:
            out[str(name)] = milli
    return out


def _containers(raw: Any) -> list[tuple[dict[str, int], bool]]:
    """Each container's requests (a missing request defaults to its limit, as the API server does)
    and whether it restarts always (an init container that does is a sidecar)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _Refused
    out = []
    for c in raw:
        if c is None:
            c = {}
        elif not _is_object(c):
            raise _Refused
        res = c.get("resources")
        if res is None:
            res = {}
        elif not _is_object(res):
            raise _Refused
        requests = _amounts(res.get("limits"))
        requests.update(_amounts(res.get("requests")))
        out.append((requests, c.get("restartPolicy") == "Always"))
    return out


def _plus(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def _at_least(into: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        if v > into.get(k, 0):
            into[k] = v


def pod_requests_of(spec: Mapping[str, Any]) -> dict[str, int] | None:
    """A pod's requests in milli-units, by packing.pods.pod_requests' rule over plain dicts: max(the
    containers + the sidecars, each init container + the sidecars started before it) + overhead +
    one pod. None when the engine's parser would refuse them (a malformed quantity, a total above
    1Pi). tests/dashboards/test_live_cluster.py checks it against the engine's parse for any pod."""
    try:
        total: dict[str, int] = {}
        for requests, _ in _containers(spec.get("containers")):
            total = _plus(total, requests)
        sidecars: dict[str, int] = {}
        init_peak: dict[str, int] = {}
        for requests, always in _containers(spec.get("initContainers")):
            if always:
                sidecars = _plus(sidecars, requests)
                _at_least(init_peak, sidecars)
            else:
                _at_least(init_peak, _plus(sidecars, requests))
        total = _plus(total, sidecars)
        _at_least(total, init_peak)
        total = _plus(total, _amounts(spec.get("overhead")))
    except _Refused:
        return None
    total[PODS] = total.get(PODS, 0) + 1000
    if any(v > MAX_QUANTITY * 1000 for v in total.values()):
        return None
    return total


def _is_text(value: Any) -> bool:
    # What the engine's parser takes for a string field: a string, or a number it turns into one.
    return type(value) is str or (type(value) is not bool and isinstance(value, str | int | float))


def node_and_owner(pod: Mapping[str, Any]) -> tuple[str, str, Mapping[str, Any]] | None:
    """(node name, first owner's kind, spec) of a pod that holds a node's capacity; None for a pod not
    bound to a node, finished, or whose identity the engine's parser refuses (no name; metadata,
    status or owner references of the wrong type). The parser also refuses pods for fields this read
    does not take (affinities, tolerations …): none the API server admits, so a live pod is not one."""
    spec, meta, status = pod.get("spec"), pod.get("metadata"), pod.get("status")
    api = pod.get("apiVersion")
    if pod.get("kind") != "Pod" or api is None or not _is_text(api) or "/" in str(api):
        return None  # a core-group Pod, as the parser reads one
    if not _is_object(spec) or not _is_object(meta) or (status is not None and not _is_object(status)):
        return None
    node = spec.get("nodeName")
    if node is None or not _is_text(node) or not str(node) or (status and status.get("phase") in FINISHED_PHASES):
        return None
    name, namespace, uid = meta.get("name"), meta.get("namespace"), meta.get("uid")
    if name is None or not _is_text(name) or any(v is not None and not _is_text(v) for v in (namespace, uid)):
        return None
    refs = meta.get("ownerReferences")
    if refs is None or refs == []:
        return str(node), "", spec
    if not isinstance(refs, list) or not (refs[0] is None or _is_object(refs[0])):
        return None
    return str(node), str((refs[0] or {}).get("kind", "")), spec


def _object_or_empty(value: Any) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not _is_object(value):
        raise _Refused
    return value


def _taints_ok(raw: Any) -> bool:
    # The parser refuses a node whose taints are malformed (no key, an unknown effect …).
    if raw is None:
        return True
    if not isinstance(raw, list):
        return False
    for t in raw:
        if not _is_object(t):
            return False
        key, value, effect = t.get("key"), t.get("value"), t.get("effect")
        if key is None or not _is_text(key) or (value is not None and not _is_text(value)):
            return False
        if effect is None or not _is_text(effect) or str(effect) not in EFFECTS:
            return False
    return True


def node_of(node: Mapping[str, Any]) -> tuple[str, dict[str, str], dict[str, int]] | None:
    """(name, labels, allocatable in milli-units) of a Node as the engine's parser reads it: the
    allocatable, else the capacity, with the kubelet's default of 110 pods when it names none; None
    for a node the parser refuses."""
    api = node.get("apiVersion")
    if node.get("kind") != "Node" or api is None or not _is_text(api) or "/" in str(api):
        return None
    try:
        meta, spec, status = (_object_or_empty(node.get(k)) for k in ("metadata", "spec", "status"))
        name, namespace, provider = meta.get("name"), meta.get("namespace"), spec.get("providerID")
        if name is None or any(v is not None and not _is_text(v) for v in (name, namespace, provider)):
            return None
        labels = {}
        for key, value in _object_or_empty(meta.get("labels")).items():
            if value is not None and not _is_text(value):
                return None
            labels[str(key)] = "" if value is None else str(value)
        if not _taints_ok(spec.get("taints")):
            return None
        allocatable, capacity = _amounts(status.get("allocatable")), _amounts(status.get("capacity"))
    except _Refused:
        return None
    for amounts in (allocatable, capacity):
        if amounts and PODS not in amounts:
            amounts[PODS] = DEFAULT_MAX_PODS * 1000
    return str(name), labels, allocatable or capacity


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
    nodes, created = [], {}
    for obj in node_objects:
        node = node_of(obj)
        if node is not None:
            nodes.append(node)
            created[node[0]] = _created(obj)
    types = {t.name: t for t in adapters.instance_types(settings.LOADMASTER_AWS_REGION)}
    # The fields the rows' readers use (the price, the node's age, the disruption filter of /metrics,
    # the link of the bin-packing page): a whole NodeClaim row costs twice as much to load.
    claims = {c.node_name: c for c in NodeClaim.objects.active().exclude(node_name="").only(*CLAIM_FIELDS)}
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
        _add(requested[node_name], requests)
        # Karpenter counts a pod as a DaemonSet's by its owner reference's kind.
        if owner_kind == "DaemonSet":
            _add(daemon[node_name], requests)
    rows = []
    for name, labels, allocatable in nodes:
        itype, zone = labels.get(INSTANCE_TYPE_LABEL, ""), labels.get(ZONE_LABEL, "")
        capacity_type = capacity_type_of(labels)
        claim = claims.get(name)
        price: float | None
        if claim is not None and claim.price_per_hour is not None:
            price, source = float(claim.price_per_hour), claim.price_source
        elif itype and zone and capacity_type:
            price, source = offering_price(types, itype, zone, capacity_type)
        else:
            price, source = None, ""
        on_demand, _ = offering_price(types, itype, zone, "on-demand")
        req, alloc = requested.get(name, {}), allocatable
        born = created.get(name) or (claim.created_at if claim is not None else None)
        rows.append(NodeRow(
            name=name, nodepool=labels.get(NODEPOOL_LABEL, ""), instance_type=itype,
            capacity_type=capacity_type, zone=zone,
            cpu_requested=req.get(CPU, 0), cpu_allocatable=alloc.get(CPU, 0),
            memory_requested=req.get(MEMORY, 0) // 1000, memory_allocatable=alloc.get(MEMORY, 0) // 1000,
            pods_requested=req.get(PODS, 0) // 1000, pods_allocatable=alloc.get(PODS, 0) // 1000,
            price=price, estimated=price is None or source == "estimate",
            age=now - born if born is not None else None, claim=claim, allocatable=alloc,
            pod_requests=dict(req), daemon_requests=dict(daemon.get(name, {})), on_demand_price=on_demand,
            created_at=born))
    rows.sort(key=lambda r: (r.packing, -(r.price or 0.0), r.name))
    return rows


_gc_lock = threading.Lock()
_gc_holders = 0  # reads (on any thread) inside gc_paused now
_gc_was_enabled = False  # the collector's state when the first of them entered


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Hold off the cyclic garbage collector for one read of the cluster. A read builds a few hundred
    thousand dicts and lists (the listed objects, decoded from JSON) that hold no cycles; each burst of
    them would set off collections that walk everything the process holds, a third of the read.
    Counted, so reads on several threads at once never switch it back on under one still running."""
    global _gc_holders, _gc_was_enabled
    with _gc_lock:
        if _gc_holders == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_holders += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_holders -= 1
            if _gc_holders == 0 and _gc_was_enabled:
                gc.enable()


def live_cluster(*, cluster: ClusterBackend, now: datetime | None = None) -> LiveCluster:
    """List the cluster's pods and nodes once and make their rows."""
    with gc_paused():
        pods, _ = cluster.list_pods()
        node_objects, _ = cluster.list_nodes()
        return LiveCluster(nodes=node_rows(pods=pods, node_objects=node_objects, now=now or timezone.now()),
                           pods=pods, node_objects=node_objects)
