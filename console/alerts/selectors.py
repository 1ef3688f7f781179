"""Evaluators: pure functions over hand-made or queried rows, plus the thin queries feeding them.

Each evaluator returns an Evaluation for one scope; the lifecycle (fire/repeat/resolve) lives in
services so the maths here can be tested without a database or a clock.
"""

from __future__ import annotations

import calendar
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from console.control.models import MetricSample
from console.fleet.models import Decision


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
    # Rules phrased "for N" fire only after the condition held this long (stranded savings).
    hold: timedelta = timedelta(0)


@dataclass(frozen=True)
class BlockedMove:
    """A consolidation the engine would make but may not: what it would save and what blocks it."""

    node: str
    reason: str
    savings_per_day: Decimal


def _money(x: Decimal | float) -> str:
    return f"${Decimal(x):,.2f}"


def _pct(x: float) -> str:
    return f"{x:.1f}%"


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
                      value=_money(value) + ("" if metric == "forecast" else "/h"),
                      threshold=_money(threshold) + ("" if metric == "forecast" else "/h"),
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
                      threshold=f"baseline {_money(baseline)}/h +{threshold_pct}%" if baseline else "no baseline yet",
                      change=f"{change:+.1f}%", window=f"{now.hour:02d}:00 over the last 7 days")


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
                      value=_pct(value), threshold=f"below {threshold_pct}%",
                      change=f"{value - float(threshold_pct):+.1f} pts", window=f"{window_minutes} min")


def evaluate_stuck(samples: Sequence[Any], decisions: Iterable[Any], *, min_pods: Decimal, window_minutes: int,
                   scope: str) -> Evaluation:
    """Pods pending in every minute of the window; the message names the top reasons and pods."""
    pending = [s.pods_pending for s in samples]
    covered = len(pending) >= max(window_minutes, 1)
    firing = covered and all(p > 0 for p in pending) and (pending[-1] if pending else 0) >= max(min_pods, 1)
    reasons: Counter[str] = Counter()
    if samples:
        reasons.update({k: int(v) for k, v in (samples[-1].unschedulable_reasons or {}).items()})
    pods: list[str] = []
    for d in decisions:
        for p in d.pods or []:
            name = p if isinstance(p, str) else str(p.get("name", p)) if isinstance(p, dict) else str(p)
            if name not in pods:
                pods.append(name)
    details = [f"{n} × {r}" for r, n in reasons.most_common(5)]
    if pods:
        details.append("Pods: " + ", ".join(pods[:10]) + (f" and {len(pods) - 10} more" if len(pods) > 10 else ""))
    return Evaluation(scope=scope, firing=firing, title=f"Pods stuck pending on {scope}",
                      value=f"{pending[-1] if pending else 0} pods pending",
                      threshold=f"≥ {min_pods} pods for {window_minutes} min", window=f"{window_minutes} min",
                      details=details)


def evaluate_interruptions(count: int, *, threshold: Decimal, scope: str) -> Evaluation:
    return Evaluation(scope=scope, firing=count > threshold, title=f"Spot interruptions on {scope}",
                      value=f"{count} in the last hour", threshold=f"> {threshold} per hour", window="60 min")


def evaluate_stranded(moves: Sequence[BlockedMove], *, min_savings_per_day: Decimal, hold_hours: float,
                      scope: str) -> Evaluation:
    worth = [m for m in moves if m.savings_per_day >= min_savings_per_day]
    total = sum((m.savings_per_day for m in worth), Decimal(0))
    details = [f"{m.node}: {m.reason} (saves {_money(m.savings_per_day)}/day)" for m in worth[:10]]
    return Evaluation(scope=scope, firing=bool(worth), title=f"Stranded savings on {scope}: consolidation blocked",
                      value=f"{_money(total)}/day", threshold=f"≥ {_money(min_savings_per_day)}/day",
                      window=f"blocked > {hold_hours:g} h", details=details, hold=timedelta(hours=hold_hours))


# --- queries --------------------------------------------------------------------------------------

def samples_between(nodepool: str, start: datetime, end: datetime) -> list[MetricSample]:
    return list(MetricSample.objects.filter(nodepool=nodepool, at__gt=start, at__lte=end).order_by("at"))


def latest_sample(nodepool: str, now: datetime) -> MetricSample | None:
    return MetricSample.objects.filter(nodepool=nodepool, at__lte=now).order_by("-at").first()


def decisions_between(kind: str, nodepool: str, start: datetime, end: datetime) -> list[Decision]:
    qs = Decision.objects.filter(kind=kind, at__gt=start, at__lte=end)
    if nodepool:
        qs = qs.filter(nodepool_name=nodepool)
    return list(qs.order_by("-at"))


def blocked_moves_from_ledger(nodepool: str, now: datetime) -> list[BlockedMove]:
    """Blocked consolidations as the disruption loop records them: Decision rows of kind
    disruption whose details carry ``blocked`` (reason) and ``savings_per_hour``, from the last
    15 minutes so a move that is no longer blocked drops out."""
    out: list[BlockedMove] = []
    for d in decisions_between(Decision.DISRUPTION, nodepool, now - timedelta(minutes=15), now):
        blocked = (d.details or {}).get("blocked")
        if not blocked:
            continue
        per_hour = Decimal(str((d.details or {}).get("savings_per_hour", 0)))
        out.append(BlockedMove(node=", ".join(d.nodes or []) or "?", reason=str(blocked),
                               savings_per_day=per_hour * 24))
    return out


# Words in the engine's not_disrupted reasons that mean "a rule forbids it", as opposed to "no
# cheaper arrangement exists": only the former strand savings an operator could unlock.
BLOCKER_WORDS = ("do-not-disrupt", "pdb", "poddisruptionbudget", "disruption budget", "budget")


def blocked_moves_from_report(not_disrupted: Iterable[Any], price_per_hour: dict[str, Decimal]) -> list[BlockedMove]:
    """Pure: the engine's (node, reason) pairs that are real blocks, priced at what the node costs
    per day — the most its removal could save, which is what is stranded while it is blocked."""
    out = []
    for item in not_disrupted:
        reason = str(item.reason)
        if not any(word in reason.lower() for word in BLOCKER_WORDS):
            continue
        price = price_per_hour.get(item.node)
        if price is None:
            continue
        out.append(BlockedMove(node=item.node, reason=reason, savings_per_day=Decimal(price) * 24))
    return out


def blocked_moves_live(nodepool: str, now: datetime) -> list[BlockedMove]:
    """Ask the disruption engine what it may not do now (console.control.disruption.live_report),
    plus any blocked moves the ledger recorded. Imported lazily: the cluster backend is heavy and
    only stranded-savings rules need it."""
    from console.backends.factory import cluster_backend
    from console.control.disruption import live_report
    from console.fleet.models import NodeClaim

    report = live_report(cluster=cluster_backend(), now=now)
    claims = NodeClaim.objects.active().exclude(node_name="")
    if nodepool:
        claims = claims.filter(nodepool_name=nodepool)
    prices = {c.node_name: c.price_per_hour for c in claims if c.price_per_hour is not None}
    return blocked_moves_from_report(report.not_disrupted, prices) + blocked_moves_from_ledger(nodepool, now)
