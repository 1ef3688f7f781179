"""The counters and summaries of /metrics, computed from the database on every scrape: NodeClaim rows,
the decision ledger, the disruption actions, the loops' run statistics and the pod startups.

Counters are counts of rows that are never deleted, so they only go up, and every web process
answering a scrape computes the same value: nothing is counted in a process's memory.

Karpenter's reason values, lowercase as Karpenter writes them, come from Loadmaster's own records:
see NODECLAIM_REASONS and docs/dashboards.md for the mapping."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db.models import (
    BooleanField,
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    Subquery,
    Sum,
)
from django.db.models.fields.json import KeyTextTransform

from console.alerts import fleet_health
from console.control.models import DisruptionAction
from console.dashboards.exposition import Exposition, escape, histogram, labels, summary
from console.fleet.models import Decision, NodeClaim
from console.telemetry import loop_stats
from console.telemetry.pod_startup import QUANTILES, SUMMARY_WINDOW, pod_startup_summary, summarize

# The interruption event kinds of the cloud backends -> the AWS provider's message kinds, which are
# the reason of karpenter_nodeclaims_disrupted_total for an interruption.
INTERRUPTION_REASONS = {"spot_interruption": "spot_interrupted", "scheduled_change": "scheduled_change",
                        "state_change": "instance_terminated"}
# A terminated NodeClaim's termination_reason (free text written by the loops) -> Karpenter's reason;
# first matching prefix wins. None: not a disruption (Karpenter counts nothing for it either).
NODECLAIM_REASONS: tuple[tuple[str, str | None], ...] = (
    ("empty:", "empty"), ("underutilized:", "underutilized"), ("drifted:", "drifted"), ("expired:", "expired"),
    ("instance is gone", "garbage_collected"), ("not launched within", "launch_timeout"),
    ("node did not register within", "registration_timeout"), ("no launchable offering", "insufficient_capacity"),
    ("EC2NodeClass of nodepool", "nodeclass_not_ready"), ("launch failed", "launch_failed"),
    ("replacement abandoned", None), ("unhealthy:", "unhealthy"),
    ("capacity-block-expiring:", "capacity-block-expiring"),  # Loadmaster's own (console.control.reservations)
)
# The disruption engine's method -> Karpenter's consolidation_type ("repack" is Loadmaster's own).
CONSOLIDATION_TYPES = {"emptiness": "empty", "single-node": "single", "multi-node": "multi", "repack": "repack",
                       "drift": "", "expiration": "", "capacity-block": ""}


def nodeclaim_reason(termination_reason: str) -> str | None:
    for prefix, reason in NODECLAIM_REASONS:
        if termination_reason.startswith(prefix):
            return reason
    return None


def consolidation_type(*, reason: str, method: str, nodes: int, replacements: int) -> str:
    """Karpenter's consolidation_type of one disruption. The engine's method when the ledger has it;
    otherwise from the action's shape: a replacement by several nodes only a repack plans, several
    nodes at once is multi-node, one node single-node."""
    if method in CONSOLIDATION_TYPES:
        return CONSOLIDATION_TYPES[method]
    if reason == "empty":
        return "empty"
    if reason != "underutilized":
        return ""
    if replacements > 1:
        return "repack"
    return "multi" if nodes > 1 else "single"


def _counter(out: Exposition, name: str, help_text: str, rows: Mapping[tuple[tuple[str, str], ...], float]) -> None:
    out.family(name, "counter", help_text)
    for key, value in sorted(rows.items()):
        out.sample(name, labels(key), value)


def voluntary_disruptions() -> Any:
    """The disruption ledger's voluntary decisions (consolidation, drift, expiry): not the entries the
    termination of an interrupted claim or of a deleted NodePool's claims also writes there."""
    return (Decision.objects.filter(kind=Decision.DISRUPTION)
            .exclude(details__has_key="termination").exclude(details__has_key="nodepool_deleted")
            .exclude(details__has_key="repair"))


