"""The telemetry models moved here from console.control (MetricSample, NodePoolProblem) and
console.dashboards (MetricRollup, DurationStat, DurationBucket, PodStartup, SummaryCarry).

Each keeps the table it had (Meta.db_table), so this migration changes Django's model state only
(SeparateDatabaseAndState with no database operations): an existing SQLite or PostgreSQL database
keeps its tables, rows, indexes, constraints and id sequences. control 0004 and dashboards 0003
drop the models from their apps' state after this one. The content types move with the models, so
permissions granted on them stay attached."""

from django.db import migrations, models

# model name -> the app it came from
MOVED = {"metricsample": "control", "nodepoolproblem": "control", "metricrollup": "dashboards",
         "durationstat": "dashboards", "durationbucket": "dashboards", "podstartup": "dashboards",
         "summarycarry": "dashboards"}


def _move_content_types(apps, schema_editor, *, forward):
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for model, old_app in MOVED.items():
        source, target = ("telemetry", old_app) if not forward else (old_app, "telemetry")
        if ContentType.objects.using(db).filter(app_label=target, model=model).exists():
            continue  # already created for the new app (post_migrate): keep it, leave the old one
        ContentType.objects.using(db).filter(app_label=source, model=model).update(app_label=target)


def content_types_forward(apps, schema_editor):
    _move_content_types(apps, schema_editor, forward=True)


def content_types_backward(apps, schema_editor):
    _move_content_types(apps, schema_editor, forward=False)


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("control", "0003_nodepoolproblem"),
        ("dashboards", "0002_loop_stats_and_pod_startups"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='PodStartup',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('uid', models.CharField(max_length=128, unique=True)),
                        ('started_at', models.DateTimeField(db_index=True)),
                        ('seconds', models.FloatField()),
                    ],
                    options={
                        'db_table': 'dashboards_podstartup',
                    },
                ),
                migrations.CreateModel(
                    name='SummaryCarry',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('metric', models.CharField(max_length=64, unique=True)),
                        ('count', models.BigIntegerField(default=0)),
                        ('seconds_sum', models.FloatField(default=0.0)),
                    ],
                    options={
                        'db_table': 'dashboards_summarycarry',
                    },
                ),
                migrations.CreateModel(
                    name='DurationBucket',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('metric', models.CharField(max_length=16)),
                        ('controller', models.CharField(max_length=64)),
                        ('le', models.FloatField()),
                        ('count', models.BigIntegerField(default=0)),
                    ],
                    options={
                        'db_table': 'dashboards_durationbucket',
                        'constraints': [models.UniqueConstraint(fields=('metric', 'controller', 'le'), name='one_duration_bucket')],
                    },
                ),
                migrations.CreateModel(
                    name='DurationStat',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('metric', models.CharField(max_length=16)),
                        ('controller', models.CharField(max_length=64)),
                        ('runs', models.BigIntegerField(default=0)),
                        ('errors', models.BigIntegerField(default=0)),
                        ('seconds_sum', models.FloatField(default=0.0)),
                    ],
                    options={
                        'db_table': 'dashboards_durationstat',
                        'constraints': [models.UniqueConstraint(fields=('metric', 'controller'), name='one_duration_stat')],
                    },
                ),
                migrations.CreateModel(
                    name='MetricRollup',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('hour', models.DateTimeField()),
                        ('nodepool', models.CharField(blank=True, default='', max_length=63)),
                        ('samples', models.PositiveIntegerField(default=0)),
                        ('estimated_samples', models.PositiveIntegerField(default=0)),
                        ('cost_per_hour_sum', models.DecimalField(decimal_places=6, default=0, max_digits=20)),
                        ('on_demand_cost_per_hour_sum', models.DecimalField(decimal_places=6, default=0, max_digits=20)),
                        ('nodes_sum', models.BigIntegerField(default=0)),
                        ('spot_nodes_sum', models.BigIntegerField(default=0)),
                        ('cpu_allocatable_sum', models.BigIntegerField(default=0)),
                        ('cpu_requested_sum', models.BigIntegerField(default=0)),
                        ('memory_allocatable_sum', models.BigIntegerField(default=0)),
                        ('memory_requested_sum', models.BigIntegerField(default=0)),
                        ('pods_sum', models.BigIntegerField(default=0)),
                        ('pods_pending_sum', models.BigIntegerField(default=0)),
                        ('nodes_max', models.PositiveIntegerField(default=0)),
                        ('pods_pending_max', models.PositiveIntegerField(default=0)),
                        ('bound_samples', models.PositiveIntegerField(default=0)),
                        ('lower_bound_per_hour_sum', models.DecimalField(decimal_places=6, default=0, max_digits=20)),
                        ('bounded_cost_per_hour_sum', models.DecimalField(decimal_places=6, default=0, max_digits=20)),
                        ('unschedulable_reasons_sum', models.JSONField(blank=True, default=dict)),
                    ],
                    options={
                        'db_table': 'dashboards_metricrollup',
                        'indexes': [models.Index(fields=['nodepool', 'hour'], name='dashboards__nodepoo_f994ec_idx')],
                        'constraints': [models.UniqueConstraint(fields=('hour', 'nodepool'), name='one_rollup_per_hour_and_pool')],
                    },
                ),
                migrations.CreateModel(
                    name='MetricSample',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('at', models.DateTimeField(db_index=True)),
                        ('nodepool', models.CharField(blank=True, default='', max_length=63)),
                        ('nodes', models.PositiveIntegerField(default=0)),
                        ('spot_nodes', models.PositiveIntegerField(default=0)),
                        ('cost_per_hour', models.DecimalField(decimal_places=6, default=0, max_digits=14)),
                        ('on_demand_cost_per_hour', models.DecimalField(decimal_places=6, default=0, max_digits=14)),
                        ('estimated', models.BooleanField(default=False)),
                        ('unpriced_nodes', models.PositiveIntegerField(default=0)),
                        ('cpu_allocatable', models.BigIntegerField(default=0)),
                        ('cpu_requested', models.BigIntegerField(default=0)),
                        ('memory_allocatable', models.BigIntegerField(default=0)),
                        ('memory_requested', models.BigIntegerField(default=0)),
                        ('pods', models.PositiveIntegerField(default=0)),
                        ('pods_pending', models.PositiveIntegerField(default=0)),
                        ('unschedulable_reasons', models.JSONField(blank=True, default=dict)),
                        ('lower_bound_per_hour', models.DecimalField(blank=True, decimal_places=6, max_digits=14, null=True)),
                    ],
                    options={
                        'db_table': 'control_metricsample',
                        'indexes': [models.Index(fields=['nodepool', 'at'], name='control_met_nodepoo_021823_idx')],
                        'constraints': [models.UniqueConstraint(fields=('at', 'nodepool'), name='one_sample_per_minute_and_pool')],
                    },
                ),
                migrations.CreateModel(
                    name='NodePoolProblem',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('nodepool', models.CharField(max_length=63)),
                        ('loop', models.CharField(choices=[('provision', 'provision'), ('disrupt', 'disrupt')], max_length=16)),
                        ('reason', models.TextField()),
                        ('since', models.DateTimeField()),
                        ('seen_at', models.DateTimeField()),
                    ],
                    options={
                        'db_table': 'control_nodepoolproblem',
                        'ordering': ['nodepool', 'loop'],
                        'constraints': [models.UniqueConstraint(fields=('nodepool', 'loop'), name='one_problem_per_pool_and_loop')],
                    },
                ),
            ],
        ),
        migrations.RunPython(content_types_forward, content_types_backward),
    ]
