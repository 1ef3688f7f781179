"""Writes of the telemetry app: the hourly rollups of the minute samples and the pruning of old
minute samples. Both are idempotent; metrics_record calls them every minute and they only do work
once an hour has ended."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Max, Min

from console.telemetry import selectors
from console.telemetry.models import MetricRollup, MetricSample


def metric_rollups_write(*, since: datetime, until: datetime) -> int:
    """(Re)compute the rollups of every whole hour in [floor(since), floor(until)) from the minute
    samples, replacing whatever rows those hours had. Returns the rows written."""
    start, end = selectors.floor_hour(since), selectors.floor_hour(until)
    if start >= end:
        return 0
    minutes = MetricSample.objects.filter(at__gte=start, at__lt=end)
    rows = selectors.minute_sums(minutes)
    reasons = selectors.minute_reason_sums(minutes)
    with transaction.atomic():
        MetricRollup.objects.filter(hour__gte=start, hour__lt=end).delete()
        MetricRollup.objects.bulk_create([
            MetricRollup(hour=r["hour"], nodepool=r["nodepool"],
                         unschedulable_reasons_sum=reasons.get(r["hour"], {}) if r["nodepool"] == "" else {},
                         **{k: r[k] for k in selectors.ROLLUP_FIELDS})
            for r in rows], batch_size=1000)
    return len(rows)


def metric_rollups_catch_up(*, now: datetime) -> int:
    """Roll up the whole hours that ended since the last rollup (all of them on the first run).
    Hours already rolled up are not recomputed: their minutes may have been pruned since."""
    last = MetricRollup.objects.aggregate(m=Max("hour"))["m"]
    if last is not None:
        since = last + timedelta(hours=1)
    else:
        first = MetricSample.objects.aggregate(m=Min("at"))["m"]
        if first is None:
            return 0
        since = first
    return metric_rollups_write(since=since, until=now)


def minute_retention() -> timedelta:
    return timedelta(days=settings.LOADMASTER_METRICS_MINUTE_RETENTION_DAYS)


def metric_samples_prune(*, now: datetime) -> int:
    """Delete minute samples older than the retention, but only those already rolled up: an hour the
    rollup missed keeps its minutes until it is rolled up."""
    cutoff = now - minute_retention()
    rolled = selectors.rolled_up_until(now + timedelta(hours=1))
    if rolled is None:
        return 0
    deleted, _ = MetricSample.objects.filter(at__lt=min(cutoff, rolled)).delete()
    return deleted
