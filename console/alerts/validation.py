"""The rules a Slack channel and an alert rule must pass before they are saved, as plain functions.

The services run them (then the model's own checks) on every write, so the pages and the API refuse
the same values with the same words at the same field. Each returns {field: [messages]}, in the order
the messages read best; an empty mapping means the object may be saved.
"""

from __future__ import annotations

import os

from console.alerts import destinations
from console.alerts.models import AlertRule, Channel
from console.fleet.models import NodePool

Problems = dict[str, list[str]]

# Rule kinds that need a window of at least a minute (an average, or how long something must have lasted).
WINDOWED_KINDS = (AlertRule.EFFICIENCY, AlertRule.STUCK, AlertRule.STRANDED, AlertRule.COMMITMENT_UNDER_UTILIZED,
                  AlertRule.RESERVATION_IDLE)
# Rule kinds of the whole cluster: commitments and reservations are not a NodePool's.
CLUSTER_KINDS = (AlertRule.COMMITMENT_UNDER_UTILIZED, AlertRule.RESERVATION_IDLE)


def _add(problems: Problems, field: str, message: str) -> None:
    problems.setdefault(field, []).append(message)


def _environ(name: str) -> str:
    # Only a name under the allowed prefix is read: never SECRET_KEY, DATABASE_URL…
    return os.environ.get(name, "") if name and not destinations.secret_env_problem(name) else ""


def channel_problems(channel: Channel, *, secret: str, had_secret: bool) -> Problems:
    """``channel`` holds the values to save; ``secret`` is a new webhook URL or bot token ("" keeps the
    stored one); ``had_secret``: the row already stores an encrypted secret."""
    problems: Problems = {}
    env, base = channel.secret_env, channel.api_base_url
    if env and (problem := destinations.secret_env_problem(env)):
        _add(problems, "secret_env", problem)
    if base and (problem := destinations.url_problem(base, purpose="api")):
        _add(problems, "api_base_url", problem)
    usable_env = "" if "secret_env" in problems else env
    if not secret and not usable_env and not had_secret and "secret_env" not in problems:
        _add(problems, "secret", "Give a webhook URL / token, or an env var name.")
    if channel.kind == Channel.WEBHOOK:
        if secret and (problem := destinations.url_problem(secret, purpose="webhook")):
            _add(problems, "secret", problem)
        # An env var set in this process is checked now; the send checks it again in any case.
        value = _environ(usable_env)
        if value and (problem := destinations.url_problem(value, purpose="webhook")):
            _add(problems, "secret_env", f"${usable_env}: {problem}")
    if channel.kind == Channel.BOT:
        if not channel.slack_channel:
            _add(problems, "slack_channel", "A bot channel needs a Slack channel id.")
        if secret and not secret.startswith("xox"):
            _add(problems, "secret", "A bot token starts with xoxb-.")
        if base and not base.endswith("/") and "api_base_url" not in problems:
            _add(problems, "api_base_url", "Must end with '/' (slack_sdk joins method names onto it).")
    return problems


def rule_problems(rule: AlertRule, *, stored_nodepool: str | None) -> Problems:
    """``rule`` holds the values to save; ``stored_nodepool``: the scope saved before (None for a new rule)."""
    problems: Problems = {}
    # An existing rule keeps a scope whose pool was deleted since (it can still be disabled or moved);
    # a new or changed scope must name a NodePool that exists.
    name = rule.nodepool
    if name and rule.kind in CLUSTER_KINDS:
        _add(problems, "nodepool", "Commitments and reservations are the whole cluster's: leave the NodePool empty.")
    elif name and name != stored_nodepool and not NodePool.objects.filter(name=name).exists():
        _add(problems, "nodepool", f"There is no NodePool named {name[:63]!r}; leave empty for the whole cluster.")
    kind, metric, threshold = rule.kind, rule.metric, rule.threshold
    if kind == AlertRule.BUDGET and metric not in ("cost_per_hour", "forecast"):
        _add(problems, "metric", "Budget rules watch cost per hour or the month-end forecast.")
    if kind == AlertRule.EFFICIENCY:
        if metric not in ("cpu", "memory"):
            _add(problems, "metric", "Efficiency rules watch CPU or memory.")
        if threshold is not None and not 0 < threshold <= 100:
            _add(problems, "threshold", "A percentage between 0 and 100.")
    if kind == AlertRule.DRIFT and threshold is not None and not 0 <= threshold <= 100:
        _add(problems, "threshold", "A percentage of nodes between 0 and 100 (5 is a good start).")
    if threshold is not None and threshold < 0:
        _add(problems, "threshold", "Must not be negative.")
    if rule.window_minutes == 0 and kind in WINDOWED_KINDS:
        _add(problems, "window_minutes", "This rule needs a window of at least one minute.")
    return problems
