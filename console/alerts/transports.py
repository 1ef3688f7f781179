"""Delivery: one small class per channel kind behind one notify(), as healthchecks does.

Transports classify failures: PermanentError (the channel is broken until a human fixes it —
the caller disables it) or TransientError (try again). Retrying, Retry-After and backoff live in
``deliver`` so every transport gets the same behaviour.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.webhook import WebhookClient

from console.alerts.models import Channel

log = logging.getLogger(__name__)

# slack_sdk logs request URLs and headers at DEBUG: a webhook URL *is* its secret, so the SDK gets
# a logger of its own that never emits below WARNING, whatever the root level is.
_sdk_log = logging.getLogger("console.alerts.slack_sdk")
_sdk_log.setLevel(logging.WARNING)

# Slack's answers meaning "this channel will not work until someone changes it".
PERMANENT_ERRORS = {
    "invalid_token", "not_authed", "account_inactive", "token_revoked", "token_expired",
    "channel_not_found", "not_in_channel", "is_archived", "channel_is_archived", "no_service",
    "no_service_id", "no_team", "team_disabled", "invalid_auth", "missing_scope", "action_prohibited",
    "posting_to_general_channel_denied", "no_active_hooks", "user_not_found",
}
PERMANENT_STATUS = {400, 401, 403, 404, 410}
MAX_ATTEMPTS = 4
MAX_RETRY_AFTER = 60.0


class TransportError(Exception):
    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PermanentError(TransportError):
    pass


class TransientError(TransportError):
    pass


def _retry_after(headers: Any) -> float | None:
    for key, value in dict(headers or {}).items():
        if key.lower() == "retry-after":
            raw = value[0] if isinstance(value, list) else value
            try:
                return float(raw)
            except (TypeError, ValueError):
                return None
    return None


def _classify(status: int, error: str, headers: Any) -> TransportError:
    if status == 429 or error in {"ratelimited", "rate_limited"}:
        return TransientError("rate limited by Slack", retry_after=_retry_after(headers) or 1.0)
    if error in PERMANENT_ERRORS or (status in PERMANENT_STATUS and status != 429):
        return PermanentError(f"Slack refused: HTTP {status} {error}".strip())
    return TransientError(f"Slack error: HTTP {status} {error}".strip())


class Transport:
    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    def secret(self) -> str:
        try:
            return self.channel.get_secret()
        except ValueError as exc:  # undecryptable: nothing to retry until someone re-enters it
            raise PermanentError(str(exc)) from None

    def notify(self, text: str, blocks: list[dict[str, Any]]) -> None:
        raise NotImplementedError


class WebhookTransport(Transport):
    def notify(self, text: str, blocks: list[dict[str, Any]]) -> None:
        url = self.secret()
        if not url:
            raise PermanentError("no webhook URL configured")
        # retry_handlers=[]: retries are ours, so Retry-After and the attempt budget stay in one place.
        client = WebhookClient(url=url, timeout=10, logger=_sdk_log, retry_handlers=[])
        try:
            resp = client.send(text=text, blocks=blocks)
        except OSError as exc:
            raise TransientError(f"connection failed: {type(exc).__name__}") from None
        if resp.status_code != 200:
            raise _classify(resp.status_code, (resp.body or "").strip()[:100], resp.headers)


class BotTransport(Transport):
    def notify(self, text: str, blocks: list[dict[str, Any]]) -> None:
        token = self.secret()
        if not token:
            raise PermanentError("no bot token configured")
        if not self.channel.slack_channel:
            raise PermanentError("no Slack channel id configured")
        base = self.channel.api_base_url or "https://slack.com/api/"
        # slack_sdk urljoins method names onto base_url: without the trailing slash "/api" is lost.
        if not base.endswith("/"):
            base += "/"
        client = WebClient(token=token, base_url=base, timeout=10, logger=_sdk_log, retry_handlers=[])
        try:
            client.chat_postMessage(channel=self.channel.slack_channel, text=text, blocks=blocks)
        except SlackApiError as exc:
            resp = exc.response
            raise _classify(resp.status_code, str(resp.get("error", "") or ""), resp.headers) from None
        except OSError as exc:
            raise TransientError(f"connection failed: {type(exc).__name__}") from None


TRANSPORTS: dict[str, type[Transport]] = {Channel.WEBHOOK: WebhookTransport, Channel.BOT: BotTransport}


def deliver(channel: Channel, text: str, blocks: list[dict[str, Any]], *,
            sleep: Callable[[float], None] = time.sleep) -> tuple[bool, str]:
    """Send with retries; disable the channel on a permanent error. Returns (delivered, error)."""
    if channel.disabled:
        return False, f"channel disabled: {channel.disabled_reason}"
    transport = TRANSPORTS[channel.kind](channel)
    error = ""
    for attempt in range(MAX_ATTEMPTS):
        try:
            transport.notify(text, blocks)
            return True, ""
        except PermanentError as exc:
            error = str(exc)
            channel.disabled, channel.disabled_reason = True, error[:300]
            channel.save(update_fields=["disabled", "disabled_reason"])
            log.warning("alerts: channel %s disabled: %s", channel.name, error)
            return False, error
        except TransientError as exc:
            error = str(exc)
            if attempt == MAX_ATTEMPTS - 1:
                break
            delay = min(exc.retry_after, MAX_RETRY_AFTER) if exc.retry_after else 2.0 ** attempt
            log.info("alerts: channel %s attempt %d failed (%s); retrying in %.1fs",
                     channel.name, attempt + 1, error, delay)
            sleep(delay)
    log.warning("alerts: channel %s gave up after %d attempts: %s", channel.name, MAX_ATTEMPTS, error)
    return False, error
