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


CONFIGURED_DB = os.environ.get("DATABASE_URL", "")
BROKER = os.environ.get("CELERY_BROKER_URL", "")
STACKS = ["embedded"]
if CONFIGURED_DB.startswith("postgres") and BROKER.startswith("redis://"):
    STACKS.append("postgres+redis")


class Database:
    """A scratch database for one stack run, and a way to read it from the test."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind = kind
        self.url = ""
        self.name = f"lm_e2e_{os.getpid()}"
        if kind == "postgres+redis":
            import psycopg

            self.admin = CONFIGURED_DB.rsplit("/", 1)[0] + "/postgres"
            with psycopg.connect(self.admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.name}"')
                conn.execute(f'CREATE DATABASE "{self.name}"')
            self.url = CONFIGURED_DB.rsplit("/", 1)[0] + "/" + self.name
        self.sqlite_path = tmp_path / "loadmaster.sqlite3"

    def scalar(self, sql: str) -> int:
        if self.kind == "embedded":
            conn = sqlite3.connect(self.sqlite_path, timeout=10)
            try:
                return int(conn.execute(sql).fetchone()[0])
            except sqlite3.OperationalError:
                return 0     # tables not created yet
            finally:
                conn.close()
        import psycopg

        try:
            with psycopg.connect(self.url) as conn:
                row = conn.execute(sql).fetchone()
                return int(row[0]) if row else 0
        except psycopg.Error:
            return 0

    def drop(self) -> None:
        if self.kind == "postgres+redis":
            import psycopg

            with psycopg.connect(self.admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


def wait_for(predicate: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(1)
    return False


@pytest.mark.slow
@pytest.mark.parametrize("stack", STACKS)
def test_runstack_runs_the_loops_end_to_end(tmp_path: Path, stack: str) -> None:
    """The README's run command, for real: pages served, beat's ticks reach the worker, the loops take
    the demo's pending pods to launched and initialized NodeClaims, removing the load leads to
    consolidation, and SIGTERM stops everything."""
    env = scratch_env(tmp_path)
    db = Database(stack, tmp_path)
    if stack == "postgres+redis":
        import redis

        broker = BROKER.rsplit("/", 1)[0] + "/7"     # a broker database of its own, emptied first
        redis.Redis.from_url(broker).flushdb()
        env.update({"DATABASE_URL": db.url, "CELERY_BROKER_URL": broker})
    manage = [sys.executable, str(ROOT / "manage.py")]
    proc = None
    try:
        subprocess.run([*manage, "migrate", "--noinput"], env=env, check=True, capture_output=True, timeout=180)
        setup = subprocess.run([*manage, "demo_setup"], env=env, check=True, capture_output=True, text=True,
                               timeout=120)
        assert "Login: demo / " in setup.stdout
        port = free_port()
        proc = subprocess.Popen([*manage, "runstack", "--port", str(port)], env=env, cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

        def login_page() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=2) as response:
                    return bool(response.status == 200)
            except OSError:
                return False

        assert wait_for(login_page, 60), "web server did not answer"
        assert wait_for(lambda: db.scalar("select count(*) from fleet_heartbeat") > 0, 60), "no heartbeat"
        # The demo's simulated workloads go pending; provision launches for them, the simulated nodes
        # register, lifecycle initializes them.
        assert wait_for(lambda: db.scalar(
            "select count(*) from fleet_decision where kind = 'launch' and why like '%pending pod(s)%'") > 0, 120), \
            "the provision loop launched nothing"
        assert wait_for(lambda: db.scalar(
            "select count(*) from fleet_nodeclaim where initialized_at is not null") > 0, 120), \
            "no NodeClaim reached Initialized"
        assert wait_for(lambda: db.scalar("select count(*) from control_metricsample") > 0, 90), "no metrics"
        # Remove the load: the emptied nodes are consolidated away (after the pools' consolidateAfter).
        for workload in ("shop/web", "shop/api", "batch/nightly-report"):
            subprocess.run([*manage, "simulation", "scale", workload, "0"], env=env, check=True,
                           capture_output=True, timeout=60)
        assert wait_for(lambda: db.scalar(
            "select count(*) from control_disruptionaction where state = 'done'") > 0, 240), \
            "no consolidation after the load was removed"
    finally:
        output = ""
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            output, _ = proc.communicate(timeout=60)
        db.drop()
    assert f"http://127.0.0.1:{port}/" in output
    assert "Traceback" not in output, output[-3000:]
    # No process of this stack is left behind (worker and beat run in their own sessions).
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert f"runserver 127.0.0.1:{port}" not in ps
    assert str(tmp_path) not in ps   # beat's --schedule lives there




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
