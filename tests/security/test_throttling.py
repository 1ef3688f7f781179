"""Sign-in throttling on the login page and /api/token/: per user name and per address."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from console import throttling
from tests.users import make_user

pytestmark = pytest.mark.django_db


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Clock:
    settings.LOADMASTER_LOGIN_FAILURES_PER_USER = 3
    settings.LOADMASTER_LOGIN_FAILURES_PER_ADDRESS = 5
    settings.LOADMASTER_LOGIN_LOCKOUT_SECONDS = 300
    fake = Clock()
    monkeypatch.setattr(throttling, "_now", fake)
    return fake


def login(client: Client, user: str, password: str, addr: str = "10.0.0.1") -> Any:
    return client.post("/accounts/login/", {"username": user, "password": password}, REMOTE_ADDR=addr)


def token(client: Client, user: str, password: str, addr: str = "10.0.0.1") -> Any:
    return client.post("/api/token/", {"username": user, "password": password}, REMOTE_ADDR=addr)


def test_login_locks_a_user_out_then_lets_them_in_after_the_window(clock: Clock) -> None:
    make_user("alice", None, password="right-password")
    client = Client()
    for _ in range(3):
        assert login(client, "alice", "wrong").status_code == 200      # the form again, with its error
    locked = login(client, "alice", "right-password")
    assert locked.status_code == 429 and int(locked["Retry-After"]) == 300
    assert b"Too many failed sign-ins" in locked.content and b"5 minutes" in locked.content
    assert "_auth_user_id" not in client.session
    clock.now += 301
    assert login(client, "alice", "right-password").status_code == 302
    assert "_auth_user_id" in client.session


def test_lockout_counts_per_user_across_addresses(clock: Clock) -> None:
    make_user("bob", None, password="right-password")
    for i in range(3):
        login(Client(), "bob", "wrong", addr=f"10.0.1.{i}")
    assert login(Client(), "bob", "right-password", addr="10.0.9.9").status_code == 429
    make_user("carol", None, password="right-password")
    assert login(Client(), "carol", "right-password", addr="10.0.9.9").status_code == 302   # others unaffected


def test_lockout_counts_per_address_across_users(clock: Clock) -> None:
    make_user("dave", None, password="right-password")
    for i in range(5):
        login(Client(), f"nobody{i}", "wrong", addr="10.0.2.1")
    assert login(Client(), "dave", "right-password", addr="10.0.2.1").status_code == 429
    assert login(Client(), "dave", "right-password", addr="10.0.2.2").status_code == 302


def test_success_resets_the_user_count(clock: Clock) -> None:
    make_user("erin", None, password="right-password")
    for _ in range(2):
        login(Client(), "erin", "wrong")
    assert login(Client(), "erin", "right-password").status_code == 302
    for _ in range(2):
        login(Client(), "erin", "wrong")
    assert login(Client(), "erin", "right-password").status_code == 302


def test_api_token_is_throttled_with_429(clock: Clock) -> None:
    make_user("frank", None, password="right-password")
    client = Client()
    for _ in range(3):
        assert token(client, "frank", "wrong").status_code == 400
    locked = token(client, "frank", "right-password")
    assert locked.status_code == 429 and locked["Retry-After"] == "300"
    assert "Too many failed sign-ins" in locked.json()["detail"]
    clock.now += 301
    answer = token(client, "frank", "right-password")
    assert answer.status_code == 200 and answer.json()["token"]


def test_page_and_api_share_the_count(clock: Clock) -> None:
    make_user("gina", None, password="right-password")
    for _ in range(2):
        login(Client(), "gina", "wrong")
    token(Client(), "gina", "wrong")
    assert token(Client(), "gina", "right-password").status_code == 429
    assert login(Client(), "gina", "right-password").status_code == 429
