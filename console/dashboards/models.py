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
