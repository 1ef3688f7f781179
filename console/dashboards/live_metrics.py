"""The gauges of /metrics that describe the live cluster now, with Karpenter v1's names and labels:
per node (pkg/controllers/metrics/node), per pod (pkg/controllers/metrics/pod), per NodePool
(pkg/controllers/metrics/nodepool: cost) and the disruption controller's eligible nodes.

Gauges read the cluster, which every web process sees alike, so they may come from a per-process
read: one read of nodes and pods serves every scrape for LOADMASTER_DASHBOARD_LIVE_SECONDS, and the
per-node and per-pod series are rendered once per read (tens of thousands of lines at 1,000 nodes)."""

from __future__ import annotations

import functools
import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from console.backends.base import ClusterBackend
from console.control.live_cluster import LiveCluster, NodeRow, gc_paused
from console.control.termination import do_not_disrupt
from console.dashboards import selectors
from console.dashboards.exposition import Exposition, escape, join, labels
from console.fleet.models import NodePool
from packing.api import PODS, DurationError, QuantityError, parse_duration, parse_quantity

log = logging.getLogger(__name__)

# Karpenter v1's WellKnownLabels with the AWS provider's additions (pkg/apis/v1/labels.go in both
# repositories); the metric label is the key's name part in snake_case, as getWellKnownLabels does.
WELL_KNOWN_LABELS = (
    "karpenter.sh/nodepool", "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "node.kubernetes.io/instance-type", "kubernetes.io/arch", "kubernetes.io/os", "karpenter.sh/capacity-type",
    "node.kubernetes.io/windows-build", "topology.k8s.aws/zone-id",
    *(f"karpenter.k8s.aws/{n}" for n in (
        "capacity-reservation-id", "capacity-reservation-type", "capacity-reservation-interruptible",
        "instance-hypervisor", "instance-encryption-in-transit-supported", "nitro-sandbox", "instance-category",
        "instance-capability-flex", "instance-family", "instance-generation", "instance-local-nvme", "instance-size",
        "instance-cpu", "instance-cpu-manufacturer", "instance-cpu-sustained-clock-speed-mhz", "instance-memory",
        "instance-ebs-bandwidth", "instance-network-bandwidth", "instance-gpu-name", "instance-gpu-manufacturer",
        "instance-gpu-count", "instance-gpu-memory", "instance-accelerator-name", "instance-accelerator-manufacturer",
        "instance-accelerator-count", "instance-tenancy", "placement-group-id", "placement-group-partition")),
)
METRIC_LABEL = {k: k.split("/", 1)[1].lower().replace("-", "_") for k in WELL_KNOWN_LABELS}
ZONE, ARCH, CAPACITY_TYPE, INSTANCE_TYPE, NODEPOOL = (
    "topology.kubernetes.io/zone", "kubernetes.io/arch", "karpenter.sh/capacity-type",
    "node.kubernetes.io/instance-type", "karpenter.sh/nodepool")

NODE_GAUGES = (
    ("karpenter_nodes_allocatable", "Node allocatable are the resources allocatable by nodes."),
    ("karpenter_nodes_total_pod_requests",
     "Node total pod requests are the resources requested by pods bound to nodes, including the DaemonSet pods."),
    ("karpenter_nodes_total_daemon_requests",
     "Node total daemon requests are the resource requested by DaemonSet pods bound to nodes."),
    ("karpenter_nodes_system_overhead",
     "Node system daemon overhead are the resources reserved for system overhead, the difference between the "
     "node's capacity and allocatable values are reported by the status."),
)


def resource_label(resource: str) -> str:
    # Karpenter's resource_type: the resource name lower-cased with "-" as "_" (ephemeral_storage).
    return resource.lower().replace("-", "_")


@dataclass
class LiveRead:
    """One read of the cluster (the dashboards' remembered read, selectors.live_read) with what the
    rows do not keep (node labels, capacity, phase; the pods) and the per-node and per-pod exposition
    rendered once per read."""

    live: LiveCluster
    nodes: list[NodeRow]
    node_objects: dict[str, Mapping[str, Any]]
    pods: Sequence[Mapping[str, Any]]
    node_labels: dict[str, str] = field(default_factory=dict)  # node name -> rendered label set
    block: str = ""
    keys: list[str] = field(default_factory=list)


_READ: LiveRead | None = None


def live_read_clear() -> None:
    """Forget the rendered read and the read itself: the next scrape lists the cluster."""
    global _READ
    _READ = None
    selectors.live_nodes_clear()


