"""A history from a series of `kubectl get pods,nodes -A -o yaml` (or `-o json`) dumps: each dump is read into a
:class:`Snapshot` (the pods and nodes alive, the NodePools and EC2NodeClasses if the dump has them), and two
consecutive snapshots give the events between them (:func:`diff`).

Times: a pod's arrival is its metadata.creationTimestamp and its binding its PodScheduled condition's
lastTransitionTime, a node's launch its creationTimestamp, each kept inside (previous dump, this dump] (a clock
that disagrees cannot put an event before what the previous dump saw); what is gone, finished or changed is
dated at the first dump that shows it. The first dump's objects arrive at its own time.

The console's recorder (console/history) diffs the live cluster the same way, its previous state rebuilt from
what it recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from packing.documents import ByteBudget, decode_text, kubernetes_objects, object_label
from packing.fields import FieldError, InputError, str_map, timestamp
from packing.history.events import (
    EVENT_ORDER,
    Event,
    ManifestKind,
    NodeLaunched,
    NodeTerminated,
    PodArrived,
    PodBound,
    PodDeparted,
    PodEnd,
    Revision,
)
from packing.history.podspecs import spec_id, template_of
from packing.history.revisions import check_manifest, manifest_identity
from packing.kubeobjects import Inputs, add_object
from packing.streaming import Declined, is_json_object, json_bytes_objects, stream_objects

__all__ = [
    "CAPACITY_TYPE_LABEL",
    "INSTANCE_TYPE_LABEL",
    "NODEPOOL_LABEL",
    "ZONE_LABEL",
    "NodeState",
    "PodState",
    "PriceOf",
    "Snapshot",
    "diff",
    "node_state",
    "pod_state",
    "read_dump",
    "snapshot_objects",
    "trimmed_manifest",
]

NODEPOOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
EKS_CAPACITY_TYPE_LABEL = "eks.amazonaws.com/capacityType"
EKS_CAPACITY = {"ON_DEMAND": "on-demand", "SPOT": "spot"}
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
FINISHED = {"Succeeded": PodEnd.SUCCEEDED, "Failed": PodEnd.FAILED}

# the $/hour of an offering (instance type, zone, capacity type), None when unknown
PriceOf = Callable[[str, str, str], float | None]


@dataclass
class PodState:
    namespace: str
    name: str
    spec: str  # its template's id
    uid: str = ""
    owner_kind: str = ""
    owner_name: str = ""
    node: str = ""
    created: datetime | None = None
    scheduled: datetime | None = None  # the PodScheduled condition's lastTransitionTime, when True
    end: PodEnd | None = None  # finished (Succeeded, Failed): it no longer counts

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass
class NodeState:
    launch: NodeLaunched  # `at` is its creationTimestamp (or the dump's time)
    created: datetime | None = None


@dataclass
class Snapshot:
    at: datetime
    pods: dict[str, PodState] = field(default_factory=dict)
    nodes: dict[str, NodeState] = field(default_factory=dict)
    templates: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    # (kind, name) -> the manifest; None when the dump has no NodePool / EC2NodeClass at all (it was not asked
    # for them: nothing is concluded about them)
    manifests: dict[tuple[ManifestKind, str], Mapping[str, Any]] | None = None


# ---------------------------------------------------------------- one object
def _creation(meta: Mapping[str, Any], prefix: str) -> datetime | None:
    return timestamp(meta.get("creationTimestamp"), f"{prefix}metadata.creationTimestamp")


def pod_state(obj: Mapping[str, Any], prefix: str = "") -> tuple[PodState, Mapping[str, Any]]:
    """A Pod object's state and template; FieldError naming the field (the engine's reader checks the pod)."""
    add_object(obj, Inputs())  # every field the engine reads, named when bad
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    template = template_of(obj)
    owners = meta.get("ownerReferences") or []
    owner = next((o for o in owners if isinstance(o, Mapping) and o.get("controller")), owners[0] if owners else {})
    scheduled = None
    for i, c in enumerate(status.get("conditions") or []):
        if isinstance(c, Mapping) and c.get("type") == "PodScheduled" and c.get("status") == "True":
            scheduled = timestamp(c.get("lastTransitionTime"), f"{prefix}status.conditions[{i}].lastTransitionTime")
    state = PodState(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta["name"]),
        spec=spec_id(template),
        uid=str(meta.get("uid") or ""),
        owner_kind=str(owner.get("kind") or "") if isinstance(owner, Mapping) else "",
        owner_name=str(owner.get("name") or "") if isinstance(owner, Mapping) else "",
        node=str(spec.get("nodeName") or ""),
        created=_creation(meta, prefix),
        scheduled=scheduled,
        end=FINISHED.get(str(status.get("phase") or "")),
    )
    return state, template


def capacity_type_of(labels: Mapping[str, str]) -> str:
    """Karpenter's label, else an EKS managed node group's; "" when neither says."""
    value = labels.get(CAPACITY_TYPE_LABEL, "")
    if value:
        return value
    return EKS_CAPACITY.get(labels.get(EKS_CAPACITY_TYPE_LABEL, ""), "")


def node_state(obj: Mapping[str, Any], at: datetime, price_of: PriceOf | None, prefix: str = "") -> NodeState:
    """A Node object's launch (dated `at` until diff dates it); FieldError naming the field."""
    add_object(obj, Inputs())
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    labels = str_map(meta.get("labels"), f"{prefix}metadata.labels")
    it = labels.get(INSTANCE_TYPE_LABEL, "")
    zone = labels.get(ZONE_LABEL, "")
    ct = capacity_type_of(labels)
    taints = tuple(
        {k: str(t[k]) for k in ("key", "value", "effect") if t.get(k) is not None}
        for t in spec.get("taints") or []
        if isinstance(t, Mapping)
    )
    launch = NodeLaunched(
        at=at,
        name=str(meta["name"]),
        instance_type=it,
        zone=zone,
        capacity_type=ct,
        price=price_of(it, zone, ct) if price_of is not None and it and zone and ct else None,
        nodepool=labels.get(NODEPOOL_LABEL, ""),
        provider_id=str(spec.get("providerID") or ""),
        labels=labels,
        taints=taints,
        allocatable=str_map(status.get("allocatable"), f"{prefix}status.allocatable"),
        capacity=str_map(status.get("capacity"), f"{prefix}status.capacity"),
    )
    return NodeState(launch, _creation(meta, prefix))


