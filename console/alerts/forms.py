from __future__ import annotations

from typing import Any

from django import forms

from console.alerts.models import AlertRule, Channel


class ChannelForm(forms.ModelForm):
    # Write-only: never rendered back (render_value=False); blank on edit keeps the stored secret.
    secret = forms.CharField(label="Webhook URL or bot token", required=False, strip=True,
                             widget=forms.PasswordInput(render_value=False),
                             help_text="Stored encrypted; leave blank to keep the current one.")

    class Meta:
        model = Channel
        fields = ["name", "kind", "secret", "secret_env", "slack_channel", "api_base_url"]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        kind, secret, env = data.get("kind"), data.get("secret"), data.get("secret_env")
        if not secret and not env and not (self.instance.pk and self.instance.secret_encrypted):
            self.add_error("secret", "Give a webhook URL / token, or an env var name.")
        if kind == Channel.WEBHOOK and secret and not secret.startswith(("https://", "http://")):
            self.add_error("secret", "A webhook URL starts with https://.")
        if kind == Channel.BOT:
            if not data.get("slack_channel"):
                self.add_error("slack_channel", "A bot channel needs a Slack channel id.")
            if secret and not secret.startswith("xox"):
                self.add_error("secret", "A bot token starts with xoxb-.")
            base = data.get("api_base_url") or ""
            if base and not base.endswith("/"):
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


class RuleForm(forms.ModelForm):
    class Meta:
        model = AlertRule
        fields = ["name", "kind", "nodepool", "metric", "threshold", "window_minutes", "cooldown_minutes",
                  "channel", "enabled"]

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
