"""Alerts fixtures: a local Slack double on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from console.alerts.models import Channel
from tests.console_pages import operator, operator_client, viewer, viewer_client  # noqa: F401


@dataclass
class SlackDouble:
    """Records every request; ``script`` is a queue of (status, body, headers) answers, then 200."""

    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    script: list[tuple[int, Any, dict[str, str]]] = field(default_factory=list)

    @property
    def webhook_url(self) -> str:
        return f"{self.url}/services/T000/B000/hook-secret-XYZ123"

    @property
    def api_base(self) -> str:
        return f"{self.url}/api/"  # the trailing slash matters: slack_sdk urljoins onto it


@pytest.fixture
def slack() -> Iterator[SlackDouble]:
    double = SlackDouble(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body: Any = json.loads(raw or b"{}")
            except ValueError:
                body = raw.decode()
            double.requests.append({"path": self.path, "headers": dict(self.headers), "json": body})
            if double.script:
                status, answer, headers = double.script.pop(0)
            else:
                status, answer, headers = 200, ({"ok": True} if self.path.startswith("/api/") else "ok"), {}
            data = answer.encode() if isinstance(answer, str) else json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain" if isinstance(answer, str) else "application/json")
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:  # keep pytest output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    double.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield double
    server.shutdown()
    server.server_close()


@pytest.fixture
def no_sleep() -> list[float]:
    return []


@pytest.fixture
def channel(slack: SlackDouble) -> Channel:
    """A webhook channel pointed at the local Slack double."""
    ch = Channel(name="ops", kind=Channel.WEBHOOK)
    ch.set_secret(slack.webhook_url)
    ch.save()
    return ch
