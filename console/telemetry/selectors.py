"""Reads of the minute samples and hourly rollups at the level of their rows: the hourly sums a
rollup row holds (computed in SQL from the minutes, the same query the rollup writer stores) and how
far the rollups reach. The dashboards' figures are built on these (console.dashboards.selectors)."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any, cast

from django.db.models import Count, DateTimeField, Func, Max, Q, QuerySet, Sum
from django.db.models.functions import TruncHour

from console.telemetry.models import MetricRollup, MetricSample

# The numeric columns of a MetricSample that a rollup sums.
NUMERIC = ("cost_per_hour", "on_demand_cost_per_hour", "nodes", "spot_nodes", "reserved_nodes",
           "cpu_allocatable", "cpu_requested", "memory_allocatable", "memory_requested", "pods", "pods_pending")
SAMPLE_FIELDS = (*NUMERIC, "lower_bound_per_hour")
# The columns of a MetricRollup row (and of minute_sums()'s rows) besides hour and nodepool.
ROLLUP_FIELDS = ("samples", "estimated_samples", *(f"{n}_sum" for n in NUMERIC), "nodes_max", "pods_pending_max",
                 "bound_samples", "lower_bound_per_hour_sum", "bounded_cost_per_hour_sum")


class HourBucket(Func):
    """The UTC hour of a timestamp, in native SQL. Django's TruncHour runs a Python function per row
    on SQLite; SQLite stores UTC text, so the hour is its first 13 characters. PostgreSQL has
    date_trunc; other backends fall back to TruncHour."""

    output_field = DateTimeField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, template="(substr(%(expressions)s, 1, 13) || ':00:00')", **extra)

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, template="date_trunc('hour', %(expressions)s)", **extra)

    def as_sql(self, compiler: Any, connection: Any, function: str | None = None, template: str | None = None,
               arg_joiner: str | None = None, **extra: Any) -> Any:
        if template is None:
            return compiler.compile(TruncHour(cast(Any, self.source_expressions[0])))
        return super().as_sql(compiler, connection, function=function, template=template, arg_joiner=arg_joiner,
                              **extra)


def floor_hour(t: datetime) -> datetime:
    return t.replace(minute=0, second=0, microsecond=0)


def minute_sums(samples: QuerySet[MetricSample]) -> list[dict[str, Any]]:
    """Per (nodepool, hour): the sums and counts a MetricRollup row holds, computed in SQL from the
    minute samples. The rollup writer stores exactly these rows, which is what makes both sources agree."""
    sums: dict[str, Any] = {f"{name}_sum": Sum(name) for name in NUMERIC}
    rows = (samples.annotate(hour=HourBucket("at")).values("nodepool", "hour").annotate(
        samples=Count("id"), estimated_samples=Count("id", filter=Q(estimated=True)),
        nodes_max=Max("nodes"), pods_pending_max=Max("pods_pending"),
        bound_samples=Count("lower_bound_per_hour"), lower_bound_per_hour_sum=Sum("lower_bound_per_hour"),
        bounded_cost_per_hour_sum=Sum("cost_per_hour", filter=Q(lower_bound_per_hour__isnull=False)), **sums)
        .order_by("nodepool", "hour"))
    out = []
    for r in rows:
        for key in ROLLUP_FIELDS:
            if r[key] is None:  # Sum over no rows (no bound this hour)
                r[key] = 0
        out.append(r)
    return out


def minute_reason_sums(samples: QuerySet[MetricSample]) -> dict[datetime, dict[str, int]]:
    """Per hour, Σ pending pods per reason over the cluster samples. In Python: summing JSON is
    neither portable SQL nor needed for more than the hours not rolled up yet."""
    out: dict[datetime, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for at, reasons in samples.filter(nodepool="").values_list("at", "unschedulable_reasons"):
        bucket = out[floor_hour(at)]
        for reason, count in (reasons or {}).items():
            if isinstance(count, int | float):
                bucket[reason] += int(count)
    return {hour: dict(counts) for hour, counts in out.items()}


def rolled_up_until(now: datetime) -> datetime | None:
    """The first hour the rollups do not cover (hours from it on are read from the minutes)."""
    last = MetricRollup.objects.filter(hour__lt=floor_hour(now)).aggregate(m=Max("hour"))["m"]
    return None if last is None else last + timedelta(hours=1)
