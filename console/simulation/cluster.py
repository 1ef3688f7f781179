"""SimulatedCluster: base.ClusterBackend over the simulation's object store.

It behaves like console.backends.kubernetes.KubernetesCluster as the loops see it: the same pending
pod rule (is_provisionable, shared), cordon by the karpenter.sh/disrupted taint, evictions that a
PodDisruptionBudget refuses as "blocked", register_node applying the NodeClaim's labels and taints
and lifting karpenter.sh/unregistered, watches that resume from a resourceVersion and raise
ResourceExpired once the history they need was compacted.

What the cluster's own controllers would do is done here too, at once: an evicted pod of a
ReplicaSet (a Deployment's), StatefulSet or Job is replaced by a new pending pod, and a deleted
Node's pods come back pending.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from django.utils import timezone

from console.backends.base import (
    DISRUPTED_TAINT,
    UNREGISTERED_TAINT_KEY,
    EvictionOutcome,
    KubeObject,
    NodeNotFound,
    WatchEvent,
)
from console.backends.kubernetes import INITIALIZED_LABEL, REGISTERED_LABEL, is_provisionable
from console.simulation.models import SimObject
from console.simulation.store import Store, changes, list_objects, rfc3339, writing
from packing.api import Requirement, Requirements

Clock = Callable[[], datetime]
# Owners whose controller replaces a pod that goes away.
REPLACING_OWNERS = {"ReplicaSet", "Deployment", "StatefulSet", "Job"}


# --- pod and selector helpers (shared with the scheduler and the tick) -----------------------------

def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def owner_kind(pod: Mapping[str, Any]) -> str:
    owners = meta(pod).get("ownerReferences") or []
    controller = next((o for o in owners if o.get("controller")), owners[0] if owners else {})
    return str(controller.get("kind") or "")


def is_healthy(pod: Mapping[str, Any]) -> bool:
    """Counts toward a disruption budget: running, Ready and not terminating."""
    status = pod.get("status") or {}
    if meta(pod).get("deletionTimestamp") or status.get("phase") != "Running":
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector: {} selects everything, None nothing (policy/v1's rule for budgets)."""
    if selector is None:
        return False
    reqs = [Requirement.new(k, "In", [str(v)]) for k, v in (selector.get("matchLabels") or {}).items()]
    reqs += [Requirement.new(e["key"], e["operator"], [str(v) for v in e.get("values") or []])
             for e in selector.get("matchExpressions") or []]
    return Requirements(reqs).matches(labels)


def same_taint(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a.get("key") == b.get("key") and a.get("effect") == b.get("effect")


def replacement_for(store: Store, pod: Mapping[str, Any]) -> KubeObject:
    """The pod a controller would create in place of this one: same template, unbound, pending.

    A ReplicaSet's or Job's replacement gets a new generated name; a StatefulSet's (and a bare pod's,
    which the simulation brings back so its work is not silently lost) keeps the name.
    """
    old = meta(pod)
    kind = owner_kind(pod)
    name = str(old.get("name"))
    if kind in ("ReplicaSet", "Deployment", "Job"):
        base = str(old.get("generateName") or name.rsplit("-", 1)[0] + "-")
        name = base + store.new_suffix(base)
    keep = ("namespace", "labels", "annotations", "ownerReferences", "generateName")
    spec = copy.deepcopy(dict(pod.get("spec") or {}))
    spec.pop("nodeName", None)
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, **{k: copy.deepcopy(old[k]) for k in keep if k in old}},
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def remove_pod(store: Store, row: SimObject, *, replace: bool) -> KubeObject | None:
    """Delete a pod; with replace, its controller's replacement is created. Returns the replacement."""
    body = row.body
    store.delete(row)
    if not replace or owner_kind(body) == "DaemonSet" or is_terminal(body):
        return None
    return store.create(replacement_for(store, body))


def remove_node(store: Store, node_name: str) -> bool:
    """Delete a Node; its pods come back pending (DaemonSet pods just go). False if it was not there."""
    row = store.get("Node", node_name)
    if row is None:
        return False
    for pod in SimObject.objects.filter(kind="Pod", node_name=node_name).order_by("resource_version"):
        remove_pod(store, pod, replace=True)
    store.delete(row)
    return True


