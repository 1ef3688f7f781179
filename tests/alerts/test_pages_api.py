"""Pages and API: viewers read, operators write, errors at the field, secrets never shown back."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.test import Client

from console.alerts.models import AlertEvent, AlertRule, Channel
from tests.alerts.conftest import SlackDouble

pytestmark = [pytest.mark.django_db]
TOKEN = "xoxb-9999-8888-topsecret-wxyz"


@pytest.fixture
def hook(slack: SlackDouble) -> Channel:
    ch = Channel(name="ops", kind=Channel.WEBHOOK)
    ch.set_secret(slack.webhook_url)
    ch.save()
    return ch


def secrets_absent(text: str, slack: SlackDouble) -> None:
    for secret in (slack.webhook_url, "hook-secret-XYZ123", TOKEN, "topsecret"):
        assert secret not in text


def test_operator_creates_channel_and_rule_via_pages(operator_client: Client, slack: SlackDouble,
                                                    caplog: Any) -> None:
    caplog.set_level(logging.DEBUG)
    resp = operator_client.post("/alerts/channels/new/", {"name": "ops", "kind": "webhook",
                                                          "secret": slack.webhook_url, "api_base_url": ""})
    assert resp.status_code == 302
    ch = Channel.objects.get(name="ops")
    assert slack.webhook_url not in ch.secret_encrypted and ch.get_secret() == slack.webhook_url
    resp = operator_client.post("/alerts/rules/new/", {
        "name": "pool budget", "kind": "budget", "nodepool": "", "metric": "cost_per_hour", "threshold": "10",
        "window_minutes": "5", "cooldown_minutes": "30", "channel": ch.pk, "enabled": "on"})
    assert resp.status_code == 302 and AlertRule.objects.count() == 1
    # The test button sends through slack_sdk to the double; nothing secret reaches the logs.
    resp = operator_client.post(f"/alerts/channels/{ch.pk}/test/", follow=True)
    assert "Test message sent to ops" in resp.content.decode()
    assert len(slack.requests) == 1
    for page in ("/alerts/channels/", f"/alerts/channels/{ch.pk}/", "/alerts/rules/", "/alerts/history/"):
        html = operator_client.get(page).content.decode()
        secrets_absent(html, slack)
    assert "…Z123" in operator_client.get("/alerts/channels/").content.decode()
    secrets_absent(caplog.text, slack)


def test_rule_form_errors_at_the_field_and_nothing_saved(operator_client: Client, hook: Channel) -> None:
    resp = operator_client.post("/alerts/rules/new/", {
        "name": "eff", "kind": "efficiency", "metric": "forecast", "threshold": "150",
        "window_minutes": "0", "cooldown_minutes": "30", "channel": hook.pk})
    assert resp.status_code == 200
    html = resp.content.decode()
    assert 'id="field-metric"' in html and "Efficiency rules watch CPU or memory." in html
    assert "A percentage between 0 and 100." in html and "nothing was saved" in html
    assert AlertRule.objects.count() == 0


def test_channel_form_errors_keep_stored_secret(operator_client: Client, hook: Channel,
                                                slack: SlackDouble) -> None:
    resp = operator_client.post(f"/alerts/channels/{hook.pk}/", {"name": "ops", "kind": "bot", "secret": "nope",
                                                                 "api_base_url": "https://slack.com/api"})
    html = resp.content.decode()
    assert resp.status_code == 200 and "A bot token starts with xoxb-." in html
    assert "needs a Slack channel id" in html and "Must end with" in html
    hook.refresh_from_db()
    assert hook.kind == "webhook" and hook.get_secret() == slack.webhook_url
    # Blank secret on a valid edit keeps the old one.
    operator_client.post(f"/alerts/channels/{hook.pk}/", {"name": "ops-renamed", "kind": "webhook", "secret": ""})
    hook.refresh_from_db()
    assert hook.name == "ops-renamed" and hook.get_secret() == slack.webhook_url


def test_viewer_reads_but_cannot_write(viewer_client: Client, hook: Channel) -> None:
    AlertEvent.objects.create(channel=hook, kind="test", delivered=False, delivery_error="HTTP 404 no_service")
    Channel.objects.filter(pk=hook.pk).update(disabled=True, disabled_reason="Slack refused: HTTP 404 no_service")
    html = viewer_client.get("/alerts/channels/").content.decode()
    assert "Slack refused: HTTP 404 no_service" in html and "Send test message" not in html
    assert "HTTP 404 no_service" in viewer_client.get("/alerts/history/").content.decode()
    assert viewer_client.get("/alerts/channels/new/").status_code == 403
    assert viewer_client.post(f"/alerts/channels/{hook.pk}/test/").status_code == 403
    assert viewer_client.post(f"/alerts/channels/{hook.pk}/delete/").status_code == 403
    assert Channel.objects.filter(pk=hook.pk).exists()


def test_anonymous_is_sent_to_login() -> None:
    resp = Client().get("/alerts/rules/")
    assert resp.status_code == 302 and "/accounts/login/" in resp["Location"]


def test_api_secrets_are_write_only(operator_client: Client, viewer_client: Client, slack: SlackDouble,
                                    caplog: Any) -> None:
    caplog.set_level(logging.DEBUG)
    resp = operator_client.post("/api/alerts/channels/", {"name": "bot", "kind": "bot", "secret": TOKEN,
                                                          "slack_channel": "C1", "api_base_url": slack.api_base},
                                content_type="application/json")
    assert resp.status_code == 201, resp.content
    body = resp.content.decode()
    secrets_absent(body, slack)
    assert resp.json()["masked_secret"] == "…wxyz" and "secret" not in resp.json()
    ch_id = resp.json()["id"]
    for client in (operator_client, viewer_client):
        secrets_absent(client.get("/api/alerts/channels/").content.decode(), slack)
        secrets_absent(client.get(f"/api/alerts/channels/{ch_id}/").content.decode(), slack)
    assert Channel.objects.get(pk=ch_id).get_secret() == TOKEN
    # Validation shared with the form; viewers may not write.
    bad = operator_client.post("/api/alerts/rules/", {"name": "r", "kind": "efficiency", "metric": "cpu",
                                                      "threshold": "500", "channel": ch_id},
                               content_type="application/json")
    assert bad.status_code == 400 and "threshold" in bad.json()
    good = operator_client.post("/api/alerts/rules/", {"name": "r", "kind": "stuck_pods", "threshold": "1",
                                                       "window_minutes": 5, "channel": ch_id},
                                content_type="application/json")
    assert good.status_code == 201, good.content
    listing = viewer_client.get("/api/alerts/rules/").json()
    rows = listing["results"] if isinstance(listing, dict) else listing  # paginated or not
    assert [r["name"] for r in rows] == ["r"]
    assert viewer_client.post("/api/alerts/rules/", {"name": "x"}, content_type="application/json").status_code == 403
    assert viewer_client.delete(f"/api/alerts/channels/{ch_id}/").status_code == 403
    # A channel still used by a rule is refused, not a 500.
    assert operator_client.delete(f"/api/alerts/channels/{ch_id}/").status_code == 409
    patched = operator_client.patch(f"/api/alerts/rules/{good.json()['id']}/", {"threshold": "3"},
                                    content_type="application/json")
    assert patched.status_code == 200 and patched.json()["threshold"].startswith("3")
    secrets_absent(caplog.text, slack)


def test_channel_in_use_is_not_deleted(operator_client: Client, hook: Channel) -> None:
    AlertRule.objects.create(name="r", kind="interruptions", threshold=1, channel=hook)
    resp = operator_client.post(f"/alerts/channels/{hook.pk}/delete/", follow=True)
    assert "is used by rules" in resp.content.decode() and Channel.objects.filter(pk=hook.pk).exists()


def test_rule_edit_and_delete(operator_client: Client, viewer_client: Client, hook: Channel) -> None:
    r = AlertRule.objects.create(name="r", kind="interruptions", threshold=1, channel=hook)
    assert viewer_client.post(f"/alerts/rules/{r.pk}/delete/").status_code == 403
    assert "r" in viewer_client.get("/alerts/rules/").content.decode()
    assert operator_client.get(f"/alerts/rules/{r.pk}/").status_code == 200
    assert operator_client.post(f"/alerts/rules/{r.pk}/delete/").status_code == 302
    assert not AlertRule.objects.exists()
