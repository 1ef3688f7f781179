"""Reading the objects of a text one at a time, so that a 50,000-pod `kubectl get -o yaml` or `-o json` dump is
never held whole (as a node graph or as one tree of dicts): each `kind: List` item is read, handed on, dropped.

:func:`stream_objects` yields what packing.documents.kubernetes_objects yields, for the texts it is sure of, and
raises :class:`Declined` for any other (or for any problem): the caller then reads the text again with
kubernetes_objects, which decides (and words every error). Being sure means:

* JSON: one top-level object read key by key with the same decoder and checks as yamlinput.load_json (duplicate
  keys, NaN, depth, lone surrogates); its `items` array element by element.
* YAML: the text is split where kubectl's output can only be split — documents at `---` lines, a document's
  top-level keys at lines that start in column 0, a List's items at `- ` lines in column 0 — and each piece is
  read on its own by packing.kubectlyaml's reader for what kubectl prints, or else by yamlinput (the full
  reader). A piece read on its own means what it means in the whole document when every piece reads cleanly
  (a quoted scalar or flow collection running across a split leaves a piece unterminated, which is an error),
  the text has no anchors (an alias limit is per document), no directives, no tabs or carriage returns.

A List's `kind` comes after its `items` in kubectl's output (keys sorted), so items are yielded before the
document is known to be a List; when it turns out not to be one, Declined says so after the fact.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from packing import kubectlyaml, yamlinput
from packing.documents import document_objects

__all__ = [
    "Declined",
    "Layout",
    "is_json_object",
    "json_bytes_objects",
    "stream_objects",
    "stream_part",
    "yaml_layout",
]


class Declined(Exception):
    """The streaming reader is not sure of this text: read it whole (packing.documents.kubernetes_objects)."""


_LEADING_SPACE = re.compile(r"\s*")


def stream_objects(text: str, filename: str) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """(where, prefix, object) of every Kubernetes object of `text`, as kubernetes_objects gives them; Declined
    (possibly after some objects) when the text must be read whole, including when it has any problem."""
    try:
        first = _LEADING_SPACE.match(text).end()  # type: ignore[union-attr]
        if text.startswith(("{", "["), first):
            # one JSON reader, the bytes one: a text that does not encode (lone surrogates) is read whole
            yield from _json_bytes_objects(text.encode("utf-8"), filename)
        else:
            yield from _yaml_objects(text, filename)
    except (ValueError, RecursionError, yaml.YAMLError) as e:  # NotJson and UnicodeError are ValueErrors
        raise Declined(str(e)[:80]) from None


def _is_list(doc: Mapping[str, Any]) -> bool:
    return "apiVersion" in doc and "kind" in doc and str(doc.get("kind", "")).endswith("List")


def _item(where: str, i: int, item: Any) -> tuple[str, str, Mapping[str, Any]]:
    if not isinstance(item, Mapping) or "apiVersion" not in item or "kind" not in item:
        raise Declined("not a Kubernetes object")
    return where, f"items[{i}].", item


# ---------------------------------------------------------------- JSON
_DECODER = json.JSONDecoder(object_pairs_hook=yamlinput.json_pairs, parse_constant=yamlinput.json_constant)


# ---------------------------------------------------------------- JSON from a file's bytes
_WS_BYTES = re.compile(rb"[ \t\n\r]*")
_WINDOW = 1 << 15  # a few times a pod of a dump: a window is copied and decoded for every value


def is_json_object(data: bytes) -> bool:
    """Whether `data` starts (after JSON whitespace) as one JSON object: json_bytes_objects may read it."""
    pos = _WS_BYTES.match(data).end()  # type: ignore[union-attr]
    return data[pos : pos + 1] == b"{"


def _decode_at(data: bytes, pos: int) -> tuple[Any, int]:
    """The JSON value at byte `pos` of `data` and the byte after it, decoding only a window of bytes around it
    (grown until the value ends inside it). A value that stops at the window's end may be cut (a number), so
    the window grows then too, unless it reaches the end of the data."""
    size = _WINDOW
    n = len(data)
    while True:
        end = min(n, pos + size)
        while end < n and data[end] & 0xC0 == 0x80:  # not inside a character
            end -= 1
        window = data[pos:end].decode("utf-8")
        try:
            value, stop = _DECODER.raw_decode(window, 0)
        except ValueError:
            if end >= n:
                raise
            size *= 4
            continue
        if stop < len(window) or end >= n:
            ascii_only = len(window) == end - pos
            return value, pos + (stop if ascii_only else len(window[:stop].encode("utf-8")))
        size *= 4


def json_bytes_objects(data: bytes, filename: str) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """stream_objects for a JSON text given as its UTF-8 bytes (is_json_object), never decoded whole: Declined
    when the text must be read whole, including when it has any problem (bytes that are not UTF-8 too)."""
    try:
        yield from _json_bytes_objects(data, filename)
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError and NotJson are ValueErrors
        raise Declined(str(e)[:80]) from None


def _json_bytes_objects(data: bytes, filename: str) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    ws = _WS_BYTES.match
    pos = ws(data).end()  # type: ignore[union-attr]
    if data[pos : pos + 1] != b"{":
        raise Declined("not one JSON object")
    where = f"{filename}: document 1"
    doc: dict[str, Any] = {}
    count = -1  # items read, -1 while there is no `items` array
    pos = ws(data, pos + 1).end()  # type: ignore[union-attr]
    if data[pos : pos + 1] == b"}":
        pos += 1
    else:
        while True:
            if data[pos : pos + 1] != b'"':
                raise Declined("expected a key")
            key, pos = _decode_at(data, pos)
            yamlinput.check_json(key, 2)
            pos = ws(data, pos).end()  # type: ignore[union-attr]
            if data[pos : pos + 1] != b":" or key in doc:
                raise Declined("expected ':' or a key given twice")
            pos = ws(data, pos + 1).end()  # type: ignore[union-attr]
            if key == "items" and data[pos : pos + 1] == b"[":
                doc[key] = None
                count = 0
                pos = ws(data, pos + 1).end()  # type: ignore[union-attr]
                if data[pos : pos + 1] == b"]":
                    pos += 1
                else:
                    while True:
                        start = pos
                        value, pos = _decode_at(data, pos)
                        # decoded from UTF-8: a lone surrogate can only come from a \u escape
                        yamlinput.check_json(value, 3, strings=data.find(b"\\u", start, pos) >= 0)
                        yield _item(where, count, value)
                        count += 1
                        pos = ws(data, pos).end()  # type: ignore[union-attr]
                        sep = data[pos : pos + 1]
                        pos = ws(data, pos + 1).end()  # type: ignore[union-attr]
                        if sep == b"]":
                            break
                        if sep != b",":
                            raise Declined("expected ',' or ']'")
            else:
                doc[key], pos = _decode_at(data, pos)
                yamlinput.check_json(doc[key], 2)
            pos = ws(data, pos).end()  # type: ignore[union-attr]
            sep = data[pos : pos + 1]
            pos = ws(data, pos + 1).end()  # type: ignore[union-attr]
            if sep == b"}":
                break
            if sep != b",":
                raise Declined("expected ',' or '}'")
    if ws(data, pos).end() != len(data):  # type: ignore[union-attr]
        raise Declined("extra data")
    if count < 0:
        for prefix, item in document_objects(doc, where):
            yield where, prefix, item
    elif not _is_list(doc):
        raise Declined("items, but not a List")


# ---------------------------------------------------------------- YAML
# what the splitting cannot vouch for: tabs, carriage returns, a byte-order mark, characters libyaml refuses (all
# but printable Unicode), directives, `...`, document markers with more on their line, and anchors (`&` where a
# node may start). Checked with searches that scan in C: one regular expression with all of it was slow.
_NOT_PRINTABLE = re.compile(r"[^\n\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
_CHECK_SPAN = 1 << 24  # characters of an ASCII text checked at a time: each span is copied as bytes once
_ANCHOR = re.compile(r"(?:^|[\s\[{,:])&", re.M)
_ANCHOR_FINDS = 10_000  # `&`s looked at one by one; a text with more is searched whole
_COLUMN0 = re.compile(r"\n(?=[^ \n])")


def _printable(text: str) -> bool:
    """Whether every character of `text` is one libyaml reads (printable Unicode, or a newline)."""
    if not text.isascii():
        return not _NOT_PRINTABLE.search(text)
    # an ASCII text: its control characters (below a space, or DEL) counted by numpy in a span at a time are
    # its newlines, much faster than the search
    import numpy as np

    for i in range(0, len(text), _CHECK_SPAN):
        span = text[i : i + _CHECK_SPAN]
        codes = np.frombuffer(span.encode("ascii"), dtype=np.uint8)
        if np.count_nonzero(codes < 0x20) != span.count("\n") or np.count_nonzero(codes == 0x7F):
            return False
    return True


def _has_anchor(text: str) -> bool:
    """Whether an `&` of `text` is where a node may start (an anchor)."""
    pos = text.find("&")
    for _ in range(_ANCHOR_FINDS):
        if pos < 0:
            return False
        if _ANCHOR.match(text, max(pos - 1, 0)):
            return True
        pos = text.find("&", pos + 1)
    return pos >= 0 and bool(_ANCHOR.search(text))


def _pieces(text: str) -> tuple[list[tuple[int, int]], list[int]]:
    """The documents' spans of `text`, split at `---` lines, and where each line that starts in column 0
    starts (after the first line); Declined for what the splitting cannot vouch for: tabs, carriage returns,
    a byte-order mark, characters libyaml refuses (all but printable Unicode), directives (`%` lines), `...`
    lines, document markers with more on their line, and anchors (`&` where a node may start)."""
    if not _printable(text):
        raise Declined("a text the splitting cannot vouch for")
    if "&" in text and _has_anchor(text):
        raise Declined("anchors")
    lines = [m.start() + 1 for m in _COLUMN0.finditer(text)]
    pieces: list[tuple[int, int]] = []
    start = 0
    for pos in (0, *lines) if text[:1] not in ("", " ", "\n") else lines:
        first = text[pos]
        if first == "%" or first == "." and text.startswith("...", pos):
            raise Declined("a text the splitting cannot vouch for")
        if first == "-" and text.startswith("---", pos):
            after = pos + 3
            if after < len(text) and text[after] != "\n":
                raise Declined("a document marker with more on its line")
            pieces.append((start, pos))
            start = after + 1
    pieces.append((start, len(text)))
    return pieces, lines


@dataclass(frozen=True)
class Layout:
    """Where a YAML text's documents are (spans) and its lines that start in column 0 (their starts, but the
    text's own first line), found once (_pieces); `split` is where stream_part divides the objects."""

    pieces: list[tuple[int, int]]
    lines: list[int]
    split: tuple[int, int] = (0, 0)  # (document number, item index in that document's List)


