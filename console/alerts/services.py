"""Writes of the alerts app: channels and rules (created, changed, deleted only here, validated by
validation.py and the model on every write); the alert lifecycle and delivery (evaluate each rule,
decide fire/repeat/resolve, send, record); and the two observations rules with a per-item clock need:
pending pods (stuck pods) and blocked consolidations (stranded savings)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models.deletion import ProtectedError
from django.utils import timezone

from console.alerts import commitment_alerts, fleet_health, messages, selectors, validation
from console.alerts.models import AlertEvent, AlertRule, AlertState, Channel, PendingPod, StrandedMove
from console.alerts.selectors import Evaluation
from console.alerts.transports import MAX_ERROR, cut, deliver
from console.fleet.models import Decision

log = logging.getLogger(__name__)

# The pods the cluster reports unschedulable, as Kubernetes objects (ClusterBackend.pending_pods).
PendingSource = Callable[[], list[dict[str, Any]]]

NODEPOOL_LABEL = "karpenter.sh/nodepool"
# How long a pod that left the pending list is remembered, so that coming back restarts its clock.
PENDING_MEMORY = timedelta(days=1)


# --- channels and rules ---------------------------------------------------------------------------

CHANNEL_FIELDS = ("name", "kind", "secret_env", "slack_channel", "api_base_url")
RULE_FIELDS = ("name", "kind", "nodepool", "metric", "threshold", "window_minutes", "cooldown_minutes",
               "channel", "enabled")


class ChannelInUse(ValidationError):
    """Rules still send to the channel (their foreign key protects it): move or delete them first."""


# Rule kinds that apps building on the alerts evaluate themselves (the advisor's "new advisor finding"): each
# registers its evaluator from its AppConfig.ready, so this app imports none of them.
RULE_EVALUATORS: dict[str, Callable[..., Evaluation]] = {}


def rule_evaluator_register(*, kind: str, evaluator: Callable[..., Evaluation]) -> None:
    RULE_EVALUATORS[kind] = evaluator


def _check(obj: Channel | AlertRule, problems: validation.Problems) -> None:
    """Raise the rules' problems and the model's own (unique name, lengths, choices) together, keyed by field;
    the model does not repeat a field the rules already refused."""
    errors = {field: list(texts) for field, texts in problems.items()}
    try:
        obj.full_clean(exclude=list(errors))
    except ValidationError as exc:
        for field, texts in exc.message_dict.items():
            errors.setdefault(field, []).extend(texts)
    if errors:
        raise ValidationError(errors)


def _assign(obj: Channel | AlertRule, values: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = set(values) - set(allowed)
    if unknown:
        raise TypeError(f"not a field of {type(obj).__name__}: {', '.join(sorted(unknown))}")
    for name, value in values.items():
        setattr(obj, name, value.strip() if isinstance(value, str) else value)


def _channel_save(channel: Channel, values: Mapping[str, Any]) -> Channel:
    values = dict(values)
    secret = str(values.pop("secret", "") or "").strip()
    had_secret = channel.pk is not None and bool(channel.secret_encrypted)
    _assign(channel, values, CHANNEL_FIELDS)
    _check(channel, validation.channel_problems(channel, secret=secret, had_secret=had_secret))
    if secret:
        channel.set_secret(secret)
    if channel.secret_env:  # the environment holds the secret: none is kept in the database
        channel.secret_encrypted, channel.secret_hint = "", ""
    channel.save()
    return channel


@transaction.atomic
def channel_create(*, values: Mapping[str, Any]) -> Channel:
    """``values``: fields of CHANNEL_FIELDS (absent ones get the model's defaults) and ``secret``, the webhook
    URL or bot token, stored encrypted."""
    return _channel_save(Channel(), values)


@transaction.atomic
def channel_update(*, channel: Channel, values: Mapping[str, Any]) -> Channel:
    """Change the given fields; a blank or absent ``secret`` keeps the stored one."""
    return _channel_save(channel, values)


@transaction.atomic
def channel_delete(*, channel: Channel) -> None:
    if AlertRule.objects.filter(channel=channel).exists():
        raise ChannelInUse(f"Channel {channel.name} is used by rules; move or delete them first.")
    try:
        channel.delete()
    except ProtectedError as exc:  # a rule added since the check above
        raise ChannelInUse(f"Channel {channel.name} is used by rules; move or delete them first.") from exc


def _rule_save(rule: AlertRule, values: Mapping[str, Any]) -> AlertRule:
    stored_nodepool = rule.nodepool if rule.pk is not None else None
    _assign(rule, values, RULE_FIELDS)
    _check(rule, validation.rule_problems(rule, stored_nodepool=stored_nodepool))
    rule.save()
    return rule


@transaction.atomic
def rule_create(*, values: Mapping[str, Any]) -> AlertRule:
    """``values``: fields of RULE_FIELDS (``channel`` a Channel); absent ones get the model's defaults."""
    return _rule_save(AlertRule(), values)


@transaction.atomic
def rule_update(*, rule: AlertRule, values: Mapping[str, Any]) -> AlertRule:
    """Change the given fields; the others keep their values."""
    return _rule_save(rule, values)


@transaction.atomic
def rule_delete(*, rule: AlertRule) -> None:
    rule.delete()


# --- the lifecycle ----------------------------------------------------------------------------------

def decide(*, firing_before: bool, last_sent_at: datetime | None, condition: bool, now: datetime,
           cooldown: timedelta) -> str | None:
    """Pure lifecycle step: "fired", "repeated", "resolved" or None (send nothing)."""
    if condition and not firing_before:
        return AlertEvent.FIRED
    if condition and firing_before:
        if last_sent_at is None or now - last_sent_at >= cooldown:
            return AlertEvent.REPEATED
        return None
    if firing_before:
        return AlertEvent.RESOLVED
    return None


def evaluate_rule(rule: AlertRule, now: datetime) -> Evaluation:
    pool, scope, threshold = rule.nodepool, rule.scope, Decimal(rule.threshold)
    window = timedelta(minutes=rule.window_minutes)
    if rule.kind == AlertRule.BUDGET:
        if rule.metric == "forecast":
            start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0) - timedelta(seconds=1)
            samples = selectors.samples_between(pool, start, now)
        else:
            latest = selectors.latest_sample(pool, now)
            samples = [latest] if latest else []
        return selectors.evaluate_budget(samples, metric=rule.metric or "cost_per_hour", threshold=threshold,
                                         scope=scope, now=now)
    if rule.kind == AlertRule.SPIKE:
        history = selectors.samples_between(pool, now - timedelta(days=7, hours=1), now - timedelta(hours=1))
        return selectors.evaluate_spike(selectors.latest_sample(pool, now), history, threshold_pct=threshold,
                                        scope=scope, now=now)
    if rule.kind == AlertRule.EFFICIENCY:
        return selectors.evaluate_efficiency(selectors.samples_between(pool, now - window, now),
                                             resource=rule.metric or "cpu", threshold_pct=threshold,
                                             window_minutes=rule.window_minutes, scope=scope)
    if rule.kind == AlertRule.STUCK:
        pods = selectors.pending_pods()
        return selectors.evaluate_stuck(pods, selectors.latest_verdicts(p.key for p in pods), min_pods=threshold,
                                        minutes=rule.window_minutes, nodepool=pool, scope=scope, now=now)
    if rule.kind == AlertRule.INTERRUPTIONS:
        count = len(selectors.decisions_between(Decision.INTERRUPTION, pool, now - timedelta(hours=1), now))
        return selectors.evaluate_interruptions(count, threshold=threshold, scope=scope)
    if rule.kind == AlertRule.STRANDED:
        return selectors.evaluate_stranded(selectors.stranded_moves(pool), min_savings_per_day=threshold,
                                           hold_minutes=rule.window_minutes, scope=scope, now=now)
    if rule.kind == AlertRule.UNUSABLE:
        return selectors.evaluate_unusable(selectors.nodepool_problems(pool), min_pools=threshold,
                                           hold_minutes=rule.window_minutes, scope=scope, now=now)
    if rule.kind == AlertRule.DRIFT:
        return fleet_health.evaluate_drift(fleet_health.drifted_nodes(pool), fleet_health.node_count(pool),
                                           threshold_pct=threshold, hold_minutes=rule.window_minutes, scope=scope,
                                           now=now)
    if rule.kind == AlertRule.LAUNCH_FAILURES:
        pods = selectors.pending_pods()
        return fleet_health.evaluate_launch_failures(
            fleet_health.failures_between(pool, now - timedelta(hours=1), now), pods,
            selectors.latest_verdicts(p.key for p in pods), threshold=threshold, scope=scope)
    if rule.kind == AlertRule.COMMITMENT_UNDER_UTILIZED:
        return commitment_alerts.evaluate_under_utilized(
            commitment_alerts.samples_in_window(now=now, minutes=rule.window_minutes), threshold=threshold,
            minutes=rule.window_minutes, now=now)
    if rule.kind == AlertRule.RESERVATION_IDLE:
        return commitment_alerts.evaluate_reservation_idle(
            commitment_alerts.samples_in_window(now=now, minutes=rule.window_minutes), threshold=threshold,
            minutes=rule.window_minutes, now=now)
    evaluator = RULE_EVALUATORS.get(rule.kind)
    if evaluator is not None:
        return evaluator(rule=rule, now=now)
    raise ValueError(f"unknown rule kind {rule.kind}")


