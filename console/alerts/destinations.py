"""Where a Slack channel may send, and which environment variables it may read its secret from.

An operator configures channels, but must never be able to make the server send its own secrets
(SECRET_KEY, DATABASE_URL…) to a URL of their choosing. So:

- ``secret_env`` names only variables under ``LOADMASTER_SLACK_`` (docs/alerts.md);
- webhooks go to hooks.slack.com and the Web API to slack.com, over https, unless the host is listed
  in LOADMASTER_SLACK_ALLOWED_HOSTS (a proxy or a test double; http allowed there).

The form and the API refuse anything else at the field; the transports check again at send time, for
channels saved before these rules existed. Messages never quote a webhook URL (it is the secret).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from django.conf import settings

SECRET_ENV_PREFIX = "LOADMASTER_SLACK_"
_ENV_NAME = re.compile(rf"{SECRET_ENV_PREFIX}[A-Z0-9_]+")
SLACK_HOSTS = {"webhook": "hooks.slack.com", "api": "slack.com"}


def secret_env_problem(name: str) -> str | None:
    if _ENV_NAME.fullmatch(name or ""):
        return None
    return (f"Only environment variables whose names start with {SECRET_ENV_PREFIX} (capitals, digits and _) "
            "may hold a Slack secret.")


def extra_hosts() -> set[str]:
    return {str(h).strip().lower() for h in getattr(settings, "LOADMASTER_SLACK_ALLOWED_HOSTS", []) if str(h).strip()}


def url_problem(url: str, *, purpose: str) -> str | None:
    """Why ``url`` may not be used as a webhook URL (purpose "webhook") or Web API base URL ("api");
    None when it may. The message never repeats the URL."""
    what = "A webhook URL" if purpose == "webhook" else "The API base URL"
    slack = SLACK_HOSTS[purpose]
    if any(c.isspace() or ord(c) < 32 for c in url):
        return f"{what} must not contain spaces or control characters."
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        return f"{what} is not a valid URL."
    if parts.scheme not in ("https", "http") or not host:
        return f"{what} starts with https:// and names a host (https://{slack}/…)."
    if parts.username is not None or parts.password is not None:
        return f"{what} must not carry a user name or password."
    listed = extra_hosts()
    if host == slack and host not in listed:
        if parts.scheme != "https" or port not in (None, 443):
            return f"{what} for {slack} uses https on the standard port."
        return None
    if host in listed:
        return None
    allowed = ", ".join(sorted({slack, *listed}))
    return (f"{what} must point at {allowed}; other hosts need LOADMASTER_SLACK_ALLOWED_HOSTS "
            "(a setting of the server).")
