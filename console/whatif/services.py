"""Writes of the what-if pages: storing a snapshot (validated with the CLI's parser) and its replay.

Previews and explanations only read (console.whatif.selectors); a snapshot is the one thing these pages save.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.utils import timezone

from console.whatif import selectors
from console.whatif.models import Snapshot
from packing import api

log = logging.getLogger(__name__)

MAX_SNAPSHOT_BYTES = 20 * 1024 * 1024


def snapshot_validate(files: Sequence[tuple[str, str]]) -> None:
    """InputError naming file, document and field (the CLI's parser and message) when a file is bad."""
    total = sum(len(t.encode("utf-8")) for _, t in files)
    if total > MAX_SNAPSHOT_BYTES:
        raise api.InputError(f"{files[-1][0]}: snapshot is {total} bytes; the limit is {MAX_SNAPSHOT_BYTES}")
    inputs, _ = selectors.parse_snapshot(files)
    api.expansion_plan(inputs)  # workloads past MAX_EXPANDED_PODS: refused here, as the CLI refuses them


def snapshot_create(*, name: str, files: Sequence[tuple[str, str]], user: Any = None,
                    taken_at: datetime | None = None, source: str = "upload", replay: bool = True) -> Snapshot:
    """Validate every file with the CLI's parser, then store them as one text; nothing saved on error.
    With `replay` (the pages' default) the replay is computed now and stored with it."""
    snapshot_validate(files)
    text = selectors.SEPARATOR.join(t for _, t in files)
    snap = Snapshot.objects.create(name=name, source=source, filenames=[f for f, _ in files],
                                   lengths=[len(t) for _, t in files], yaml=text,
                                   size=len(text.encode("utf-8")), taken_at=taken_at or timezone.now(),
                                   created_by=user if getattr(user, "is_authenticated", False) else None)
    if replay:
        snapshot_replay_store(snapshot=snap)
    return snap


def snapshot_replay_store(*, snapshot: Snapshot) -> Snapshot:
    """Replay a stored snapshot (at its own clock, on today's catalog) and store the result on it: the
    pages read the stored replay and never recompute it. A replay the engine cannot finish stores its
    error instead (shown on the page), never a traceback."""
    started = timezone.now()
    try:
        result: dict[str, Any] | None = selectors.replay_files(selectors.snapshot_files(snapshot),
                                                               at=snapshot.taken_at)
        error = ""
    except api.InputError as exc:
        result, error = None, str(exc)
    except Exception as exc:  # noqa: BLE001 - an engine failure on one snapshot is reported on its page
        log.warning("snapshot %s: replay failed: %r", snapshot.pk, exc)
        result, error = None, f"the engines could not replay this snapshot: {type(exc).__name__}: {exc}"[:2000]
    snapshot.replay, snapshot.replay_error, snapshot.replayed_at = result, error, started
    snapshot.save(update_fields=["replay", "replay_error", "replayed_at"])
    return snapshot
