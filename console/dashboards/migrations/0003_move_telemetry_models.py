"""MetricRollup, DurationStat, DurationBucket, PodStartup and SummaryCarry moved to
console.telemetry (telemetry 0001 takes them over with their tables): removed from this app's state
only, the tables and rows stay."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("dashboards", "0002_loop_stats_and_pod_startups"),
        ("telemetry", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name="DurationBucket"),
                migrations.DeleteModel(name="DurationStat"),
                migrations.DeleteModel(name="MetricRollup"),
                migrations.DeleteModel(name="PodStartup"),
                migrations.DeleteModel(name="SummaryCarry"),
            ],
        ),
    ]
