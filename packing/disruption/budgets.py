"""NodePool disruption budgets: how many of a pool's nodes may be disrupted at once, for which reason, and when.

Karpenter's rules: a budget is `nodes` as a count or a percent of the pool's nodes (percent rounded up), optionally
active only from each firing of a cron `schedule` (UTC) for `duration`, optionally limited to some `reasons`. The
most restrictive active budget that covers the reason wins, nodes already being deleted or NotReady use it up, and
with no active budget there is no limit. A budget that does not parse allows nothing: a typo must fail safe.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime

from packing.cron import CronError, CronSchedule
from packing.disruption.model import Budget, DisruptionSettings
from packing.durations import DurationError, parse_duration

__all__ = ["BudgetLimit", "budget_limit", "check_budget"]

_NODES = re.compile(r"^(?:(100|[0-9]{1,2})%|([0-9]+))$")
KNOWN_REASONS = ("Empty", "Underutilized", "Drifted")


class BudgetError(ValueError):
    pass


@dataclass(frozen=True)
class BudgetLimit:
    """The binding budget for one pool and reason at one moment: `nodes` None means unlimited."""

    nodes: int | None
    text: str  # "budget 0 nodes for Underutilized until 2026-12-01T06:00Z"


def _fmt_time(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%MZ")


def _plural(n: int) -> str:
    return f"{n} node" if n == 1 else f"{n} nodes"


def check_budget(b: Budget) -> None:
    """Raise BudgetError when the budget would be refused; the message says which field and why."""
    if b.error:
        raise BudgetError(b.error)
    if not isinstance(b.nodes, str) or not _NODES.match(b.nodes.strip()):
        raise BudgetError(f"nodes {b.nodes!r} is neither a count nor a percent such as '10%'")
    if (b.schedule is None) != (b.duration is None):
        raise BudgetError("schedule and duration must be set together")
    if b.schedule is not None:
        try:
            CronSchedule.parse(b.schedule)
        except CronError as e:
            raise BudgetError(f"schedule: {e}") from None
        try:
            parse_duration(b.duration or "", allow_never=False)
        except DurationError as e:
            raise BudgetError(f"duration: {e}") from None
    for r in b.reasons or ():
        if r not in KNOWN_REASONS:
            raise BudgetError(f"unknown reason {r!r} (expected {', '.join(KNOWN_REASONS)})")


def _value(b: Budget, total: int) -> tuple[int, str]:
    m = _NODES.match(b.nodes.strip())
    assert m is not None
    if m.group(1) is not None:
        pct = int(m.group(1))
        n = math.ceil(pct * total / 100)
        return n, f"{pct}% of {total} ({_plural(n)})"
    n = int(m.group(2))
    return n, _plural(n)


def budget_limit(
    pool: str, settings: DisruptionSettings, reason: str | None, at: datetime, total_nodes: int
) -> BudgetLimit:
    """The most restrictive budget active at `at` that covers `reason` (None: a reason budgets do not cover)."""
    if reason is None:
        return BudgetLimit(None, "")
    best: BudgetLimit | None = None
    for b in settings.budgets:
        try:
            check_budget(b)
        except BudgetError as e:
            return BudgetLimit(0, f"budget #{b.index + 1} of nodepool {pool} does not parse ({e}), so it allows nothing")
        if b.reasons is not None and reason not in b.reasons:
            continue
        until = ""
        if b.schedule is not None:
            dur = parse_duration(b.duration or "", allow_never=False)
            assert dur is not None
            window = CronSchedule.parse(b.schedule).active_window(at, dur)
            if window is None:
                continue
            until = f" until {_fmt_time(window[1])}"
        n, desc = _value(b, total_nodes)
        if best is None or best.nodes is None or n < best.nodes:
            best = BudgetLimit(n, f"budget {desc} for {reason}{until}")
    return best or BudgetLimit(None, "")