def budget_allows(pod: Mapping[str, Any], budgets: Sequence[Mapping[str, Any]],
                  pods: Sequence[Mapping[str, Any]]) -> bool:
    """Would evicting `pod` keep its budget? As the API server's eviction check (IfHealthyBudget)."""
    if not budgets:
        return True
    if len(budgets) > 1:
        # The API server refuses (500) a pod under two budgets; the caller must not guess either.
        raise RuntimeError(f"pod {meta(pod).get('namespace')}/{meta(pod).get('name')} has more than one "
                           "PodDisruptionBudget, which the eviction subresource does not support")
    status = budget_status(budgets[0], pods)
    # An unhealthy pod may go while the budget is met; a healthy one only with a disruption to spare.
    return status["disruptionsAllowed"] >= 1 if is_healthy(pod) else status["currentHealthy"] >= status["desiredHealthy"]


def budget_status(pdb: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """The disruption controller's status for a budget, computed from the pods it selects now.

    expectedPods counts the selected pods (a replacement still pending counts, as its ReplicaSet's
    scale does), or status.expectedPods when someone pinned a larger number.
    """
    spec = pdb.get("spec") or {}
    namespace = meta(pdb).get("namespace") or "default"
    selected = [p for p in pods if (meta(p).get("namespace") or "default") == namespace
                and not is_terminal(p) and selector_matches(spec.get("selector"), meta(p).get("labels") or {})]
    expected = max(len(selected), int((pdb.get("status") or {}).get("expectedPods") or 0))
    healthy = sum(1 for p in selected if is_healthy(p))

    def scaled(value: Any, *, round_up: bool) -> int:
        if isinstance(value, str) and value.endswith("%"):
            share = int(value[:-1]) * expected / 100
            return math.ceil(share) if round_up else math.floor(share)
        return int(value)

    if spec.get("maxUnavailable") is not None:
        # Kubernetes rounds a percentage up for both fields.
        desired = max(0, expected - scaled(spec["maxUnavailable"], round_up=True))
    elif spec.get("minAvailable") is not None:
        desired = scaled(spec["minAvailable"], round_up=True)
    else:
        desired = expected
    return {"currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": expected,
            "disruptionsAllowed": max(0, healthy - desired)}


# --- the backend -----------------------------------------------------------------------------------

class SimulatedCluster:
    """base.ClusterBackend over the database. Cheap to construct: all state is in the database.

    clock: the time stamped on writes (tests inject one). sleep/poll_interval: how an empty watch
    waits for changes (the database is polled), so ``manage.py watch`` does not spin.
    """

    def __init__(self, *, clock: Clock | None = None, sleep: Callable[[float], None] = time.sleep,
                 poll_interval: float = 1.0) -> None:
        self.clock = clock or timezone.now
        self.sleep = sleep
        self.poll_interval = poll_interval

    # -- lists and watches ---------------------------------------------------------------------------

    def list_pods(self) -> tuple[list[KubeObject], str]:
        return list_objects("Pod")

    def list_nodes(self) -> tuple[list[KubeObject], str]:
        return list_objects("Node")

    def watch_pods(self, resource_version: str, *, timeout_seconds: int = 60) -> Iterator[WatchEvent]:
        return self._watch("Pod", resource_version, timeout_seconds)

    def watch_nodes(self, resource_version: str, *, timeout_seconds: int = 60) -> Iterator[WatchEvent]:
        return self._watch("Node", resource_version, timeout_seconds)

    def _watch(self, kind: str, resource_version: str, timeout_seconds: int) -> Iterator[WatchEvent]:
        # Resolved before the first next(), so a stale version raises ResourceExpired at the call, as
        # the real backend's 410 on connect does.
        events = changes(kind, resource_version)
        return self._stream(kind, resource_version, events, timeout_seconds)

    def _stream(self, kind: str, resource_version: str, events: list[WatchEvent],
                timeout_seconds: int) -> Iterator[WatchEvent]:
        # With nothing to report, poll until the timeout, as a server holds a watch open; with a
        # backlog, end the stream after it and let the caller resume from the last version.
        polls = max(0, math.ceil(timeout_seconds / self.poll_interval)) if self.poll_interval > 0 else 0
        while not events and polls > 0:
            self.sleep(self.poll_interval)
            polls -= 1
            events = changes(kind, resource_version)
        yield from events

    def list_pdbs(self) -> list[KubeObject]:
        pdbs, _ = list_objects("PodDisruptionBudget")
        pods, _ = list_objects("Pod")
        for pdb in pdbs:
            # No disruption controller writes status here: fill it in as one would have.
            pdb["status"] = {**(pdb.get("status") or {}), **budget_status(pdb, pods)}
        return pdbs

    def list_daemonsets(self) -> list[KubeObject]:
        return list_objects("DaemonSet")[0]

    def list_pod_templates(self) -> list[KubeObject]:
        return list_objects("PodTemplate")[0]

    def pending_pods(self) -> list[KubeObject]:
        rows = SimObject.objects.filter(kind="Pod", node_name="").order_by("namespace", "name")
        return [row.body for row in rows if is_provisionable(row.body)]

    def pods_on_node(self, node_name: str) -> list[KubeObject]:
        rows = SimObject.objects.filter(kind="Pod", node_name=node_name).order_by("namespace", "name")
        return [row.body for row in rows]

    def node_by_provider_id(self, provider_id: str) -> KubeObject | None:
        row = SimObject.objects.filter(kind="Node", provider_id=provider_id).first() if provider_id else None
        return row.body if row is not None else None

    def get_node(self, node_name: str) -> KubeObject:
        row = SimObject.objects.filter(kind="Node", namespace="", name=node_name).first()
        if row is None:
            raise NodeNotFound(node_name)
        return row.body

    # -- writes --------------------------------------------------------------------------------------

    def _update_node(self, node_name: str, change: Callable[[KubeObject], KubeObject | None]) -> KubeObject:
        with writing(self.clock()) as store:
            row = store.get("Node", node_name)
            if row is None:
                raise NodeNotFound(node_name)
            body = copy.deepcopy(row.body)
            changed = change(body)
            return row.body if changed is None else store.update(row, changed)

    def cordon(self, node_name: str) -> None:
        """Taint karpenter.sh/disrupted:NoSchedule (Karpenter's cordon); repeating it writes nothing."""
        def change(node: KubeObject) -> KubeObject | None:
            taints = node.setdefault("spec", {}).setdefault("taints", [])
            if any(same_taint(t, DISRUPTED_TAINT) for t in taints):
                return None
            taints.append(dict(DISRUPTED_TAINT))
            return node
        self._update_node(node_name, change)

    def uncordon(self, node_name: str) -> None:
        """Lift karpenter.sh/disrupted (an abandoned disruption); other taints stay."""
        def change(node: KubeObject) -> KubeObject | None:
            taints = node.setdefault("spec", {}).setdefault("taints", [])
            kept = [t for t in taints if not same_taint(t, DISRUPTED_TAINT)]
            if len(kept) == len(taints):
                return None
            node["spec"]["taints"] = kept
            return node
        self._update_node(node_name, change)

    def register_node(self, node_name: str, *, labels: Mapping[str, str],
                      taints: Sequence[Mapping[str, str]]) -> KubeObject:
        """Apply the NodeClaim's labels and taints and lift karpenter.sh/unregistered."""
        def change(node: KubeObject) -> KubeObject | None:
            before = copy.deepcopy(node)
            node.setdefault("metadata", {}).setdefault("labels", {}).update({**labels, REGISTERED_LABEL: "true"})
            spec = node.setdefault("spec", {})
            merged = [t for t in spec.get("taints") or [] if t.get("key") != UNREGISTERED_TAINT_KEY]
            for taint in taints:
                clean = {k: v for k, v in taint.items() if v not in (None, "")}
                # Same key and effect is the same taint: the claim's value wins.
                merged = [t for t in merged if not same_taint(t, clean)] + [clean]
            spec["taints"] = merged
            return None if node == before else node
        return self._update_node(node_name, change)

    def mark_initialized(self, node_name: str) -> KubeObject:
        def change(node: KubeObject) -> KubeObject | None:
            labels = node.setdefault("metadata", {}).setdefault("labels", {})
            if labels.get(INITIALIZED_LABEL) == "true":
                return None
            labels[INITIALIZED_LABEL] = "true"
            return node
        return self._update_node(node_name, change)

    def evict(self, namespace: str, name: str) -> EvictionOutcome:
        """The Eviction API: "blocked" when a budget forbids it, else the pod goes (and is replaced)."""
        with writing(self.clock()) as store:
            row = store.get("Pod", name, namespace)
            if row is None:
                return "gone"
            pod = row.body
            phase = (pod.get("status") or {}).get("phase")
            # As the API server: terminal, pending and terminating pods ignore budgets.
            if not meta(pod).get("deletionTimestamp") and phase not in ("Succeeded", "Failed", "Pending"):
                budgets = [b.body for b in SimObject.objects.filter(kind="PodDisruptionBudget", namespace=row.namespace)
                           if selector_matches((b.body.get("spec") or {}).get("selector"), meta(pod).get("labels") or {})]
                if budgets:
                    pods = [p.body for p in SimObject.objects.filter(kind="Pod", namespace=row.namespace)]
                    if not budget_allows(pod, budgets, pods):
                        return "blocked"
            remove_pod(store, row, replace=owner_kind(pod) in REPLACING_OWNERS)
            return "evicted"

    def delete_pod(self, namespace: str, name: str, grace_period_seconds: int) -> bool:
        """DELETE the pod, no budget asked; the simulated kubelet stops it at once (its controller replaces it)."""
        with writing(self.clock()) as store:
            row = store.get("Pod", name, namespace)
            if row is None:
                return False
            remove_pod(store, row, replace=owner_kind(row.body) in REPLACING_OWNERS)
            return True

    def delete_node(self, node_name: str) -> None:
        with writing(self.clock()) as store:
            remove_node(store, node_name)

    # -- for tests, the demo and operators (not part of ClusterBackend) ------------------------------

    def apply(self, body: Mapping[str, Any]) -> KubeObject:
        """Create the object, or replace the stored one of the same kind, namespace and name."""
        with writing(self.clock()) as store:
            m = meta(body)
            row = store.get(str(body["kind"]), str(m["name"]), str(m.get("namespace") or ""))
            if row is None:
                return store.create(body)
            merged = copy.deepcopy(dict(body))
            merged.setdefault("metadata", {})["uid"] = row.uid
            merged["metadata"].setdefault("creationTimestamp", row.body["metadata"].get("creationTimestamp"))
            merged["apiVersion"] = row.body["apiVersion"]
            return store.update(row, merged)

    def delete(self, kind: str, name: str, namespace: str = "") -> bool:
        with writing(self.clock()) as store:
            if kind == "Node":
                return remove_node(store, name)
            row = store.get(kind, name, namespace)
            if row is None:
                return False
            store.delete(row)
            return True

    def set_node_condition(self, node_name: str, condition_type: str, status: str, *, reason: str = "",
                           message: str = "") -> KubeObject:
        """Set one of a Node's status.conditions, as the kubelet or a diagnostic agent would (the simulation's
        ``unhealthy`` command). lastTransitionTime moves only when the status flips, as in Kubernetes, so
        repeating the same status keeps the time node repair measures from. NodeNotFound if absent."""
        stamp = rfc3339(self.clock())

        def change(node: KubeObject) -> KubeObject | None:
            conditions = node.setdefault("status", {}).setdefault("conditions", [])
            existing = next((c for c in conditions if c.get("type") == condition_type), None)
            wanted = {"type": condition_type, "status": status, "reason": reason or f"Simulated{status}",
                      "message": message or f"set by the simulation: {condition_type}={status}"}
            if existing is None:
                conditions.append({**wanted, "lastHeartbeatTime": stamp, "lastTransitionTime": stamp})
                return node
            if all(existing.get(k) == v for k, v in wanted.items()):
                return None
            flipped = existing.get("status") != status
            existing.update(wanted, lastHeartbeatTime=stamp)
            if flipped or not existing.get("lastTransitionTime"):
                existing["lastTransitionTime"] = stamp
            return node
        return self._update_node(node_name, change)

    def expire_history(self) -> None:
        """Drop the change history, as etcd compaction does: every watch resume gets ResourceExpired."""
        with writing(self.clock()) as store:
            store.expire_history()


def is_initialized(node: Mapping[str, Any]) -> bool:
    return (meta(node).get("labels") or {}).get(INITIALIZED_LABEL) == "true"