def yaml_layout(text: str, parts: int = 2) -> Layout | None:
    """The text's Layout, split in the middle of its largest kubectl List (None when it has none with at least
    `parts` items); Declined when the text is not one the splitting can vouch for."""
    pieces, lines = _pieces(text)
    best: tuple[int, int] | None = None
    for index, (a, b), inner in _documents(text, pieces, lines):
        if _kubectl_list(text, a, b):
            items = sum(1 for pos in inner if text.startswith(("- ", "-\n"), pos))
            if items >= parts and (best is None or items > best[1]):
                best = (index, items)
    if best is None:
        return None
    return Layout(pieces, lines, (best[0], best[1] // parts))


def stream_part(
    text: str, filename: str, layout: Layout, *, first: bool
) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """stream_objects for a YAML text, but only its objects before layout.split (`first`) or from it on: the two
    parts together are stream_objects' objects; each part checks what it reads and the pieces of the text's
    structure (a List's other keys), so a text both parts read without Declined is one stream_objects reads."""
    try:
        yield from _yaml_objects(text, filename, layout, first)
    except (ValueError, RecursionError, yaml.YAMLError) as e:
        raise Declined(str(e)[:80]) from None


def _documents(
    text: str, pieces: list[tuple[int, int]], lines: list[int]
) -> Iterator[tuple[int, tuple[int, int], list[int]]]:
    """(number, span, its column-0 lines after its first) of each document that is not empty."""
    if _blank(text, *pieces[0]):
        pieces = pieces[1:]  # nothing before the first `---`: no document there
    at = 0
    for index, (a, b) in enumerate(pieces, 1):
        while at < len(lines) and lines[at] <= a:
            at += 1
        end = at  # lines[at:end] start inside the piece, after its first line
        while end < len(lines) and lines[end] < b:
            end += 1
        if not _blank(text, a, b):  # an empty document (None) is counted, not read
            yield index, (a, b), lines[at:end]
        at = end


def _yaml_objects(
    text: str, filename: str, layout: Layout | None = None, first: bool = True
) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    if layout is None:
        pieces, lines = _pieces(text)
        split = None
    else:
        pieces, lines, split = layout.pieces, layout.lines, layout.split
    reader = kubectlyaml.ItemReader()
    for index, (a, b), inner in _documents(text, pieces, lines):
        take = None
        if split is not None:
            if index != split[0]:
                if (index < split[0]) != first:
                    continue  # the other part's document
            else:
                take = range(split[1]) if first else range(split[1], 1 << 62)
        yield from _yaml_document(text, a, b, inner, f"{filename}: document {index}", reader, take)


def _kubectl_list(text: str, a: int, b: int) -> bool:
    """Whether the document text[a:b] may be a List as kubectl prints one (its items read one by one)."""
    head = text[a : min(a + 2, b)]
    is_list = text.startswith("items:\n- ", a, b) or text.find("\nitems:\n- ", a, b) >= 0
    return is_list and head[:1] != " " and head not in ("- ", "-\n")


_BLANKS = re.compile(r"[ \n]*")


def _blank(text: str, a: int, b: int) -> bool:
    """Whether text[a:b] holds nothing but spaces and newlines."""
    return _BLANKS.match(text, a, b).end() == b  # type: ignore[union-attr]


def _yaml_document(
    text: str,
    a: int,
    b: int,
    lines: list[int],
    where: str,
    reader: kubectlyaml.ItemReader,
    take: range | None = None,
) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """The objects of the document text[a:b]; `lines` are where its lines that start in column 0 start (but
    the first). With `take`, only the List items of those indexes are read and yielded (and the document's
    other keys checked); a document that is not a List is then yielded only when `take` starts at 0."""
    if not _kubectl_list(text, a, b):
        if take is not None and take.start:
            return
        whole = yamlinput.load_one(text[a:b])  # not a List as kubectl prints one: read it whole
        for prefix, item in document_objects(whole, where):
            yield where, prefix, item
        return
    starts = [a, *lines, b]
    doc: dict[str, Any] = {}
    count = -1  # -1: before `items:`; then the items read
    for i in range(len(starts) - 1):
        if text.startswith(("- ", "-\n"), starts[i]):
            if count < 0:
                raise Declined("a sequence item outside items")
            if take is None or count in take:
                yield _item(where, count, _read_item(text[starts[i] : starts[i + 1]], reader))
            count += 1
            continue
        chunk = text[starts[i] : starts[i + 1]]
        if count >= 0:
            count = -2  # the items are over: another key follows
        if chunk == "items:\n" and "items" not in doc:
            doc["items"] = None
            count = 0
            continue
        part = yamlinput.load_one(chunk)
        if not isinstance(part, dict) or len(part) != 1:
            raise Declined("a top-level piece that is not one key")
        ((key, value),) = part.items()
        if key in doc:
            raise Declined("a key given twice")
        doc[key] = value
    if "items" not in doc or not _is_list(doc):
        raise Declined("items, but not a List")


def _read_item(chunk: str, reader: kubectlyaml.ItemReader) -> Any:
    """One `- ` item of a List's items, read as it reads in its document (at the same depth)."""
    value = reader.read(chunk)
    if value is kubectlyaml.UNSURE:
        value = yamlinput.load_one("x:\n" + chunk)["x"][0]
    return value