def live_read(*, cluster: ClusterBackend, now: datetime) -> LiveRead:
    """The cluster as of at most LOADMASTER_DASHBOARD_LIVE_SECONDS ago (0: read every time): the read
    the pages of this process share, rendered once."""
    global _READ
    live = selectors.live_read(cluster=cluster, now=now)
    hit = _READ
    if hit is not None and hit.live is live:
        return hit
    objects: dict[str, Mapping[str, Any]] = {str((n.get("metadata") or {}).get("name")): n for n in live.node_objects}
    read = LiveRead(live=live, nodes=live.nodes, node_objects=objects, pods=live.pods)
    with gc_paused():  # tens of thousands of label tuples, no cycles (see gc_paused)
        _render(read)
    _READ = read
    return read


# The well-known labels ordered by their metric label's name (the names are distinct), as a node's
# label set lists them.
_BY_METRIC_LABEL = tuple(sorted(WELL_KNOWN_LABELS, key=lambda k: METRIC_LABEL[k]))


def _node_label_text(row: NodeRow, obj: Mapping[str, Any]) -> str:
    node_labels = (obj.get("metadata") or {}).get("labels") or {}
    pairs = [(METRIC_LABEL[k], str(node_labels.get(k, ""))) for k in _BY_METRIC_LABEL]
    phase = str((obj.get("status") or {}).get("phase") or "")
    return labels([*pairs, ("node_name", row.name), ("phase", phase), ("managed", "true" if row.managed else "false")])


@functools.lru_cache(maxsize=4096)
def _milli(q: str | int | float) -> int | None:
    try:
        return parse_quantity(q)
    except (QuantityError, TypeError, ValueError):
        return None


def _quantities(raw: Mapping[str, Any] | None) -> dict[str, int]:
    """A node's capacity or allocatable in milli-units (nodes of one type repeat the same strings)."""
    out = {}
    for r, q in (raw or {}).items():
        milli = _milli(q) if isinstance(q, str | int | float) else None
        if milli is not None:
            out[str(r)] = milli
    return out


def _owner(meta: Mapping[str, Any]) -> str:
    # Karpenter's "owner" label: the first owner reference's self link, built by hand.
    refs = meta.get("ownerReferences") or []
    if not refs:
        return ""
    o = refs[0]
    return f"/apis/{o.get('apiVersion', '')}/namespaces/{meta.get('namespace') or 'default'}/{str(o.get('kind', '')).lower()}s/{o.get('name', '')}"


def _render(read: LiveRead) -> None:
    out = Exposition()
    resource_part: dict[str, str] = {}

    def resource(r: str) -> str:
        part = resource_part.get(r)
        if part is None:
            part = resource_part[r] = f'resource_type="{resource_label(r)}"'
        return part

    for row in read.nodes:
        read.node_labels[row.name] = _node_label_text(row, read.node_objects.get(row.name) or {})
    # One family at a time: the exposition format wants a family's series together.
    alloc_name, pod_name, daemon_name, overhead_name = (g[0] for g in NODE_GAUGES)
    help_of = dict(NODE_GAUGES)
    out.family(alloc_name, "gauge", help_of[alloc_name])
    for row in read.nodes:
        for r, milli in sorted(row.allocatable.items()):
            out.sample(alloc_name, join(read.node_labels[row.name], resource(r)), milli / 1000)
    # As RequestsForPods: the containers' resources plus "pods", the number of pods (0 when none).
    for name, attr in ((pod_name, "pod_requests"), (daemon_name, "daemon_requests")):
        out.family(name, "gauge", help_of[name])
        for row in read.nodes:
            amounts = {PODS: 0, **getattr(row, attr)}
            for r, milli in sorted(amounts.items()):
                out.sample(name, join(read.node_labels[row.name], resource(r)), milli / 1000)
    out.family(overhead_name, "gauge", help_of[overhead_name])
    for row in read.nodes:
        status = (read.node_objects.get(row.name) or {}).get("status") or {}
        capacity, allocatable = _quantities(status.get("capacity")), _quantities(status.get("allocatable"))
        for r, milli in sorted(capacity.items()):
            out.sample(overhead_name, join(read.node_labels[row.name], resource(r)),
                       (milli - allocatable.get(r, 0)) / 1000)

    out.family("karpenter_pods_state", "gauge",
               "Pod state is the current state of pods. This metric can be used several ways as it is labeled by the "
               "pod name, namespace, owner, node, nodepool name, zone, architecture, capacity type, instance type, "
               "pod phase, and pod readiness.")
    # What a pod's labels take from its node, rendered once per node (pods outnumber nodes ten to one).
    node_part: dict[str, tuple[str, str]] = {}
    for pod in read.pods:
        meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        node = str(spec.get("nodeName") or "")
        part = node_part.get(node)
        if part is None:
            nl = ((read.node_objects.get(node) or {}).get("metadata") or {}).get("labels") or {}
            pool = str(nl.get(NODEPOOL, ""))
            part = node_part[node] = (labels((
                ("node", node), ("scheduled", "true" if node else "false"), ("nodepool", pool),
                ("zone", str(nl.get(ZONE, ""))), ("arch", str(nl.get(ARCH, ""))),
                ("capacity_type", str(nl.get(CAPACITY_TYPE, ""))), ("instance_type", str(nl.get(INSTANCE_TYPE, ""))))),
                'managed="true"' if pool else 'managed="false"')
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        out.sample("karpenter_pods_state", join(
            labels((("name", str(meta.get("name", ""))), ("namespace", str(meta.get("namespace") or "default")),
                    ("owner", _owner(meta)))),
            part[0], labels((("phase", str(status.get("phase") or "")), ("ready", "true" if ready else "false"))),
            part[1]), 1)
    read.block = out.text()
    read.keys = out.series_keys()


