"""The README's run command end to end, and Celery on the configured broker.

These start real processes: the web server, a Celery worker and beat (``manage.py runstack``)
on a scratch SQLite database and SQLite broker; and, when CELERY_BROKER_URL points at Redis or
RabbitMQ (CI's second pass), a worker on that broker answering a real task round trip."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scratch_env(var_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "CELERY_TASK_ALWAYS_EAGER")}
    env.update({"LOADMASTER_VAR_DIR": str(var_dir), "DEBUG": "1", "DJANGO_SETTINGS_MODULE": "console.settings"})
    return env


@pytest.mark.slow
def test_runstack_serves_pages_runs_beat_and_stops_everything(tmp_path: Path) -> None:
    env = scratch_env(tmp_path)
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput"], env=env, check=True, capture_output=True, timeout=120)
    setup = subprocess.run([*manage, "demo_setup"], env=env, check=True, capture_output=True, text=True, timeout=120)
    assert "Login: demo / " in setup.stdout
    port = free_port()
    proc = subprocess.Popen([*manage, "runstack", "--port", str(port)], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        status = None
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=2) as response:
                    status = response.status
                    break
            except OSError:
                time.sleep(0.5)
        assert status == 200
        # Beat sends the heartbeat every 30 s and the worker records it in the database.
        db = sqlite3.connect(tmp_path / "loadmaster.sqlite3", timeout=10)
        beat_seen = False
        while time.monotonic() < deadline + 30 and not beat_seen:
            beat_seen = db.execute("select count(*) from fleet_heartbeat").fetchone()[0] > 0
            time.sleep(1)
        db.close()
        assert beat_seen, "no heartbeat recorded by the worker"
    finally:
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=60)
    assert f"http://127.0.0.1:{port}/" in output
    # No process of this stack is left behind (worker and beat run in their own sessions).
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert f"runserver 127.0.0.1:{port}" not in ps
    assert str(tmp_path) not in ps   # beat's --schedule lives there


BROKER = os.environ.get("CELERY_BROKER_URL", "")


@pytest.mark.slow
@pytest.mark.skipif(not BROKER.startswith(("redis://", "amqp://")),
                    reason="runs when CELERY_BROKER_URL points at Redis or RabbitMQ (CI's second pass)")
def test_task_round_trip_on_server_broker(tmp_path: Path) -> None:
    from console.celery import app

    env = scratch_env(tmp_path)
    env["CELERY_BROKER_URL"] = BROKER
    worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "console", "worker", "--pool=solo",
                               "--hostname", f"citest-{os.getpid()}@%h", "--loglevel=WARNING"],
                              env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        replies: list[object] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not replies:
            replies = app.control.ping(timeout=1.0, destination=[f"citest-{os.getpid()}@{socket.gethostname()}"]) or []
        assert replies, "worker did not answer a ping over the broker"
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.communicate(timeout=60)
