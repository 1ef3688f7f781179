"""Alert channels (where), rules (what), state per (rule, scope), the delivery history, and the two
observations rules need a clock for: how long each pending pod has waited and how long each
consolidation has been blocked."""

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
            from console.alerts.destinations import secret_env_problem

            if secret_env_problem(self.secret_env):      # never SECRET_KEY, DATABASE_URL…
                raise ValueError(f"secret_env {self.secret_env[:100]} is not under LOADMASTER_SLACK_")
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
    UNUSABLE = "unusable_nodepool"
    DRIFT = "drift"
    LAUNCH_FAILURES = "launch_failures"
    KINDS = [(BUDGET, "Budget"), (SPIKE, "Spend spike"), (EFFICIENCY, "Low packing efficiency"),
             (STUCK, "Stuck pods"), (INTERRUPTIONS, "Spot interruptions"), (STRANDED, "Stranded savings"),
             (UNUSABLE, "NodePool unusable"),
             (DRIFT, "Drifted nodes"), (LAUNCH_FAILURES, "NodeClaim launch failures")]
    ADVISOR = "advisor_finding"
    KINDS += [(ADVISOR, "New advisor finding")]
    COMMITMENT_UNDER_UTILIZED, RESERVATION_IDLE = "commitment_underused", "reservation_idle"
    KINDS += [(COMMITMENT_UNDER_UTILIZED, "Commitment under-utilized"), (RESERVATION_IDLE, "Reservation idle")]
    METRICS = [("cost_per_hour", "cost per hour"), ("forecast", "month-end forecast"),
               ("cpu", "CPU"), ("memory", "memory")]

    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=24, choices=KINDS)
    nodepool = models.CharField("NodePool", max_length=63, blank=True, default="",
                                help_text="Empty for the whole cluster.")
    metric = models.CharField(max_length=16, choices=METRICS, blank=True, default="",
                              help_text="Budget: cost per hour or forecast. Efficiency: CPU or memory.")
    # Meaning by kind: $/h or $ (budget), % above baseline (spike), % efficiency (efficiency),
    # pods (stuck), interruptions per hour, $/day saved per blocked move (stranded), NodePools (unusable),
    # % of nodes drifted (drift), failed launches or registrations per hour (launch failures).
    # window_minutes: the evaluation window; for stuck pods how long each pod must have been pending,
    # for stranded savings how long a move must have been blocked, for unusable NodePools how long a
    # control loop must have been leaving the pool out.
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

    @property
    def threshold_display(self) -> str:
        from console.alerts.units import rule_threshold

        return rule_threshold(self)

    @property
    def window_display(self) -> str:
        from console.alerts.units import minutes

        return minutes(self.window_minutes)

    @property
    def cooldown_display(self) -> str:
        from console.alerts.units import minutes

        return minutes(self.cooldown_minutes)


class AlertState(models.Model):
    """Lifecycle memory for one (rule, scope): whether it is firing and when it last sent."""

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="states")
    scope = models.CharField(max_length=63)
    firing = models.BooleanField(default=False)
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


class PendingPod(models.Model):
    """One pod the cluster reports unschedulable, and since when, as the alert tick observed it.

    Rows outlive the pending stretch (``left_at`` set) for a day so that a pod seen scheduled and then
    pending again is recognised and its clock restarts, instead of inheriting its creation time.
    """

    key = models.CharField("namespace/name", max_length=320, unique=True)
    uid = models.CharField(max_length=64, blank=True, default="")
    created = models.DateTimeField(null=True, blank=True)      # metadata.creationTimestamp, when given
    since = models.DateTimeField()                             # start of the current pending stretch
    last_seen = models.DateTimeField()
    left_at = models.DateTimeField(null=True, blank=True)      # first tick that found it no longer pending
    # NodePools its nodeSelector / required node affinity pins it to (karpenter.sh/nodepool); empty: any.
    pinned_pools = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["since", "key"]

    def __str__(self) -> str:
        return self.key


class StrandedMove(models.Model):
    """A node the disruption engine would consolidate for a saving but may not (a PDB, a
    do-not-disrupt pod or node, a disruption budget), kept while the block lasts."""

    node = models.CharField(max_length=253, unique=True)
    nodepool = models.CharField("NodePool", max_length=63, blank=True, default="")
    blocked_by = models.CharField(max_length=16)               # pdb | do-not-disrupt | budget
    reason = models.TextField()                                # the engine's why-not text
    savings_per_hour = models.DecimalField(max_digits=14, decimal_places=6)
    first_seen = models.DateTimeField()                        # the "blocked for N hours" clock
    last_seen = models.DateTimeField()

    class Meta:
        ordering = ["first_seen", "node"]

    def __str__(self) -> str:
        return f"{self.node} ({self.blocked_by})"


class DriftedNode(models.Model):
    """A node the disruption engine found drifted from its NodePool (packing's drift rules), and why, kept
    while it stays drifted: the drift rule's "for longer than the window" clock."""

    node = models.CharField(max_length=253, unique=True)
    nodepool = models.CharField("NodePool", max_length=63, blank=True, default="")
    reason = models.TextField()
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()

    class Meta:
        ordering = ["first_seen", "node"]

    def __str__(self) -> str:
        return f"{self.node} ({self.reason[:60]})"
