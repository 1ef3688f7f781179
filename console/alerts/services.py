"""Alert lifecycle and delivery: evaluate each rule, decide fire/repeat/resolve, send, record."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from console.alerts import messages, selectors
from console.alerts.models import AlertEvent, AlertRule, AlertState, Channel
from console.alerts.selectors import BlockedMove, Evaluation
from console.alerts.transports import deliver
from console.fleet.models import Decision

log = logging.getLogger(__name__)

BlockedProvider = Callable[[str, datetime], list[BlockedMove]]


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


def evaluate_rule(rule: AlertRule, now: datetime, *,
                  blocked: BlockedProvider = selectors.blocked_moves_from_ledger) -> Evaluation:
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
        return selectors.evaluate_stuck(selectors.samples_between(pool, now - window, now),
                                        selectors.decisions_between(Decision.UNSCHEDULABLE, pool, now - window, now),
                                        min_pods=threshold, window_minutes=rule.window_minutes, scope=scope)
    if rule.kind == AlertRule.INTERRUPTIONS:
        count = len(selectors.decisions_between(Decision.INTERRUPTION, pool, now - timedelta(hours=1), now))
        return selectors.evaluate_interruptions(count, threshold=threshold, scope=scope)
    if rule.kind == AlertRule.STRANDED:
        # window_minutes is the "blocked for more than N" hold, in minutes like every other window.
        return selectors.evaluate_stranded(blocked(pool, now), min_savings_per_day=threshold,
                                           hold_hours=rule.window_minutes / 60, scope=scope)
    raise ValueError(f"unknown rule kind {rule.kind}")


def _link(rule: AlertRule) -> str:
    base = getattr(settings, "LOADMASTER_PUBLIC_URL", "http://localhost:8000").rstrip("/")
    if rule.kind in (AlertRule.STUCK, AlertRule.INTERRUPTIONS, AlertRule.STRANDED):
        return f"{base}/decisions/"
    return f"{base}/alerts/history/?rule={rule.pk}"


def render(rule: AlertRule, ev: Evaluation, state: str, now: datetime) -> tuple[str, list[dict]]:
    fields = {"Current value": ev.value, "Threshold / baseline": ev.threshold, "Change": ev.change,
              "Window": ev.window}
    return messages.build(title=f"{rule.name}: {ev.title}", state=state, fields=fields, details=ev.details,
                          nodepool=rule.nodepool, at=now, link=_link(rule))


def process_rule(rule: AlertRule, now: datetime, *, sleep: Callable[[float], None] = time.sleep,
                 blocked: BlockedProvider = selectors.blocked_moves_from_ledger) -> AlertEvent | None:
    ev = evaluate_rule(rule, now, blocked=blocked)
    # The rule's scope may have been edited: a state left under the old scope would stay "firing"
    # forever and never resolve, so it goes.
    AlertState.objects.filter(rule=rule).exclude(scope=ev.scope).delete()
    state, _ = AlertState.objects.get_or_create(rule=rule, scope=ev.scope)
    condition = ev.firing
    if condition and ev.hold:
        # "Blocked for more than N": remember when it started and wait until it held long enough.
        if state.holding_since is None:
            state.holding_since = now
        condition = now - state.holding_since >= ev.hold
    elif not ev.firing:
        state.holding_since = None
    action = decide(firing_before=state.firing, last_sent_at=state.last_sent_at, condition=condition, now=now,
                    cooldown=timedelta(minutes=rule.cooldown_minutes))
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
                                         delivered=delivered, delivery_error=error)


def _once_per_tick(provider: BlockedProvider) -> BlockedProvider:
    """The live disruption report is a full consolidation simulation: run it once per pool per tick
    however many stranded-savings rules there are; a failure yields no moves (logged), not a crash."""
    cache: dict[tuple[str, datetime], list[BlockedMove]] = {}

    def cached(nodepool: str, now: datetime) -> list[BlockedMove]:
        key = (nodepool, now)
        if key not in cache:
            try:
                cache[key] = provider(nodepool, now)
            except Exception:
                log.exception("alerts: could not read blocked consolidations for %s", nodepool or "cluster")
                cache[key] = selectors.blocked_moves_from_ledger(nodepool, now)
        return cache[key]

    return cached


def evaluate_all(now: datetime | None = None, *, sleep: Callable[[float], None] = time.sleep,
                 blocked: BlockedProvider = selectors.blocked_moves_live) -> int:
    """One beat tick: every enabled rule, one failure never stopping the others. Returns events."""
    now = now or timezone.now()
    sent = 0
    provider = _once_per_tick(blocked)
    for rule in AlertRule.objects.filter(enabled=True).select_related("channel"):
        try:
            sent += process_rule(rule, now, sleep=sleep, blocked=provider) is not None
        except Exception:
            log.exception("alerts: rule %s (id %s) failed to evaluate", rule.name, rule.pk)
    return sent


def send_test(channel: Channel, *, sleep: Callable[[float], None] = time.sleep) -> AlertEvent:
    now = timezone.now()
    base = getattr(settings, "LOADMASTER_PUBLIC_URL", "http://localhost:8000").rstrip("/")
    text, blocks = messages.build(title=f"Test message from Loadmaster ({channel.name})", state="test",
                                  fields={"Channel": channel.name, "Kind": channel.get_kind_display()},
                                  details=[], nodepool="", at=now, link=f"{base}/alerts/channels/")
    if channel.disabled:
        # A test is how an operator checks a fix: give the channel another chance.
        channel.disabled, channel.disabled_reason = False, ""
        channel.save(update_fields=["disabled", "disabled_reason"])
    delivered, error = deliver(channel, text, blocks, sleep=sleep)
    return AlertEvent.objects.create(at=now, channel=channel, kind=AlertEvent.TEST, summary=text[:2000],
                                     delivered=delivered, delivery_error=error)
