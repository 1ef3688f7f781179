"""MetricSample and NodePoolProblem moved to console.telemetry (telemetry 0001 takes them over with
their tables): removed from this app's state only, the tables and rows stay."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("control", "0003_nodepoolproblem"),
        ("telemetry", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name="MetricSample"),
                migrations.DeleteModel(name="NodePoolProblem"),
            ],
        ),
    ]
