"""Reading input files into Kubernetes objects: YAML or JSON, multi-document or `kind: List`, bounded in size.

Texts are read by packing.yamlinput (bounded aliases and nesting, duplicate keys refused, tags checked); a
problem is one InputError naming the file, the document and the line. The files of one CLI run share a
ByteBudget of DEFAULT_MAX_INPUT_BYTES (--max-input-bytes).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import yaml

from packing import yamlinput
from packing.fields import InputError, cut

__all__ = [
    "DEFAULT_MAX_INPUT_BYTES",
    "ByteBudget",
    "decode_text",
    "document_objects",
    "documents",
    "kubernetes_objects",
    "object_label",
    "read_bytes",
    "read_text",
]

DEFAULT_MAX_INPUT_BYTES = 64 * 2**20  # files read per CLI run, in all (--max-input-bytes raises it)


def _mark_where(e: Any) -> str:
    mark = getattr(e, "problem_mark", None)
    return f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""


def documents(text: str, filename: str) -> Iterator[tuple[int, Any]]:
    """The documents of a YAML or JSON text with their 1-based indexes, as error messages number them.

    A JSON array is a list of documents. Read by packing.yamlinput (bounded aliases and nesting, duplicate keys
    refused, tags checked); a problem is one InputError naming the file, the document and the line."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            data = yamlinput.load_json(text)
        except yamlinput.NotJson:
            pass  # not plain JSON: the YAML reader below gives the exact error (or reads it, as YAML)
        else:
            if isinstance(data, list):
                for i, d in enumerate(data):
                    yield i + 1, d
            else:
                yield 1, data
            return
    index = 0
    try:
        for d in yamlinput.load_all(text):
            index += 1
            if d is None:
                continue
            yield index, d
    except yaml.YAMLError as e:
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InputError(
            f"{filename}: document {index + 1}: invalid YAML{_mark_where(e)}: {cut(str(problem))}"
        ) from None


def kubernetes_objects(text: str, filename: str) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """Every Kubernetes object of a text, `kind: List` items included, as (where, prefix, object):
    `where` names the file and document, `prefix` the item inside a List — the parts of an error message."""
    for index, doc in documents(text, filename):
        where = f"{filename}: document {index}"
        for prefix, item in document_objects(doc, where):
            yield where, prefix, item


def document_objects(doc: Any, where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The Kubernetes objects of one document (`where` names it in messages): itself, or a List's items, each
    with its prefix ("items[3]." or ""); InputError when the document or an item is not an object."""
    if not isinstance(doc, Mapping) or "apiVersion" not in doc or "kind" not in doc:
        missing = "apiVersion" if not isinstance(doc, Mapping) or "apiVersion" not in doc else "kind"
        raise InputError(f"{where}: {missing}: not a Kubernetes object (needs apiVersion and kind)")
    items: Sequence[tuple[str, Any]]
    if doc.get("kind") == "List" or str(doc.get("kind", "")).endswith("List") and "items" in doc:
        raw = doc.get("items")
        if raw is None:
            raw = []
        if not isinstance(raw, list):
            raise InputError(f"{where}: items: must be a list")
        items = [(f"items[{i}].", it) for i, it in enumerate(raw)]
    else:
        items = [("", doc)]
    for prefix, item in items:
        if not isinstance(item, Mapping) or "apiVersion" not in item or "kind" not in item:
            raise InputError(f"{where}: {prefix or ''}apiVersion: not a Kubernetes object (needs apiVersion and kind)")
        yield prefix, item


def object_label(item: Mapping[str, Any], limit: int | None = 60) -> str:
    """' (Kind name)' for error messages, each part cut to `limit` characters (None: not cut)."""
    meta = item.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    kind, named = str(item.get("kind")), str(name)
    if limit is not None:
        kind, named = cut(kind, limit), cut(named, limit)
    return f" ({kind} {named})" if name else f" ({kind})"


def read_text(path: str, max_bytes: int | None = None, *, limit: int | None = None) -> str:
    """A whole input file ('-' is stdin); InputError naming the file when it cannot be read or holds more than
    `max_bytes` bytes (read no further than that: the limit protects memory). `limit` is the run's whole
    --max-input-bytes, for the message, when `max_bytes` is what other files left of it."""
    return decode_text(read_bytes(path, max_bytes, limit=limit), path)


def decode_text(data: bytes, path: str) -> str:
    """The text of a file's bytes; InputError naming the file when they are not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: cannot read file: {cut(str(e))}") from None


def read_bytes(path: str, max_bytes: int | None = None, *, limit: int | None = None) -> bytes:
    """read_text's bytes, not decoded (a JSON dump is streamed from them: decoding it whole would hold the bytes
    and the text at once)."""
    try:
        if path == "-":
            stream = getattr(sys.stdin, "buffer", None)
            n = -1 if max_bytes is None else max_bytes + 1
            data = stream.read(n) if stream is not None else sys.stdin.read(n).encode("utf-8")
        else:
            with open(path, "rb") as f:
                if max_bytes is not None and os.fstat(f.fileno()).st_size > max_bytes:
                    data = b""
                    too_big = True
                else:
                    data = f.read(-1 if max_bytes is None else max_bytes + 1)
                    too_big = False
            if too_big:
                raise _TooBig
        if max_bytes is not None and len(data) > max_bytes:
            raise _TooBig
        return data
    except _TooBig:
        total = limit if limit is not None else max_bytes
        raise InputError(
            f"{path}: the input is larger than {total} bytes (the limit of --max-input-bytes, for all files together)"
        ) from None
    except OSError as e:
        reason = e.strerror or str(e)
        raise InputError(f"{path}: cannot read file: {cut(reason)}") from None


class _TooBig(Exception):
    pass


class ByteBudget:
    """What is left of one run's --max-input-bytes (None: no limit), shared by every file the run reads."""

    def __init__(self, total: int | None = DEFAULT_MAX_INPUT_BYTES) -> None:
        self.total = total
        self.left = total

    def read(self, path: str) -> str:
        return decode_text(self.read_bytes(path), path)

    def read_bytes(self, path: str) -> bytes:
        data = read_bytes(path, self.left, limit=self.total)
        if self.left is not None:
            self.left -= len(data)
        return data
