"""Reads for the what-if pages: snapshots and their (cached per process) replays."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from console.whatif import services
from console.whatif.models import Snapshot


@lru_cache(maxsize=16)
def _replay(pk: int, size: int, taken_at: str) -> dict[str, Any]:
    # Snapshots never change after upload, so (pk, size, clock) identifies a replay.
    snap = Snapshot.objects.get(pk=pk)
    return services.snapshot_replay(snapshot_files(snap), at=snap.taken_at)


def snapshot_files(snap: Snapshot) -> list[tuple[str, str]]:
    return services.snapshot_files(snap.yaml, snap.filenames, snap.lengths)


def snapshot_replay(snap: Snapshot) -> dict[str, Any]:
    return _replay(snap.pk, snap.size, snap.taken_at.isoformat())


def snapshot_list() -> list[Snapshot]:
    return list(Snapshot.objects.defer("yaml").select_related("created_by"))
