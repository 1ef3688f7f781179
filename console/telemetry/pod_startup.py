"""karpenter_pods_startup_duration_seconds from the pods' own timestamps: the time from a pod's
creation to its Ready condition's last transition, as Karpenter's pod metrics controller observes it,
recorded once per pod (by uid) by record_metrics each minute and served from the database.

The summary's quantiles cover the pods that became Ready in the last SUMMARY_WINDOW (client_golang's
default MaxAge for a summary, which Karpenter keeps); _count and _sum cover every recorded pod: rows
older than RETENTION are folded into a SummaryCarry row, so they never go down."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, F, Sum
from django.utils.dateparse import parse_datetime

from console.telemetry.models import PodStartup, SummaryCarry

METRIC = "karpenter_pods_startup_duration_seconds"
SUMMARY_WINDOW = timedelta(minutes=10)
RETENTION = timedelta(days=1)
# A pod's Ready time can be older than the last one recorded (status written late): look this far back.
SLACK = timedelta(minutes=5)
QUANTILES = (0.0, 0.5, 0.9, 0.99, 1.0)


def _time(raw: Any) -> datetime | None:
    try:
        return parse_datetime(raw) if isinstance(raw, str) else None
    except ValueError:
        return None


def ready_since(pod: Mapping[str, Any]) -> datetime | None:
    """When the pod's Ready condition last became True; None when it is not Ready."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready" and c.get("status") == "True":
            return _time(c.get("lastTransitionTime"))
    return None


def pod_startups_record(*, pods: Sequence[Mapping[str, Any]], now: datetime) -> int:
    """Record every Ready pod not recorded yet whose Ready time is recent; prune old rows. Returns
    how many were recorded."""
    newest = PodStartup.objects.order_by("-started_at").values_list("started_at", flat=True).first()
    since = (newest - SLACK) if newest is not None else now - SUMMARY_WINDOW
    fresh: dict[str, PodStartup] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        ready, created = ready_since(pod), _time(meta.get("creationTimestamp"))
        if not uid or ready is None or created is None or ready <= since:
            continue
        fresh[uid] = PodStartup(uid=uid[:128], started_at=ready, seconds=max(0.0, (ready - created).total_seconds()))
    if fresh:
        known = set(PodStartup.objects.filter(uid__in=list(fresh)).values_list("uid", flat=True))
        PodStartup.objects.bulk_create([p for u, p in fresh.items() if u not in known], ignore_conflicts=True)
    pod_startups_prune(now=now)
    return len(fresh)


@transaction.atomic
def pod_startups_prune(*, now: datetime) -> int:
    old = PodStartup.objects.filter(started_at__lt=now - RETENTION)
    agg = old.aggregate(n=Count("id"), s=Sum("seconds"))
    if not agg["n"]:
        return 0
    SummaryCarry.objects.get_or_create(metric=METRIC)
    SummaryCarry.objects.filter(metric=METRIC).update(count=F("count") + agg["n"], seconds_sum=F("seconds_sum") + agg["s"])
    old.delete()
    return int(agg["n"])


@dataclass(frozen=True)
class Summary:
    quantiles: dict[float, float]  # empty when nothing was observed in the window
    count: int
    total: float


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile of sorted `values` as a summary reports it (the observation at rank q·(n−1))."""
    return values[round(q * (len(values) - 1))]


def summarize(values: Sequence[float], count: int, total: float) -> Summary:
    ordered = sorted(values)
    return Summary({q: quantile(ordered, q) for q in QUANTILES} if ordered else {}, count, total)


def pod_startup_summary(*, now: datetime) -> Summary:
    recent = list(PodStartup.objects.filter(started_at__gt=now - SUMMARY_WINDOW).values_list("seconds", flat=True))
    agg = PodStartup.objects.aggregate(n=Count("id"), s=Sum("seconds"))
    carry = SummaryCarry.objects.filter(metric=METRIC).first()
    count = int(agg["n"] or 0) + (carry.count if carry else 0)
    total = float(agg["s"] or 0.0) + (carry.seconds_sum if carry else 0.0)
    return summarize(recent, count, total)
