"""Delivery: one small class per channel kind behind one notify(), as healthchecks does.

Transports classify failures: PermanentError (the channel is broken until a human fixes it —
the caller disables it) or TransientError (try again). Retrying, Retry-After and backoff live in
``deliver`` so every transport gets the same behaviour.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.webhook import WebhookClient

from console.alerts import destinations
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
MAX_ERROR = 300         # AlertEvent.delivery_error and Channel.disabled_reason hold this many characters
_ERROR_CODE = re.compile(r"[a-z0-9_]{1,64}")


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


def error_code(answer: Any) -> str:
    """Slack's error code from an answer ("invalid_token"), or "" for anything else: a foreign or
    broken server's body is never quoted into pages, logs or the channel's disabled reason."""
    text = answer.strip() if isinstance(answer, str) else ""
    return text if _ERROR_CODE.fullmatch(text) else ""


def cut(text: str, limit: int = MAX_ERROR) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _classify(status: int, error: str, headers: Any) -> TransportError:
    error = error_code(error)
    if status == 429 or error in {"ratelimited", "rate_limited"}:
        wait = _retry_after(headers) or 1.0
        return TransientError(f"rate limited by Slack (Retry-After {wait:g} s)", retry_after=wait)
    if error in PERMANENT_ERRORS or (status in PERMANENT_STATUS and status != 429):
        return PermanentError(f"Slack refused: HTTP {status} {error}".strip())
    return TransientError(f"Slack error: HTTP {status} {error}".strip())


class Transport:
    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    def secret(self) -> str:
        env = self.channel.secret_env
        if env and (problem := destinations.secret_env_problem(env)):
            raise PermanentError(f"secret_env {env[:100]} refused: {problem}")
        try:
            return self.channel.get_secret()
        except ValueError as exc:  # undecryptable: nothing to retry until someone re-enters it
            raise PermanentError(str(exc)) from None

    @staticmethod
    def check_url(url: str, purpose: str) -> None:
        """Send-time check of the destination (channels saved before the rules existed)."""
        if problem := destinations.url_problem(url, purpose=purpose):
            raise PermanentError(problem)

    def notify(self, text: str, blocks: list[dict[str, Any]]) -> None:
        raise NotImplementedError


class WebhookTransport(Transport):
    def notify(self, text: str, blocks: list[dict[str, Any]]) -> None:
        url = self.secret()
        if not url:
            raise PermanentError("no webhook URL configured")
        self.check_url(url, "webhook")
        # retry_handlers=[]: retries are ours, so Retry-After and the attempt budget stay in one place.
        client = WebhookClient(url=url, timeout=10, logger=_sdk_log, retry_handlers=[])
        try:
            resp = client.send(text=text, blocks=blocks)
        except OSError as exc:
            raise TransientError(f"connection failed: {type(exc).__name__}") from None
        except Exception as exc:  # noqa: BLE001 - the SDK's own errors may quote the URL: name the type only
            raise TransientError(f"webhook request failed: {type(exc).__name__}") from None
        if resp.status_code != 200:
            raise _classify(resp.status_code, resp.body or "", resp.headers)


class BotTransport(Transport):
    def notify(self, text: str, blocks: list[dict[str, Any]]) -> None:
        token = self.secret()
        if not token:
            raise PermanentError("no bot token configured")
        if not self.channel.slack_channel:
            raise PermanentError("no Slack channel id configured")
        base = self.channel.api_base_url or "https://slack.com/api/"
        self.check_url(base, "api")
        # slack_sdk urljoins method names onto base_url: without the trailing slash "/api" is lost.
        if not base.endswith("/"):
            base += "/"
        client = WebClient(token=token, base_url=base, timeout=10, logger=_sdk_log, retry_handlers=[])
        try:
            client.chat_postMessage(channel=self.channel.slack_channel, text=text, blocks=blocks)
        except SlackApiError as exc:
            resp = exc.response
            answer = resp.data if isinstance(resp.data, dict) else {}
            raise _classify(resp.status_code, str(answer.get("error", "") or ""), resp.headers) from None
        except OSError as exc:
            raise TransientError(f"connection failed: {type(exc).__name__}") from None
        except Exception as exc:  # noqa: BLE001 - a body that is not Slack's JSON, and the like
            raise TransientError(f"Slack API request failed: {type(exc).__name__}") from None


TRANSPORTS: dict[str, type[Transport]] = {Channel.WEBHOOK: WebhookTransport, Channel.BOT: BotTransport}


def deliver(channel: Channel, text: str, blocks: list[dict[str, Any]], *,
            sleep: Callable[[float], None] = time.sleep, attempts: int = MAX_ATTEMPTS) -> tuple[bool, str]:
    """Send with retries; disable the channel on a permanent error. Returns (delivered, error), the
    error at most MAX_ERROR characters. ``attempts=1`` for a web request: retries, and their
    Retry-After waits, belong in the Celery task, never in a page that someone is waiting for."""
    if channel.disabled:
        return False, cut(f"channel disabled: {channel.disabled_reason}")
    transport = TRANSPORTS[channel.kind](channel)
    error = ""
    attempts = max(1, attempts)
    for attempt in range(attempts):
        try:
            transport.notify(text, blocks)
            return True, ""
        except PermanentError as exc:
            error = cut(str(exc))
            channel.disabled, channel.disabled_reason = True, error
            channel.save(update_fields=["disabled", "disabled_reason"])
            log.warning("alerts: channel %s disabled: %s", channel.name, error)
            return False, error
        except TransientError as exc:
            error = cut(str(exc))
            if attempt == attempts - 1:
                break
            delay = min(exc.retry_after, MAX_RETRY_AFTER) if exc.retry_after else 2.0 ** attempt
            log.info("alerts: channel %s attempt %d failed (%s); retrying in %.1fs",
                     channel.name, attempt + 1, error, delay)
            sleep(delay)
    log.warning("alerts: channel %s gave up after %d attempt(s): %s", channel.name, attempts, error)
    return False, error
