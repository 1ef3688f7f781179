"""Evaluators on hand-made rows: no database, no clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import SimpleNamespace as Row

from console.alerts import selectors
from console.alerts.selectors import BlockedMove
from console.alerts.services import decide

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def sample(minutes_ago: int, **kw: object) -> Row:
    base = {"at": NOW - timedelta(minutes=minutes_ago), "cost_per_hour": Decimal("1"), "cpu_allocatable": 1000,
            "cpu_requested": 800, "memory_allocatable": 1000, "memory_requested": 800, "pods_pending": 0,
            "unschedulable_reasons": {}}
    return Row(**{**base, **kw})


def test_budget_cost_per_hour() -> None:
    ev = selectors.evaluate_budget([sample(0, cost_per_hour=Decimal("12.5"))], metric="cost_per_hour",
                                   threshold=Decimal(10), scope="cluster", now=NOW)
    assert ev.firing and ev.value == "$12.50/h" and "2.50 over" in ev.change
    assert not selectors.evaluate_budget([], metric="cost_per_hour", threshold=Decimal(10), scope="c", now=NOW).firing


def test_month_end_forecast_adds_spent_and_rate() -> None:
    # 60 minutes at $60/h already spent ($60) plus $60/h for the 12 h left of November.
    rows = [sample(m, cost_per_hour=Decimal(60)) for m in range(59, -1, -1)]
    forecast = selectors.month_end_forecast(rows, NOW)
    assert forecast == Decimal(60) + Decimal(60) * Decimal(12)


def test_spike_against_same_hour_baseline() -> None:
    history = [Row(at=NOW - timedelta(days=d), cost_per_hour=Decimal(10)) for d in range(1, 8)]
    history += [Row(at=NOW - timedelta(days=1, hours=3), cost_per_hour=Decimal(1000))]  # other hour: ignored
    ev = selectors.evaluate_spike(sample(0, cost_per_hour=Decimal(16)), history, threshold_pct=Decimal(50),
                                  scope="general", now=NOW)
    assert ev.firing and ev.change == "+60.0%" and "$10.00" in ev.threshold
    calm = selectors.evaluate_spike(sample(0, cost_per_hour=Decimal(14)), history, threshold_pct=Decimal(50),
                                    scope="general", now=NOW)
    assert not calm.firing
    assert not selectors.evaluate_spike(sample(0), [], threshold_pct=Decimal(1), scope="x", now=NOW).firing


def test_efficiency_needs_the_whole_window_below() -> None:
    low = [sample(m, cpu_requested=300) for m in range(4, -1, -1)]
    assert selectors.evaluate_efficiency(low, resource="cpu", threshold_pct=Decimal(50), window_minutes=5,
                                         scope="c").firing
    # Not enough minutes yet, or one good minute in the window: no alert.
    assert not selectors.evaluate_efficiency(low[:3], resource="cpu", threshold_pct=Decimal(50), window_minutes=5,
                                             scope="c").firing
    mixed = [*low[:4], sample(0, cpu_requested=900)]
    assert not selectors.evaluate_efficiency(mixed, resource="cpu", threshold_pct=Decimal(50), window_minutes=5,
                                             scope="c").firing


def test_stuck_pods_lists_top_reasons_and_pods() -> None:
    reasons = {"limit cpu=100 would be exceeded": 3, "no offering matches": 7}
    rows = [sample(m, pods_pending=10, unschedulable_reasons=reasons) for m in range(2, -1, -1)]
    decisions = [Row(pods=["web-1", "web-2"]), Row(pods=["web-2", "api-1"])]
    ev = selectors.evaluate_stuck(rows, decisions, min_pods=Decimal(1), window_minutes=3, scope="general")
    assert ev.firing
    assert ev.details[0] == "7 × no offering matches"
    assert ev.details[-1] == "Pods: web-1, web-2, api-1"


def test_interruptions_and_stranded() -> None:
    assert selectors.evaluate_interruptions(3, threshold=Decimal(2), scope="c").firing
    assert not selectors.evaluate_interruptions(2, threshold=Decimal(2), scope="c").firing
    moves = [BlockedMove("n1", "pdb web allows 0 disruptions", Decimal(30)), BlockedMove("n2", "x", Decimal(1))]
    ev = selectors.evaluate_stranded(moves, min_savings_per_day=Decimal(20), hold_hours=2, scope="c")
    assert ev.firing and ev.details == ["n1: pdb web allows 0 disruptions (saves $30.00/day)"]
    assert ev.hold == timedelta(hours=2)


def test_lifecycle_decision_table() -> None:
    cd = timedelta(minutes=30)
    assert decide(firing_before=False, last_sent_at=None, condition=True, now=NOW, cooldown=cd) == "fired"
    assert decide(firing_before=True, last_sent_at=NOW - timedelta(minutes=10), condition=True, now=NOW,
                  cooldown=cd) is None
    assert decide(firing_before=True, last_sent_at=NOW - cd, condition=True, now=NOW, cooldown=cd) == "repeated"
    assert decide(firing_before=True, last_sent_at=NOW, condition=False, now=NOW, cooldown=cd) == "resolved"
    assert decide(firing_before=False, last_sent_at=None, condition=False, now=NOW, cooldown=cd) is None


def test_blocked_moves_from_the_engine_report() -> None:
    report = [Row(node="n1", reason="node n1 has do-not-disrupt"),
              Row(node="n2", reason="no cheaper arrangement of its pods was found"),  # not a block
              Row(node="n3", reason="pdb default/web allows 0 disruptions"),
              Row(node="n4", reason="node n4 has do-not-disrupt")]                   # unpriced: skipped
    moves = selectors.blocked_moves_from_report(report, {"n1": Decimal("0.5"), "n2": Decimal(1), "n3": Decimal(2)})
    assert moves == [BlockedMove("n1", "node n1 has do-not-disrupt", Decimal(12)),
                     BlockedMove("n3", "pdb default/web allows 0 disruptions", Decimal(48))]