def _link(rule: AlertRule) -> str:
    base = getattr(settings, "LOADMASTER_PUBLIC_URL", "http://localhost:8000").rstrip("/")
    if rule.kind in (AlertRule.STUCK, AlertRule.INTERRUPTIONS, AlertRule.STRANDED, AlertRule.LAUNCH_FAILURES):
        return f"{base}/decisions/"
    if rule.kind in (AlertRule.COMMITMENT_UNDER_UTILIZED, AlertRule.RESERVATION_IDLE):
        return f"{base}/dashboards/commitments/"
    return f"{base}/alerts/history/?rule={rule.pk}"


def render(rule: AlertRule, ev: Evaluation, state: str, now: datetime) -> tuple[str, list[dict[str, Any]]]:
    fields = {"Current value": ev.value, "Threshold / baseline": ev.threshold, "Change": ev.change,
              "Window": ev.window}
    return messages.build(title=rule.name, summary=ev.title, state=state, fields=fields, details=ev.details,
                          nodepool=rule.nodepool, at=now, link=_link(rule))


def process_rule(rule: AlertRule, now: datetime, *, sleep: Callable[[float], None] = time.sleep) -> AlertEvent | None:
    ev = evaluate_rule(rule, now)
    # The rule's scope may have been edited: a state left under the old scope would stay "firing"
    # forever and never resolve, so it goes.
    AlertState.objects.filter(rule=rule).exclude(scope=ev.scope).delete()
    state, _ = AlertState.objects.get_or_create(rule=rule, scope=ev.scope)
    action = decide(firing_before=state.firing, last_sent_at=state.last_sent_at, condition=ev.firing, now=now,
                    cooldown=timedelta(0) if ev.fresh else timedelta(minutes=rule.cooldown_minutes))
    state.last_value = ev.value[:100]
    if action is None:
        state.save()
        return None
    text, blocks = render(rule, ev, action, now)
    delivered, error = deliver(rule.channel, text, blocks, sleep=sleep)
    with transaction.atomic():
        state.firing = action != AlertEvent.RESOLVED
        state.last_sent_at = now
        state.save()
        return AlertEvent.objects.create(at=now, rule=rule, rule_name=rule.name, channel=rule.channel,
                                         scope=ev.scope, kind=action, summary=text[:2000],
                                         delivered=delivered, delivery_error=cut(error, MAX_ERROR))


