"""NodeClaim lifecycle, garbage collection and interruptions.

lifecycle: Launched → Registered (a Node with the claim's providerID appeared: apply the claim's
labels and taints) → Initialized (the Node is Ready: label it). A claim not launched within 5
minutes, or not registered within 15, is given up and its instance terminated — Karpenter's timeouts.

garbage collection: an instance tagged for this cluster that no live NodeClaim owns, older than a
grace period, is terminated (it is what a worker killed mid-launch leaves behind); a claim whose
instance is gone is marked terminated.

interruptions: a spot interruption (or a scheduled change, or the instance stopping or terminating)
marks the NodeClaim for deletion, as Karpenter deletes an interrupted NodeClaim, and cordons and drains
the node at once, so the pods go pending and the provision loop replaces the capacity before the
two-minute notice runs out; the offering is marked unavailable so the replacement goes elsewhere. The
termination step (console.control.termination) then deletes the node and terminates the instance.
Handling is idempotent: a repeated message, or a node already gone (the instance was reclaimed), is
the expected end, not an error.

termination: every lifecycle tick moves the NodeClaims marked for deletion (their NodePool was deleted,
or they were interrupted) on towards termination.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from console.backends.base import CloudEvent, CloudProvider, ClusterBackend, LaunchOption, NodeNotFound
from console.control import signals
from console.control.launch import offering_mark_unavailable
from console.control.reservations import labels_of_reservation
from console.control.termination import (
    TerminationOutcome,
    claim_grace_text,
    forced_deletions_record,
    node_drain,
    termination_run,
)
from console.fleet.models import Decision, NodeClaim
from console.fleet.services import nodeclaims_mark_for_deletion

log = logging.getLogger(__name__)

LAUNCH_TIMEOUT = timedelta(minutes=5)
REGISTRATION_TIMEOUT = timedelta(minutes=15)
GC_GRACE = timedelta(minutes=2)


@dataclass
class LifecycleOutcome:
    registered: list[str] = field(default_factory=list)
    initialized: list[str] = field(default_factory=list)
    adopted: list[str] = field(default_factory=list)
    timed_out: list[str] = field(default_factory=list)
    termination: TerminationOutcome = field(default_factory=TerminationOutcome)


def _node_ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _startup_taints_gone(node: dict[str, Any], claim: NodeClaim) -> bool:
    # Karpenter waits for startup taints (removed by another controller) before "initialized".
    pool = claim.nodepool
    startup = {(t.get("key"), t.get("effect")) for t in (pool.startup_taints if pool else [])}
    present = {(t.get("key"), t.get("effect")) for t in (node.get("spec") or {}).get("taints") or []}
    return not (startup & present)


def _give_up(claim: NodeClaim, cloud: CloudProvider, now: datetime, reason: str) -> None:
    if claim.instance_id:
        cloud.terminate([claim.instance_id])
    NodeClaim.objects.filter(pk=claim.pk, terminated_at__isnull=True).update(terminated_at=now, termination_reason=reason)
    Decision.objects.create(at=now, kind=Decision.FAILURE, nodepool=claim.nodepool, nodepool_name=claim.nodepool_name,
                            nodes=[claim.name], why=f"NodeClaim {claim.name}: {reason}; instance terminated")


def lifecycle_run(*, cluster: ClusterBackend, cloud: CloudProvider, now: datetime | None = None) -> LifecycleOutcome:
    now = now or timezone.now()
    outcome = LifecycleOutcome()
    # A claim whose launch started but whose instance id was never saved: adopt the tagged instance.
    for claim in NodeClaim.objects.active().filter(launch_started_at__isnull=False, launched_at__isnull=True):
        mine = [i for i in cloud.list_instances(settings.LOADMASTER_CLUSTER_NAME)
                if i.tags.get("karpenter.sh/nodeclaim") == claim.name and i.state not in ("terminated", "shutting-down")]
        if mine:
            inst = mine[0]
            # an instance in a reservation carries its labels, as a launched one does (console.control.reservations)
            labels = {**(claim.labels or {}), **(labels_of_reservation(inst.reservation_id) if inst.reservation_id
                                                 else {})}
            NodeClaim.objects.filter(pk=claim.pk).update(
                instance_id=inst.instance_id, provider_id=inst.provider_id, launched_at=now,
                instance_type=inst.instance_type, zone=inst.zone, capacity_type=inst.capacity_type, labels=labels)
            outcome.adopted.append(claim.name)
        elif now - claim.launch_started_at > LAUNCH_TIMEOUT:
            _give_up(claim, cloud, now, f"not launched within {LAUNCH_TIMEOUT}")
            outcome.timed_out.append(claim.name)

    for claim in NodeClaim.objects.active().filter(launched_at__isnull=False, registered_at__isnull=True):
        node = cluster.node_by_provider_id(claim.provider_id)
        if node is None:
            if now - claim.launched_at > REGISTRATION_TIMEOUT:
                _give_up(claim, cloud, now, f"node did not register within {REGISTRATION_TIMEOUT}")
                outcome.timed_out.append(claim.name)
            continue
        name = node["metadata"]["name"]
        cluster.register_node(name, labels=claim.labels or {}, taints=claim.taints or [])
        NodeClaim.objects.filter(pk=claim.pk).update(registered_at=now, node_name=name)
        outcome.registered.append(claim.name)

    for claim in NodeClaim.objects.active().filter(registered_at__isnull=False, initialized_at__isnull=True):
        try:
            node = cluster.get_node(claim.node_name)
        except NodeNotFound:
            continue  # garbage collection decides what a vanished node means
        if _node_ready(node) and _startup_taints_gone(node, claim):
            try:
                cluster.mark_initialized(claim.node_name)
            except NodeNotFound:
                continue
            NodeClaim.objects.filter(pk=claim.pk).update(initialized_at=now)
            outcome.initialized.append(claim.name)
    outcome.termination = termination_run(cluster=cluster, cloud=cloud, now=now)
    return outcome


@dataclass
class GCOutcome:
    terminated_instances: list[str] = field(default_factory=list)
    claims_gone: list[str] = field(default_factory=list)


def garbage_collect_run(*, cloud: CloudProvider, cluster: ClusterBackend | None = None,
                        now: datetime | None = None) -> GCOutcome:
    now = now or timezone.now()
    outcome = GCOutcome()
    instances = cloud.list_instances(settings.LOADMASTER_CLUSTER_NAME)
    live_claims = {c.name: c for c in NodeClaim.objects.active()}
    owned = {c.instance_id for c in live_claims.values() if c.instance_id}
    for inst in instances:
        claim_name = inst.tags.get("karpenter.sh/nodeclaim", "")
        if inst.instance_id in owned or inst.state in ("terminated", "shutting-down"):
            continue
        if claim_name in live_claims and live_claims[claim_name].launched_at is None:
            continue  # launch in progress: the lifecycle loop adopts it
        if inst.launch_time is not None and now - inst.launch_time < GC_GRACE:
            continue
        cloud.terminate([inst.instance_id])
        outcome.terminated_instances.append(inst.instance_id)
        Decision.objects.create(at=now, kind=Decision.FAILURE, nodepool_name=inst.tags.get("karpenter.sh/nodepool", ""),
                                nodes=[inst.instance_id],
                                why=f"garbage collected instance {inst.instance_id} ({inst.instance_type}): "
                                    f"tagged for cluster {settings.LOADMASTER_CLUSTER_NAME} but owned by no NodeClaim")
    seen = {i.instance_id for i in instances if i.state not in ("terminated", "shutting-down")}
    for claim in live_claims.values():
        if claim.instance_id and claim.launched_at and claim.instance_id not in seen:
            NodeClaim.objects.filter(pk=claim.pk).update(terminated_at=now, termination_reason="instance is gone")
            if cluster is not None and claim.node_name:
                cluster.delete_node(claim.node_name)   # the kubelet is gone with the instance
            outcome.claims_gone.append(claim.name)
    return outcome


@dataclass
class InterruptionOutcome:
    handled: list[str] = field(default_factory=list)
    ignored: int = 0


# Why a NodeClaim is removed after each kind of event (its deletion_reason).
_EVENT_REASONS = {"spot_interruption": "spot interruption", "scheduled_change": "scheduled maintenance",
                  "state_change": "instance {state}"}


def _event_reason(event: CloudEvent) -> str:
    return _EVENT_REASONS[event.kind].format(state=event.detail.get("state") or "stopped")


def interruption_run(*, cluster: ClusterBackend, cloud: CloudProvider, now: datetime | None = None,
                     max_events: int = 10) -> InterruptionOutcome:
    now = now or timezone.now()
    outcome = InterruptionOutcome()
    for event in cloud.poll_events(max_events):
        claim = NodeClaim.objects.active().filter(instance_id=event.instance_id).first()
        if claim is None or event.kind == "rebalance":
            # Rebalance recommendations are advisory (Karpenter ignores them by default); an instance no
            # live NodeClaim owns (already terminated, or not ours) needs nothing more.
            outcome.ignored += 1
            cloud.ack(event)
            continue
        try:
            _interrupted(claim, event, cluster, now)
        except Exception:  # left on the queue: it comes back after the visibility timeout
            log.exception("interruption %s for %s: handling failed; retried", event.kind, event.instance_id)
            continue
        outcome.handled.append(claim.name)
        cloud.ack(event)
    return outcome


def _interrupted(claim: NodeClaim, event: CloudEvent, cluster: ClusterBackend, now: datetime) -> None:
    first = claim.deletion_requested_at is None
    if event.kind == "spot_interruption":
        offering_mark_unavailable(options=[LaunchOption(claim.instance_type, claim.zone, "spot",  # type: ignore[arg-type]
                                                        float(claim.price_per_hour or 0))],
                                  reason="SpotInterruption", now=now)
    nodeclaims_mark_for_deletion(claims=NodeClaim.objects.filter(pk=claim.pk), reason=_event_reason(event), now=now)
    NodeClaim.objects.filter(pk=claim.pk, disrupting_at__isnull=True).update(disrupting_at=now)
    if first:
        signals.node_interrupted.send(sender=NodeClaim, node_name=claim.node_name, event_kind=event.kind, now=now)
    # Drain now, not at the next lifecycle tick: the notice is short. A node already gone (the
    # instance was reclaimed or stopped) has nothing left to drain.
    node_gone = False
    if claim.node_name:
        try:
            cluster.get_node(claim.node_name)
        except NodeNotFound:
            node_gone = True
        else:
            # The interruption deleted the claim, so its terminationGracePeriod runs from now (its deadline
            # was set when it was marked): the first drain already deletes pods whose own grace would end late.
            claim.refresh_from_db(fields=["termination_deadline"])
            deadline = claim.termination_deadline
            drain = node_drain(cluster=cluster, node_name=claim.node_name, deadline=deadline, now=now)
            if drain.deleted and deadline is not None:
                forced_deletions_record(claim=claim, nodepool_name=claim.nodepool_name, node_name=claim.node_name,
                                        deleted=drain.deleted, deadline=deadline, now=now,
                                        grace=claim_grace_text(claim))
    if not first:
        log.info("%s for %s: NodeClaim %s is already being removed", event.kind, claim.instance_id, claim.name)
        return
    if node_gone or not claim.node_name:
        what = f"node {claim.node_name} is already gone" if node_gone else "it has no node yet"
    else:
        what = f"node {claim.node_name} cordoned and drained; its pods are re-provisioned"
    Decision.objects.create(
        at=now, kind=Decision.INTERRUPTION, nodepool=claim.nodepool, nodepool_name=claim.nodepool_name,
        nodes=[claim.name], cost_before=claim.price_per_hour,
        why=f"{event.kind.replace('_', ' ')} for {claim.instance_id} ({claim.instance_type}, {claim.zone}): "
            f"{what}; the NodeClaim is terminated",
        details={"event": event.kind, "instance_id": event.instance_id})