def _decisions() -> Counter[tuple[tuple[str, str], ...]]:
    actions = {pk: (t, r, len(nodes or []), len(claims or []))
               for pk, t, r, nodes, claims in DisruptionAction.objects.values_list(
                   "pk", "type", "reason", "nodes", "replacement_claims")}
    out: Counter[tuple[tuple[str, str], ...]] = Counter()
    ledger = voluntary_disruptions()
    rows: list[tuple[Any, ...]] = [
        ("", pk, None, method, None)
        for pk, method in ledger.filter(details__action__isnull=False).values_list("details__action", "details__method")]
    rows += ledger.filter(details__action__isnull=True).values_list(
        "why", "details__action", "details__reason", "details__method", "nodes")
    for why, action_pk, detail_reason, method, nodes in rows:
        if action_pk in actions:
            decision, reason, n_nodes, n_repl = actions[action_pk]
        else:  # a ledger row without its action: "replace (underutilized): …" as _start writes it, or "empty: …"
            head = (why or "").split(":", 1)[0].strip()
            decision = "replace" if head.startswith("replace") else "delete"
            if "(" in head:
                reason = head.split("(", 1)[1].rstrip(") ")
            else:
                reason = head if head in ("empty", "underutilized", "drifted", "expired") else ""
            reason = str(detail_reason or reason)
            n_nodes, n_repl = len(nodes or []), 0
        ctype = consolidation_type(reason=reason, method=str(method or ""), nodes=n_nodes, replacements=n_repl)
        out[(("consolidation_type", ctype), ("decision", decision), ("reason", reason.lower()))] += 1
    return out


def _created() -> dict[tuple[tuple[str, str], ...], float]:
    """min_values_relaxed: the provisioner's launches record it in their ledger details, replacements in the
    planned NodeClaim (the engine's min_values_relaxed, policy BestEffort)."""
    total = dict(NodeClaim.objects.values_list("nodepool_name").annotate(n=Count("id")).order_by())
    relaxed_launches = dict(Decision.objects.filter(kind=Decision.LAUNCH, details__min_values_relaxed=True)
                            .values_list("nodepool_name").annotate(n=Count("id")).order_by())
    replacements: Counter[tuple[str, str, bool]] = Counter()
    for reason, planned, claims in DisruptionAction.objects.filter(type="replace").values_list(
            "reason", "replacements", "replacement_claims"):
        for item in (planned or [])[: len(claims or [])]:
            replacements[(str(item.get("nodepool", "")), reason, item.get("min_values_relaxed") is True)] += 1
    out: dict[tuple[tuple[str, str], ...], float] = {}
    for pool, n in total.items():
        provisioned = max(0, n - sum(v for (p, _, _), v in replacements.items() if p == pool))
        relaxed = min(provisioned, relaxed_launches.get(pool, 0))
        out[(("min_values_relaxed", "false"), ("nodepool", pool), ("reason", "provisioned"))] = provisioned - relaxed
        if relaxed:
            out[(("min_values_relaxed", "true"), ("nodepool", pool), ("reason", "provisioned"))] = relaxed
    for (pool, reason, was_relaxed), n in replacements.items():
        out[(("min_values_relaxed", "true" if was_relaxed else "false"), ("nodepool", pool), ("reason", reason))] = n
    return out


