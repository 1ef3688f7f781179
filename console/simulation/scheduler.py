"""A small kube-scheduler for the simulated cluster.

Binds each pending pod to a node it fits, the way the default scheduler's filters would: the node is
schedulable (Ready, not spec.unschedulable, and — for a node Loadmaster manages — initialized), the
pod tolerates its NoSchedule/NoExecute taints, matches its nodeSelector and required node affinity,
and its requests fit the node's allocatable minus what the pods already bound there request. Among
the fitting nodes the least allocated wins (the default scheduler spreads), ties by name.

A pod that fits nowhere gets PodScheduled=False/Unschedulable with a message in the scheduler's
words; that is what makes it pending to the provisioner. A pod with spec.schedulingGates is never
bound: as kube-scheduler, it waits with PodScheduled=False/SchedulingGated until its gates are
removed, and so is not pending to the provisioner either. Pod (anti-)affinity, topology spread and
host ports are not simulated.

Pod specs are parsed by packing.kubeobjects, the engine's own parser, so the simulation and the
provisioner agree on requests, tolerations and selectors.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from console.simulation.cluster import is_terminal, meta
from console.simulation.models import SimObject
from console.simulation.store import Store, rfc3339
from packing.api import (
    INITIALIZED_LABEL,
    NODEPOOL_LABEL,
    Pod,
    QuantityError,
    Resources,
    Taint,
    first_untolerated,
    parse_pod_spec,
)

_PARSE_ERRORS = (ValueError,)


@dataclass
class _Node:
    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    allocatable: Resources
    used: Resources
    schedulable: bool

    def score(self, requests: Resources) -> float:
        after = self.used + requests
        shares = [after.get(r, 0) / self.allocatable[r] for r in ("cpu", "memory") if self.allocatable.get(r, 0)]
        return max(shares, default=0.0)


@dataclass
class ScheduleReport:
    bound: list[str] = field(default_factory=list)
    unschedulable: list[str] = field(default_factory=list)
    gated: list[str] = field(default_factory=list)


# what the API server and kube-scheduler say of a pod that still has scheduling gates
GATED_CONDITION = {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                   "message": "Scheduling is blocked due to non-empty scheduling gates"}


def parse_pod(body: Mapping[str, Any]) -> Pod:
    """The engine's view of a pod; ValueError (naming the field) for a spec it cannot read."""
    m = meta(body)
    name, namespace = str(m.get("name") or ""), str(m.get("namespace") or "default")
    try:
        return parse_pod_spec(m, body.get("spec") or {}, "", name=name, namespace=namespace)
    except ValueError:
        raise
    except Exception as e:      # the parser's field errors are not ValueErrors; one bad pod must not stop a tick
        raise ValueError(str(e)) from e


def _node_view(body: Mapping[str, Any]) -> _Node:
    labels = dict(meta(body).get("labels") or {})
    spec, status = body.get("spec") or {}, body.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    managed = NODEPOOL_LABEL in labels
    initialized = labels.get(INITIALIZED_LABEL) == "true"
    taints = tuple(Taint(str(t.get("key", "")), str(t.get("value") or ""), str(t.get("effect") or "NoSchedule"))
                   for t in spec.get("taints") or [])
    try:
        allocatable = Resources.parse(status.get("allocatable") or {})
    except QuantityError:
        allocatable = Resources()
    return _Node(name=str(meta(body).get("name")), labels=labels, taints=taints, allocatable=allocatable,
                 used=Resources(), schedulable=ready and not spec.get("unschedulable") and (initialized or not managed))


def _why(pod: Pod, node: _Node) -> str | None:
    """Why the pod cannot go on this node, in the scheduler's phrasing; None if it can."""
    if not node.schedulable:
        return "node(s) were not ready or not initialized"
    taint = first_untolerated(node.taints, pod.tolerations)
    if taint is not None:
        value = f": {taint.value}" if taint.value else ""
        return f"node(s) had untolerated taint {{{taint.key}{value}}}"
    if not any(terms.matches(node.labels) for terms in pod.node_requirement_terms()):
        return "node(s) didn't match Pod's node affinity/selector"
    free = node.allocatable - node.used
    short = pod.requests.exceeded(free)
    if short:
        return ", ".join(f"Insufficient {r}" for r in short)
    return None


def _set_condition(body: dict[str, Any], condition: dict[str, Any], now: str) -> bool:
    """Set a pod condition; False when it already said the same (no write, so no watch event)."""
    conditions = body.setdefault("status", {}).setdefault("conditions", [])
    for existing in conditions:
        if existing.get("type") == condition["type"]:
            if all(existing.get(k) == v for k, v in condition.items()):
                return False
            # Kubernetes moves lastTransitionTime only when the status flips, not when the message changes.
            since = existing.get("lastTransitionTime") if existing.get("status") == condition.get("status") else now
            existing.clear()
            existing.update(condition, lastTransitionTime=since or now)
            return True
    conditions.append({**condition, "lastTransitionTime": now})
    return True


def schedule(store: Store) -> ScheduleReport:
    report = ScheduleReport()
    nodes = {row.name: _node_view(row.body) for row in SimObject.objects.filter(kind="Node").order_by("name")}
    pending: list[SimObject] = []
    for row in SimObject.objects.filter(kind="Pod").order_by("created_version"):
        body = row.body
        if is_terminal(body) or meta(body).get("deletionTimestamp"):
            continue
        if row.node_name:
            node = nodes.get(row.node_name)
            if node is not None:
                try:
                    node.used = node.used + parse_pod(body).requests
                except _PARSE_ERRORS:
                    pass        # a pod we cannot read was bound by someone else; count nothing
        else:
            pending.append(row)
    now = rfc3339(store.now)
    for row in pending:
        body = copy.deepcopy(row.body)      # the row keeps the stored state: update() compares
        if (body.get("spec") or {}).get("schedulingGates"):
            if _set_condition(body, dict(GATED_CONDITION), now):
                store.update(row, body)
            report.gated.append(f"{row.namespace}/{row.name}")
            continue
        try:
            pod = parse_pod(body)
        except _PARSE_ERRORS as e:
            if _set_condition(body, {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                     "message": f"invalid pod spec: {e}"}, now):
                store.update(row, body)
            report.unschedulable.append(row.name)
            continue
        reasons: Counter[str] = Counter()
        best: _Node | None = None
        for node in nodes.values():
            why = _why(pod, node)
            if why is not None:
                reasons[why] += 1
            elif best is None or node.score(pod.requests) < best.score(pod.requests):
                best = node
        if best is None:
            detail = ", ".join(f"{n} {why}" for why, n in sorted(reasons.items()))
            message = f"0/{len(nodes)} nodes are available" + (f": {detail}." if detail else ".")
            if _set_condition(body, {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                     "message": message}, now):
                store.update(row, body)
            report.unschedulable.append(f"{row.namespace}/{row.name}")
            continue
        best.used = best.used + pod.requests
        store.update(row, bound(body, best.name, now))
        report.bound.append(f"{row.namespace}/{row.name}")
    return report


def bound(body: dict[str, Any], node_name: str, now: str) -> dict[str, Any]:
    """The pod as the kubelet reports it once bound and started (images pull instantly here)."""
    body.setdefault("spec", {})["nodeName"] = node_name
    status = body.setdefault("status", {})
    status["phase"] = "Running"
    status["startTime"] = now
    status["conditions"] = [{"type": t, "status": "True", "lastTransitionTime": now}
                            for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")]
    return body
