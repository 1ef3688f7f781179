"""Writes of the replay pages and API: starting a replay (the change read and checked first, nothing saved when
it is refused), cancelling one, and running one (what the Celery task calls).

A replay is claimed by the task with a conditional UPDATE (queued -> running), so a task delivered twice runs it
once; progress is written with another (only while no cancel was asked), and Cancel is seen at the next
progress report, when packing.replay stops with ReplayCancelled."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import yaml
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from console.fleet.manifests import load_yaml_documents
from console.history.models import HistoryImport
from console.history.selectors import history_lines
from console.replay.models import Replay, ReplayStatus
from packing.api import InputError, history, replay

log = logging.getLogger(__name__)

ChangeKey = tuple[history.ManifestKind, str]
# progress is written at most this often (seconds): each write is also the task's look at Cancel
PROGRESS_WRITE_EVERY = 0.5


def change_read(text: str) -> dict[ChangeKey, Mapping[str, Any]]:
    """The NodePools and EC2NodeClasses of a change given as YAML (packing.replay.change_manifests checks each
    as the engine reads it); ValidationError on the `change` field naming the document and field."""
    if not text.strip():
        return {}
    try:
        docs = [d for d in load_yaml_documents(text) if d is not None]
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ValidationError({"change": f"not valid YAML{where}: {getattr(e, 'problem', None) or e}"}) from None
    pairs = []
    for i, doc in enumerate(docs, 1):
        if not isinstance(doc, dict):
            raise ValidationError({"change": f"change: document {i}: must be a mapping (a Kubernetes object)"})
        pairs.append((f"change: document {i}", doc))
    try:
        return replay.change_manifests(pairs)
    except InputError as e:
        raise ValidationError({"change": str(e)}) from None


def _names(change: Mapping[ChangeKey, Any]) -> list[str]:
    return [f"{k.value}/{n}" for k, n in sorted(change, key=lambda kn: (kn[0].value, kn[1]))]


def replay_start(*, start: datetime, end: datetime, seed: int = 0, change_yaml: str = "",
                 imported: HistoryImport | None = None, user: Any = None) -> Replay:
    """Check and save a replay, queued; its task is sent once the row is committed. ValidationError at the
    field (`end`, `change`) and nothing saved on bad input."""
    if end <= start:
        raise ValidationError({"end": "must be after the start of the window"})
    change = change_read(change_yaml)
    with transaction.atomic():
        run = Replay.objects.create(start=start, end=end, seed=seed, from_import=imported is not None,
                                    imported=imported, change_yaml=change_yaml, change_names=_names(change),
                                    created_by=user if getattr(user, "pk", None) else None)
        transaction.on_commit(lambda: _enqueue(run.pk))
    return run


def _enqueue(pk: int) -> None:
    from console.replay.tasks import run_replay  # the task module imports this one

    run_replay.delay(pk)


def replay_cancel(*, run: Replay) -> Replay:
    """Cancel: a queued replay is cancelled at once; a running one is asked to stop (its task stops at its next
    progress report); a finished one is left as it is."""
    now = timezone.now()
    if Replay.objects.filter(pk=run.pk, status=ReplayStatus.QUEUED).update(
            status=ReplayStatus.CANCELLED, cancel_requested=True, finished_at=now) == 0:
        Replay.objects.filter(pk=run.pk, status=ReplayStatus.RUNNING).update(cancel_requested=True)
    run.refresh_from_db()
    return run


def _progress(pk: int) -> Any:
    last = [0.0]

    def report(share: float) -> None:
        now = time.monotonic()
        if now - last[0] < PROGRESS_WRITE_EVERY and share < 1.0:
            return
        last[0] = now
        if Replay.objects.filter(pk=pk, cancel_requested=False).update(progress=round(share, 4)) == 0:
            raise replay.ReplayCancelled()

    return report


def _finish(pk: int, status: ReplayStatus, **values: Any) -> None:
    Replay.objects.filter(pk=pk, status=ReplayStatus.RUNNING).update(status=status, finished_at=timezone.now(),
                                                                     **values)


def replay_run(*, pk: int) -> ReplayStatus | None:
    """Run a queued replay: claim it, read its window of the history, replay it with and without its change,
    store the JSON. None when another task has it (or it was cancelled before it started)."""
    if Replay.objects.filter(pk=pk, status=ReplayStatus.QUEUED, cancel_requested=False).update(
            status=ReplayStatus.RUNNING, started_at=timezone.now(), progress=0.0) == 0:
        return None
    run = Replay.objects.get(pk=pk)
    try:
        if run.from_import and run.imported is None:
            raise InputError("the imported history this replay reads was deleted")
        change = change_read(run.change_yaml)
        lines = history_lines(since=run.start, until=run.end, imported=run.imported)
        source = "recorded history" if run.imported is None else f"import {run.imported.pk}"
        hist = history.read_history(lines, source)
        result = replay.replay(hist, change=change or None, start=run.start, end=run.end,
                               region=settings.LOADMASTER_AWS_REGION, seed=run.seed, progress=_progress(pk),
                               parallel=False)
    except replay.ReplayCancelled:
        _finish(pk, ReplayStatus.CANCELLED)
        return ReplayStatus.CANCELLED
    except (InputError, ValidationError) as e:  # a bad change or history (HistoryError is an InputError)
        message = "; ".join(e.messages) if isinstance(e, ValidationError) else str(e)
        _finish(pk, ReplayStatus.FAILED, error=message[:2000])
        return ReplayStatus.FAILED
    except Exception as e:  # noqa: BLE001 - a failed replay says why on its page, the worker lives on
        log.exception("replay %s failed", pk)
        _finish(pk, ReplayStatus.FAILED, error=f"{type(e).__name__}: {e}"[:2000])
        return ReplayStatus.FAILED
    _finish(pk, ReplayStatus.DONE, result=result.as_json(), progress=1.0)
    return ReplayStatus.DONE


__all__ = ["change_read", "replay_cancel", "replay_run", "replay_start"]
