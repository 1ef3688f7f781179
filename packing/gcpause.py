"""Holding off Python's cyclic garbage collector while solves run and documents are read, safely when several
threads do so at once (one count for the process: the collector is process-wide).

A solve allocates tens of thousands of short-lived objects that reference counting frees, and no cycles
worth collecting; each allocation burst still triggers collections that walk everything the process holds
(catalog, pools), a sizeable share of a large solve's time.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["gc_paused"]

_lock = threading.Lock()
_holders = 0  # solves (on any thread) inside gc_paused right now
_was_enabled = False  # the collector's state when the first of them entered


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Hold off the cyclic garbage collector for one solve (or one consolidation run, which nests solves).

    The collector is process-wide, so under threads the pause is counted: the first solve to enter records
    whether collection was on and switches it off, the last one to leave restores that state. Nested pauses
    (a consolidation run's solves) and solves on several threads at once therefore never switch the
    collector back on under a solve that is still running, nor leave it off after the last one.
    """
    global _holders, _was_enabled
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _was_enabled:
                gc.enable()
