"""Run the web server, a Celery worker and Celery beat together; Ctrl-C stops all three.

This is the embedded default behind the README's run command. In production each runs as its
own deployment (see docs/install.md), and workers scale out; here one of each is enough.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Run the console web server, a Celery worker and Celery beat; Ctrl-C stops them all."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default=os.environ.get("LOADMASTER_HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("LOADMASTER_PORT", "8000")))

    def handle(self, *args: Any, **options: Any) -> None:
        python = sys.executable
        # `python -m django` rather than the checkout's manage.py: an installed wheel has no manage.py,
        # and the settings module the command runs under is passed on to all three children.
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "console.settings")}
        settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
        address = f"{options['host']}:{options['port']}"
        commands = {
            "web": [python, "-m", "django", "runserver", address, "--noreload"],
            "worker": [python, "-m", "celery", "-A", "console", "worker", "--pool=solo", "--loglevel=INFO",
                       "--hostname", "worker@%h"],
            "beat": [python, "-m", "celery", "-A", "console", "beat", "--loglevel=INFO",
                     "--schedule", str(settings.CELERY_BEAT_SCHEDULE_FILENAME)],
        }
        procs: dict[str, subprocess.Popen[bytes]] = {}

        def stop_on_signal(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt

        # `kill`, a closed terminal or a supervisor stop must not orphan the worker and beat.
        signal.signal(signal.SIGTERM, stop_on_signal)
        signal.signal(signal.SIGHUP, stop_on_signal)
        try:
            for name, cmd in commands.items():
                procs[name] = subprocess.Popen(cmd, cwd=settings.BASE_DIR, env=env, start_new_session=True)
            self.stdout.write(self.style.SUCCESS(f"Loadmaster console: http://{address}/  (Ctrl-C stops web, worker and beat)"))
            while True:
                for name, proc in procs.items():
                    code = proc.poll()
                    if code is not None:
                        raise CommandError(f"{name} exited with status {code}; stopping the others")
                time.sleep(0.5)
        except KeyboardInterrupt:
            self.stdout.write("Stopping…")
        finally:
            self._stop(procs)

    def _stop(self, procs: dict[str, subprocess.Popen[bytes]]) -> None:
        for proc in procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15  # Celery's warm shutdown can take a few seconds
        for proc in procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
