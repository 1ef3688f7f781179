from __future__ import annotations

import os
from typing import Any

from django import forms

from console.alerts import destinations
from console.alerts.models import AlertRule, Channel
from console.fleet.models import NodePool


class ChannelForm(forms.ModelForm):
    # Write-only: never rendered back (render_value=False); blank on edit keeps the stored secret.
    secret = forms.CharField(label="Webhook URL or bot token", required=False, strip=True,
                             widget=forms.PasswordInput(render_value=False),
                             help_text="Stored encrypted; leave blank to keep the current one.")

    class Meta:
        model = Channel
        fields = ["name", "kind", "secret", "secret_env", "slack_channel", "api_base_url"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["secret_env"].help_text = (
            f"Name of an environment variable holding the webhook URL or token; it must start with "
            f"{destinations.SECRET_ENV_PREFIX}.")
        self.fields["api_base_url"].help_text = "Bot channels only; https://slack.com/api/ unless the server allows another host."

    def clean_secret_env(self) -> str:
        env = str(self.cleaned_data.get("secret_env") or "").strip()
        if env and (problem := destinations.secret_env_problem(env)):
            raise forms.ValidationError(problem)
        return env

    def clean_api_base_url(self) -> str:
        base = str(self.cleaned_data.get("api_base_url") or "").strip()
        if base and (problem := destinations.url_problem(base, purpose="api")):
            raise forms.ValidationError(problem)
        return base

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        kind, secret, env = data.get("kind"), data.get("secret"), data.get("secret_env")
        if not secret and not env and not (self.instance.pk and self.instance.secret_encrypted) \
                and "secret_env" not in self.errors:
            self.add_error("secret", "Give a webhook URL / token, or an env var name.")
        if kind == Channel.WEBHOOK:
            if secret and (problem := destinations.url_problem(secret, purpose="webhook")):
                self.add_error("secret", problem)
            # An env var set in this process is checked now; the send checks it again in any case.
            value = _environ(env)
            if value and (problem := destinations.url_problem(value, purpose="webhook")):
                self.add_error("secret_env", f"${env}: {problem}")
        if kind == Channel.BOT:
            if not data.get("slack_channel"):
                self.add_error("slack_channel", "A bot channel needs a Slack channel id.")
            if secret and not secret.startswith("xox"):
                self.add_error("secret", "A bot token starts with xoxb-.")
            base = data.get("api_base_url") or ""
            if base and not base.endswith("/") and "api_base_url" not in self.errors:
                self.add_error("api_base_url", "Must end with '/' (slack_sdk joins method names onto it).")
        return data

    def save(self, commit: bool = True) -> Channel:
        channel = super().save(commit=False)
        if self.cleaned_data.get("secret"):
            channel.set_secret(self.cleaned_data["secret"])
        if self.cleaned_data.get("secret_env"):
            channel.secret_encrypted, channel.secret_hint = "", ""
        if commit:
            channel.save()
        return channel


def _environ(name: str | None) -> str:
    return os.environ.get(name, "") if name and not destinations.secret_env_problem(name) else ""


class RuleForm(forms.ModelForm):
    class Meta:
        model = AlertRule
        fields = ["name", "kind", "nodepool", "metric", "threshold", "window_minutes", "cooldown_minutes",
                  "channel", "enabled"]

    def clean_nodepool(self) -> str:
        name = str(self.cleaned_data.get("nodepool") or "").strip()
        # An existing rule keeps a scope whose pool was deleted since (it can still be disabled or
        # moved); a new or changed scope must name a NodePool that exists.
        unchanged = self.instance.pk is not None and name == self.instance.nodepool
        if name and not unchanged and not NodePool.objects.filter(name=name).exists():
            raise forms.ValidationError(f"There is no NodePool named {name[:63]!r}; leave empty for the whole cluster.")
        return name

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        kind, metric, threshold = data.get("kind"), data.get("metric"), data.get("threshold")
        if kind == AlertRule.BUDGET and metric not in ("cost_per_hour", "forecast"):
            self.add_error("metric", "Budget rules watch cost per hour or the month-end forecast.")
        if kind == AlertRule.EFFICIENCY:
            if metric not in ("cpu", "memory"):
                self.add_error("metric", "Efficiency rules watch CPU or memory.")
            if threshold is not None and not 0 < threshold <= 100:
                self.add_error("threshold", "A percentage between 0 and 100.")
        if threshold is not None and threshold < 0:
            self.add_error("threshold", "Must not be negative.")
        if data.get("window_minutes") == 0 and kind in (AlertRule.EFFICIENCY, AlertRule.STUCK, AlertRule.STRANDED):
            self.add_error("window_minutes", "This rule needs a window of at least one minute.")
        return data
