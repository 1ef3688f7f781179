"""Reading one large YAML text on two cores: a forked worker reads and converts the second half of its largest
kubectl List (packing.streaming.stream_part) while this process does the first, and sends back what it added
to the Inputs (pickled), which is appended after this process's own additions, so the objects keep their order.

Only an all-clean read counts: when either half meets any problem (a text the streaming reader declines, a bad
field, anything unforeseen), or the halves added the same key to a mapping of the Inputs (two objects of one
name: the sequential reader words that), read_in_two says so and the caller reads the text again on one core,
which decides and words every error exactly as before.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import pickle
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from packing.streaming import Declined, Layout, stream_part, yaml_layout

if TYPE_CHECKING:
    from packing.kubeobjects import Inputs

__all__ = ["PARALLEL_MIN_CHARS", "read_in_two"]

# below this a text is read on one core: forking and sending the half back cost more than they save
PARALLEL_MIN_CHARS = 32 << 20

ReadObjects = Callable[[Iterator[tuple[str, str, Mapping[str, Any]]], "Inputs"], None]


def _may_fork() -> bool:
    if not hasattr(os, "fork") or threading.active_count() > 1:
        return False  # forking a process with threads can copy a lock some thread holds
    try:
        return len(os.sched_getaffinity(0)) >= 2
    except AttributeError:  # not on Linux
        return (os.cpu_count() or 1) >= 2


def read_in_two(text: str, filename: str, out: Inputs, read_objects: ReadObjects) -> bool:
    """Read `text`'s objects into `out` with `read_objects` on two cores; False (with `out` perhaps partly
    filled: the caller restores it) when the text is small, not a YAML text with a large List, or either half
    did not read cleanly."""
    if len(text) < PARALLEL_MIN_CHARS or text[:1] in ("{", "[") or not _may_fork():
        return False
    try:
        layout = yaml_layout(text)
    except Declined:
        return False
    if layout is None:
        return False
    before = _sizes(out)
    with tempfile.TemporaryFile() as sink:
        # forked (the text and `out` are the worker's without copying); the worker's exit code says how it went
        worker = multiprocessing.get_context("fork").Process(
            target=_worker, args=(text, filename, layout, out, read_objects, before, sink), daemon=True
        )
        sys.stdout.flush()  # the worker flushes its copy of what is buffered when it exits
        sys.stderr.flush()
        try:
            worker.start()
        except OSError:  # no memory or processes left for a fork: one core it is
            return False
        ok = False
        try:
            read_objects(stream_part(text, filename, layout, first=True), out)
            ok = True
        finally:
            worker.join()
        if not ok or worker.exitcode != 0:
            return False
        sink.seek(0)
        added = pickle.load(sink)
    return _merge(out, added)


def _worker(
    text: str,
    filename: str,
    layout: Layout,
    out: Inputs,
    read_objects: ReadObjects,
    before: dict[str, Any],
    sink: Any,
) -> None:
    """The second half into `out`, and what it added pickled to `sink`; exit code 1 (no traceback) when
    anything went wrong or the half changed more than it added."""
    try:
        read_objects(stream_part(text, filename, layout, first=False), out)
        added = _added(out, before)
        if added is None:
            sys.exit(1)
        pickle.dump(added, sink, protocol=pickle.HIGHEST_PROTOCOL)
        sink.flush()
    except Exception:  # noqa: BLE001 - any problem: the parent reads the text again on one core
        sys.exit(1)


def _sizes(out: Inputs) -> dict[str, Any]:
    """What each field of `out` holds before the read: a list's length, a mapping's entries (copied), a value."""
    state: dict[str, Any] = {}
    for f in dataclasses.fields(out):
        value = getattr(out, f.name)
        state[f.name] = len(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value
    return state


def _added(out: Inputs, before: dict[str, Any]) -> dict[str, Any] | None:
    """What the read added to each field of `out` (a list's new tail, a mapping's new entries, the counts of
    `skipped`), or None when it changed anything else (an entry it replaced, a field it set)."""
    added: dict[str, Any] = {}
    for name, was in before.items():
        value = getattr(out, name)
        if isinstance(value, list):
            added[name] = value[was:]
        elif isinstance(value, dict):
            if name == "skipped":
                added[name] = {k: n - was.get(k, 0) for k, n in value.items() if n != was.get(k, 0)}
                continue
            if any(k in value and value[k] is not v for k, v in was.items()) or len(value) < len(was):
                return None
            added[name] = {k: v for k, v in value.items() if k not in was}
        elif value is not was and value != was:
            return None
    return added


def _merge(out: Inputs, added: dict[str, Any]) -> bool:
    """Append the worker's additions to `out`; False when a mapping got the same key from both halves."""
    for name, extra in added.items():
        value = getattr(out, name)
        if isinstance(value, dict) and name != "skipped" and any(k in value for k in extra):
            return False
    for name, extra in added.items():
        value = getattr(out, name)
        if isinstance(value, list):
            value.extend(extra)
        elif name == "skipped":
            for k, n in extra.items():
                value[k] = value.get(k, 0) + n
        else:
            value.update(extra)
    return True
