"""Reads for the what-if pages: snapshots and their stored replays."""

from __future__ import annotations

from typing import Any

from console.whatif import services
from console.whatif.models import Snapshot


def snapshot_files(snap: Snapshot) -> list[tuple[str, str]]:
    return services.snapshot_files(snap.yaml, snap.filenames, snap.lengths)


def snapshot_replay(snap: Snapshot) -> dict[str, Any] | None:
    """The replay stored at upload (or by an operator's "Replay again"); None when there is none.
    Never computed here: a page view must not run the engines over a stored snapshot."""
    return snap.replay if isinstance(snap.replay, dict) else None


def snapshot_list() -> list[Snapshot]:
    return list(Snapshot.objects.defer("yaml", "replay").select_related("created_by"))