def _disrupted() -> Counter[tuple[tuple[str, str], ...]]:
    out: Counter[tuple[tuple[str, str], ...]] = Counter()
    # One row per (pool, event, the claim's capacity type and deletion reason), counted in SQL.
    claim = NodeClaim.objects.filter(name=OuterRef("first_node"))
    interrupted = (Decision.objects.filter(kind=Decision.INTERRUPTION)
                   .annotate(first_node=KeyTextTransform("0", "nodes"))
                   .annotate(ct=Subquery(claim.values("capacity_type")[:1]),
                             claim_reason=Subquery(claim.values("deletion_reason")[:1]))
                   .values_list("nodepool_name", "details__event", "ct", "claim_reason").annotate(n=Count("id")).order_by())
    for pool, event, ct, why, n in interrupted:
        reason = INTERRUPTION_REASONS.get(str(event or ""), "spot_interrupted")
        if event == "state_change" and str(why or "").startswith("instance stop"):  # "instance stopping", "stopped"
            reason = "instance_stopped"
        out[(("capacity_type", ct or ""), ("nodepool", pool), ("reason", reason))] += n
    rows = (NodeClaim.objects.filter(terminated_at__isnull=False)
            .annotate(not_disrupting=ExpressionWrapper(Q(disrupting_at__isnull=True), output_field=BooleanField()))
            .values_list("nodepool_name", "capacity_type", "termination_reason", "not_disrupting")
            .annotate(n=Count("id")).order_by())
    for pool, ct, text, not_disrupting, n in rows:
        why = nodeclaim_reason(text or "")
        # An instance gone after an interruption was counted with the interruption.
        if why is None or (why == "garbage_collected" and not not_disrupting):
            continue
        out[(("capacity_type", ct), ("nodepool", pool), ("reason", why))] += n
    return out


def _unhealthy_disrupted() -> Counter[tuple[tuple[str, str], ...]]:
    """Node repair's ledger lines (console/control/repair.py), by Karpenter's labels; image_id stays empty:
    Loadmaster does not record a NodeClaim's AMI."""
    out: Counter[tuple[tuple[str, str], ...]] = Counter()
    for pool, condition, ct in Decision.objects.filter(kind=Decision.DISRUPTION, details__repair="repaired").values_list(
            "nodepool_name", "details__condition_label", "details__capacity_type"):
        out[(("capacity_type", str(ct or "")), ("condition", str(condition or "")), ("image_id", ""),
             ("nodepool", pool))] += 1
    return out


def _grouped(qs: Any, *fields: str) -> dict[tuple[tuple[str, str], ...], float]:
    names = {"nodepool_name": "nodepool"}
    out = {}
    for row in qs.values_list(*fields).annotate(n=Count("id")).order_by():
        out[tuple((names.get(f, f), str(v)) for f, v in zip(fields, row[:-1], strict=True))] = row[-1]
    return out


def _termination(out: Exposition, now: datetime) -> None:
    name = "karpenter_nodes_termination_duration_seconds"
    out.family(name, "summary", "The time taken between a node's deletion request and the removal of its finalizer")
    done = NodeClaim.objects.filter(registered_at__isnull=False, disrupting_at__isnull=False,
                                    terminated_at__isnull=False, terminated_at__gte=F("disrupting_at"))
    took = ExpressionWrapper(F("terminated_at") - F("disrupting_at"), output_field=DurationField())
    totals = {pool: (n, s) for pool, n, s in done.values_list("nodepool_name").annotate(
        n=Count("id"), s=Sum(took)).order_by().values_list("nodepool_name", "n", "s")}
    recent: dict[str, list[float]] = defaultdict(list)
    for pool, start, end in done.filter(terminated_at__gt=now - SUMMARY_WINDOW).values_list(
            "nodepool_name", "disrupting_at", "terminated_at"):
        recent[pool].append((end - start).total_seconds())
    for pool, (n, s) in sorted(totals.items()):
        total = s.total_seconds() if isinstance(s, timedelta) else float(s or 0) / 1e6
        observed = summarize(recent.get(pool, []), n, total)
        _summary(out, name, f'nodepool="{escape(pool)}"' if pool else "", observed.quantiles, n, total)


def _summary(out: Exposition, name: str, label_text: str, quantiles: Mapping[float, float], count: int,
             total: float) -> None:
    summary(out, name, label_text, quantiles, count, total, QUANTILES)


