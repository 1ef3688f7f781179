"""record_metrics: one sample per minute per NodePool and for the whole cluster, from the live
cluster: cost (and its on-demand equivalent), allocatable vs requested, pending pods and why, and the
provisioning engine's lower bound for the running pods. Idempotent per minute: a repeated run
overwrites the same rows. At each hour boundary the ended hours are rolled up and old minutes pruned."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.db import transaction
from django.utils import timezone

from console import adapters
from console.backends.base import ClusterBackend
from console.control import commitment_metrics
from console.control.headroom import buffer_headroom
from console.control.launch import engine_catalog
from console.control.live_cluster import LiveCluster, NodeRow, live_cluster
from console.fleet.models import Decision, EC2NodeClass, NodePool
from console.telemetry import pod_startup, reasons, services
from console.telemetry.models import MetricSample
from packing.api import InstanceType, Pod, Scheduler

log = logging.getLogger(__name__)

# scope ("" = cluster, else a NodePool) -> (fingerprint, bound). Per process: a worker recomputes a
# bound only when the running pods' request classes, the pools or the catalog changed.
_BOUND_CACHE: dict[str, tuple[str, float | None]] = {}


def lower_bound_cache_clear() -> None:
    """Forget the bounds computed so far: the next sample computes each again (benchmarks)."""
    _BOUND_CACHE.clear()


def _pod_class(pod: Pod) -> str:
    # What the bound reads of a pod: its requests, tolerations, node-affinity terms and (for hostname
    # anti-affinity) its labels. Two pods of one Deployment give the same string.
    anti = (pod.namespace, sorted(pod.labels.items()), pod.anti_affinity) if pod.anti_affinity else ()
    return repr((sorted(pod.requests.items()), pod.tolerations, pod.node_requirement_terms(), anti))


def _catalog_fingerprint(catalog: Sequence[InstanceType]) -> str:
    h = hashlib.sha256()
    for t in catalog:
        h.update(repr((t.name, [(o.zone, o.capacity_type, o.price, o.available) for o in t.offerings])).encode())
    return h.hexdigest()


def _bound(scope: str, pods: Sequence[Pod], classes: Counter[str], pools: Sequence[Any], daemonsets: Sequence[Any],
           catalog: Sequence[InstanceType], base_fingerprint: str) -> float | None:
    """The engine's lower bound ($/h) on any plan that runs `pods` (whose _pod_class counts are
    `classes`) from scratch in `pools`, cached. None when the engine cannot place every pod (a pool's
    constraints changed since they were placed): a bound over fewer pods would overstate the gap's meaning."""
    fingerprint = hashlib.sha256(repr((base_fingerprint, sorted(p.name for p in pools), sorted(classes.items())))
                                 .encode()).hexdigest()
    hit = _BOUND_CACHE.get(scope)
    if hit is not None and hit[0] == fingerprint:
        return hit[1]
    bound: float | None
    try:
        pending = [dataclasses.replace(p, node_name="") for p in pods]
        results = Scheduler(pools, catalog, daemonsets=daemonsets).solve(pending, lower_bound=True)
        bound = None if results.unschedulable or results.lower_bound is None else float(results.lower_bound)
    except SoftTimeLimitExceeded:
        raise  # the task's own deadline, not a failure of the bound
    except Exception:  # the sample must still be written; the bound is then unknown
        log.exception("lower bound for %s failed", scope or "the cluster")
        bound = None
    _BOUND_CACHE[scope] = (fingerprint, bound)
    return bound


def lower_bounds(*, cluster: ClusterBackend, live: LiveCluster, now: datetime) -> dict[str, float | None]:
    """Per NodePool: the bound for the non-DaemonSet pods running on its nodes under that pool's
    constraints. Cluster (""): the bound for all those pods with every pool available, plus the cost
    of the nodes no NodePool manages (the provisioner cannot replace them). The pods are parsed here
    in full, as the engine plans with them (the live read keeps only their requests)."""
    pool_rows, class_rows = list(NodePool.objects.all()), list(EC2NodeClass.objects.all())
    spec = adapters.cluster_inputs(pods=(), nodes=(), daemonsets=cluster.list_daemonsets(),
                                   nodepools=pool_rows, nodeclasses=class_rows)
    catalog = engine_catalog(nodeclasses=class_rows, pools=pool_rows, now=now)
    base = hashlib.sha256(repr((_catalog_fingerprint(catalog),
                                json.dumps([p.field_values() for p in pool_rows], sort_keys=True, default=str),
                                json.dumps([c.field_values() for c in class_rows], sort_keys=True, default=str),
                                sorted(repr(d) for d in spec.daemonsets))).encode()).hexdigest()
    pool_of_node = {n.name: n.nodepool for n in live.nodes}
    pods_by_pool: dict[str, list[Pod]] = defaultdict(list)
    classes_by_pool: dict[str, Counter[str]] = defaultdict(Counter)
    for pod in adapters.cluster_inputs(pods=live.pods, nodes=()).running:
        pool = pool_of_node.get(pod.node_name or "")
        if pool and pod.owner_kind != "DaemonSet":  # DaemonSet pods come with every node: overhead, not load
            pods_by_pool[pool].append(pod)
            classes_by_pool[pool][_pod_class(pod)] += 1
    by_name = {p.name: p for p in spec.nodepools}
    bounds: dict[str, float | None] = {}
    for pool in {n.nodepool for n in live.nodes if n.nodepool}:
        if pool not in by_name:
            bounds[pool] = None  # nodes of a deleted NodePool: no constraints to plan under
            continue
        bounds[pool] = _bound(pool, pods_by_pool.get(pool, []), classes_by_pool[pool], [by_name[pool]],
                              spec.daemonsets, catalog, base)
    managed = [p for pods in pods_by_pool.values() for p in pods]
    everything: Counter[str] = sum(classes_by_pool.values(), Counter())
    joint = _bound("", managed, everything, spec.nodepools, spec.daemonsets, catalog, base) if spec.nodepools else None
    unmanaged = sum(n.price or 0.0 for n in live.nodes if not n.managed)
    bounds[""] = None if joint is None else joint + unmanaged
    return bounds


