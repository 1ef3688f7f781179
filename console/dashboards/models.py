"""Hourly rollups of the per-minute MetricSample rows, so long windows read 24 rows a day per pool
instead of 1,440 and minute samples can be pruned (see console.dashboards.services)."""

from __future__ import annotations

from django.db import models


class MetricRollup(models.Model):
    """One hour of one NodePool (nodepool "" is the whole cluster). Sums and counts rather than means,
    so every dashboard figure — hourly means, window totals, month to date — comes out the same as
    when computed from the minute samples themselves."""

    hour = models.DateTimeField()
    nodepool = models.CharField(max_length=63, blank=True, default="")
    samples = models.PositiveIntegerField(default=0)
    estimated_samples = models.PositiveIntegerField(default=0)
    cost_per_hour_sum = models.DecimalField(max_digits=20, decimal_places=6, default=0)
    on_demand_cost_per_hour_sum = models.DecimalField(max_digits=20, decimal_places=6, default=0)
    nodes_sum = models.BigIntegerField(default=0)
    spot_nodes_sum = models.BigIntegerField(default=0)
    cpu_allocatable_sum = models.BigIntegerField(default=0)
    cpu_requested_sum = models.BigIntegerField(default=0)
    memory_allocatable_sum = models.BigIntegerField(default=0)
    memory_requested_sum = models.BigIntegerField(default=0)
    pods_sum = models.BigIntegerField(default=0)
    pods_pending_sum = models.BigIntegerField(default=0)
    nodes_max = models.PositiveIntegerField(default=0)
    pods_pending_max = models.PositiveIntegerField(default=0)
    # The lower bound is null in some minutes: its mean and the cost it is compared with are taken
    # over the same minutes (those with a bound), or the gap would mix different hours' worth of cost.
    bound_samples = models.PositiveIntegerField(default=0)
    lower_bound_per_hour_sum = models.DecimalField(max_digits=20, decimal_places=6, default=0)
    bounded_cost_per_hour_sum = models.DecimalField(max_digits=20, decimal_places=6, default=0)
    # {reason: Σ pending pods over the hour's samples}; ÷ samples gives the mean.
    unschedulable_reasons_sum = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["hour", "nodepool"], name="one_rollup_per_hour_and_pool")]
        indexes = [models.Index(fields=["nodepool", "hour"])]

    def __str__(self) -> str:
        return f"{self.hour:%Y-%m-%d %H}h {self.nodepool or 'cluster'} ({self.samples} samples)"


class DurationStat(models.Model):
    """Cumulative figures of one timed operation of one control loop, kept in the database so every
    web process serves the same counters (see console.dashboards.loop_stats). ``metric`` is
    "reconcile" (a whole task run: controller_runtime_reconcile_*) or "scheduling" (the engine's
    simulation inside a loop: karpenter_scheduler_scheduling_duration_seconds)."""

    metric = models.CharField(max_length=16)
    controller = models.CharField(max_length=64)
    runs = models.BigIntegerField(default=0)
    errors = models.BigIntegerField(default=0)
    seconds_sum = models.FloatField(default=0.0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["metric", "controller"], name="one_duration_stat")]

    def __str__(self) -> str:
        return f"{self.metric} {self.controller}: {self.runs} runs, {self.errors} errors"


class DurationBucket(models.Model):
    """One cumulative histogram bucket (runs that took at most ``le`` seconds) of a DurationStat:
    a fixed set of rows per loop (Karpenter's duration buckets), incremented in SQL."""

    metric = models.CharField(max_length=16)
    controller = models.CharField(max_length=64)
    le = models.FloatField()
    count = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["metric", "controller", "le"], name="one_duration_bucket")]

    def __str__(self) -> str:
        return f"{self.metric} {self.controller} le={self.le}: {self.count}"


class PodStartup(models.Model):
    """One pod seen to become Ready: the time from its creation to its Ready condition's transition
    (karpenter_pods_startup_duration_seconds). Rows older than a day are folded into SummaryCarry."""

    uid = models.CharField(max_length=128, unique=True)
    started_at = models.DateTimeField(db_index=True)
    seconds = models.FloatField()

    def __str__(self) -> str:
        return f"{self.uid} ready after {self.seconds:.1f} s"


class SummaryCarry(models.Model):
    """The count and sum of observations pruned from a summary's table, so _count and _sum never go
    down when old rows are deleted."""

    metric = models.CharField(max_length=64, unique=True)
    count = models.BigIntegerField(default=0)
    seconds_sum = models.FloatField(default=0.0)

    def __str__(self) -> str:
        return f"{self.metric}: {self.count} pruned observations"
