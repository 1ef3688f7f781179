"""Evaluators: pure functions over hand-made or queried rows, plus the thin queries feeding them.

Each evaluator returns an Evaluation for one scope; the lifecycle (fire/repeat/resolve) lives in
services so the maths here can be tested without a database or a clock.
"""

from __future__ import annotations

import calendar
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from console.alerts import units
from console.alerts.models import PendingPod, StrandedMove
from console.fleet.models import Decision
from console.telemetry.models import MetricSample, NodePoolProblem
from packing import api


@dataclass
class Evaluation:
    scope: str
    firing: bool
    title: str
    value: str
    threshold: str
    change: str = "—"
    window: str = "—"
    details: list[str] = field(default_factory=list)
    fresh: bool = False  # something new to tell (an advisor finding): sent at once, whatever the cooldown


_money = units.money
_pct = units.percent


def month_end_forecast(samples: Sequence[Any], now: datetime) -> Decimal:
    """Spent so far this month (one sample = one minute) plus the current rate to month end."""
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    spent = sum((Decimal(s.cost_per_hour) for s in samples if s.at >= start), Decimal(0)) / 60
    days = calendar.monthrange(now.year, now.month)[1]
    end = start + timedelta(days=days)
    rate = Decimal(samples[-1].cost_per_hour) if samples else Decimal(0)
    hours_left = Decimal((end - now).total_seconds()) / 3600
    return spent + rate * hours_left


def evaluate_budget(samples: Sequence[Any], *, metric: str, threshold: Decimal, scope: str,
                    now: datetime) -> Evaluation:
    """``samples`` oldest first; for the forecast they cover the month so far."""
    if metric == "forecast":
        value = month_end_forecast(samples, now)
        label = "month-end forecast"
    else:
        value = Decimal(samples[-1].cost_per_hour) if samples else Decimal(0)
        label = "cost per hour"
    over = value - threshold
    return Evaluation(scope=scope, firing=bool(samples) and value > threshold,
                      title=f"Budget: {label} {'over' if over > 0 else 'within'} {_money(threshold)} on {scope}",
                      value=_money(value, "" if metric == "forecast" else "/h"),
                      threshold=_money(threshold, "" if metric == "forecast" else "/h"),
                      change=f"{_money(over)} over" if over > 0 else f"{_money(-over)} under",
                      window="month to date" if metric == "forecast" else "latest minute")


def evaluate_spike(current: Any | None, history: Iterable[Any], *, threshold_pct: Decimal, scope: str,
                   now: datetime) -> Evaluation:
    """Baseline: mean cost at the same hour of day over the previous 7 days (weekly shape aside,
    that is what "normal at this time" means to an operator)."""
    same_hour = [Decimal(s.cost_per_hour) for s in history
                 if s.at.hour == now.hour and now - timedelta(days=7) <= s.at < now - timedelta(hours=1)]
    baseline = sum(same_hour, Decimal(0)) / len(same_hour) if same_hour else None
    value = Decimal(current.cost_per_hour) if current is not None else Decimal(0)
    change = float((value - baseline) / baseline * 100) if baseline else 0.0
    firing = current is not None and bool(baseline) and change > float(threshold_pct)
    return Evaluation(scope=scope, firing=firing, title=f"Spend spike on {scope}",
                      value=f"{_money(value)}/h",
                      threshold=f"baseline {_money(baseline, '/h')} + {_pct(threshold_pct)}" if baseline
                      else "no baseline yet",
                      change=_pct(change, sign=True), window=f"{now.hour:02d}:00 over the last 7 days")


def evaluate_efficiency(samples: Sequence[Any], *, resource: str, threshold_pct: Decimal, window_minutes: int,
                        scope: str) -> Evaluation:
    """Firing only when every sample of the window is below the threshold and the window is
    covered: one quiet minute after a scale-down is not worth a page."""
    ratios: list[float] = []
    for s in samples:
        alloc = s.cpu_allocatable if resource == "cpu" else s.memory_allocatable
        req = s.cpu_requested if resource == "cpu" else s.memory_requested
        if alloc:
            ratios.append(req / alloc * 100)
    covered = len(ratios) >= max(window_minutes, 1)
    firing = covered and all(r < float(threshold_pct) for r in ratios)
    value = ratios[-1] if ratios else 0.0
    return Evaluation(scope=scope, firing=firing,
                      title=f"Low {resource.upper() if resource == 'cpu' else resource} packing efficiency on {scope}",
                      value=_pct(value), threshold=f"below {_pct(threshold_pct)}",
                      change=f"{units.signed(value - float(threshold_pct))} pts",
                      window=units.minutes(window_minutes))


