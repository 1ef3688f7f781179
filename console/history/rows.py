"""A history event as a row (console.history.models.HistoryEvent) and back: the event's line
(packing.history.event_json) cut into its kind, its subject, its template's id and the rest (the payload)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from console.history.models import EventKind
from packing.api import history

Event = history.Event
EventName = history.EventName
event_json = history.event_json
format_time = history.format_time

# the rows an event of these kinds opens (live until closed), by the identity group they belong to
GROUP_OPENERS = {EventKind.POD_ARRIVED: "pod", EventKind.POD_BOUND: "pod", EventKind.NODE_LAUNCHED: "node",
                 EventKind.REVISION: "revision"}
# and the kinds that close the live rows of their subject's group (a revision closes the one before it)
GROUP_CLOSERS = {EventKind.POD_DEPARTED: "pod", EventKind.NODE_TERMINATED: "node", EventKind.REVISION: "revision"}
_POD_KINDS = (EventKind.POD_ARRIVED, EventKind.POD_BOUND, EventKind.POD_DEPARTED)
_NODE_KINDS = (EventKind.NODE_LAUNCHED, EventKind.NODE_INTERRUPTED, EventKind.NODE_TERMINATED)


def row_parts(e: Event) -> tuple[EventKind, str, dict[str, Any], str]:
    """(kind, subject, payload, template id or "") of an event."""
    line = event_json(e)
    kind = EventKind[EventName(line.pop("event")).name]
    del line["at"]
    digest = str(line.pop("spec", "")) if kind == EventKind.POD_ARRIVED else ""
    if kind in _POD_KINDS:
        subject = f"{line.pop('namespace')}/{line.pop('name')}"
    elif kind in _NODE_KINDS:
        subject = str(line.pop("name"))
    elif kind == EventKind.REVISION:
        subject = f"{line.pop('kind')}/{line.pop('name')}"
    else:
        subject = ""
    return kind, subject, line, digest


def line_of(at: datetime, kind: int, subject: str, payload: Mapping[str, Any], digest: str | None) -> dict[str, Any]:
    """The history file's line of a row (row_parts undone)."""
    k = EventKind(kind)
    line: dict[str, Any] = {"at": format_time(at), "event": EventName[k.name].value}
    if k in _POD_KINDS:
        ns, _, name = subject.partition("/")
        line["namespace"] = ns
        line["name"] = name
        if k == EventKind.POD_ARRIVED:
            line["spec"] = digest or ""
    elif k in _NODE_KINDS:
        line["name"] = subject
    elif k == EventKind.REVISION:
        manifest_kind, _, name = subject.partition("/")
        line["kind"] = manifest_kind
        line["name"] = name
    line.update(payload)
    return line
