"""The demo's workloads and the compressed day they follow.

Four Deployments sized for the demo fleet's NodePools (console.fleet.demo): web and api on the
default pool, a nightly batch job on the batch pool (arm64 spot, tainted), a GPU trainer on the gpu
pool; a node agent DaemonSet on every node; a PodDisruptionBudget on web.

Replicas follow a curve over the simulated hour of day (a morning burst, a quiet night; batch runs
at night), with a little seeded jitter per 10-minute slot, so the same seed and the same clock give
the same replica counts.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from console.simulation.cluster import is_terminal, meta, owner_kind
from console.simulation.config import SimulationConfig
from console.simulation.models import SimObject, SimState, SimWorkload
from console.simulation.scheduler import bound, parse_pod
from console.simulation.store import Store, rfc3339, seeded_random
from packing.api import Taint, first_untolerated

WORKLOAD_LABEL = "loadmaster.dev/sim-workload"

# (simulated hour, share of the way from min to max replicas); linear in between, wrapping at 24.
PROFILES: dict[str, Sequence[tuple[float, float]]] = {
    # Office traffic: asleep until 6, a steep burst 7-9, lunch dip, evening tail.
    "business": [(0, 0.0), (6, 0.05), (7, 0.4), (9, 1.0), (12, 0.75), (13, 0.85), (17, 0.7), (20, 0.3),
                 (23, 0.05), (24, 0.0)],
    # Batch work uses the quiet night.
    "nightly": [(0, 1.0), (4, 1.0), (6, 0.2), (7, 0.0), (21, 0.0), (22, 0.6), (24, 1.0)],
    # A trainer someone starts in the morning and stops in the evening.
    "office": [(0, 0.0), (8.99, 0.0), (9, 1.0), (18, 1.0), (18.01, 0.0), (24, 0.0)],
}


@dataclass(frozen=True)
class WorkloadSpec:
    namespace: str
    name: str
    requests: Mapping[str, str]
    min_replicas: int
    max_replicas: int
    profile: str
    node_selector: Mapping[str, str] | None = None
    tolerations: Sequence[Mapping[str, str]] = ()

    def template(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "containers": [{"name": self.name, "image": f"registry.example/{self.name}:1",
                            "resources": {"requests": dict(self.requests)}}],
            "schedulerName": "default-scheduler",
            "terminationGracePeriodSeconds": 30,
        }
        if self.node_selector:
            spec["nodeSelector"] = dict(self.node_selector)
        if self.tolerations:
            spec["tolerations"] = [dict(t) for t in self.tolerations]
        return {"metadata": {"labels": {"app": self.name}}, "spec": spec}


DEMO_WORKLOADS: tuple[WorkloadSpec, ...] = (
    WorkloadSpec("shop", "web", {"cpu": "250m", "memory": "512Mi"}, 4, 24, "business"),
    WorkloadSpec("shop", "api", {"cpu": "1", "memory": "2Gi"}, 2, 12, "business"),
    WorkloadSpec("batch", "nightly-report", {"cpu": "2", "memory": "4Gi"}, 0, 12, "nightly",
                 node_selector={"karpenter.sh/nodepool": "batch", "kubernetes.io/arch": "arm64"},
                 tolerations=[{"key": "workload", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}]),
    WorkloadSpec("ml", "trainer", {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}, 0, 1, "office",
                 tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]),
)

DEMO_DAEMONSET: dict[str, Any] = {
    "apiVersion": "apps/v1", "kind": "DaemonSet",
    "metadata": {"name": "node-agent", "namespace": "kube-system"},
    "spec": {
        "selector": {"matchLabels": {"app": "node-agent"}},
        "template": {
            "metadata": {"labels": {"app": "node-agent"}},
            "spec": {
                "containers": [{"name": "agent", "image": "registry.example/node-agent:1",
                                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}],
                # Runs everywhere, tainted nodes included, as log and metrics agents do.
                "tolerations": [{"operator": "Exists"}],
            },
        },
    },
}

DEMO_PDB: dict[str, Any] = {
    "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
    "metadata": {"name": "web", "namespace": "shop"},
    "spec": {"maxUnavailable": "25%", "selector": {"matchLabels": {"app": "web"}}},
}


# --- the compressed day ----------------------------------------------------------------------------

def sim_hours(state: SimState, config: SimulationConfig, now: datetime) -> float:
    """Simulated hours since the origin (plus the start hour): 24.0 is the start of the second day."""
    elapsed = max(0.0, (now - state.origin).total_seconds())
    return config.start_hour + elapsed * config.compression / 3600.0


def curve(profile: str, hour_of_day: float) -> float:
    points = PROFILES[profile]
    h = hour_of_day % 24.0
    for (h0, v0), (h1, v1) in zip(points, points[1:], strict=False):
        if h0 <= h <= h1:
            return v0 if h1 == h0 else v0 + (v1 - v0) * (h - h0) / (h1 - h0)
    return points[-1][1]


def desired_replicas(workload: SimWorkload, state: SimState, config: SimulationConfig, now: datetime) -> int:
    if workload.pinned_replicas is not None:
        return workload.pinned_replicas
    hours = sim_hours(state, config, now)
    share = curve(workload.profile, hours)
    span = workload.max_replicas - workload.min_replicas
    if config.replica_noise > 0 and span > 0 and 0 < share:
        slot = int(hours * 6)           # one draw per simulated 10 minutes
        rng = seeded_random(state.seed, "replicas", workload.namespace, workload.name, slot)
        share = min(1.0, max(0.0, share + rng.uniform(-config.replica_noise, config.replica_noise)))
    return workload.min_replicas + round(span * share)


# --- seeding and reconciling -----------------------------------------------------------------------

def replicaset_name(namespace: str, name: str) -> str:
    digits = f"{zlib.crc32(f'{namespace}/{name}'.encode()):010d}"
    return f"{name}-{digits[:10]}"


def seed_demo(store: Store, specs: Sequence[WorkloadSpec] = DEMO_WORKLOADS) -> None:
    for spec in specs:
        SimWorkload.objects.get_or_create(namespace=spec.namespace, name=spec.name, defaults={
            "template": spec.template(), "min_replicas": spec.min_replicas,
            "max_replicas": spec.max_replicas, "profile": spec.profile})
    for body in (DEMO_DAEMONSET, DEMO_PDB):
        m = body["metadata"]
        if store.get(body["kind"], m["name"], m["namespace"]) is None:
            store.create(body)
    store.state.workloads_seeded = True


def _pod_for(store: Store, workload: SimWorkload) -> dict[str, Any]:
    rs = replicaset_name(workload.namespace, workload.name)
    template = workload.template
    labels = {**(template.get("metadata") or {}).get("labels", {}), WORKLOAD_LABEL: workload.name,
              "pod-template-hash": rs.rsplit("-", 1)[1]}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": f"{rs}-{store.new_suffix(rs)}", "generateName": f"{rs}-", "namespace": workload.namespace,
            "labels": labels,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "controller": True,
                                 "blockOwnerDeletion": True, "uid": store.new_uid()}],
        },
        "spec": dict(template.get("spec") or {}),
        "status": {"phase": "Pending"},
    }


def reconcile_workloads(store: Store, config: SimulationConfig) -> tuple[int, int]:
    """Bring each workload's pod count to its desired replicas: (pods created, pods deleted).

    Scale-down removes unbound pods first, then the newest, as a ReplicaSet does.
    """
    created = deleted = 0
    for workload in SimWorkload.objects.all():
        want = desired_replicas(workload, store.state, config, store.now)
        rows = [r for r in SimObject.objects.filter(kind="Pod", namespace=workload.namespace)
                .order_by("created_version")
                if (meta(r.body).get("labels") or {}).get(WORKLOAD_LABEL) == workload.name and not is_terminal(r.body)]
        for _ in range(want - len(rows)):
            store.create(_pod_for(store, workload))
            created += 1
        if len(rows) > want:
            # Unbound pods first, then the newest.
            doomed = sorted(rows, key=lambda r: (bool(r.node_name), -r.created_version))[: len(rows) - want]
            for row in doomed:
                store.delete(row)
                deleted += 1
        if workload.replicas != want:
            workload.replicas = want
            workload.save(update_fields=["replicas"])
    return created, deleted


def reconcile_daemonsets(store: Store) -> int:
    """A DaemonSet pod on every node that its template fits (selector and taints). Returns pods created."""
    daemonsets = list(SimObject.objects.filter(kind="DaemonSet"))
    if not daemonsets:
        return 0
    nodes = list(SimObject.objects.filter(kind="Node").order_by("name"))
    have = {(r.node_name, r.namespace, _owner_name(r.body))
            for r in SimObject.objects.filter(kind="Pod").exclude(node_name="") if owner_kind(r.body) == "DaemonSet"}
    created = 0
    for ds in daemonsets:
        ds_meta = meta(ds.body)
        template = (ds.body.get("spec") or {}).get("template") or {}
        pod_view = parse_pod({"metadata": template.get("metadata") or {}, "spec": template.get("spec") or {}})
        for node in nodes:
            if (node.name, ds.namespace, ds.name) in have:
                continue
            labels = meta(node.body).get("labels") or {}
            taints = [Taint(str(t.get("key", "")), str(t.get("value") or ""), str(t.get("effect") or "NoSchedule"))
                      for t in (node.body.get("spec") or {}).get("taints") or []]
            if first_untolerated(taints, pod_view.tolerations) is not None:
                continue
            if not any(terms.matches(labels) for terms in pod_view.node_requirement_terms()):
                continue
            name = f"{ds.name}-{store.new_suffix(ds.name)}"
            body = {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "generateName": f"{ds.name}-", "namespace": ds.namespace,
                             "labels": dict((template.get("metadata") or {}).get("labels") or {}),
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": ds.name,
                                                  "uid": ds_meta.get("uid"), "controller": True}]},
                # The DaemonSet controller pins its pods to their node with node affinity; nodeName is
                # what the binding leaves, which is all the loops look at.
                "spec": dict(template.get("spec") or {}),
            }
            store.create(bound(body, node.name, rfc3339(store.now)))
            created += 1
    return created


def _owner_name(pod: Mapping[str, Any]) -> str:
    owners = meta(pod).get("ownerReferences") or []
    return str(owners[0].get("name") or "") if owners else ""