def write_live(out: Exposition, read: LiveRead, *, now: datetime) -> None:
    """The per-read block, then what moves with the clock or is cluster-wide."""
    out.raw(read.block, read.keys)
    out.family("karpenter_nodes_current_lifetime_seconds", "gauge", "Node age in seconds")
    for row in read.nodes:
        if row.created_at is not None:
            out.sample("karpenter_nodes_current_lifetime_seconds", read.node_labels[row.name],
                       max(0.0, (now - row.created_at).total_seconds()))

    alloc: dict[str, int] = defaultdict(int)
    used: dict[str, int] = defaultdict(int)
    for row in read.nodes:
        for r, milli in row.allocatable.items():
            alloc[r] += milli
        for r, milli in row.pod_requests.items():
            used[r] += milli
    out.family("karpenter_cluster_utilization_percent", "gauge", "Utilization of allocatable resources by pod requests")
    for r, total in sorted(alloc.items()):
        if total:
            out.sample("karpenter_cluster_utilization_percent", f'resource_type="{resource_label(r)}"',
                       100 * used.get(r, 0) / total)
    pools = list(NodePool.objects.all())
    cost: dict[str, float] = defaultdict(float)
    for row in read.nodes:
        if row.nodepool and row.price is not None:
            cost[row.nodepool] += row.price
    out.family("karpenter_nodepools_cost_total", "gauge",
               "Total cost of the nodepool from Karpenter's perspective. Units are determined by the cloud provider. "
               "Not an authoritative source for billing.")
    for pool in sorted(pools, key=lambda p: p.name):
        out.sample("karpenter_nodepools_cost_total", f'nodepool="{escape(pool.name)}"', cost.get(pool.name, 0.0))
    out.family("karpenter_voluntary_disruption_eligible_nodes", "gauge",
               "Number of nodes eligible for disruption by Karpenter. Labeled by disruption reason.")
    for reason, n in eligible_nodes(read, pools, now=now).items():
        out.sample("karpenter_voluntary_disruption_eligible_nodes", f'reason="{reason}"', n)


def eligible_nodes(read: LiveRead, pools: Sequence[NodePool], *, now: datetime) -> dict[str, int]:
    """Per disruption reason, the nodes that pass Karpenter's candidate filter for that method:
    managed by an existing NodePool, initialized, not already being disrupted, no do-not-disrupt
    annotation on the node or its pods; "empty" and "underutilized" also need consolidateAfter to
    have passed since the node initialized (and WhenEmptyOrUnderutilized for underutilized, no
    pod other than DaemonSet pods for empty); "drifted" needs the Drifted condition."""
    by_pool = {p.name: p for p in pools}
    # The engine's rule: "true", or a duration ("30m") not yet past since the object's creation.
    guarded = {name for name, obj in read.node_objects.items() if do_not_disrupt(obj, f"node {name}", now)}
    for pod in read.pods:
        if do_not_disrupt(pod, "pod", now):
            guarded.add(str((pod.get("spec") or {}).get("nodeName") or ""))
    counts = {"empty": 0, "underutilized": 0, "drifted": 0}
    for row in read.nodes:
        pool, claim = by_pool.get(row.nodepool), row.claim
        if pool is None or claim is None or claim.initialized_at is None or claim.disrupting_at is not None:
            continue
        if row.name in guarded:
            continue
        if claim.drifted_at is not None:
            counts["drifted"] += 1
        try:
            after = parse_duration(pool.consolidate_after or "0s")
        except DurationError:
            after = None
        if after is None or now - claim.initialized_at < after:
            continue
        workload = row.pod_requests.get(PODS, 0) - row.daemon_requests.get(PODS, 0)
        if workload <= 0:
            counts["empty"] += 1
        if pool.consolidation_policy == NodePool.POLICY_WHEN_UNDERUTILIZED:
            counts["underutilized"] += 1
    return counts
