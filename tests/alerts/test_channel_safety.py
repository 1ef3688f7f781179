"""A channel must not be able to send the server's secrets anywhere (issue 14, items 12 and 21):
env vars only under LOADMASTER_SLACK_, Slack's hosts only (plus LOADMASTER_SLACK_ALLOWED_HOSTS),
checked at the field and again at send time; foreign bodies and secrets never echoed or logged;
the test button answers at once; errors fit their columns."""

from __future__ import annotations

import logging
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from console.alerts import messages, services
from console.alerts.destinations import url_problem
from console.alerts.models import AlertEvent, AlertRule, Channel
from console.alerts.transports import MAX_ERROR, deliver
from console.fleet.models import NodePool
from console.telemetry.models import MetricSample
from tests.alerts.conftest import SlackDouble
from tests.console_pages import nodeclass, pool  # noqa: F401

pytestmark = pytest.mark.django_db
TOKEN = "xoxb-1111-2222-secret-token-abcd"


def no_sleep(seconds: float) -> None:
    pytest.fail(f"the web request slept {seconds} s")


def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


# --- at the field ---------------------------------------------------------------------------------

@pytest.mark.parametrize("env", ["SECRET_KEY", "DATABASE_URL", "LOADMASTER_ENCRYPTION_KEY", "loadmaster_slack_x",
                                 "LOADMASTER_SLACK_"])
def test_secret_env_outside_the_prefix_is_refused(operator_client: Client, operator: Any, env: str) -> None:
    page = operator_client.post("/alerts/channels/new/", {"name": "x", "kind": "bot", "secret_env": env,
                                                          "slack_channel": "C1", "api_base_url": ""})
    assert page.status_code == 200 and "LOADMASTER_SLACK_" in page.content.decode()
    answer = api(operator).post("/api/alerts/channels/", {"name": "x", "kind": "bot", "secret_env": env,
                                                          "slack_channel": "C1"}, format="json")
    assert answer.status_code == 400 and "LOADMASTER_SLACK_" in str(answer.json()["secret_env"])
    assert not Channel.objects.exists()


@pytest.mark.parametrize(("purpose", "url", "ok"), [
    ("webhook", "https://hooks.slack.com/services/T/B/x", True),
    ("webhook", "http://hooks.slack.com/services/T/B/x", False),        # Slack over https only
    ("webhook", "https://hooks.slack.com:8443/services/T/B/x", False),
    ("webhook", "https://evil.example/services/T/B/x", False),
    ("webhook", "https://hooks.slack.com.evil.example/x", False),
    ("webhook", "https://user:pw@hooks.slack.com/x", False),
    ("webhook", "hooks.slack.com/services/T/B/x", False),                # scheme-less
    ("webhook", "http://127.0.0.1:9/services/x", True),                  # tests/settings.py allows it
    ("api", "https://slack.com/api/", True),
    ("api", "https://attacker.example/api/", False),
    ("api", "https://hooks.slack.com/api/", False),
    ("api", "ftp://slack.com/api/", False),
])
def test_url_rules(purpose: str, url: str, ok: bool) -> None:
    problem = url_problem(url, purpose=purpose)
    assert (problem is None) == ok, problem
    if problem:
        assert url not in problem and "/services/" not in problem   # a webhook URL is the secret


def test_foreign_hosts_refused_at_the_field(operator_client: Client, operator: Any) -> None:
    page = operator_client.post("/alerts/channels/new/", {
        "name": "x", "kind": "bot", "secret": TOKEN, "slack_channel": "C1",
        "api_base_url": "https://attacker.example/api/"})
    assert page.status_code == 200 and "must point at" in page.content.decode()
    assert "LOADMASTER_SLACK_ALLOWED_HOSTS" in page.content.decode()
    answer = api(operator).post("/api/alerts/channels/", {"name": "x", "kind": "webhook",
                                                          "secret": "https://attacker.example/hook"}, format="json")
    assert answer.status_code == 400 and "hooks.slack.com" in str(answer.json()["secret"])
    assert "attacker.example" not in str(answer.json())
    assert not Channel.objects.exists()


