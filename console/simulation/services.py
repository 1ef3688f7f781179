"""The simulation's business logic: one tick of the world, reset, status, and operator overrides.

simulation_tick() is idempotent and safe to run from Celery beat every few seconds, from two workers
at once, or after a long pause: every step fires on a due time stored in the database ("running_at
has passed"), runs inside one transaction holding the state lock, and a second tick at the same
time finds nothing left to do.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count
from django.utils import timezone

from console.backends.base import UNREGISTERED_TAINT_KEY
from console.simulation.cloud import put_event
from console.simulation.cluster import is_initialized, meta, remove_node
from console.simulation.config import SimulationConfig
from console.simulation.models import SimEvent, SimInstance, SimObject, SimState, SimTombstone, SimWorkload
from console.simulation.scheduler import schedule
from console.simulation.store import Store, load_state, rfc3339, writing
from console.simulation.workloads import (
    desired_replicas,
    reconcile_daemonsets,
    reconcile_workloads,
    seed_demo,
    sim_hours,
)

log = logging.getLogger(__name__)
KUBELET_VERSION = "v1.31.4-eks-sim"


@dataclass
class TickReport:
    now: datetime
    sim_day: int
    sim_time: str
    started: list[str] = field(default_factory=list)          # instances pending -> running
    registered: list[str] = field(default_factory=list)       # Nodes created by "kubelets"
    interrupted: list[str] = field(default_factory=list)      # spot warnings sent
    reclaimed: list[str] = field(default_factory=list)        # spot instances taken back
    stopped: list[str] = field(default_factory=list)          # out-of-band state changes
    terminated: list[str] = field(default_factory=list)       # shutting-down -> terminated
    nodes_removed: list[str] = field(default_factory=list)
    pods_created: int = 0
    pods_deleted: int = 0
    daemon_pods: int = 0
    bound: list[str] = field(default_factory=list)
    unschedulable: list[str] = field(default_factory=list)
    tombstones_pruned: int = 0

    def summary(self) -> str:
        parts = [f"day {self.sim_day} {self.sim_time}"]
        for name in ("started", "registered", "interrupted", "reclaimed", "stopped", "terminated",
                     "nodes_removed", "bound", "unschedulable"):
            value = getattr(self, name)
            if value:
                parts.append(f"{name.replace('_', ' ')} {len(value)}")
        if self.pods_created or self.pods_deleted:
            parts.append(f"pods +{self.pods_created}/-{self.pods_deleted}")
        return ", ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["now"] = self.now.isoformat()
        return out


def _clock_of(state: SimState, config: SimulationConfig, now: datetime) -> tuple[int, str]:
    hours = sim_hours(state, config, now)
    day, hour = divmod(hours, 24.0)
    minutes = int(hour * 60)
    return int(day) + 1, f"{minutes // 60:02d}:{minutes % 60:02d}"


def simulation_tick(*, now: datetime | None = None, config: SimulationConfig | None = None) -> TickReport:
    """Advance the simulated world to `now` (default: the current time)."""
    config = config or SimulationConfig.from_settings()
    with writing(now or timezone.now(), seed=config.seed) as store:
        state = store.state
        # Two workers with slightly different clocks must not move the world backwards.
        if state.last_tick is not None and store.now < state.last_tick:
            store.now = state.last_tick
        now = store.now
        day, clock = _clock_of(state, config, now)
        report = TickReport(now=now, sim_day=day, sim_time=clock)
        if config.demo_workloads and not state.workloads_seeded:
            seed_demo(store)
        _advance_instances(store, config, report)
        _register_nodes(store, report)
        report.pods_created, report.pods_deleted = reconcile_workloads(store, config)
        report.daemon_pods = reconcile_daemonsets(store)
        scheduled = schedule(store)
        report.bound, report.unschedulable = scheduled.bound, scheduled.unschedulable
        report.tombstones_pruned = store.compact(config.tombstone_retention)
        SimInstance.objects.filter(state="terminated",
                                   terminated_at__lt=now - timedelta(seconds=config.terminated_retention_seconds)).delete()
        state.last_tick = now
    summary = report.summary()
    if "," in summary:          # something happened beyond the clock moving on
        log.info("simulation tick: %s", summary)
    return report


def _advance_instances(store: Store, config: SimulationConfig, report: TickReport) -> None:
    now = store.now
    for row in SimInstance.objects.filter(state="pending", running_at__lte=now):
        row.state = "running"
        row.save(update_fields=["state"])
        report.started.append(row.instance_id)

    # Spot interruption: the two-minute warning (compressed), then the instance is taken back.
    for row in SimInstance.objects.filter(state__in=("pending", "running"), capacity_type="spot",
                                          interrupt_at__lte=now, reclaim_at__isnull=True):
        deadline = now + timedelta(seconds=config.spot_notice)
        row.reclaim_at = deadline
        row.save(update_fields=["reclaim_at"])
        put_event(store, "spot_interruption", row.instance_id, config.region,
                  **{"instance-action": "terminate", "deadline": deadline})
        report.interrupted.append(row.instance_id)
    for row in SimInstance.objects.filter(state__in=("pending", "running", "stopping", "stopped"), reclaim_at__lte=now):
        _terminated(store, row, "spot reclaimed", config, report)
        report.reclaimed.append(row.instance_id)

    # Out-of-band state changes (someone stopped the instance, a hardware retirement...).
    for row in SimInstance.objects.filter(state="running", fail_at__lte=now):
        row.state = "stopped"
        row.termination_reason = "stopped out of band"
        row.save(update_fields=["state", "termination_reason"])
        put_event(store, "state_change", row.instance_id, config.region, state="stopped")
        report.stopped.append(row.instance_id)
        if remove_node(store, row.node_name):
            report.nodes_removed.append(row.node_name)

    for row in SimInstance.objects.filter(state="shutting-down", shutdown_at__lte=now):
        _terminated(store, row, row.termination_reason or "TerminateInstances", config, report, event=False)
        report.terminated.append(row.instance_id)


def _terminated(store: Store, row: SimInstance, reason: str, config: SimulationConfig, report: TickReport,
                *, event: bool = True) -> None:
    row.state = "terminated"
    row.terminated_at = store.now
    row.termination_reason = row.termination_reason or reason
    row.save(update_fields=["state", "terminated_at", "termination_reason"])
    if event:
        put_event(store, "state_change", row.instance_id, config.region, state="terminated")
    # The kubelet is gone; the cloud controller deletes its Node, and the pods come back pending.
    if row.node_created and remove_node(store, row.node_name):
        report.nodes_removed.append(row.node_name)


def node_body(row: SimInstance, now: datetime) -> dict[str, Any]:
    """The Node a kubelet registers for this instance: still tainted karpenter.sh/unregistered."""
    ip = row.node_name.removeprefix("ip-").split(".", 1)[0].replace("-", ".")
    stamp = rfc3339(now)
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": row.node_name, "labels": dict(row.labels),
                     "annotations": {"alpha.kubernetes.io/provided-node-ip": ip}},
        "spec": {"providerID": f"aws:///{row.zone}/{row.instance_id}",
                 "taints": [{"key": UNREGISTERED_TAINT_KEY, "effect": "NoExecute"}]},
        "status": {
            "capacity": dict(row.capacity), "allocatable": dict(row.allocatable),
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "kubelet is posting ready status", "lastHeartbeatTime": stamp,
                            "lastTransitionTime": stamp}],
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": row.node_name}],
            "nodeInfo": {"architecture": row.labels.get("kubernetes.io/arch", "amd64"), "operatingSystem": "linux",
                         "kubeletVersion": KUBELET_VERSION, "containerRuntimeVersion": "containerd://1.7.27"},
        },
    }


def _register_nodes(store: Store, report: TickReport) -> None:
    for row in SimInstance.objects.filter(state="running", node_created=False, register_at__lte=store.now):
        if store.get("Node", row.node_name) is None:
            store.create(node_body(row, store.now))
            report.registered.append(row.node_name)
        row.node_created = True
        row.save(update_fields=["node_created"])


# --- reset, status, overrides ----------------------------------------------------------------------

def simulation_reset(*, seed: int | None = None, now: datetime | None = None,
                     config: SimulationConfig | None = None) -> SimState:
    """Empty the simulated world: no instances, objects, events or workloads; the day starts again.

    resourceVersions keep counting up and the history is marked expired, so a watcher that was
    following the old world relists instead of missing the deletions.
    """
    config = config or SimulationConfig.from_settings()
    with writing(now or timezone.now(), seed=config.seed) as store:
        SimObject.objects.all().delete()
        SimInstance.objects.all().delete()
        SimEvent.objects.all().delete()
        SimWorkload.objects.all().delete()
        store.expire_history()
        state = store.state
        state.seed = config.seed if seed is None else seed
        state.epoch += 1
        state.origin = store.now
        state.last_tick = None
        state.instance_counter = state.object_counter = state.launch_attempts = 0
        state.workloads_seeded = False
        state.ice_offerings = []
    return state


def workload_scale(namespace: str, name: str, replicas: int | None) -> SimWorkload:
    """Pin a workload's replicas (None: follow the day's curve again). Applied by the next tick."""
    workload = SimWorkload.objects.get(namespace=namespace, name=name)
    workload.pinned_replicas = replicas
    workload.save(update_fields=["pinned_replicas"])
    return workload


def node_conditions_set(node_name: str, conditions: list[tuple[str, str]], *,
                        now: datetime | None = None) -> dict[str, Any]:
    """Set conditions on a simulated Node (``manage.py simulation unhealthy``), e.g. [("Ready", "False")]:
    what a failing kubelet or a diagnostic agent reports, for node repair to act on. NodeNotFound if absent."""
    from console.simulation.cluster import SimulatedCluster

    cluster = SimulatedCluster(clock=(lambda: now) if now is not None else None)
    body: dict[str, Any] = {}
    for ctype, status in conditions:
        body = cluster.set_node_condition(node_name, ctype, status)
    return body


def ice_offerings_set(patterns: list[str]) -> list[str]:
    """Replace the run-time injected capacity errors ([] clears them); the next launch sees them."""
    clean = [p.strip() for p in patterns if p.strip()]
    with writing() as store:
        store.state.ice_offerings = clean
    return clean


def simulation_status(*, now: datetime | None = None, config: SimulationConfig | None = None) -> dict[str, Any]:
    """What an operator wants at a glance (manage.py simulation status)."""
    config = config or SimulationConfig.from_settings()
    now = now or timezone.now()
    state = load_state(now, config.seed)
    day, clock = _clock_of(state, config, now)
    instances = dict(SimInstance.objects.values_list("state").annotate(n=Count("id")).values_list("state", "n"))
    nodes = [row.body for row in SimObject.objects.filter(kind="Node")]
    pods = [row for row in SimObject.objects.filter(kind="Pod")]
    unschedulable = sum(1 for p in pods if not p.node_name and any(
        c.get("reason") == "Unschedulable" for c in (p.body.get("status") or {}).get("conditions") or []))
    return {
        "seed": state.seed,
        "sim_day": day,
        "sim_time": clock,
        "compression": config.compression,
        "last_tick": state.last_tick.isoformat() if state.last_tick else None,
        "resource_version": state.resource_version,
        "instances": instances,
        "nodes": {"total": len(nodes), "initialized": sum(1 for n in nodes if is_initialized(n)),
                  "unregistered": sum(1 for n in nodes if any(t.get("key") == UNREGISTERED_TAINT_KEY
                                                              for t in (n.get("spec") or {}).get("taints") or []))},
        "pods": {"total": len(pods), "bound": sum(1 for p in pods if p.node_name),
                 "pending": sum(1 for p in pods if not p.node_name), "unschedulable": unschedulable},
        "workloads": [{"workload": f"{w.namespace}/{w.name}", "replicas": w.replicas,
                       "desired_now": desired_replicas(w, state, config, now), "pinned": w.pinned_replicas,
                       "profile": w.profile} for w in SimWorkload.objects.all()],
        "queued_events": SimEvent.objects.count(),
        "ice_offerings": [*config.ice_offerings, *state.ice_offerings],
        "tombstones": SimTombstone.objects.count(),
        "config": {k: v for k, v in asdict(config).items()},
        "nodes_detail": [{"name": meta(n).get("name"), "provider_id": (n.get("spec") or {}).get("providerID", ""),
                          "instance_type": (meta(n).get("labels") or {}).get("node.kubernetes.io/instance-type", ""),
                          "initialized": is_initialized(n)} for n in nodes],
    }
