"""Alert channels (where), rules (what), state per (rule, scope) and the delivery history."""

from __future__ import annotations

import os

from django.db import models
from django.utils import timezone

from console.alerts import crypto


class Channel(models.Model):
    WEBHOOK = "webhook"
    BOT = "bot"
    KINDS = [(WEBHOOK, "Slack incoming webhook"), (BOT, "Slack bot token + channel")]

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=16, choices=KINDS, default=WEBHOOK)
    # Either an encrypted secret (webhook URL or bot token) or the name of an env var holding it:
    # deployments that keep secrets in the environment never put them in the database.
    secret_encrypted = models.TextField(blank=True, default="")
    secret_env = models.CharField("secret from env var", max_length=100, blank=True, default="",
                                  help_text="Name of an environment variable holding the webhook URL or token.")
    secret_hint = models.CharField(max_length=16, blank=True, default="")
    slack_channel = models.CharField("Slack channel id", max_length=80, blank=True, default="",
                                     help_text="Bot channels only, e.g. C0123456.")
    api_base_url = models.CharField(max_length=200, blank=True, default="https://slack.com/api/",
                                    help_text="Bot channels only; must end with '/'.")
    disabled = models.BooleanField(default=False)
    disabled_reason = models.CharField(max_length=300, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def set_secret(self, plain: str) -> None:
        self.secret_encrypted = crypto.encrypt(plain)
        self.secret_hint = crypto.mask(plain)

    def get_secret(self) -> str:
        if self.secret_env:
            return os.environ.get(self.secret_env, "")
        return crypto.decrypt(self.secret_encrypted) if self.secret_encrypted else ""

    @property
    def masked_secret(self) -> str:
        if self.secret_env:
            return f"${self.secret_env}"
        return self.secret_hint or "(none)"


class AlertRule(models.Model):
    BUDGET = "budget"
    SPIKE = "spike"
    EFFICIENCY = "efficiency"
    STUCK = "stuck_pods"
    INTERRUPTIONS = "interruptions"
    STRANDED = "stranded_savings"
    KINDS = [(BUDGET, "Budget"), (SPIKE, "Spend spike"), (EFFICIENCY, "Low packing efficiency"),
             (STUCK, "Stuck pods"), (INTERRUPTIONS, "Spot interruptions"), (STRANDED, "Stranded savings")]
    METRICS = [("cost_per_hour", "cost per hour"), ("forecast", "month-end forecast"),
               ("cpu", "CPU"), ("memory", "memory")]

    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=24, choices=KINDS)
    nodepool = models.CharField("NodePool", max_length=63, blank=True, default="",
                                help_text="Empty for the whole cluster.")
    metric = models.CharField(max_length=16, choices=METRICS, blank=True, default="",
                              help_text="Budget: cost per hour or forecast. Efficiency: CPU or memory.")
    # Meaning by kind: $/h or $ (budget), % above baseline (spike), % efficiency (efficiency),
    # pods (stuck), interruptions per hour, $/day saved (stranded).
    threshold = models.DecimalField(max_digits=14, decimal_places=4)
    window_minutes = models.PositiveIntegerField(default=10)
    cooldown_minutes = models.PositiveIntegerField(default=60)
    channel = models.ForeignKey(Channel, on_delete=models.PROTECT, related_name="rules")
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def scope(self) -> str:
        return self.nodepool or "cluster"


class AlertState(models.Model):
    """Lifecycle memory for one (rule, scope): what was last sent and since when it holds."""

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="states")
    scope = models.CharField(max_length=63)
    firing = models.BooleanField(default=False)
    # When the condition started to hold; rules needing "true for N" fire once this is old enough.
    holding_since = models.DateTimeField(null=True, blank=True)
    last_sent_at = models.DateTimeField(null=True, blank=True)
    last_value = models.CharField(max_length=100, blank=True, default="")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rule", "scope"], name="one_state_per_rule_scope")]


class AlertEvent(models.Model):
    FIRED = "fired"
    REPEATED = "repeated"
    RESOLVED = "resolved"
    TEST = "test"
    KINDS = [(k, k) for k in (FIRED, REPEATED, RESOLVED, TEST)]

    at = models.DateTimeField(default=timezone.now, db_index=True)
    rule = models.ForeignKey(AlertRule, null=True, blank=True, on_delete=models.SET_NULL, related_name="events")
    rule_name = models.CharField(max_length=100, blank=True, default="")
    channel = models.ForeignKey(Channel, null=True, blank=True, on_delete=models.SET_NULL, related_name="events")
    scope = models.CharField(max_length=63, blank=True, default="")
    kind = models.CharField(max_length=16, choices=KINDS)
    summary = models.TextField(blank=True, default="")
    delivered = models.BooleanField(default=False)
    delivery_error = models.CharField(max_length=300, blank=True, default="")

    class Meta:
        ordering = ["-at", "-id"]