def _live_pending_pods() -> list[dict[str, Any]]:
    # Imported here: the cluster backend is heavy and only ticks with stuck-pods rules need it.
    from console.backends.factory import cluster_backend

    return cluster_backend().pending_pods()


def evaluate_all(now: datetime | None = None, *, sleep: Callable[[float], None] = time.sleep,
                 pending: PendingSource = _live_pending_pods) -> int:
    """One beat tick: every enabled rule, one failure never stopping the others. Returns events.

    With stuck-pods rules enabled it first observes the pending pods; if the cluster cannot be read,
    those rules are skipped this tick (their state unchanged) rather than judged on stale rows."""
    now = now or timezone.now()
    sent = 0
    rules = list(AlertRule.objects.filter(enabled=True).select_related("channel"))
    observed = True
    # launch-failure rules name the pods left pending, so they need the pending pods observed too
    if any(r.kind in (AlertRule.STUCK, AlertRule.LAUNCH_FAILURES) for r in rules):
        try:
            pending_pods_observe(pods=pending(), now=now)
        except Exception:
            log.exception("alerts: could not read the pending pods; stuck-pods rules skipped this tick")
            observed = False
    for rule in rules:
        if rule.kind in (AlertRule.STUCK, AlertRule.LAUNCH_FAILURES) and not observed:
            continue
        try:
            sent += process_rule(rule, now, sleep=sleep) is not None
        except Exception:
            log.exception("alerts: rule %s (id %s) failed to evaluate", rule.name, rule.pk)
    return sent


