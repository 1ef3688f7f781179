"""Loop locks: only one provision (or disrupt) run at a time across every worker.

A lock is claimed with one conditional UPDATE — "take it if it is free, expired, or already mine"
— so two workers racing for it cannot both win on any database; the expiry means a worker killed
mid-run blocks the loop for at most ``ttl``.
"""

from __future__ import annotations

import contextlib
import socket
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from console.control.models import LoopLock


class LockBusy(Exception):
    """Another worker holds the lock; this run should simply skip."""


def _token() -> str:
    return f"{socket.gethostname()}:{uuid.uuid4().hex[:12]}"


def lock_acquire(*, name: str, owner: str, ttl: timedelta, now: datetime | None = None) -> bool:
    now = now or timezone.now()
    try:
        with transaction.atomic():
            LoopLock.objects.create(name=name, owner="", expires_at=now - timedelta(seconds=1))
    except IntegrityError:
        pass  # the row exists already: fine, the UPDATE below decides
    taken = LoopLock.objects.filter(name=name).filter(Q(expires_at__lte=now) | Q(owner=owner)).update(
        owner=owner, expires_at=now + ttl, acquired_at=now)
    return taken == 1


def lock_release(*, name: str, owner: str) -> None:
    LoopLock.objects.filter(name=name, owner=owner).update(owner="", expires_at=timezone.now())


@contextlib.contextmanager
def loop_lock(name: str, *, ttl: timedelta = timedelta(minutes=2)) -> Iterator[str]:
    """Hold the named lock for the block, or raise LockBusy at once."""
    owner = _token()
    if not lock_acquire(name=name, owner=owner, ttl=ttl):
        raise LockBusy(name)
    try:
        yield owner
    finally:
        lock_release(name=name, owner=owner)
