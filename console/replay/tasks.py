"""Replay tasks: thin, each calls one service."""

from __future__ import annotations

from celery import shared_task

from console.replay import services


# A replay of days runs for minutes, not seconds: the limit leaves room for a long window on a busy worker.
# Not retried: a replay that failed says why on its page.
@shared_task(ignore_result=True, time_limit=3600, soft_time_limit=3500)
def run_replay(pk: int) -> None:
    services.replay_run(pk=pk)
