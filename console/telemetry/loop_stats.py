"""How long each control loop's runs take, and how many fail: controller-runtime's reconcile metrics
(``controller_runtime_reconcile_time_seconds``, ``_total``, ``_errors_total``) and Karpenter's
``karpenter_scheduler_scheduling_duration_seconds``, with one ``controller`` label per loop.

The figures live in the database (DurationStat, DurationBucket), incremented in SQL by whichever
worker ran the loop, so every web process answering /metrics serves the same counters; a per-process
registry would give each gunicorn worker its own counts, and Prometheus would see them jump back and
forth as its scrapes land on different processes. Rows are fixed per loop (one stat and Karpenter's
46 buckets), so nothing grows with time."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.db import transaction
from django.db.models import F

from console.telemetry.models import DurationBucket, DurationStat

log = logging.getLogger(__name__)

F_ = TypeVar("F_", bound=Callable[..., Any])

RECONCILE = "reconcile"
SCHEDULING = "scheduling"

# Karpenter's DurationBuckets() (pkg/metrics/constants.go): controller-runtime's plus longer ones.
BUCKETS: tuple[float, ...] = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
    1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60, 120, 150, 300,
    450, 600,
)

# The Celery loop tasks as Karpenter names its controllers (controller label values).
PROVISIONER = "provisioner"
DISRUPTION = "disruption"
LIFECYCLE = "nodeclaim.lifecycle"
GARBAGE_COLLECTION = "nodeclaim.garbagecollection"
INTERRUPTION = "interruption"
METRICS = "loadmaster.metrics"  # Loadmaster's own per-minute sampler (record_metrics)
REPAIR = "node.health"          # node repair (LOADMASTER_NODE_REPAIR), Karpenter's node.health controller
CONTROLLERS = (PROVISIONER, DISRUPTION, LIFECYCLE, GARBAGE_COLLECTION, INTERRUPTION, METRICS, REPAIR)


def _rows_exist(metric: str, controller: str) -> None:
    DurationStat.objects.bulk_create([DurationStat(metric=metric, controller=controller)], ignore_conflicts=True)
    DurationBucket.objects.bulk_create(
        [DurationBucket(metric=metric, controller=controller, le=le) for le in BUCKETS], ignore_conflicts=True)


def duration_observe(*, metric: str, controller: str, seconds: float, error: bool = False) -> None:
    """Count one run of `controller` that took `seconds` (and failed, with `error`). Atomic: a scrape
    sees the stat and its buckets move together; concurrent workers add, never overwrite."""
    seconds = max(0.0, float(seconds))
    with transaction.atomic():
        stats = DurationStat.objects.filter(metric=metric, controller=controller)
        changes = {"runs": F("runs") + 1, "errors": F("errors") + int(error), "seconds_sum": F("seconds_sum") + seconds}
        if not stats.update(**changes):
            _rows_exist(metric, controller)
            stats.update(**changes)
        DurationBucket.objects.filter(metric=metric, controller=controller, le__gte=seconds).update(count=F("count") + 1)


def scheduling_observe(*, controller: str, seconds: float) -> None:
    """One scheduling simulation of `controller` (provisioner or disruption) took `seconds`."""
    duration_observe(metric=SCHEDULING, controller=controller, seconds=seconds)


def _record(controller: str, seconds: float, error: bool) -> None:
    try:
        duration_observe(metric=RECONCILE, controller=controller, seconds=seconds, error=error)
    except Exception:  # the loop's own outcome matters more than its statistics
        log.exception("could not record a run of %s", controller)


def timed(controller: str) -> Callable[[F_], F_]:
    """Decorator for a loop task: each call is one reconcile of `controller`, an exception (the soft
    time limit included) an error; the exception is re-raised unchanged."""

    def wrap(fn: F_) -> F_:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                result = fn(*args, **kwargs)
            except BaseException:
                _record(controller, time.perf_counter() - start, True)
                raise
            _record(controller, time.perf_counter() - start, False)
            return result

        return run  # type: ignore[return-value]

    return wrap


def duration_stats() -> list[tuple[DurationStat, list[tuple[float, int]]]]:
    """Every stat with its buckets (le, cumulative count), ordered, for the exposition. Every loop's
    reconcile figures are there from the start, at zero (as controller-runtime registers them when a
    controller starts), so the first run is an increase Prometheus can see."""
    buckets: dict[tuple[str, str], list[tuple[float, int]]] = {}
    for b in DurationBucket.objects.order_by("metric", "controller", "le").values_list("metric", "controller", "le", "count"):
        buckets.setdefault((b[0], b[1]), []).append((b[2], b[3]))
    stats = {(s.metric, s.controller): s for s in DurationStat.objects.all()}
    for controller in CONTROLLERS:
        stats.setdefault((RECONCILE, controller), DurationStat(metric=RECONCILE, controller=controller))
    return [(s, buckets.get(key) or [(le, 0) for le in BUCKETS]) for key, s in sorted(stats.items())]
