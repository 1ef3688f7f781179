"""Celery tasks of the control loops: thin, each builds the backends and calls one service.

Every task is idempotent and holds a time limit; the services take their own locks and claim work
with conditional updates, so beat ticks that overlap or a task that is retried do no harm."""

from __future__ import annotations

from celery import shared_task

from console.backends.factory import cloud_provider, cluster_backend
from console.control.lifecycle import garbage_collect_run, interruption_run, lifecycle_run
from console.control.provisioning import provision_run
from console.telemetry import loop_stats


@shared_task(ignore_result=True, time_limit=240, soft_time_limit=220)
@loop_stats.timed(loop_stats.PROVISIONER)
def provision() -> None:
    provision_run(cluster=cluster_backend(), cloud=cloud_provider())


@shared_task(ignore_result=True, time_limit=120, soft_time_limit=100)
@loop_stats.timed(loop_stats.LIFECYCLE)
def lifecycle() -> None:
    lifecycle_run(cluster=cluster_backend(), cloud=cloud_provider())


@shared_task(ignore_result=True, time_limit=120, soft_time_limit=100)
@loop_stats.timed(loop_stats.GARBAGE_COLLECTION)
def garbage_collect() -> None:
    garbage_collect_run(cloud=cloud_provider(), cluster=cluster_backend())


@shared_task(ignore_result=True, time_limit=60, soft_time_limit=50)
@loop_stats.timed(loop_stats.INTERRUPTION)
def interruption() -> None:
    interruption_run(cluster=cluster_backend(), cloud=cloud_provider())


@shared_task(ignore_result=True, time_limit=50, soft_time_limit=45)
@loop_stats.timed(loop_stats.METRICS)
def record_metrics() -> None:
    from console.control.metrics import metrics_record

    metrics_record(cluster=cluster_backend())


@shared_task(ignore_result=True, time_limit=120, soft_time_limit=100)
@loop_stats.timed(loop_stats.DISRUPTION)
def disrupt() -> None:
    from console.control.disruption import disrupt_run

    disrupt_run(cluster=cluster_backend(), cloud=cloud_provider())


@shared_task(ignore_result=True, time_limit=120, soft_time_limit=100)
@loop_stats.timed(loop_stats.REPAIR)
def repair() -> None:
    from console.control.repair import node_repair_run

    node_repair_run(cluster=cluster_backend(), cloud=cloud_provider())


@shared_task(ignore_result=True, time_limit=120, soft_time_limit=100)
def capacity_reservations() -> None:
    """Resolve the EC2NodeClasses' capacity reservations, then drain the nodes of Capacity Blocks about to end."""
    from console.control.reservations import capacity_blocks_run, reservations_sync

    reservations_sync(cloud=cloud_provider())
    capacity_blocks_run()
