"""Reads of the history: the JSON-lines file of a time window (GET /api/history/), streamed row by row.

A window's file starts with the state in force at its start, as events at `since` (packing.history's
rule, so it reads on its own): the NodePool and EC2NodeClass revisions in force, all prices in force, the nodes
alive (launched at `since`) and the pods alive (arrived at `since`, on their node when bound). Then every event of
the window, in (at, kind, id) order, each pod template on a PodSpec line before the first pod naming it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import QuerySet

from console.history.models import EventKind, HistoryEvent, HistoryImport, HistorySpec
from console.history.rows import line_of
from packing.api import history

EventName = history.EventName
Header = history.Header
header_json = history.header_json

CHUNK = 2000
_COLUMNS = ("at", "kind", "subject", "payload", "spec_id")


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n"


def history_rows(*, imported: HistoryImport | None = None) -> QuerySet[HistoryEvent]:
    return HistoryEvent.objects.filter(imported=imported)


def history_import_get(*, pk: int) -> HistoryImport | None:
    return HistoryImport.objects.filter(pk=pk).first()


class _Templates:
    """The PodSpec lines of one export: each template once, read from the database when first needed."""

    def __init__(self) -> None:
        self.written: set[int] = set()
        self.digests: dict[int, str] = {}

    def digest(self, spec_id: int | None) -> str:
        if spec_id is None:
            return ""
        if spec_id not in self.digests:
            self.digests[spec_id] = HistorySpec.objects.values_list("digest", flat=True).get(pk=spec_id)
        return self.digests[spec_id]

    def line(self, spec_id: int | None) -> str:
        if spec_id is None or spec_id in self.written:
            return ""
        self.written.add(spec_id)
        digest, body = HistorySpec.objects.values_list("digest", "body").get(pk=spec_id)
        self.digests[spec_id] = digest
        return _dumps({"event": EventName.POD_SPEC.value, "id": digest, "template": body})


def _state_at(rows: QuerySet[HistoryEvent], since: datetime) -> dict[str, dict[str, Any]]:
    """What is in force just before `since`, folded from the rows before it: by group, subject -> row values."""
    revisions: dict[str, Any] = {}
    prices: dict[str, list[Any]] = {}
    nodes: dict[str, Any] = {}
    pods: dict[str, Any] = {}
    for _at, kind, subject, payload, spec in rows.filter(at__lt=since).order_by("at", "kind", "id").values_list(
            *_COLUMNS).iterator(chunk_size=CHUNK):
        if kind == EventKind.REVISION:
            if payload.get("manifest") is None:
                revisions.pop(subject, None)
            else:
                revisions[subject] = payload
        elif kind == EventKind.PRICES:
            for item in payload.get("set", []):
                prices["|".join(item[:3])] = item
            for item in payload.get("unset", []):
                prices.pop("|".join(item), None)
        elif kind == EventKind.NODE_LAUNCHED:
            nodes[subject] = payload
        elif kind == EventKind.NODE_TERMINATED:
            nodes.pop(subject, None)
        elif kind == EventKind.POD_ARRIVED:
            pods[subject] = (dict(payload), spec)
        elif kind == EventKind.POD_BOUND and subject in pods:
            pods[subject][0]["node"] = payload.get("node", "")
        elif kind == EventKind.POD_DEPARTED:
            pods.pop(subject, None)
    return {"revisions": revisions, "prices": prices, "nodes": nodes, "pods": pods}


def history_lines(*, since: datetime, until: datetime | None = None,
                  imported: HistoryImport | None = None) -> Iterator[str]:
    """The history file of [since, until) (until None: up to now), line by line (each ends with a newline)."""
    rows = history_rows(imported=imported)
    source = (f"loadmaster import {imported.pk} {imported.name}" if imported is not None
              else f"loadmaster cluster {settings.LOADMASTER_CLUSTER_NAME}")
    yield _dumps(header_json(Header(source=source[:1024], start=since, end=until)))
    state = _state_at(rows, since)
    templates = _Templates()
    for subject, payload in sorted(state["revisions"].items()):
        yield _dumps(line_of(since, EventKind.REVISION, subject, payload, None))
    if state["prices"]:
        yield _dumps(line_of(since, EventKind.PRICES, "", {"set": [state["prices"][k] for k in sorted(state["prices"])]},
                             None))
    for subject, payload in sorted(state["nodes"].items()):
        yield _dumps(line_of(since, EventKind.NODE_LAUNCHED, subject, payload, None))
    for subject, (payload, spec) in sorted(state["pods"].items()):
        if spec not in templates.written:
            yield templates.line(spec)
        yield _dumps(line_of(since, EventKind.POD_ARRIVED, subject, payload, templates.digest(spec)))
    window = rows.filter(at__gte=since)
    if until is not None:
        window = window.filter(at__lt=until)
    for at, kind, subject, payload, spec in window.order_by("at", "kind", "id").values_list(
            *_COLUMNS).iterator(chunk_size=CHUNK):
        if spec is not None and spec not in templates.written:
            yield templates.line(spec)
        yield _dumps(line_of(at, kind, subject, payload, templates.digest(spec)))


def history_window_default(now: datetime) -> datetime:
    """The start of the retained history (now less LOADMASTER_HISTORY_DAYS): an export's default `since`."""
    return now - timedelta(days=settings.LOADMASTER_HISTORY_DAYS)


__all__ = ["history_import_get", "history_lines", "history_rows", "history_window_default"]