def _durations(out: Exposition) -> None:
    stats = loop_stats.duration_stats()
    reconcile = [(s, b) for s, b in stats if s.metric == loop_stats.RECONCILE]
    scheduling = [(s, b) for s, b in stats if s.metric == loop_stats.SCHEDULING]
    out.family("controller_runtime_reconcile_total", "counter",
               "Total number of reconciliations per controller")
    for s, _ in reconcile:
        c = escape(s.controller)
        out.sample("controller_runtime_reconcile_total", f'controller="{c}",result="success"', s.runs - s.errors)
        out.sample("controller_runtime_reconcile_total", f'controller="{c}",result="error"', s.errors)
    out.family("controller_runtime_reconcile_errors_total", "counter",
               "Total number of reconciliation errors per controller")
    for s, _ in reconcile:
        out.sample("controller_runtime_reconcile_errors_total", f'controller="{escape(s.controller)}"', s.errors)
    out.family("controller_runtime_reconcile_time_seconds", "histogram",
               "Length of time per reconciliation per controller")
    for s, buckets in reconcile:
        histogram(out, "controller_runtime_reconcile_time_seconds", f'controller="{escape(s.controller)}"', buckets,
                  s.runs, s.seconds_sum)
    if scheduling:
        out.family("karpenter_scheduler_scheduling_duration_seconds", "histogram",
                   "Duration of scheduling simulations used for deprovisioning and provisioning in seconds.")
        for s, buckets in scheduling:
            histogram(out, "karpenter_scheduler_scheduling_duration_seconds", f'controller="{escape(s.controller)}"',
                      buckets, s.runs, s.seconds_sum)


def write_ledger(out: Exposition, *, now: datetime) -> None:
    _counter(out, "karpenter_voluntary_disruption_decisions_total",
             "Number of disruption decisions performed. Labeled by disruption decision, reason, and consolidation type.",
             _decisions())
    _counter(out, "karpenter_nodeclaims_created_total",
             "Number of nodeclaims created in total by Karpenter. Labeled by reason the nodeclaim was created, the "
             "owning nodepool, and if min values was relaxed for this nodeclaim.", _created())
    _counter(out, "karpenter_nodeclaims_disrupted_total",
             "Number of nodeclaims disrupted in total by Karpenter. Labeled by reason the nodeclaim was disrupted and "
             "the owning nodepool.", _disrupted())
    _counter(out, "karpenter_nodeclaims_unhealthy_disrupted_total",
             "Number of unhealthy nodeclaims disrupted in total by Karpenter. Labeled by condition on the node was "
             "disrupted, the owning nodepool, and the image ID.", _unhealthy_disrupted())
    _counter(out, "karpenter_cloudprovider_errors_total",
             "Total number of errors returned from CloudProvider calls. Labeled by the controller, the method name, "
             "the provider and the error.", fleet_health.cloudprovider_errors())
    terminated = NodeClaim.objects.filter(terminated_at__isnull=False)
    _counter(out, "karpenter_nodeclaims_terminated_total",
             "Number of nodeclaims terminated in total by Karpenter. Labeled by the owning nodepool, capacity type, "
             "and zone.", _grouped(terminated, "nodepool_name", "capacity_type", "zone"))
    registered = NodeClaim.objects.filter(registered_at__isnull=False)
    _counter(out, "karpenter_nodes_created_total",
             "Number of nodes created in total by Karpenter. Labeled by owning nodepool and zone.",
             _grouped(registered, "nodepool_name", "zone"))
    _counter(out, "karpenter_nodes_terminated_total",
             "Number of nodes terminated in total by Karpenter. Labeled by owning nodepool and zone.",
             _grouped(registered.filter(terminated_at__isnull=False), "nodepool_name", "zone"))
    _termination(out, now)
    startup = pod_startup_summary(now=now)
    out.family("karpenter_pods_startup_duration_seconds", "summary", "The time from pod creation until the pod is running.")
    _summary(out, "karpenter_pods_startup_duration_seconds", "", startup.quantiles, startup.count, startup.total)
    _durations(out)
