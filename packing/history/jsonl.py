"""The history file: JSON lines, a header line then one line per event (docs/history.md is the reference).

Writing: :class:`HistoryWriter` writes the header, each pod template once (a `PodSpec` line, before the first
event naming it) and the events. Reading: :func:`iter_history` reads lines one at a time, strictly: a line that
is not one JSON object, a missing, unknown or badly typed field, a time earlier than the line before, a template
the engine cannot read, a pod that arrives twice or leaves without having arrived, a node launched twice or ended
without a launch: :class:`HistoryError` naming the file, the line and the field. Nothing is held but the live set
and the templates.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from packing.fields import FieldError, InputError, price
from packing.history.events import (
    Event,
    EventName,
    InterruptionKind,
    ManifestKind,
    NodeInterrupted,
    NodeLaunched,
    NodeTerminated,
    OfferingPrice,
    PodArrived,
    PodBound,
    PodDeparted,
    PodEnd,
    Prices,
    Revision,
)
from packing.history.podspecs import engine_pod
from packing.history.revisions import check_manifest
from packing.yamlinput import brief, json_constant, json_pairs

__all__ = [
    "FORMAT",
    "VERSION",
    "Header",
    "History",
    "HistoryError",
    "HistoryWriter",
    "PodSpec",
    "event_json",
    "format_time",
    "iter_history",
    "read_history",
    "read_history_file",
]

FORMAT = "loadmaster.dev/history"
VERSION = 1
MAX_LINE = 4 << 20  # characters of one line: a template or a manifest is a few KiB, a full Prices line < 1 MiB
MAX_NAME = 253  # a Kubernetes object name (DNS subdomain)
MAX_TEXT = 1024  # free text (a termination reason, a source)


class HistoryError(InputError):
    """A bad line of a history file: `file: line N: field: message` (the one line the CLIs print)."""


@dataclass(frozen=True, slots=True)
class Header:
    version: int = VERSION
    created: datetime | None = None
    source: str = ""
    start: datetime | None = None  # the time the history covers from (an export's `since`)
    end: datetime | None = None


@dataclass(frozen=True, slots=True)
class PodSpec:
    """A pod template (packing.history.podspecs) under the id pods name it by."""

    id: str
    template: Mapping[str, Any]


@dataclass
class History:
    header: Header
    templates: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)


# ---------------------------------------------------------------- writing
def format_time(t: datetime) -> str:
    """RFC 3339 in UTC with a Z; fractional seconds only when there are some (microseconds, lossless)."""
    t = t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC)
    base = t.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{t.microsecond:06d}Z" if t.microsecond else f"{base}Z"


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def header_json(header: Header) -> dict[str, Any]:
    out: dict[str, Any] = {"format": FORMAT, "version": header.version}
    if header.created is not None:
        out["created"] = format_time(header.created)
    if header.source:
        out["source"] = header.source
    if header.start is not None:
        out["start"] = format_time(header.start)
    if header.end is not None:
        out["end"] = format_time(header.end)
    return out


def event_json(e: Event) -> dict[str, Any]:
    """The line of one event, as a dict (keys in the documented order; optional ones only when set)."""
    if isinstance(e, PodArrived):
        out: dict[str, Any] = {"at": format_time(e.at), "event": EventName.POD_ARRIVED.value,
                               "namespace": e.namespace, "name": e.name, "spec": e.spec}  # fmt: skip
        if e.uid:
            out["uid"] = e.uid
        if e.owner_kind:
            out["owner"] = {"kind": e.owner_kind, "name": e.owner_name}
        if e.node:
            out["node"] = e.node
        return out
    if isinstance(e, PodBound):
        return {"at": format_time(e.at), "event": EventName.POD_BOUND.value, "namespace": e.namespace,
                "name": e.name, "node": e.node}  # fmt: skip
    if isinstance(e, PodDeparted):
        out = {"at": format_time(e.at), "event": EventName.POD_DEPARTED.value, "namespace": e.namespace,
               "name": e.name}  # fmt: skip
        if e.end is not PodEnd.DELETED:
            out["end"] = e.end.value
        return out
    if isinstance(e, NodeLaunched):
        out = {"at": format_time(e.at), "event": EventName.NODE_LAUNCHED.value, "name": e.name,
               "instanceType": e.instance_type, "zone": e.zone, "capacityType": e.capacity_type,
               "price": e.price}  # fmt: skip
        if e.nodepool:
            out["nodepool"] = e.nodepool
        if e.provider_id:
            out["providerID"] = e.provider_id
        for key, value in (("labels", e.labels), ("taints", list(e.taints)), ("allocatable", e.allocatable),
                           ("capacity", e.capacity)):  # fmt: skip
            if value:
                out[key] = value
        return out
    if isinstance(e, NodeInterrupted):
        return {"at": format_time(e.at), "event": EventName.NODE_INTERRUPTED.value, "name": e.name,
                "interruption": e.interruption.value}  # fmt: skip
    if isinstance(e, NodeTerminated):
        out = {"at": format_time(e.at), "event": EventName.NODE_TERMINATED.value, "name": e.name}
        if e.reason:
            out["reason"] = e.reason
        return out
    if isinstance(e, Revision):
        out = {"at": format_time(e.at), "event": EventName.REVISION.value, "kind": e.kind.value, "name": e.name}
        if e.revision is not None:
            out["revision"] = e.revision
        out["manifest"] = e.manifest
        return out
    out = {"at": format_time(e.at), "event": EventName.PRICES.value}
    if e.set:
        out["set"] = [[o.instance_type, o.zone, o.capacity_type, o.price] for o in e.set]
    if e.unset:
        out["unset"] = [list(k) for k in e.unset]
    return out


class HistoryWriter:
    """Writes a history to a text stream: the header at once, then each template before the first pod naming it.

    The writer does not check what it is given (the reader does); it refuses only a pod whose template it was
    never given, which would make a file no reader accepts."""

    def __init__(self, out: TextIO, header: Header | None = None) -> None:
        self._out = out
        self._known: dict[str, Mapping[str, Any]] = {}
        self._written: set[str] = set()
        out.write(_dumps(header_json(header or Header())) + "\n")

    def add_template(self, spec: str, template: Mapping[str, Any]) -> None:
        """Make a template known (written when a pod first names it)."""
        self._known.setdefault(spec, template)

    def write(self, event: Event) -> None:
        if isinstance(event, PodArrived) and event.spec not in self._written:
            template = self._known.get(event.spec)
            if template is None:
                raise ValueError(f"pod {event.key} names template {event.spec}, which the writer was not given")
            self._out.write(_dumps({"event": EventName.POD_SPEC.value, "id": event.spec, "template": template}))
            self._out.write("\n")
            self._written.add(event.spec)
        self._out.write(_dumps(event_json(event)) + "\n")

    def write_all(self, events: Iterable[Event]) -> None:
        for e in events:
            self.write(e)


# ---------------------------------------------------------------- reading: fields
class _Line:
    """One line's object and the reader of its fields (FieldError naming the field)."""

    def __init__(self, obj: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
        self.obj = obj
        for key in obj:
            if key not in allowed:
                raise FieldError(str(key)[:60], f"unknown field (expected {', '.join(allowed)})")

    def string(self, key: str, *, required: bool = True, limit: int = MAX_NAME) -> str:
        v = self.obj.get(key)
        if v is None:
            if required:
                raise FieldError(key, "is required")
            return ""
        if not isinstance(v, str):
            raise FieldError(key, f"must be a string, got {brief(v)}")
        if not v and required:
            raise FieldError(key, "must not be empty")
        if len(v) > limit:
            raise FieldError(key, f"must be at most {limit} characters")
        return v

    def time(self, key: str, *, required: bool = True) -> datetime | None:
        v = self.obj.get(key)
        if v is None:
            if required:
                raise FieldError(key, "is required")
            return None
        if not isinstance(v, str) or len(v) > 40 or not v.endswith(("Z", "+00:00")):
            raise FieldError(key, f"must be an RFC 3339 time in UTC such as 2026-12-03T09:40:00Z, got {brief(v)}")
        try:
            t = datetime.fromisoformat(v)
        except ValueError:
            raise FieldError(key, f"must be an RFC 3339 time in UTC such as 2026-12-03T09:40:00Z, got {brief(v)}") from None
        return t.astimezone(UTC)

    def object(self, key: str) -> Mapping[str, Any]:
        v = self.obj.get(key)
        if v is None:
            return {}
        if not isinstance(v, Mapping):
            raise FieldError(key, f"must be an object, got {brief(v)}")
        return v

    def str_map(self, key: str) -> dict[str, str]:
        out = {}
        for k, v in self.object(key).items():
            if not isinstance(v, str):
                raise FieldError(f"{key}.{str(k)[:60]}", f"must be a string, got {brief(v)}")
            out[str(k)] = v
        return out


def _required_time(line: _Line) -> datetime:
    t = line.time("at")
    assert t is not None
    return t


_EVENT_FIELDS: dict[EventName, tuple[str, ...]] = {
    EventName.POD_SPEC: ("event", "id", "template"),
    EventName.POD_ARRIVED: ("at", "event", "namespace", "name", "spec", "uid", "owner", "node"),
    EventName.POD_BOUND: ("at", "event", "namespace", "name", "node"),
    EventName.POD_DEPARTED: ("at", "event", "namespace", "name", "end"),
    EventName.NODE_LAUNCHED: ("at", "event", "name", "instanceType", "zone", "capacityType", "price", "nodepool",
                              "providerID", "labels", "taints", "allocatable", "capacity"),  # fmt: skip
    EventName.NODE_INTERRUPTED: ("at", "event", "name", "interruption"),
    EventName.NODE_TERMINATED: ("at", "event", "name", "reason"),
    EventName.REVISION: ("at", "event", "kind", "name", "revision", "manifest"),
    EventName.PRICES: ("at", "event", "set", "unset"),
}


def _enum_value(line: _Line, key: str, enum_type: Any, default: Any = None) -> Any:
    raw = line.obj.get(key)
    if raw is None and default is not None:
        return default
    try:
        return enum_type(raw)
    except ValueError:
        names = ", ".join(m.value for m in enum_type)
        raise FieldError(key, f"must be one of {names}, got {brief(raw)}") from None


def _offering_key(v: Any, path: str, n: int) -> list[Any]:
    if not isinstance(v, list) or len(v) != n:
        raise FieldError(path, f"must be a list of {n} items, got {brief(v)}")
    for i, part in enumerate(v[:3]):
        if not isinstance(part, str) or not part or len(part) > 64:
            raise FieldError(f"{path}[{i}]", f"must be a non-empty string, got {brief(part)}")
    return v


def _prices(line: _Line, at: datetime) -> Prices:
    set_ = []
    raw = line.obj.get("set")
    if raw is not None and not isinstance(raw, list):
        raise FieldError("set", "must be a list of [instanceType, zone, capacityType, price]")
    for i, v in enumerate(raw or []):
        it, zone, ct, p = _offering_key(v, f"set[{i}]", 4)
        set_.append(OfferingPrice(it, zone, ct, price(p, f"set[{i}][3]")))
    unset = []
    raw = line.obj.get("unset")
    if raw is not None and not isinstance(raw, list):
        raise FieldError("unset", "must be a list of [instanceType, zone, capacityType]")
    for i, v in enumerate(raw or []):
        it, zone, ct = _offering_key(v, f"unset[{i}]", 3)
        unset.append((it, zone, ct))
    return Prices(at, tuple(set_), tuple(unset))


def _node_launched(line: _Line, at: datetime) -> NodeLaunched:
    if "price" not in line.obj:
        raise FieldError("price", "is required (null when unknown)")
    taints = line.obj.get("taints")
    if taints is not None and (not isinstance(taints, list) or not all(isinstance(t, Mapping) for t in taints)):
        raise FieldError("taints", "must be a list of taints ({key, value, effect})")
    return NodeLaunched(
        at,
        line.string("name"),
        line.string("instanceType", limit=64),
        line.string("zone", limit=64),
        line.string("capacityType", limit=32),
        price(line.obj.get("price"), "price"),
        nodepool=line.string("nodepool", required=False),
        provider_id=line.string("providerID", required=False, limit=MAX_TEXT),
        labels=line.str_map("labels"),
        taints=tuple(taints or ()),
        allocatable=line.str_map("allocatable"),
        capacity=line.str_map("capacity"),
    )


def _revision(line: _Line, at: datetime) -> Revision:
    kind = _enum_value(line, "kind", ManifestKind)
    name = line.string("name", limit=63)
    rev = line.obj.get("revision")
    if rev is not None and (isinstance(rev, bool) or not isinstance(rev, int) or not 0 < rev < 2**31):
        raise FieldError("revision", f"must be a positive integer, got {brief(rev)}")
    if "manifest" not in line.obj:
        raise FieldError("manifest", "is required (null when the object was deleted)")
    manifest = line.obj["manifest"]
    if manifest is not None:
        if not isinstance(manifest, Mapping):
            raise FieldError("manifest", f"must be an object, got {brief(manifest)}")
        check_manifest(manifest, kind, name, "manifest")
    return Revision(at, kind, name, manifest, rev)


def parse_event(obj: Mapping[str, Any]) -> Event | PodSpec:
    """One line's object as an event (or a PodSpec); FieldError naming the field. No check against other lines."""
    raw = obj.get("event")
    try:
        name = EventName(str(raw) if isinstance(raw, str) else "")
    except ValueError:
        raise FieldError("event", f"unknown event {brief(raw)} (expected one of "
                                  f"{', '.join(e.value for e in EventName)})") from None  # fmt: skip
    line = _Line(obj, _EVENT_FIELDS[name])
    if name is EventName.POD_SPEC:
        template = obj.get("template")
        if not isinstance(template, Mapping):
            raise FieldError("template", f"must be an object ({{metadata, spec}}), got {brief(template)}")
        return PodSpec(line.string("id", limit=64), template)
    at = _required_time(line)
    if name is EventName.POD_ARRIVED:
        try:
            owner_line = _Line(line.object("owner"), ("kind", "name"))
        except FieldError as e:
            raise FieldError(f"owner.{e.path}", e.message) from None
        return PodArrived(
            at, line.string("namespace", limit=63), line.string("name"), line.string("spec", limit=64),
            uid=line.string("uid", required=False, limit=128),
            owner_kind=_owner_field(owner_line, "kind"), owner_name=_owner_field(owner_line, "name"),
            node=line.string("node", required=False),
        )  # fmt: skip
    if name is EventName.POD_BOUND:
        return PodBound(at, line.string("namespace", limit=63), line.string("name"), line.string("node"))
    if name is EventName.POD_DEPARTED:
        return PodDeparted(at, line.string("namespace", limit=63), line.string("name"),
                           _enum_value(line, "end", PodEnd, PodEnd.DELETED))  # fmt: skip
    if name is EventName.NODE_LAUNCHED:
        return _node_launched(line, at)
    if name is EventName.NODE_INTERRUPTED:
        return NodeInterrupted(at, line.string("name"), _enum_value(line, "interruption", InterruptionKind))
    if name is EventName.NODE_TERMINATED:
        return NodeTerminated(at, line.string("name"), line.string("reason", required=False, limit=MAX_TEXT))
    if name is EventName.REVISION:
        return _revision(line, at)
    return _prices(line, at)


def _owner_field(owner: _Line, key: str) -> str:
    try:
        return owner.string(key, required=False)
    except FieldError as e:
        raise FieldError(f"owner.{e.path}", e.message) from None


def parse_header(obj: Mapping[str, Any]) -> Header:
    line = _Line(obj, ("format", "version", "created", "source", "start", "end"))
    if obj.get("format") != FORMAT:
        raise FieldError("format", f"must be {FORMAT!r} (is this a Loadmaster history file?), got {brief(obj.get('format'))}")
    version = obj.get("version")
    if version != VERSION or isinstance(version, bool):
        raise FieldError("version", f"this reader reads version {VERSION}, got {brief(version)}")
    return Header(VERSION, line.time("created", required=False), line.string("source", required=False, limit=MAX_TEXT),
                  line.time("start", required=False), line.time("end", required=False))  # fmt: skip


# ---------------------------------------------------------------- reading: lines
_DECODER = json.JSONDecoder(object_pairs_hook=json_pairs, parse_constant=json_constant)


def _load_line(text: str) -> Any:
    try:
        value, end = _DECODER.raw_decode(text)
    except (ValueError, RecursionError) as e:
        msg = e.msg if isinstance(e, json.JSONDecodeError) else str(e)
        raise FieldError("(line)", f"not JSON: {msg[:80]}") from None
    if text[end:].strip():
        raise FieldError("(line)", "more than one JSON value on the line")
    if isinstance(value, float) and not math.isfinite(value):
        raise FieldError("(line)", "not a JSON object")
    if not isinstance(value, Mapping):
        raise FieldError("(line)", f"must be one JSON object, got {type(value).__name__}")
    return value


@dataclass
class _State:
    """What the reader checks lines against: time order, templates, the pods and nodes alive."""

    last: datetime | None = None
    templates: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    pods: set[str] = field(default_factory=set)
    nodes: set[str] = field(default_factory=set)


def _check(item: Event | PodSpec, st: _State) -> None:
    if isinstance(item, PodSpec):
        seen = st.templates.get(item.id)
        if seen is not None:
            if seen != item.template:
                raise FieldError("id", f"template {brief(item.id)} is defined twice, differently")
            return
        engine_pod(item.template, namespace="default", name="template", path="template.")  # names the field
        st.templates[item.id] = item.template
        return
    if st.last is not None and item.at < st.last:
        raise FieldError("at", f"{format_time(item.at)} is earlier than the line before ({format_time(st.last)}): "
                               "events must be in time order")  # fmt: skip
    st.last = item.at
    if isinstance(item, PodArrived):
        if item.spec not in st.templates:
            raise FieldError("spec", f"no PodSpec line with id {brief(item.spec)} comes before it")
        if item.key in st.pods:
            raise FieldError("name", f"pod {brief(item.key)} arrives while it is already there")
        st.pods.add(item.key)
    elif isinstance(item, PodBound):
        if item.key not in st.pods:
            raise FieldError("name", f"pod {brief(item.key)} is bound but never arrived (or already left)")
    elif isinstance(item, PodDeparted):
        if item.key not in st.pods:
            raise FieldError("name", f"pod {brief(item.key)} leaves but never arrived (or already left)")
        st.pods.discard(item.key)
    elif isinstance(item, NodeLaunched):
        if item.name in st.nodes:
            raise FieldError("name", f"node {brief(item.name)} is launched while it is already there")
        st.nodes.add(item.name)
    elif isinstance(item, NodeInterrupted):
        if item.name not in st.nodes:
            raise FieldError("name", f"node {brief(item.name)} is interrupted but was never launched (or already ended)")
    elif isinstance(item, NodeTerminated):
        if item.name not in st.nodes:
            raise FieldError("name", f"node {brief(item.name)} ends but was never launched (or already ended)")
        st.nodes.discard(item.name)


def iter_history(lines: Iterable[str], filename: str) -> Iterator[Header | PodSpec | Event]:
    """The header, then every template and event of a history's lines, in order; HistoryError naming the file,
    the line (1 is the header) and the field at the first bad one. Blank lines are refused (a truncated copy
    shows as one)."""
    st = _State()
    number = 0
    for number, text in enumerate(lines, 1):
        try:
            if len(text) > MAX_LINE:
                raise FieldError("(line)", f"longer than {MAX_LINE} characters")
            if not text.strip():
                raise FieldError("(line)", "empty line")
            obj = _load_line(text.strip())
            if number == 1:
                yield parse_header(obj)
                continue
            item = parse_event(obj)
            _check(item, st)
        except FieldError as e:
            raise HistoryError(f"{filename}: line {number}: {e.path}: {e.message}") from None
        yield item
    if number == 0:
        raise HistoryError(f"{filename}: line 1: (line): empty file (expected the header line)")


def read_history(lines: Iterable[str], filename: str) -> History:
    items = iter_history(lines, filename)
    header = next(items)
    assert isinstance(header, Header)
    out = History(header)
    for item in items:
        if isinstance(item, PodSpec):
            out.templates[item.id] = item.template
        elif not isinstance(item, Header):
            out.events.append(item)
    return out


def read_history_file(path: str) -> History:
    """read_history of a file ('-' is stdin); HistoryError naming the file when it cannot be read."""
    try:
        if path == "-":
            return read_history(sys.stdin, "-")
        with open(path, encoding="utf-8", newline="\n") as f:
            return read_history(f, path)
    except OSError as e:
        raise HistoryError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise HistoryError(f"{path}: not UTF-8 text (byte {e.start})") from None
