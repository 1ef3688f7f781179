from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    """A snapshot's replay is stored once computed (at upload, or when an operator replays it again)
    instead of being recomputed on every view. Existing snapshots start unreplayed."""

    dependencies = [("whatif", "0001_initial")]

    operations = [
        migrations.AddField(model_name="snapshot", name="replay", field=models.JSONField(blank=True, null=True)),
        migrations.AddField(model_name="snapshot", name="replay_error",
                            field=models.TextField(blank=True, default="")),
        migrations.AddField(model_name="snapshot", name="replayed_at",
                            field=models.DateTimeField(blank=True, null=True)),
    ]