def _age(delta: timedelta) -> str:
    return units.minutes(int(delta.total_seconds() // 60))


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


_MISMATCH_KINDS = frozenset(k.value for k in api.MISMATCH_KINDS)


def is_mismatch(reason: Mapping[str, Any]) -> bool:
    """A stored engine reason ({nodepool, reason, kind, detail}, as the ledger keeps it) saying the pod was never
    meant for that pool — it does not tolerate the pool's taint, or its requirements contradict the pool's — as
    opposed to a pool that could take it but cannot now (limits, sizes, offerings, topology). A reason recorded
    before reasons had a kind counts as no mismatch: the pool keeps the pod in its scope."""
    return reason.get("kind") in _MISMATCH_KINDS


WAITING = "waiting for the provisioner"


def pod_in_pool(pool: str, *, pinned: Sequence[str], verdict: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a pending pod counts toward a NodePool-scoped rule: pinned to the pool by its
    nodeSelector / required node affinity, or, unpinned, given a reason by the pool that is not a
    mismatch. An unpinned pod without a verdict yet belongs to no pool (only to the cluster)."""
    if pinned:
        return pool in pinned
    return any(r.get("nodepool") == pool and not is_mismatch(r) for r in verdict)


def pod_reasons(pool: str, *, verdict: Sequence[Mapping[str, Any]] | None) -> list[str]:
    """The reasons worth reading for one pod, as "nodepool P: reason": the pool's own for a pool
    scope; otherwise those of the pools that could take it, or all of them when none could."""
    if verdict is None:
        return [WAITING]
    mine = [r for r in verdict if r.get("nodepool", "") == pool] if pool else []
    chosen = mine or [r for r in verdict if not is_mismatch(r)] or list(verdict)
    texts = [(str(r.get("nodepool", "")), str(r.get("reason", ""))) for r in chosen]
    return [f"nodepool {np}: {r}" if np else r for np, r in texts] or ["no NodePool can take it"]


def evaluate_stuck(pods: Sequence[Any], verdicts: Mapping[str, Sequence[Mapping[str, Any]]], *, min_pods: Decimal,
                   minutes: int, nodepool: str, scope: str, now: datetime) -> Evaluation:
    """A pod is stuck when it has been pending for more than ``minutes`` since its own pending
    stretch began (``since``); the rule fires when at least ``min_pods`` are. ``pods`` are the
    currently pending rows (key, since, pinned_pools); ``verdicts`` the latest unschedulable reasons
    per pod key, [{nodepool, reason}]."""
    limit = timedelta(minutes=minutes)
    in_scope = [p for p in pods
                if not nodepool or pod_in_pool(nodepool, pinned=p.pinned_pools or [], verdict=verdicts.get(p.key, []))]
    stuck = sorted((p for p in in_scope if now - p.since > limit), key=lambda p: (p.since, p.key))
    needed = max(min_pods, Decimal(1))     # "at least 0 pods" would page forever
    reasons: Counter[str] = Counter()
    for p in stuck:
        reasons.update(set(pod_reasons(nodepool, verdict=verdicts.get(p.key))))
    # Sized for one Block Kit section (3,000 characters): 5 reasons and 8 pods, each line cut.
    details = [f"{n} × {_short(r, 140)}" for r, n in reasons.most_common(5)]
    for p in stuck[:8]:
        why = pod_reasons(nodepool, verdict=verdicts.get(p.key))
        more = f" (and {len(why) - 1} other NodePool{'s' if len(why) > 2 else ''})" if len(why) > 1 else ""
        details.append(f"{_short(p.key, 70)} — {_age(now - p.since)} — {_short(why[0], 140)}{more}")
    if len(stuck) > 8:
        details.append(f"and {len(stuck) - 8} more")
    oldest = f"longest {_age(now - stuck[0].since)}" if stuck else "—"
    return Evaluation(scope=scope, firing=len(stuck) >= needed, title=f"Pods stuck pending on {scope}",
                      value=f"{len(stuck)} stuck of {len(in_scope)} pending",
                      threshold=f"≥ {units.count(needed, 'pod')} pending > {units.minutes(minutes)}", change=oldest,
                      window=f"{units.minutes(minutes)} per pod", details=details)


def evaluate_interruptions(count: int, *, threshold: Decimal, scope: str) -> Evaluation:
    return Evaluation(scope=scope, firing=count > threshold, title=f"Spot interruptions on {scope}",
                      value=f"{count} in the last hour", threshold=f"> {units.count(threshold, 'interruption')} per hour",
                      window=units.minutes(60))


def evaluate_stranded(moves: Sequence[Any], *, min_savings_per_day: Decimal, hold_minutes: int, scope: str,
                      now: datetime) -> Evaluation:
    """``moves``: blocked consolidations (node, nodepool, blocked_by, reason, savings_per_hour,
    first_seen). One counts when it has been blocked for more than ``hold_minutes`` and would save at
    least ``min_savings_per_day`` (its savings per hour × 24)."""
    hold = timedelta(minutes=hold_minutes)
    worth = sorted((m for m in moves
                    if now - m.first_seen > hold and Decimal(m.savings_per_hour) * 24 >= min_savings_per_day),
                   key=lambda m: (-Decimal(m.savings_per_hour), m.node))
    total = sum((Decimal(m.savings_per_hour) * 24 for m in worth), Decimal(0))
    details = [f"{_short(m.node, 80)} ({m.nodepool or 'no NodePool'}): {_short(m.reason, 160)} — saves "
               f"{_money(Decimal(m.savings_per_hour) * 24, '/day')} ({_money(m.savings_per_hour, '/h')}), "
               f"blocked {_age(now - m.first_seen)}" for m in worth[:10]]
    if len(worth) > 10:
        details.append(f"and {len(worth) - 10} more")
    blockers = sorted({m.blocked_by for m in worth})
    return Evaluation(scope=scope, firing=bool(worth), title=f"Stranded savings on {scope}: consolidation blocked",
                      value=_money(total, "/day"), threshold=f"≥ {_money(min_savings_per_day, '/day')} per move",
                      change=f"{len(worth)} move(s) blocked by {', '.join(blockers)}" if worth else "—",
                      window=f"blocked > {_age(hold)}", details=details)


def evaluate_unusable(problems: Sequence[Any], *, min_pools: Decimal, hold_minutes: int, scope: str,
                      now: datetime) -> Evaluation:
    """``problems``: NodePoolProblem rows (a control loop leaves the pool out, with why, since when). A
    pool counts once its oldest problem is older than ``hold_minutes``; the rule fires when at least
    ``min_pools`` (at least 1) pools count, naming each pool, the loop and the reason."""
    hold = timedelta(minutes=hold_minutes)
    needed = max(min_pools, Decimal(1))
    counted = sorted((p for p in problems if now - p.since > hold), key=lambda p: (p.nodepool, p.loop))
    pools = sorted({p.nodepool for p in counted})
    details = [f"{_short(p.nodepool, 63)} ({p.loop} loop, {_age(now - p.since)}): {_short(p.reason, 200)}"
               for p in counted[:10]]
    if len(counted) > 10:
        details.append(f"and {len(counted) - 10} more")
    return Evaluation(scope=scope, firing=len(pools) >= needed, title=f"NodePool unusable on {scope}",
                      value=units.count(len(pools), "NodePool"),
                      threshold=f"≥ {units.count(needed, 'NodePool')} unusable", change=", ".join(pools) or "—",
                      window=f"left out > {_age(hold)}", details=details)


# --- queries --------------------------------------------------------------------------------------

def nodepool_problems(nodepool: str) -> list[NodePoolProblem]:
    rows = NodePoolProblem.objects.all()
    return list(rows.filter(nodepool=nodepool) if nodepool else rows)


def samples_between(nodepool: str, start: datetime, end: datetime) -> list[MetricSample]:
    return list(MetricSample.objects.filter(nodepool=nodepool, at__gt=start, at__lte=end).order_by("at"))


def latest_sample(nodepool: str, now: datetime) -> MetricSample | None:
    return MetricSample.objects.filter(nodepool=nodepool, at__lte=now).order_by("-at").first()


def decisions_between(kind: str, nodepool: str, start: datetime, end: datetime) -> list[Decision]:
    qs = Decision.objects.filter(kind=kind, at__gt=start, at__lte=end)
    if nodepool:
        qs = qs.filter(nodepool_name=nodepool)
    return list(qs.order_by("-at"))


def pending_pods() -> list[PendingPod]:
    return list(PendingPod.objects.filter(left_at__isnull=True))


def latest_verdicts(keys: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """The provisioner's latest unschedulable verdict per pod (it writes one when the verdict
    changes): {pod key: [{nodepool, reason}]}. Pods without one are absent."""
    wanted = list(keys)
    out: dict[str, list[dict[str, Any]]] = {}
    for start in range(0, len(wanted), 500):      # keeps the IN list within every database's limits
        rows = (Decision.objects.filter(kind=Decision.UNSCHEDULABLE, details__pod__in=wanted[start:start + 500])
                .order_by("at", "id").values_list("details", flat=True))
        for details in rows:
            reasons = details.get("reasons") if isinstance(details, dict) else None
            if isinstance(reasons, list):
                out[str(details.get("pod"))] = [r for r in reasons if isinstance(r, dict)]
    return out


def stranded_moves(nodepool: str) -> list[StrandedMove]:
    qs = StrandedMove.objects.all()
    if nodepool:
        qs = qs.filter(nodepool=nodepool)
    return list(qs)
