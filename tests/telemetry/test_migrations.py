"""The telemetry models moved from console.control and console.dashboards without losing data: a
database migrated before the move, with rows in every moved table, migrates forward (and back) with
its rows, ids and content types intact. Runs on SQLite and on PostgreSQL (DATABASE_URL)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from console.telemetry.models import (
    DurationBucket,
    DurationStat,
    MetricRollup,
    MetricSample,
    NodePoolProblem,
    PodStartup,
    SummaryCarry,
)

AT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
BEFORE_THE_MOVE = [("control", "0003_nodepoolproblem"), ("dashboards", "0002_loop_stats_and_pod_startups"),
                   ("telemetry", None)]
# model -> the app that held it before the move
OLD_APP = {"MetricSample": "control", "NodePoolProblem": "control", "MetricRollup": "dashboards",
           "DurationStat": "dashboards", "DurationBucket": "dashboards", "PodStartup": "dashboards",
           "SummaryCarry": "dashboards"}


def _migrate(targets: list[tuple[str, str | None]] | None = None) -> Any:
    """Migrate to `targets` (None: every app's latest) and return the apps registry of that state."""
    executor = MigrationExecutor(connection)
    plan = targets if targets is not None else executor.loader.graph.leaf_nodes()
    executor.migrate(plan)
    executor = MigrationExecutor(connection)  # reload: the applied set changed
    return executor.loader.project_state([t for t in plan if t[1] is not None]).apps


def _insert_old_rows(apps: Any) -> dict[str, int]:
    """One row in each moved table, written through the models as they were before the move."""
    def model(name: str) -> Any:
        return apps.get_model(OLD_APP[name], name)

    rows = {
        "MetricSample": model("MetricSample").objects.create(
            at=AT, nodepool="general", nodes=3, spot_nodes=2, cost_per_hour=Decimal("1.234567"),
            on_demand_cost_per_hour=Decimal("2.5"), cpu_allocatable=6000, cpu_requested=4500,
            unschedulable_reasons={"nodepool general: limit cpu=100 would be exceeded": 2},
            lower_bound_per_hour=Decimal("0.9")),
        "NodePoolProblem": model("NodePoolProblem").objects.create(
            nodepool="gpu", loop="provision", reason="no EC2NodeClass named gpu", since=AT, seen_at=AT),
        "MetricRollup": model("MetricRollup").objects.create(
            hour=AT, nodepool="general", samples=60, cost_per_hour_sum=Decimal("74.074020"),
            unschedulable_reasons_sum={"waiting for the provisioner": 5}),
        "DurationStat": model("DurationStat").objects.create(metric="reconcile", controller="provisioner", runs=7,
                                                             errors=1, seconds_sum=1.75),
        "DurationBucket": model("DurationBucket").objects.create(metric="reconcile", controller="provisioner",
                                                                 le=0.5, count=6),
        "PodStartup": model("PodStartup").objects.create(uid="pod-uid-1", started_at=AT, seconds=12.5),
        "SummaryCarry": model("SummaryCarry").objects.create(metric="karpenter_pods_startup_duration_seconds",
                                                             count=40, seconds_sum=480.0),
    }
    return {name: row.pk for name, row in rows.items()}


def _content_type_ids() -> dict[tuple[str, str], int]:
    return {(c.app_label, c.model): c.pk for c in ContentType.objects.filter(model__in=[m.lower() for m in OLD_APP])}


@pytest.mark.django_db(transaction=True)
def test_rows_written_before_the_move_are_read_after_it() -> None:
    types_now = _content_type_ids()
    try:
        old_apps = _migrate(BEFORE_THE_MOVE)
        with connection.cursor() as cursor:  # the tables are the old ones, by their old names
            tables = set(connection.introspection.table_names(cursor))
        assert {"control_metricsample", "dashboards_metricrollup", "control_nodepoolproblem"} <= tables
        ids = _insert_old_rows(old_apps)
        # Going back gave each content type to the app that held the model before.
        assert {(OLD_APP[m], m.lower()) for m in OLD_APP} <= set(_content_type_ids())
    finally:
        _migrate()
        ContentType.objects.clear_cache()

    sample = MetricSample.objects.get(pk=ids["MetricSample"])
    assert (sample.at, sample.nodepool, sample.nodes, sample.spot_nodes) == (AT, "general", 3, 2)
    assert sample.cost_per_hour == Decimal("1.234567") and sample.lower_bound_per_hour == Decimal("0.9")
    assert sample.unschedulable_reasons == {"nodepool general: limit cpu=100 would be exceeded": 2}
    assert NodePoolProblem.objects.get(pk=ids["NodePoolProblem"]).reason == "no EC2NodeClass named gpu"
    rollup = MetricRollup.objects.get(pk=ids["MetricRollup"])
    assert rollup.samples == 60 and rollup.cost_per_hour_sum == Decimal("74.074020")
    assert rollup.unschedulable_reasons_sum == {"waiting for the provisioner": 5}
    stat = DurationStat.objects.get(pk=ids["DurationStat"])
    assert (stat.runs, stat.errors, stat.seconds_sum) == (7, 1, 1.75)
    assert DurationBucket.objects.get(pk=ids["DurationBucket"]).count == 6
    assert PodStartup.objects.get(pk=ids["PodStartup"]).seconds == 12.5
    assert SummaryCarry.objects.get(pk=ids["SummaryCarry"]).count == 40
    # New rows continue the tables' id sequences (PostgreSQL keeps the sequence with the table).
    later = MetricSample.objects.create(at=AT.replace(minute=1), nodepool="general")
    assert later.pk > ids["MetricSample"]
    # Forward again: the content types (and permissions on them) are the same rows, now the new app's.
    assert _content_type_ids() == types_now
    assert all(app == "telemetry" for app, _ in types_now)


@pytest.mark.django_db(transaction=True)
def test_the_move_changes_no_table() -> None:
    """The migrations of the move hold no database operation: sqlmigrate prints no statement."""
    executor = MigrationExecutor(connection)
    for app, name in [("telemetry", "0001_initial"), ("control", "0004_move_telemetry_models"),
                      ("dashboards", "0003_move_telemetry_models")]:
        migration = executor.loader.get_migration(app, name)
        state = executor.loader.project_state((app, name), at_end=False)
        with connection.schema_editor(collect_sql=True, atomic=False) as editor:
            migration.apply(state, editor, collect_sql=True)
        statements = [s for s in editor.collected_sql if not s.startswith("--")]
        assert statements == [], f"{app} {name} would run {statements}"
