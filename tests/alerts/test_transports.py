"""Delivery against the local Slack double: Retry-After, backoff, permanent errors, Block Kit limits."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from console.alerts import messages, services
from console.alerts.models import Channel
from console.alerts.transports import MAX_ATTEMPTS, deliver
from tests.alerts.conftest import SlackDouble

pytestmark = pytest.mark.django_db
TOKEN = "xoxb-1111-2222-secret-token-abcd"


def webhook(slack: SlackDouble) -> Channel:
    ch = Channel(name="hook", kind=Channel.WEBHOOK)
    ch.set_secret(slack.webhook_url)
    ch.save()
    return ch


def bot(slack: SlackDouble) -> Channel:
    ch = Channel(name="bot", kind=Channel.BOT, slack_channel="C0123", api_base_url=slack.api_base)
    ch.set_secret(TOKEN)
    ch.save()
    return ch


def sample_message() -> tuple[str, list[dict]]:
    return messages.build(title="t", state="fired", fields={"a": "1"}, details=[], nodepool="",
                          at=datetime(2026, 11, 30, tzinfo=UTC), link="http://console.test/alerts/")


def test_bot_posts_with_token_to_base_url(slack: SlackDouble) -> None:
    ch = bot(slack)
    assert deliver(ch, *sample_message(), sleep=lambda s: None) == (True, "")
    req = slack.requests[0]
    assert req["path"] == "/api/chat.postMessage"
    assert req["headers"]["Authorization"] == f"Bearer {TOKEN}"
    assert req["json"]["channel"] == "C0123" and req["json"]["blocks"][0]["type"] == "header"


@pytest.mark.parametrize("kind", ["webhook", "bot"])
def test_429_honours_retry_after(slack: SlackDouble, kind: str) -> None:
    ch = webhook(slack) if kind == "webhook" else bot(slack)
    body = "rate_limited" if kind == "webhook" else {"ok": False, "error": "ratelimited"}
    slack.script = [(429, body, {"Retry-After": "7"})]
    slept: list[float] = []
    assert deliver(ch, *sample_message(), sleep=slept.append) == (True, "")
    assert slept == [7.0] and len(slack.requests) == 2


def test_transient_errors_back_off_then_give_up(slack: SlackDouble) -> None:
    ch = webhook(slack)
    slack.script = [(500, "boom", {})] * MAX_ATTEMPTS
    slept: list[float] = []
    ok, error = deliver(ch, *sample_message(), sleep=slept.append)
    assert not ok and "500" in error
    assert slept == [1.0, 2.0, 4.0]
    ch.refresh_from_db()
    assert not ch.disabled  # transient: the channel stays usable


def test_transient_then_success(slack: SlackDouble) -> None:
    ch = webhook(slack)
    slack.script = [(503, "unavailable", {})]
    assert deliver(ch, *sample_message(), sleep=lambda s: None) == (True, "")


@pytest.mark.parametrize(("kind", "status", "body", "reason"), [
    ("webhook", 404, "no_service", "no_service"),
    ("webhook", 403, "invalid_token", "invalid_token"),
    ("bot", 200, {"ok": False, "error": "invalid_auth"}, "invalid_auth"),
    ("bot", 200, {"ok": False, "error": "channel_not_found"}, "channel_not_found"),
    ("bot", 404, {"ok": False, "error": "invalid_token"}, "invalid_token"),
])
def test_permanent_error_disables_channel(slack: SlackDouble, kind: str, status: int, body: object,
                                          reason: str) -> None:
    ch = webhook(slack) if kind == "webhook" else bot(slack)
    slack.script = [(status, body, {})]
    ok, error = deliver(ch, *sample_message(), sleep=lambda s: pytest.fail("no retry on a permanent error"))
    assert not ok and reason in error
    ch.refresh_from_db()
    assert ch.disabled and reason in ch.disabled_reason
    # A disabled channel is not tried again until an operator tests or fixes it.
    assert deliver(ch, *sample_message())[0] is False and len(slack.requests) == 1


def test_send_test_re_enables_and_records(slack: SlackDouble) -> None:
    ch = webhook(slack)
    Channel.objects.filter(pk=ch.pk).update(disabled=True, disabled_reason="no_service")
    ch.refresh_from_db()
    event = services.send_test(ch, sleep=lambda s: None)
    assert event.delivered and event.kind == "test"
    ch.refresh_from_db()
    assert not ch.disabled
    assert messages.problems(slack.requests[0]["json"]["blocks"]) == []


def test_huge_messages_stay_within_block_kit_limits() -> None:
    text, blocks = messages.build(title="x" * 500, state="fired", fields={f"f{i}": "v" * 5000 for i in range(30)},
                                  details=["d" * 400] * 50, nodepool="p" * 63, at=datetime(2026, 1, 1, tzinfo=UTC),
                                  link="http://console.test/")
    assert messages.problems(blocks) == []
    assert len(blocks) <= 50 and len(blocks[0]["text"]["text"]) <= 150
    assert len(blocks[1]["fields"]) == 10 and all(len(f["text"]) <= 2000 for f in blocks[1]["fields"])
    assert len(blocks[2]["text"]["text"]) <= 3000 and text
    assert messages.problems([{"type": "header", "text": {"type": "plain_text", "text": "x" * 151}}])


def test_secret_from_env_var(slack: SlackDouble, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOADMASTER_SLACK_TEST_HOOK", slack.webhook_url)
    ch = Channel.objects.create(name="env", kind=Channel.WEBHOOK, secret_env="LOADMASTER_SLACK_TEST_HOOK")
    assert ch.masked_secret == "$LOADMASTER_SLACK_TEST_HOOK" and not ch.secret_encrypted
    assert deliver(ch, *sample_message(), sleep=lambda s: None) == (True, "")


def test_secret_encrypted_at_rest_and_key_change_disables(slack: SlackDouble, settings: object) -> None:
    ch = webhook(slack)
    raw = Channel.objects.values_list("secret_encrypted", flat=True).get(pk=ch.pk)
    assert slack.webhook_url not in raw and "hook-secret" not in raw
    settings.LOADMASTER_ENCRYPTION_KEY = "rotated-key"  # type: ignore[attr-defined]
    ok, error = deliver(ch, *sample_message(), sleep=lambda s: None)
    assert not ok and "cannot be decrypted" in error
    ch.refresh_from_db()
    assert ch.disabled and slack.requests == []
