"""Each rule kind fires once, repeats only after its cooldown, and resolves — delivered to a local
Slack double through slack_sdk."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from console.alerts import messages, services
from console.alerts.models import AlertEvent, AlertRule, AlertState, Channel
from console.fleet.models import Decision
from console.telemetry.models import MetricSample
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
    fields = slack.requests[0]["json"]["blocks"][2]["fields"]
    assert "$12.00/h" in fields[0]["text"] and "$10.00/h" in fields[1]["text"]
    assert "general" in slack.requests[0]["json"]["blocks"][-2]["elements"][1]["text"]


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
    assert "+100 %" in slack.requests[0]["json"]["blocks"][2]["fields"][2]["text"]


def test_low_efficiency(channel: Channel, slack: SlackDouble) -> None:
    r = rule(channel, AlertRule.EFFICIENCY, "50", metric="memory", window_minutes=5)
    check_cycle(r, slack, lambda at: minutes(at, 5, memory_requested=200),
                lambda at: minutes(at, 5, memory_requested=900))


def test_stuck_pods(channel: Channel, slack: SlackDouble) -> None:
    r = rule(channel, AlertRule.STUCK, "2", window_minutes=3)
    created = (NOW - timedelta(minutes=5)).isoformat()
    pods = [{"metadata": {"name": f"web-{i}", "namespace": "shop", "uid": f"u{i}", "creationTimestamp": created}}
            for i in range(3)]
    for i in range(3):
        Decision.objects.create(at=NOW - timedelta(minutes=4), kind=Decision.UNSCHEDULABLE, pods=[f"shop/web-{i}"],
                                why="no fit", details={"pod": f"shop/web-{i}", "reasons": [
                                    {"nodepool": "default", "reason": "limit cpu=100 would be exceeded (in use 100)"}]})

    def stuck(at: datetime) -> None:
        services.pending_pods_observe(pods=pods, now=at)

    check_cycle(r, slack, stuck, lambda at: services.pending_pods_observe(pods=pods[:1], now=at))
    details = slack.requests[0]["json"]["blocks"][3]["text"]["text"]
    assert "3 × nodepool default: limit cpu=100 would be exceeded (in use 100)" in details
    assert "shop/web-0 — 5 min — nodepool default: limit cpu=100" in details


def test_spot_interruptions(channel: Channel, slack: SlackDouble) -> None:
    r = rule(channel, AlertRule.INTERRUPTIONS, "2")

    def many(at: datetime) -> None:
        for i in range(3):
            Decision.objects.create(at=at - timedelta(seconds=i), kind=Decision.INTERRUPTION, why="spot reclaim")

    check_cycle(r, slack, many, lambda at: Decision.objects.filter(kind=Decision.INTERRUPTION).delete())


def test_stranded_savings(channel: Channel, slack: SlackDouble) -> None:
    from packing.disruption.model import NotDisrupted, Report

    r = rule(channel, AlertRule.STRANDED, "20", window_minutes=120)
    blocked = Report(not_disrupted=[NotDisrupted("ip-10-0-1-5", "pdb default/web blocks eviction of default/web-2",
                                                 "pdb", 1.5)])
    services.stranded_moves_record(report=blocked, nodepools={}, now=NOW - timedelta(hours=3))

    def on(at: datetime) -> None:
        services.stranded_moves_record(report=blocked, nodepools={}, now=at)

    def off(at: datetime) -> None:
        services.stranded_moves_record(report=Report(), nodepools={}, now=at)

    check_cycle(r, slack, on, off)
    assert "pdb default/web blocks eviction of default/web-2" in slack.requests[0]["json"]["blocks"][3]["text"]["text"]


def test_evaluate_all_task_runs_every_rule(channel: Channel, slack: SlackDouble) -> None:
    from console.alerts.tasks import evaluate_alerts

    rule(channel, AlertRule.BUDGET, "0.5", metric="cost_per_hour")
    broken = rule(channel, AlertRule.BUDGET, "1", metric="cost_per_hour")
    AlertRule.objects.filter(pk=broken.pk).update(kind="nonsense")  # one bad rule must not stop the rest
    put(datetime.now(UTC) - timedelta(seconds=30), cost_per_hour=Decimal(2))
    assert evaluate_alerts.delay().get(timeout=10) == 1
    assert len(slack.requests) == 1


def test_unreadable_cluster_skips_stuck_rules_only(channel: Channel, slack: SlackDouble) -> None:
    stuck = rule(channel, AlertRule.STUCK, "1", window_minutes=10)
    rule(channel, AlertRule.BUDGET, "0.5", metric="cost_per_hour")
    put(NOW, cost_per_hour=Decimal(2))
    old = [{"metadata": {"name": "web-1", "creationTimestamp": (NOW - timedelta(hours=1)).isoformat()}}]
    assert services.evaluate_all(NOW, sleep=lambda s: None, pending=lambda: old) == 2     # both fire
    calls: list[int] = []

    def unreachable() -> list[dict[str, Any]]:
        calls.append(1)
        raise RuntimeError("cluster unreachable")

    # Unknown is not "no stuck pods": the stuck rule neither resolves nor repeats; the budget rule still runs.
    assert services.evaluate_all(NOW + timedelta(hours=2), sleep=lambda s: None, pending=unreachable) == 1
    assert calls == [1]
    assert AlertState.objects.get(rule=stuck).firing
    assert [e.kind for e in AlertEvent.objects.filter(rule=stuck)] == ["fired"]
