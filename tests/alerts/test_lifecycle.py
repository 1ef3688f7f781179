"""Each rule kind fires once, repeats only after its cooldown, and resolves — delivered to a local
Slack double through slack_sdk."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from console.alerts import messages, services
from console.alerts.models import AlertEvent, AlertRule, AlertState, Channel
from console.alerts.selectors import BlockedMove
from console.control.models import MetricSample
from console.fleet.models import Decision
from tests.alerts.conftest import SlackDouble

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
pytestmark = pytest.mark.django_db


def put(at: datetime, pool: str = "", **kw: Any) -> None:
    values = {"cost_per_hour": Decimal(1), "cpu_allocatable": 1000, "cpu_requested": 800,
              "memory_allocatable": 1000, "memory_requested": 800, **kw}
    MetricSample.objects.update_or_create(at=at, nodepool=pool, defaults=values)


def minutes(start: datetime, n: int, pool: str = "", **kw: Any) -> None:
    for i in range(n):
        put(start - timedelta(minutes=i), pool, **kw)


@pytest.fixture
def channel(slack: SlackDouble) -> Channel:
    ch = Channel(name="ops", kind=Channel.WEBHOOK)
    ch.set_secret(slack.webhook_url)
    ch.save()
    return ch


def rule(channel: Channel, kind: str, threshold: str, **kw: Any) -> AlertRule:
    return AlertRule.objects.create(name=f"{kind} rule", kind=kind, threshold=Decimal(threshold), channel=channel,
                                    cooldown_minutes=30, **kw)


def tick(r: AlertRule, at: datetime, **kw: Any) -> str | None:
    event = services.process_rule(AlertRule.objects.get(pk=r.pk), at, sleep=lambda s: None, **kw)
    return event.kind if event else None


def check_cycle(r: AlertRule, slack: SlackDouble, make_true: Any, make_false: Any, **kw: Any) -> None:
    """true → fired; true 10 min later → nothing; true after cooldown → repeated; false → resolved."""
    make_true(NOW)
    assert tick(r, NOW, **kw) == "fired"
    make_true(NOW + timedelta(minutes=10))
    assert tick(r, NOW + timedelta(minutes=10), **kw) is None
    make_true(NOW + timedelta(minutes=31))
    assert tick(r, NOW + timedelta(minutes=31), **kw) == "repeated"
    make_false(NOW + timedelta(minutes=32))
    assert tick(r, NOW + timedelta(minutes=32), **kw) == "resolved"
    make_false(NOW + timedelta(minutes=33))
    assert tick(r, NOW + timedelta(minutes=33), **kw) is None
    assert [e.kind for e in AlertEvent.objects.order_by("at")] == ["fired", "repeated", "resolved"]
    assert all(e.delivered for e in AlertEvent.objects.all())
    assert len(slack.requests) == 3
    for req in slack.requests:
        assert req["path"] == "/services/T000/B000/hook-secret-XYZ123"
        assert req["json"]["text"] and messages.problems(req["json"]["blocks"]) == []
    assert "resolved" in slack.requests[-1]["json"]["blocks"][0]["text"]["text"]
    state = AlertState.objects.get(rule=r)
    assert not state.firing and state.scope == r.scope


def test_budget_per_nodepool(channel: Channel, slack: SlackDouble) -> None:
    r = rule(channel, AlertRule.BUDGET, "10", metric="cost_per_hour", nodepool="general")
    put(NOW - timedelta(minutes=1), "", cost_per_hour=Decimal(50))  # the cluster row must not count
    check_cycle(r, slack, lambda at: put(at, "general", cost_per_hour=Decimal(12)),
                lambda at: put(at, "general", cost_per_hour=Decimal(8)))
    fields = slack.requests[0]["json"]["blocks"][1]["fields"]
    assert "$12.00/h" in fields[0]["text"] and "$10.00/h" in fields[1]["text"]
    assert "general" in slack.requests[0]["json"]["blocks"][-2]["elements"][0]["text"]


def test_budget_forecast(channel: Channel, slack: SlackDouble) -> None:
    r = rule(channel, AlertRule.BUDGET, "1000", metric="forecast")
    check_cycle(r, slack, lambda at: put(at, cost_per_hour=Decimal(100)),  # 12 h left × $100 > $1000
                lambda at: put(at, cost_per_hour=Decimal(1)))


def test_spend_spike(channel: Channel, slack: SlackDouble) -> None:
    for day in range(1, 8):
        for minute in (0, 10, 20, 31, 32, 33):
            put(NOW - timedelta(days=day) + timedelta(minutes=minute), cost_per_hour=Decimal(10))
    r = rule(channel, AlertRule.SPIKE, "50")
    check_cycle(r, slack, lambda at: put(at, cost_per_hour=Decimal(20)), lambda at: put(at, cost_per_hour=Decimal(11)))
    assert "+100.0%" in slack.requests[0]["json"]["blocks"][1]["fields"][2]["text"]


def test_low_efficiency(channel: Channel, slack: SlackDouble) -> None:
    r = rule(channel, AlertRule.EFFICIENCY, "50", metric="memory", window_minutes=5)
    check_cycle(r, slack, lambda at: minutes(at, 5, memory_requested=200),
                lambda at: minutes(at, 5, memory_requested=900))


def test_stuck_pods(channel: Channel, slack: SlackDouble) -> None:
    r = rule(channel, AlertRule.STUCK, "1", window_minutes=3)

    def stuck(at: datetime) -> None:
        minutes(at, 3, pods_pending=4, unschedulable_reasons={"nodepool default: limit cpu=100 exceeded": 4})
        Decision.objects.create(at=at, kind=Decision.UNSCHEDULABLE, pods=["web-7", "web-8"], why="no fit")

    check_cycle(r, slack, stuck, lambda at: put(at, pods_pending=0))
    details = slack.requests[0]["json"]["blocks"][2]["text"]["text"]
    assert "4 × nodepool default: limit cpu=100 exceeded" in details and "web-7, web-8" in details


def test_spot_interruptions(channel: Channel, slack: SlackDouble) -> None:
    r = rule(channel, AlertRule.INTERRUPTIONS, "2")

    def many(at: datetime) -> None:
        for i in range(3):
            Decision.objects.create(at=at - timedelta(seconds=i), kind=Decision.INTERRUPTION, why="spot reclaim")

    check_cycle(r, slack, many, lambda at: Decision.objects.filter(kind=Decision.INTERRUPTION).delete())


def test_stranded_savings_waits_for_the_hold(channel: Channel, slack: SlackDouble) -> None:
    r = rule(channel, AlertRule.STRANDED, "20", window_minutes=120)
    blocked = {"on": True}

    def provider(pool: str, now: datetime) -> list[BlockedMove]:
        return [BlockedMove("ip-10-0-1-5", "PDB web allows 0 disruptions", Decimal(36))] if blocked["on"] else []

    start = NOW - timedelta(hours=2)
    assert tick(r, start, blocked=provider) is None            # blocked, but not for 2 h yet
    assert tick(r, start + timedelta(minutes=90), blocked=provider) is None

    def on(at: datetime) -> None:
        blocked["on"] = True

    def off(at: datetime) -> None:
        blocked["on"] = False

    check_cycle(r, slack, on, off, blocked=provider)
    assert "PDB web allows 0 disruptions" in slack.requests[0]["json"]["blocks"][2]["text"]["text"]


def test_stranded_savings_from_the_ledger(channel: Channel, slack: SlackDouble) -> None:
    r = rule(channel, AlertRule.STRANDED, "20", window_minutes=0)
    Decision.objects.create(at=NOW, kind=Decision.DISRUPTION, nodes=["n1"], why="consolidation blocked",
                            details={"blocked": "do-not-disrupt on pod db-0", "savings_per_hour": 1.5})
    assert tick(r, NOW) == "fired"
    assert "do-not-disrupt on pod db-0 (saves $36.00/day)" in slack.requests[0]["json"]["blocks"][2]["text"]["text"]


def test_evaluate_all_task_runs_every_rule(channel: Channel, slack: SlackDouble) -> None:
    from console.alerts.tasks import evaluate_alerts

    rule(channel, AlertRule.BUDGET, "0.5", metric="cost_per_hour")
    broken = rule(channel, AlertRule.BUDGET, "1", metric="cost_per_hour")
    AlertRule.objects.filter(pk=broken.pk).update(kind="nonsense")  # one bad rule must not stop the rest
    put(datetime.now(UTC) - timedelta(seconds=30), cost_per_hour=Decimal(2))
    assert evaluate_alerts.delay().get(timeout=10) == 1
    assert len(slack.requests) == 1


def test_live_provider_runs_once_per_tick_and_failures_fall_back(channel: Channel, slack: SlackDouble) -> None:
    calls: list[str] = []

    def flaky(pool: str, now: datetime) -> list[BlockedMove]:
        calls.append(pool)
        raise RuntimeError("cluster unreachable")

    rule(channel, AlertRule.STRANDED, "20", window_minutes=0)
    rule(channel, AlertRule.STRANDED, "30", window_minutes=0)
    Decision.objects.create(at=NOW, kind=Decision.DISRUPTION, nodes=["n1"], why="blocked",
                            details={"blocked": "pdb web", "savings_per_hour": 2})
    assert services.evaluate_all(NOW, sleep=lambda s: None, blocked=flaky) == 2
    assert calls == [""]
