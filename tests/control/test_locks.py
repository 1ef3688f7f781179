"""Loop locks: one holder at a time, expiry frees a crashed holder's lock, release is owner-only."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from console.control.locks import LockBusy, lock_acquire, lock_release, loop_lock
from console.control.models import LoopLock


@pytest.mark.django_db
def test_one_holder_then_expiry_then_release() -> None:
    now = timezone.now()
    assert lock_acquire(name="provision", owner="a", ttl=timedelta(minutes=2), now=now)
    assert not lock_acquire(name="provision", owner="b", ttl=timedelta(minutes=2), now=now + timedelta(seconds=30))
    assert lock_acquire(name="provision", owner="a", ttl=timedelta(minutes=2), now=now + timedelta(seconds=30))  # renew
    # a's worker dies: after the TTL the lock is free for b
    assert lock_acquire(name="provision", owner="b", ttl=timedelta(minutes=2), now=now + timedelta(minutes=3))
    lock_release(name="provision", owner="a")          # a stale owner cannot release b's lock
    assert LoopLock.objects.get(name="provision").owner == "b"
    lock_release(name="provision", owner="b")
    assert lock_acquire(name="provision", owner="c", ttl=timedelta(minutes=2))


@pytest.mark.django_db
def test_context_manager_raises_busy_and_releases() -> None:
    with loop_lock("disrupt"):
        with pytest.raises(LockBusy):
            with loop_lock("disrupt"):
                pass
    with loop_lock("disrupt"):   # released after the block
        pass


@pytest.mark.django_db(transaction=True)
def test_racing_threads_get_exactly_one_winner() -> None:
    if connection.vendor == "sqlite" and "memory" in str(connection.settings_dict.get("NAME")):
        pytest.skip("threads need a shared database; covered on PostgreSQL in CI")
    winners: list[str] = []
    barrier = threading.Barrier(6)

    def attempt(owner: str) -> None:
        from django.db import connections

        barrier.wait()
        try:
            if lock_acquire(name="race", owner=owner, ttl=timedelta(minutes=1)):
                winners.append(owner)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=attempt, args=(f"w{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(winners) == 1, winners


def test_lock_model_str(db: Any) -> None:
    lock = LoopLock(name="x", owner="w", expires_at=timezone.now())
    assert "x held by w" in str(lock)
