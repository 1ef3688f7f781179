"""Replays started from the console (issue 21): a window of the recorded history (or of an imported one), a
change and a seed, run by a Celery task (console.replay.tasks) that stores its progress here and, at the end,
the replay's JSON document — the one `python -m packing replay` prints."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from console.history.models import HistoryImport


class ReplayStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"
    CANCELLED = "cancelled", "cancelled"


FINISHED = (ReplayStatus.DONE, ReplayStatus.FAILED, ReplayStatus.CANCELLED)


class Replay(models.Model):
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    start = models.DateTimeField()
    end = models.DateTimeField()
    seed = models.IntegerField(default=0)
    # the history replayed: the recorded one (null, and from_import False), or an imported one
    from_import = models.BooleanField(default=False)
    imported = models.ForeignKey(HistoryImport, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # the change exactly as given (NodePools / EC2NodeClasses, YAML), read again when the task runs
    change_yaml = models.TextField(blank=True, default="")
    change_names = models.JSONField(default=list, blank=True)  # "NodePool/general", as the result's `change`
    status = models.CharField(max_length=16, choices=ReplayStatus.choices, default=ReplayStatus.QUEUED)
    progress = models.FloatField(default=0.0)  # 0..1, written by the task as it goes
    # set by Cancel while the task runs: the task stops at its next progress report
    cancel_requested = models.BooleanField(default=False)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True)  # the CLI's JSON document (packing.replay ReplayResult)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"replay {self.pk}"

    def get_absolute_url(self) -> str:
        return reverse("replay:detail", args=[self.pk])

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def source(self) -> str:
        if not self.from_import:
            return "recorded history"
        return f"import {self.imported.pk} {self.imported.name}".strip() if self.imported else "a deleted import"
