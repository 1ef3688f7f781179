"""The recorded history of the cluster (issue 21): one row per event, with a small JSON payload; pod templates
and price tables stored once each (many replicas share one template), by the id packing.history gives them.

A row is the event's line of the history file (packing.history.jsonl, docs/history.md) cut in three: its time,
kind and subject in columns (what exports, the recorder and pruning query), the template by reference, and the
rest of the line in `payload`. Events recorded from the cluster have no `imported`; each imported file's events
are kept apart under its HistoryImport, so an imported history never mixes with the recorded one.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class EventKind(models.IntegerChoices):
    # Values in packing.history.EVENT_ORDER's order: events at one time are exported in (at, kind, id) order.
    REVISION = 0, "Revision"
    PRICES = 1, "Prices"
    NODE_LAUNCHED = 2, "NodeLaunched"
    POD_DEPARTED = 3, "PodDeparted"
    POD_ARRIVED = 4, "PodArrived"
    POD_BOUND = 5, "PodBound"
    NODE_INTERRUPTED = 6, "NodeInterrupted"
    NODE_TERMINATED = 7, "NodeTerminated"


class HistorySpec(models.Model):
    """A pod template (packing.history.podspecs) or a table of prices in force, stored once under its id."""

    digest = models.CharField(max_length=64, unique=True)
    body = models.JSONField()

    def __str__(self) -> str:
        return self.digest


class HistoryImport(models.Model):
    """One history file imported (another cluster's, or another tool's): its events are its own history."""

    name = models.CharField(max_length=255, blank=True, default="")
    imported_at = models.DateTimeField(default=timezone.now)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    start = models.DateTimeField(null=True, blank=True)
    end = models.DateTimeField(null=True, blank=True)
    events = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-imported_at", "-id"]

    def __str__(self) -> str:
        return f"import {self.pk} {self.name}"


class HistoryEvent(models.Model):
    at = models.DateTimeField()
    kind = models.PositiveSmallIntegerField(choices=EventKind.choices)
    # a pod's namespace/name, a node's name, a manifest's Kind/name; "" for Prices
    subject = models.CharField(max_length=320, blank=True, default="")
    spec = models.ForeignKey(HistorySpec, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    payload = models.JSONField(default=dict, blank=True)
    # an arrival, launch or revision still in force (its subject has not left, ended or been revised since):
    # what the recorder diffs the cluster against, and what pruning keeps
    live = models.BooleanField(default=False)
    imported = models.ForeignKey(HistoryImport, null=True, blank=True, on_delete=models.CASCADE,
                                 related_name="history_events")

    class Meta:
        ordering = ["at", "kind", "id"]
        indexes = [
            models.Index(fields=["imported", "at"], name="history_ev_imported_at"),
            models.Index(fields=["imported", "kind", "live"], name="history_ev_imported_live"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.get_kind_display()} {self.subject}"


class HistoryCursor(models.Model):
    """The recorder's own state: when it last looked at the cluster, and the prices in force it last recorded."""

    name = models.CharField(max_length=32, unique=True)
    observed_at = models.DateTimeField(null=True, blank=True)
    prices = models.ForeignKey(HistorySpec, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    def __str__(self) -> str:
        return self.name