def _headroom(*, cluster: ClusterBackend, live: LiveCluster) -> tuple[Decimal | None, Decimal | None]:
    """The CapacityBuffers' headroom cost this minute (the cost page's tile reads it from here, so a page view
    never runs a solve); (None, None) when it cannot be computed now, which the tile says."""
    try:
        room = buffer_headroom(cluster=cluster, pods=live.pods, nodes=live.node_objects)
    except Exception as exc:  # the catalog or the cluster unavailable: the rest of the sample is still recorded
        log.warning("metrics: CapacityBuffer headroom not computed: %s", exc)
        return None, None
    return _money(room.held_per_hour), _money(room.total_per_hour)


def _commitments(*, live: LiveCluster, now: datetime) -> commitment_metrics.CommitmentMinute | None:
    """This minute's commitment samples (console.control.commitment_metrics); None when they cannot be computed
    now (the catalog unavailable), which leaves the effective cost unknown rather than equal to the list cost."""
    try:
        catalog = engine_catalog(nodeclasses=list(EC2NodeClass.objects.all()), pools=list(NodePool.objects.all()),
                                 now=now)
        with transaction.atomic():  # a savepoint: a failure here leaves the minute's other rows to be written
            return commitment_metrics.record(nodes=live.nodes, catalog=catalog, commitments=adapters.commitments(),
                                             at=now)
    except SoftTimeLimitExceeded:
        raise
    except Exception as exc:  # the rest of the sample is still recorded
        log.warning("metrics: commitment coverage not computed: %s", exc)
        return None


def _money(value: float) -> Decimal:
    return Decimal(str(round(value, 6)))


@transaction.atomic
def metrics_record(*, cluster: ClusterBackend, now: datetime | None = None) -> list[MetricSample]:
    minute = (now or timezone.now()).replace(second=0, microsecond=0)
    live = live_cluster(cluster=cluster, now=minute)
    pod_startup.pod_startups_record(pods=live.pods, now=now or timezone.now())

    rows: dict[str, dict[str, Any]] = defaultdict(lambda: defaultdict(int))
    node: NodeRow
    for node in live.nodes:
        for key in ("", node.nodepool) if node.nodepool else ("",):
            row = rows[key]
            row["nodes"] += 1
            row["spot_nodes"] += node.capacity_type == "spot"
            row["reserved_nodes"] += node.capacity_type == "reserved"
            row["cpu_allocatable"] += node.cpu_allocatable
            row["memory_allocatable"] += node.memory_allocatable
            row["cpu_requested"] += node.cpu_requested
            row["memory_requested"] += node.memory_requested
            row["pods"] += node.pods_requested
            if node.price is None:
                row["unpriced_nodes"] += 1
                row["estimated"] = 1
            else:
                row["cost"] += node.price
                row["estimated"] |= node.estimated
            # Unknown on-demand price: the node's own price stands in (no saving claimed for it).
            row["on_demand"] += node.on_demand_price if node.on_demand_price is not None else (node.price or 0.0)

    pending = {f"{(p['metadata'].get('namespace') or 'default')}/{p['metadata']['name']}" for p in cluster.pending_pods()}
    verdicts: list[list[Any] | None] = []
    for pod_key in pending:
        verdict = Decision.objects.filter(kind=Decision.UNSCHEDULABLE, details__pod=pod_key).order_by("-at").first()
        verdicts.append((verdict.details.get("reasons") or []) if verdict else None)
    pending_reasons = reasons.pending_reason_counts(verdicts)
    rows[""]["pods_pending"] = len(pending)
    bounds = lower_bounds(cluster=cluster, live=live, now=minute)
    held, total = _headroom(cluster=cluster, live=live)
    covered = _commitments(live=live, now=minute)
    effective: dict[str, float] = defaultdict(float)
    for node in live.nodes:
        if node.price is not None and covered is not None:
            for key in ("", node.nodepool) if node.nodepool else ("",):
                effective[key] += covered.effective.get(node.name, node.price)

    saved = []
    for pool, row in rows.items():
        bound = bounds.get(pool)
        sample, _ = MetricSample.objects.update_or_create(at=minute, nodepool=pool, defaults={
            "nodes": row["nodes"], "spot_nodes": row["spot_nodes"], "reserved_nodes": row["reserved_nodes"],
            "cost_per_hour": _money(row["cost"]), "on_demand_cost_per_hour": _money(row["on_demand"]),
            "estimated": bool(row["estimated"]), "unpriced_nodes": row["unpriced_nodes"],
            "cpu_allocatable": row["cpu_allocatable"], "cpu_requested": row["cpu_requested"],
            "memory_allocatable": row["memory_allocatable"], "memory_requested": row["memory_requested"],
            "pods": row["pods"], "pods_pending": row["pods_pending"] if pool == "" else 0,
            "unschedulable_reasons": dict(pending_reasons) if pool == "" else {},
            "lower_bound_per_hour": None if bound is None else _money(bound),
            "headroom_held_per_hour": held if pool == "" else None,
            "headroom_total_per_hour": total if pool == "" else None,
            "effective_cost_per_hour": None if covered is None else _money(effective[pool]),
        })
        saved.append(sample)
    services.metric_rollups_catch_up(now=minute)
    services.metric_samples_prune(now=minute)
    commitment_metrics.prune(before=minute - services.minute_retention())
    return saved