def test_env_var_holding_a_foreign_url_is_refused(operator_client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOADMASTER_SLACK_HOOK", "https://attacker.example/collect")
    page = operator_client.post("/alerts/channels/new/", {"name": "x", "kind": "webhook",
                                                          "secret_env": "LOADMASTER_SLACK_HOOK", "api_base_url": ""})
    assert page.status_code == 200 and "hooks.slack.com" in page.content.decode()
    assert not Channel.objects.exists()


# --- at send time: rows saved before the rules ----------------------------------------------------

def test_old_row_reading_secret_key_sends_nothing(slack: SlackDouble, caplog: Any) -> None:
    caplog.set_level(logging.DEBUG)
    ch = Channel.objects.create(name="old", kind=Channel.BOT, secret_env="SECRET_KEY", slack_channel="C1",
                                api_base_url=slack.api_base)
    event = services.send_test(ch, sleep=no_sleep)
    assert not event.delivered and "LOADMASTER_SLACK_" in event.delivery_error
    assert slack.requests == []
    ch.refresh_from_db()
    assert ch.disabled and "LOADMASTER_SLACK_" in ch.disabled_reason
    assert settings.SECRET_KEY not in caplog.text + event.delivery_error + ch.disabled_reason


def test_old_row_with_foreign_api_base_sends_nothing(slack: SlackDouble) -> None:
    # "localhost" reaches the double, but only 127.0.0.1 is allowed: the host name is what counts.
    ch = Channel(name="old", kind=Channel.BOT, slack_channel="C1", api_base_url=slack.api_base.replace(
        "127.0.0.1", "localhost"))
    ch.set_secret(TOKEN)
    ch.save()
    ok, error = deliver(ch, *messages.build(title="t", state="test", fields={}, details=[], nodepool="",
                                            at=ch.created_at, link="http://x/"), sleep=no_sleep)
    assert not ok and "must point at" in error and slack.requests == []


def test_scheme_less_webhook_is_never_logged(slack: SlackDouble, caplog: Any) -> None:
    caplog.set_level(logging.DEBUG)
    ch = Channel(name="old", kind=Channel.WEBHOOK)
    ch.set_secret("hooks.slack.com/services/T0/B0/SECRETVALUE42")
    ch.save()
    event = services.send_test(ch, sleep=no_sleep)
    ch.refresh_from_db()
    assert not event.delivered and ch.disabled
    assert "SECRETVALUE42" not in caplog.text + event.delivery_error + ch.disabled_reason


# --- answers from the other side ------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["webhook", "bot"])
def test_foreign_bodies_are_not_echoed(slack: SlackDouble, kind: str, operator_client: Client) -> None:
    ch = Channel(name="ch", kind=kind, slack_channel="C1" if kind == "bot" else "",
                 api_base_url=slack.api_base if kind == "bot" else "")
    ch.set_secret(slack.webhook_url if kind == "webhook" else TOKEN)
    ch.save()
    body: Any = "<h1>internal db password hunter2</h1>" if kind == "webhook" else {"ok": False,
                                                                                   "error": "hunter2 <b>x</b>"}
    slack.script = [(403, body, {})]
    response = operator_client.post(f"/alerts/channels/{ch.pk}/test/", follow=True)
    ch.refresh_from_db()
    assert "hunter2" not in response.content.decode() and "hunter2" not in ch.disabled_reason
    assert ch.disabled and "HTTP 403" in ch.disabled_reason


def test_bot_answer_that_is_not_json_is_a_failure_not_a_500(slack: SlackDouble, operator_client: Client) -> None:
    ch = Channel(name="ch", kind=Channel.BOT, slack_channel="C1", api_base_url=slack.api_base)
    ch.set_secret(TOKEN)
    ch.save()
    slack.script = [(200, "<html>not slack</html>", {})]
    response = operator_client.post(f"/alerts/channels/{ch.pk}/test/", follow=True)
    assert response.status_code == 200 and "failed" in response.content.decode()
    assert "not slack" not in response.content.decode()


def test_test_message_makes_one_attempt_and_answers_at_once(slack: SlackDouble, operator_client: Client) -> None:
    ch = Channel(name="ch", kind=Channel.WEBHOOK)
    ch.set_secret(slack.webhook_url)
    ch.save()
    slack.script = [(429, "rate_limited", {"Retry-After": "60"})]
    event = services.send_test(ch, sleep=no_sleep)
    assert not event.delivered and "Retry-After 60 s" in event.delivery_error and len(slack.requests) == 1
    slack.script = [(429, "rate_limited", {"Retry-After": "60"})]
    page = operator_client.post(f"/alerts/channels/{ch.pk}/test/", follow=True).content.decode()
    assert "rate limited by Slack" in page and len(slack.requests) == 2


def test_long_errors_fit_their_columns(slack: SlackDouble, channel: Channel) -> None:
    Channel.objects.filter(pk=channel.pk).update(disabled=True, disabled_reason="x" * 300)
    rule = AlertRule.objects.create(name="b", kind=AlertRule.BUDGET, metric="cost_per_hour", threshold=Decimal(-1),
                                    channel=channel)
    rule = AlertRule.objects.select_related("channel").get(pk=rule.pk)
    MetricSample.objects.create(at=timezone.now(), nodepool="", cost_per_hour=Decimal(1))
    event = services.process_rule(rule, timezone.now(), sleep=no_sleep)
    assert event is not None and not event.delivered
    assert len(event.delivery_error) <= MAX_ERROR == AlertEvent._meta.get_field("delivery_error").max_length


# --- rules ----------------------------------------------------------------------------------------

def test_rule_for_a_missing_nodepool_is_refused(operator_client: Client, operator: Any, channel: Channel,
                                                pool: NodePool) -> None:  # noqa: F811
    fields = {"name": "r", "kind": "budget", "metric": "cost_per_hour", "threshold": "10", "window_minutes": "5",
              "cooldown_minutes": "30", "channel": channel.pk, "enabled": "on"}
    page = operator_client.post("/alerts/rules/new/", {**fields, "nodepool": "no-such-pool"})
    assert page.status_code == 200 and "There is no NodePool named" in page.content.decode()
    answer = api(operator).post("/api/alerts/rules/", {**fields, "nodepool": "x y; DROP"}, format="json")
    assert answer.status_code == 400 and "nodepool" in answer.json()
    assert not AlertRule.objects.exists()
    assert operator_client.post("/alerts/rules/new/", {**fields, "nodepool": "general"}).status_code == 302


def test_thresholds_shown_with_units(operator_client: Client, channel: Channel) -> None:
    for name, kind, metric, threshold in [("a", "budget", "cost_per_hour", "12.5"), ("b", "spike", "", "20"),
                                          ("c", "efficiency", "cpu", "20.0000"), ("d", "stranded_savings", "", "5")]:
        AlertRule.objects.create(name=name, kind=kind, metric=metric, threshold=Decimal(threshold),
                                 window_minutes=15, channel=channel)
    html = operator_client.get("/alerts/rules/").content.decode()
    for text in ("over $12.50/h", "20 % above baseline", "CPU below 20 %", "≥ $5.00/day per move", "15 min",
                 "1 h"):
        assert text in html, text
    assert "20.0000" not in html


# --- messages -------------------------------------------------------------------------------------

def test_messages_name_the_cluster_and_say_the_header_once(settings: Any) -> None:
    settings.LOADMASTER_CLUSTER_NAME = "prod-eu"
    text, blocks = messages.build(title="Budget on general", summary="Budget: cost per hour over $10.00 on general",
                                  state="repeated", fields={"Current value": "$12.00/h"}, details=[],
                                  nodepool="general", at=datetime(2026, 1, 1), link="http://x/")
    header = blocks[0]["text"]["text"]
    assert "prod-eu" in header and "prod-eu" in text and "still firing" in header
    assert text.count(header) == 1
    assert all(header not in str(b) for b in blocks[1:])
    assert messages.problems(blocks) == []


def test_rule_whose_pool_was_deleted_can_still_be_edited(operator_client: Client, channel: Channel) -> None:
    rule = AlertRule.objects.create(name="r", kind=AlertRule.BUDGET, metric="cost_per_hour", threshold=Decimal(5),
                                    nodepool="gone", channel=channel)
    response = operator_client.post(f"/alerts/rules/{rule.pk}/", {
        "name": "r", "kind": "budget", "metric": "cost_per_hour", "threshold": "5", "window_minutes": "5",
        "cooldown_minutes": "30", "channel": channel.pk, "nodepool": "gone"})       # enabled off
    assert response.status_code == 302
    rule.refresh_from_db()
    assert not rule.enabled