_MANIFEST_METADATA = ("name", "labels", "annotations")


def trimmed_manifest(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A NodePool or EC2NodeClass as its author wrote it: apiVersion, kind, metadata (name, labels,
    annotations) and spec; the status and what the API server adds are left out."""
    meta = obj.get("metadata") or {}
    out_meta = {k: meta[k] for k in _MANIFEST_METADATA if meta.get(k)}
    annotations = out_meta.get("annotations")
    if isinstance(annotations, Mapping):
        kept = {k: v for k, v in annotations.items() if k != "kubectl.kubernetes.io/last-applied-configuration"}
        if kept:
            out_meta["annotations"] = kept
        else:
            del out_meta["annotations"]
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": out_meta,
            "spec": obj.get("spec") or {}}  # fmt: skip


# ---------------------------------------------------------------- one dump
def snapshot_objects(
    objects: Iterable[tuple[str, str, Mapping[str, Any]]], at: datetime, price_of: PriceOf | None
) -> Snapshot:
    """The snapshot of a dump's objects ((where, prefix, object) as packing.documents gives them); InputError
    `file: document N (Kind name): field: message` at the first bad one. Kinds other than Pod, Node, NodePool
    and EC2NodeClass are skipped."""
    snap = Snapshot(at)
    for where, prefix, obj in objects:
        kind = obj.get("kind")
        api = obj.get("apiVersion")
        try:
            if kind == "Pod" and api == "v1":
                state, template = pod_state(obj, prefix)
                if state.key in snap.pods:
                    raise FieldError("metadata.name", f"pod {state.key[:120]} is in the dump twice")
                snap.pods[state.key] = state
                snap.templates.setdefault(state.spec, template)
            elif kind == "Node" and api == "v1":
                node = node_state(obj, at, price_of, prefix)
                if node.launch.name in snap.nodes:
                    raise FieldError("metadata.name", f"node {node.launch.name[:120]} is in the dump twice")
                snap.nodes[node.launch.name] = node
            else:
                ident = manifest_identity(obj)
                if ident is None:
                    continue
                manifest = trimmed_manifest(obj)
                check_manifest(manifest, ident[0], ident[1], "")
                if snap.manifests is None:
                    snap.manifests = {}
                snap.manifests[ident] = manifest
        except FieldError as e:
            path = e.path.removeprefix(".")
            raise InputError(f"{where}{object_label(obj)}: {prefix}{path}: {e.message}") from None
    return snap


def read_dump(path: str, at: datetime, price_of: PriceOf | None, budget: ByteBudget | None = None) -> Snapshot:
    """The snapshot of one dump file ('-' is stdin) taken at `at`; InputError naming the file, document and
    field. Read by the streaming readers (packing.streaming) when they are sure of the text; on any problem
    read again whole, which words every error as `plan` does."""
    data = (budget or ByteBudget(None)).read_bytes(path)
    if is_json_object(data):
        try:
            return snapshot_objects(json_bytes_objects(data, path), at, price_of)
        except (Declined, InputError):
            pass
    text = decode_text(data, path)
    del data  # not held while the text is read
    try:
        return snapshot_objects(stream_objects(text, path), at, price_of)
    except (Declined, InputError):
        pass
    return snapshot_objects(kubernetes_objects(text, path), at, price_of)


# ---------------------------------------------------------------- two dumps
def _within(t: datetime | None, lo: datetime | None, hi: datetime) -> datetime:
    """`t` kept inside (lo, hi]: hi when unknown, or when there is no lo (a first dump) or t is outside."""
    if t is None or lo is None or t <= lo or t > hi:
        return hi
    return t


def _sorted(events: list[Event]) -> list[Event]:
    return sorted(events, key=lambda e: (e.at, EVENT_ORDER[type(e)]))


def diff(prev: Snapshot | None, cur: Snapshot) -> list[Event]:
    """The events that take `prev` (None: an empty cluster before the first dump) to `cur`, in time order."""
    lo = prev.at if prev is not None else None
    at = cur.at
    events: list[Event] = []
    before_pods = prev.pods if prev is not None else {}
    before_nodes = prev.nodes if prev is not None else {}
    # manifests
    if cur.manifests is not None:
        before_m = (prev.manifests if prev is not None else None) or {}
        for (kind, name), m in sorted(cur.manifests.items()):
            if before_m.get((kind, name)) != m:
                events.append(Revision(at, kind, name, m))
        for kind, name in sorted(set(before_m) - set(cur.manifests)):
            events.append(Revision(at, kind, name, None))
    # nodes
    for name, node in sorted(cur.nodes.items()):
        if name not in before_nodes:
            launch = node.launch
            when = _within(node.created, lo, at)
            events.append(launch if launch.at == when else _relaunch(launch, when))
    for name in sorted(set(before_nodes) - set(cur.nodes)):
        events.append(NodeTerminated(at, name))
    # pods
    for key, old in sorted(before_pods.items()):
        if old.end is not None:
            continue  # it left when it finished
        new = cur.pods.get(key)
        if new is None:
            events.append(PodDeparted(at, old.namespace, old.name))
        elif old.uid and new.uid and old.uid != new.uid:
            # replaced under its own name (a StatefulSet's pod): the old one left when the new one came
            events.append(PodDeparted(_within(new.created, lo, at), old.namespace, old.name))
        elif new.end is not None:
            events.append(PodDeparted(at, old.namespace, old.name, new.end))
        elif new.node and not old.node:
            events.append(PodBound(_within(new.scheduled, lo, at), new.namespace, new.name, new.node))
    for key, new in sorted(cur.pods.items()):
        seen = before_pods.get(key)
        fresh = (seen is None or bool(seen.uid and new.uid and seen.uid != new.uid)
                 or (seen.end is not None and new.end is None))
        if not fresh or new.end is not None:
            continue
        arrived = _within(new.created, lo, at)
        if lo is None or not new.node:
            events.append(PodArrived(arrived, new.namespace, new.name, new.spec, new.uid, new.owner_kind,
                                     new.owner_name, new.node if lo is None else ""))  # fmt: skip
        else:
            events.append(PodArrived(arrived, new.namespace, new.name, new.spec, new.uid, new.owner_kind,
                                     new.owner_name))  # fmt: skip
            bound = new.scheduled if new.scheduled is not None and new.scheduled >= arrived else None
            events.append(PodBound(_within(bound, lo, at) if bound is not None else at, new.namespace, new.name,
                                   new.node))  # fmt: skip
    return _sorted(events)


def _relaunch(launch: NodeLaunched, at: datetime) -> NodeLaunched:
    return NodeLaunched(at, launch.name, launch.instance_type, launch.zone, launch.capacity_type, launch.price,
                        launch.nodepool, launch.provider_id, launch.labels, launch.taints, launch.allocatable,
                        launch.capacity)  # fmt: skip
