"""Stored cluster snapshots: the YAML an operator uploaded (or the live cluster, exported), replayed
through the same parser and engines as `python -m packing plan/consolidate`."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone


class Snapshot(models.Model):
    UPLOAD = "upload"
    LIVE = "live"
    SOURCES = [(UPLOAD, "uploaded"), (LIVE, "live cluster")]

    name = models.CharField(max_length=120)
    source = models.CharField(max_length=16, choices=SOURCES, default=UPLOAD)
    filenames = models.JSONField(default=list, blank=True)
    # The documents exactly as uploaded (several files joined by '---'), so a replay is the CLI's input.
    lengths = models.JSONField(default=list, blank=True)  # characters of each file within `yaml`
    yaml = models.TextField()
    size = models.PositiveIntegerField(default=0)
    # The clock for budgets and consolidateAfter: replays of the same snapshot stay reproducible.
    taken_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    # The replay ({"plan", "consolidate", "seconds"}), computed once — at upload, or when an operator asks
    # for it again — and stored: a page view reads it, never recomputes it. Null: not replayed yet.
    replay = models.JSONField(null=True, blank=True)
    replayed_at = models.DateTimeField(null=True, blank=True)
    replay_error = models.TextField(blank=True, default="")  # why the last replay failed ("" if it did not)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("whatif:snapshot-detail", args=[self.pk])
