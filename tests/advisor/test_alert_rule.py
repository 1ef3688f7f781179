"""The "new advisor finding" alert rule: one message per new finding (code and objects), sent at once even
inside the cooldown; the existing repeat-after-cooldown and resolve behaviour otherwise."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from console.advisor import selectors as advisor_selectors
from console.alerts import services
from console.alerts.models import AlertEvent, AlertRule, Channel
from packing.api import Advice, Finding, Severity

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def finding(code: str, pool: str) -> Finding:
    return Finding(code, Severity.WARNING, f"{code} on {pool}", (f"nodepool/{pool}",))


class Findings:
    def __init__(self) -> None:
        self.now: list[Finding] = []

    def __call__(self, **_: Any) -> Advice:
        return Advice(list(self.now))


@pytest.fixture
def found(monkeypatch: Any) -> Findings:
    source = Findings()
    monkeypatch.setattr(advisor_selectors, "current_advice", source)
    return source


def rule(channel: Channel, nodepool: str = "") -> AlertRule:
    return AlertRule.objects.create(name="advisor", kind=AlertRule.ADVISOR, nodepool=nodepool,
                                    threshold=Decimal(1), window_minutes=10, cooldown_minutes=60, channel=channel)


def kinds(r: AlertRule) -> list[str]:
    return list(AlertEvent.objects.filter(rule=r).order_by("at", "id").values_list("kind", flat=True))


def test_fires_once_per_new_finding_and_resolves(channel: Channel, found: Findings, slack: Any) -> None:
    r = rule(channel)
    assert services.process_rule(r, NOW) is None                     # nothing found: nothing sent
    found.now = [finding("LM111", "default")]
    assert services.process_rule(r, NOW).kind == AlertEvent.FIRED
    assert services.process_rule(r, NOW + timedelta(minutes=1)) is None   # the same finding: within cooldown
    found.now.append(finding("LM151", "default"))
    event = services.process_rule(r, NOW + timedelta(minutes=2))          # a new one: at once
    assert event.kind == AlertEvent.REPEATED and "1 new: LM151 nodepool/default" in event.summary
    assert services.process_rule(r, NOW + timedelta(minutes=3)) is None
    assert services.process_rule(r, NOW + timedelta(minutes=63)).kind == AlertEvent.REPEATED   # cooldown over
    found.now = []
    assert services.process_rule(r, NOW + timedelta(minutes=64)).kind == AlertEvent.RESOLVED
    found.now = [finding("LM111", "default")]                             # back again: new again
    assert services.process_rule(r, NOW + timedelta(minutes=65)).kind == AlertEvent.FIRED
    assert kinds(r) == ["fired", "repeated", "repeated", "resolved", "fired"]
    assert len(slack.requests) == 5


def test_a_pool_scoped_rule_counts_that_pool_only(channel: Channel, found: Findings) -> None:
    r = rule(channel, nodepool="")
    r.nodepool = "batch"
    found.now = [finding("LM111", "default")]
    assert not services.evaluate_rule(r, NOW).firing
    found.now.append(finding("LM112", "batch"))
    ev = services.evaluate_rule(r, NOW)
    assert ev.firing and ev.value == "1 finding"


def test_the_kind_is_offered_and_shown() -> None:
    assert (AlertRule.ADVISOR, "New advisor finding") in AlertRule.KINDS
    r = AlertRule(kind=AlertRule.ADVISOR, threshold=Decimal(1))
    assert r.threshold_display == "≥ 1 finding, each new one sent"


def test_end_to_end_over_the_simulated_cluster(world: Any, channel: Channel, slack: Any) -> None:
    r = rule(channel)
    assert services.evaluate_all(NOW) == 1
    event = AlertEvent.objects.get(rule=r)
    assert event.kind == AlertEvent.FIRED and "LM131 nodepool/general" in event.summary
    assert services.evaluate_all(NOW + timedelta(minutes=1)) == 0   # nothing new, within the cooldown
