"""A real Prometheus scraping the console: the console served on loopback by a WSGI server thread that
shares the test's database connection (behind a lock the test holds while it changes the world, so
a scrape never sees half a step), and Prometheus (Debian's 2.42 binary) run on loopback with its
storage in a temporary directory, queried through its HTTP API."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

SCRAPE_INTERVAL = 2  # seconds


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class ConsoleServer:
    """The console's WSGI application on 127.0.0.1, one request at a time, on the test's connection."""

    def __init__(self) -> None:
        from django.core import signals
        from django.core.handlers.wsgi import WSGIHandler
        from django.db import close_old_connections, connections

        self.lock = threading.RLock()
        self._app = WSGIHandler()
        self._conn = connections["default"]
        self._signals = signals
        self._close_old = close_old_connections
        self.port = free_port()
        self.requests = 0
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    def _serve(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        from django.db import connections

        with self.lock:
            connections["default"] = self._conn
            self.requests += 1
            return [b"".join(self._app(environ, start_response))]

    def start(self) -> None:
        # As Django's test client: the request signals must not close the test's connection.
        self._signals.request_started.disconnect(self._close_old)
        self._signals.request_finished.disconnect(self._close_old)
        self._conn.inc_thread_sharing()
        self._server = make_server("127.0.0.1", self.port, self._serve, handler_class=_Quiet)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        self._conn.dec_thread_sharing()
        self._signals.request_started.connect(self._close_old)
        self._signals.request_finished.connect(self._close_old)


class Prometheus:
    def __init__(self, binary: str, workdir: Path, target: str, token: str) -> None:
        self.binary, self.workdir, self.port = binary, workdir, free_port()
        self.config = workdir / "prometheus.yml"
        # The scrape configuration of docs/dashboards.md, with the test's interval.
        self.config.write_text(
            "global:\n"
            f"  scrape_interval: {SCRAPE_INTERVAL}s\n"
            f"  scrape_timeout: {SCRAPE_INTERVAL}s\n"
            "scrape_configs:\n"
            "  - job_name: karpenter\n"
            "    metrics_path: /metrics\n"
            "    authorization:\n"
            f"      credentials: {token}\n"
            "    static_configs:\n"
            f"      - targets: ['{target}']\n"
            "        labels: {cluster: test}\n")
        self.log = workdir / "prometheus.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30) -> None:
        self.proc = subprocess.Popen(
            [self.binary, f"--config.file={self.config}", f"--storage.tsdb.path={self.workdir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=1h"],
            stdout=subprocess.DEVNULL, stderr=self.log.open("wb"))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
            if self.proc.poll() is not None:
                break
        raise RuntimeError(f"prometheus did not start: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def _get(self, path: str, **params: Any) -> Any:
        url = f"http://127.0.0.1:{self.port}{path}?{urllib.parse.urlencode(params, doseq=True)}"
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                body = json.loads(r.read())
        except urllib.error.HTTPError as exc:
            body = json.loads(exc.read())
        if body.get("status") != "success":
            raise AssertionError(f"{path} {params}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query at now: the vector's series ({"metric": labels, "value": [t, "v"]})."""
        data = self._get("/api/v1/query", query=expr)
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        return list(data["result"])

    def label_values(self, label: str, match: str) -> list[str]:
        return list(self._get(f"/api/v1/label/{label}/values", **{"match[]": match}))

    def scrapes_after(self, t: float, count: int = 2, timeout: float = 30) -> None:
        """Wait until `count` successful scrapes started after the wall-clock time `t`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.query('timestamp(up{job="karpenter"} == 1)')
            if got and float(got[0]["value"][1]) > t + (count - 1) * SCRAPE_INTERVAL:
                return
            time.sleep(0.5)
        raise AssertionError(f"no successful scrape after {t}: {self.query('up')}, log: {self.log.read_text()[-1500:]}")


@contextmanager
def running(binary: str, workdir: Path, token: str) -> Iterator[tuple[ConsoleServer, Prometheus]]:
    server = ConsoleServer()
    server.start()
    prom = Prometheus(binary, workdir, f"127.0.0.1:{server.port}", token)
    try:
        prom.start()
        yield server, prom
    finally:
        prom.stop()
        server.stop()