# --- observations ---------------------------------------------------------------------------------

def _timestamp(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _pinned_pools(spec: Mapping[str, Any]) -> list[str]:
    """NodePools a pod can only run in: its nodeSelector's karpenter.sh/nodepool, else the union over
    its required node-affinity terms when every term restricts that label with In."""
    selector = _dict(spec.get("nodeSelector"))
    if isinstance(selector.get(NODEPOOL_LABEL), str):
        return [selector[NODEPOOL_LABEL]]
    required = _dict(_dict(_dict(spec.get("affinity")).get("nodeAffinity"))
                     .get("requiredDuringSchedulingIgnoredDuringExecution"))
    terms = required.get("nodeSelectorTerms")
    if not isinstance(terms, list) or not terms:
        return []
    pools: set[str] = set()
    for term in terms:
        exprs = _dict(term).get("matchExpressions")
        values: list[list[Any]] = [e["values"] for e in (exprs if isinstance(exprs, list) else [])
                                   if isinstance(e, dict) and e.get("key") == NODEPOOL_LABEL
                                   and e.get("operator") == "In" and isinstance(e.get("values"), list)]
        if not values:
            return []       # one term admits any pool: the pod is not pinned
        pools.update(str(v) for v in values[0])
    return sorted(pools)


def _pod_identity(pod: Any) -> tuple[str, str, datetime | None, list[str]] | None:
    """(namespace/name, uid, creationTimestamp, pinned pools); None for an object without a name."""
    if not isinstance(pod, dict):
        return None
    meta = _dict(pod.get("metadata"))
    if not isinstance(meta.get("name"), str) or not meta["name"]:
        return None
    spec = _dict(pod.get("spec"))
    key = f"{meta.get('namespace') or 'default'}/{meta['name']}"
    if len(key) > 320:      # longer than Kubernetes allows (63 + 1 + 253): not a real pod
        return None
    return key, str(meta.get("uid") or "")[:64], _timestamp(meta.get("creationTimestamp")), _pinned_pools(spec)


@transaction.atomic
def pending_pods_observe(*, pods: Iterable[Any], now: datetime) -> None:
    """Record which pods are pending now and since when each one's pending stretch began.

    - A pod seen for the first time (or a new object under a known name: another uid or creation
      time) has been pending since its creationTimestamp (now, if it has none or it is in the future).
    - A pod still pending keeps its start.
    - A pod that had left the list (scheduled, or deleted) and is pending again starts now: its
      clock restarts at the first tick that reports it unschedulable again.
    Pods no longer pending are marked as gone and forgotten after a day.
    """
    seen: dict[str, tuple[str, datetime | None, list[str]]] = {}
    for pod in pods:
        ident = _pod_identity(pod)
        if ident is not None:
            seen[ident[0]] = ident[1:]
    rows: dict[str, PendingPod] = {}
    for keys in _chunks(list(seen)):
        rows.update((r.key, r) for r in PendingPod.objects.filter(key__in=keys))
    new: list[PendingPod] = []
    changed: list[PendingPod] = []
    unchanged: list[str] = []
    for key, (uid, created, pinned) in seen.items():
        row = rows.get(key)
        same = row is not None and row.uid == uid and (created is None or row.created is None or created == row.created)
        if row is None or not same:
            since = min(created, now) if created is not None else now
        elif row.left_at is None:
            since = row.since
        else:
            since = now
        if row is None:
            new.append(PendingPod(key=key, uid=uid, created=created, since=since, last_seen=now, pinned_pools=pinned))
        elif (row.uid, row.created, row.since, row.left_at, row.pinned_pools) == (uid, created, since, None, pinned):
            unchanged.append(key)   # the usual case, written in one UPDATE below
        else:
            row.uid, row.created, row.since, row.last_seen, row.left_at, row.pinned_pools = (
                uid, created, since, now, None, pinned)
            changed.append(row)
    PendingPod.objects.bulk_create(new, batch_size=500)
    PendingPod.objects.bulk_update(changed, ["uid", "created", "since", "last_seen", "left_at", "pinned_pools"],
                                   batch_size=500)
    for keys in _chunks(unchanged):
        PendingPod.objects.filter(key__in=keys).update(last_seen=now)
    gone = [k for k in PendingPod.objects.filter(left_at__isnull=True).values_list("key", flat=True) if k not in seen]
    for keys in _chunks(gone):
        PendingPod.objects.filter(key__in=keys).update(left_at=now)
    PendingPod.objects.filter(left_at__lt=now - PENDING_MEMORY).delete()


def _chunks(items: Sequence[Any], size: int = 1000) -> list[list[Any]]:
    # Large IN lists are split: SQLite caps the number of bound parameters per statement.
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


@transaction.atomic
def stranded_moves_record(*, report: Any, nodepools: Mapping[str, str], now: datetime) -> None:
    """Keep StrandedMove in step with one disruption engine run (``report``: a
    packing.disruption.model.Report; ``nodepools``: node name → NodePool).

    A node counts when the engine spares it because of a rule (``blocked_by``: pdb, do-not-disrupt,
    budget) and consolidating it would save money (``savings_per_hour`` > 0). A new one starts its clock
    now; one still blocked keeps it (blocker, reason and saving refreshed); one no longer blocked —
    disrupted, unblocked, or no longer worth moving — is deleted, so a later block starts afresh.
    """
    blocked = {x.node: x for x in report.not_disrupted
               if x.blocked_by and x.savings_per_hour is not None and x.savings_per_hour > 0}
    known = dict(StrandedMove.objects.values_list("node", "pk"))
    for pks in _chunks([pk for node, pk in known.items() if node not in blocked]):
        StrandedMove.objects.filter(pk__in=pks).delete()
    existing: dict[str, StrandedMove] = {}
    for nodes in _chunks([n for n in blocked if n in known]):
        existing.update((m.node, m) for m in StrandedMove.objects.filter(node__in=nodes))
    new: list[StrandedMove] = []
    changed: list[StrandedMove] = []
    unchanged: list[str] = []
    for node, x in blocked.items():
        saving = Decimal(str(round(x.savings_per_hour, 6)))
        pool = nodepools.get(node, "")
        row = existing.get(node)
        if row is None:
            new.append(StrandedMove(node=node, nodepool=pool, blocked_by=x.blocked_by, reason=x.reason,
                                    savings_per_hour=saving, first_seen=now, last_seen=now))
        elif (row.nodepool, row.blocked_by, row.reason, row.savings_per_hour) == (pool, x.blocked_by, x.reason, saving):
            unchanged.append(node)
        else:
            row.nodepool, row.blocked_by, row.reason = pool, x.blocked_by, x.reason
            row.savings_per_hour, row.last_seen = saving, now
            changed.append(row)
    StrandedMove.objects.bulk_create(new, batch_size=500)
    StrandedMove.objects.bulk_update(changed, ["nodepool", "blocked_by", "reason", "savings_per_hour", "last_seen"],
                                     batch_size=500)
    for nodes in _chunks(unchanged):
        StrandedMove.objects.filter(node__in=nodes).update(last_seen=now)


def send_test(channel: Channel, *, sleep: Callable[[float], None] = time.sleep) -> AlertEvent:
    """One attempt, answered at once: this runs in a web request. (Alerts themselves are sent by the
    Celery task, which retries and honours Retry-After.)"""
    now = timezone.now()
    base = getattr(settings, "LOADMASTER_PUBLIC_URL", "http://localhost:8000").rstrip("/")
    text, blocks = messages.build(title=f"Test message ({channel.name})", state="test",
                                  summary="If you can read this, Loadmaster's alerts reach this channel.",
                                  fields={"Channel": channel.name, "Kind": channel.get_kind_display()},
                                  details=[], nodepool="", at=now, link=f"{base}/alerts/channels/")
    if channel.disabled:
        # A test is how an operator checks a fix: give the channel another chance.
        channel.disabled, channel.disabled_reason = False, ""
        channel.save(update_fields=["disabled", "disabled_reason"])
    delivered, error = deliver(channel, text, blocks, sleep=sleep, attempts=1)
    return AlertEvent.objects.create(at=now, channel=channel, kind=AlertEvent.TEST, summary=text[:2000],
                                     delivered=delivered, delivery_error=cut(error, MAX_ERROR))
