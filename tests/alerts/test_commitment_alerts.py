"""The commitment rules over the metrics loop's CommitmentSample rows: "commitment under-utilized" (unused $/h above
the threshold in every minute of a covered window, unknown prices named and not counted) and "reservation idle" (a
reservation with more free instances than the threshold for the whole window); both through the
fire/repeat/resolve lifecycle; both the whole cluster's."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

import pytest

from console.alerts import services
from console.alerts.models import AlertRule, Channel
from console.alerts.validation import rule_problems
from console.fleet.models import NodePool
from console.telemetry.models import CommitmentSample
from tests.alerts.conftest import SlackDouble
from tests.alerts.test_lifecycle import NOW, check_cycle, rule

pytestmark = pytest.mark.django_db


def _sp(at: datetime, unused: str, *, minutes: int = 1) -> None:
    for i in range(minutes):
        CommitmentSample.objects.update_or_create(
            at=at - timedelta(minutes=i), kind=CommitmentSample.COMPUTE_SAVINGS_PLAN, name="sp",
            defaults={"unit": "$/h", "total": 10, "used": 10 - float(unused), "unused_per_hour": Decimal(unused)})


def _block(at: datetime, free: int, *, minutes: int = 1, name: str = "cr-block") -> None:
    for i in range(minutes):
        CommitmentSample.objects.update_or_create(
            at=at - timedelta(minutes=i), kind=CommitmentSample.CAPACITY_BLOCK, name=name,
            defaults={"unit": "instances", "total": 4, "used": 4 - free, "unused_per_hour": None})


def test_under_utilized_fires_only_when_every_minute_of_a_covered_window_is_above(channel: Channel) -> None:
    r = rule(channel, AlertRule.COMMITMENT_UNDER_UTILIZED, "2", window_minutes=10)
    _sp(NOW, "3", minutes=5)
    ev = services.evaluate_rule(r, NOW)
    assert not ev.firing and "do not cover the window" in ev.details[-1]   # five minutes of a ten-minute window
    _sp(NOW, "3", minutes=11)
    ev = services.evaluate_rule(r, NOW)
    assert ev.firing and ev.value == "$3.00/h unused now, at least $3.00/h in the window"
    _block(NOW, 2)                                   # an unused part of unknown price: named, not counted
    ev = services.evaluate_rule(r, NOW)
    assert ev.firing and ev.value.startswith("$3.00/h")
    assert any("unknown (not counted): cr-block" in d for d in ev.details)
    _sp(NOW - timedelta(minutes=4), "1")              # one minute at or under the threshold in the window
    assert not services.evaluate_rule(r, NOW).firing
    assert r.threshold_display == "> $2.00/h of commitment unused"


def test_under_utilized_lifecycle(channel: Channel, slack: SlackDouble) -> None:
    r = rule(channel, AlertRule.COMMITMENT_UNDER_UTILIZED, "1", window_minutes=10)
    check_cycle(r, slack, lambda at: _sp(at, "5", minutes=11), lambda at: _sp(at, "0"))
    assert "/dashboards/commitments/" in slack.requests[0]["json"]["text"] + str(slack.requests[0]["json"]["blocks"])


def test_reservation_idle_fires_for_a_reservation_free_for_the_whole_window(channel: Channel) -> None:
    r = rule(channel, AlertRule.RESERVATION_IDLE, "0", window_minutes=30)
    _block(NOW, 2, minutes=31)
    _block(NOW, 0, minutes=31, name="cr-busy")
    ev = services.evaluate_rule(r, NOW)
    assert ev.firing and ev.value == "1 reservation idle of 2" and ev.change == "cr-block"
    assert ev.details == ["cr-block (Capacity Block): 2 instances free of 4 for the whole window, at least "
                          "2 instances; price unknown"]
    assert not services.evaluate_rule(rule(channel, AlertRule.RESERVATION_IDLE, "2", window_minutes=30), NOW).firing
    _block(NOW - timedelta(minutes=20), 0)           # used up for a minute: not idle for the whole window
    assert not services.evaluate_rule(r, NOW).firing
    assert r.threshold_display == "> 0 free instances in a reservation"


def test_reservation_idle_lifecycle(channel: Channel, slack: SlackDouble) -> None:
    r = rule(channel, AlertRule.RESERVATION_IDLE, "0", window_minutes=10)
    check_cycle(r, slack, lambda at: _block(at, 1, minutes=11), lambda at: _block(at, 0))


@pytest.mark.parametrize("kind", [AlertRule.COMMITMENT_UNDER_UTILIZED, AlertRule.RESERVATION_IDLE])
def test_the_commitment_rules_are_the_whole_clusters_and_need_a_window(channel: Channel, kind: str) -> None:
    NodePool.objects.create(name="general", node_class_name="default")
    problems = rule_problems(AlertRule(name="c", kind=kind, nodepool="general", threshold=Decimal(1),
                                       window_minutes=0, channel=channel), stored_nodepool=None)
    assert "whole cluster" in problems["nodepool"][0] and "window_minutes" in problems
    assert not rule_problems(AlertRule(name="c", kind=kind, threshold=Decimal(1), window_minutes=10, channel=channel),
                             stored_nodepool=None)
