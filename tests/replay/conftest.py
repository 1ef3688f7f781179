"""Fixtures of the replay tests: signed-in clients in each role and a small recorded history."""

from __future__ import annotations

from typing import Any

import pytest

from console.history import services as history_services
from tests.console_pages import operator, operator_client, viewer, viewer_client  # noqa: F401
from tests.packing.test_replay import T0, history, pool

__all__ = ["operator", "operator_client", "recorded", "viewer", "viewer_client", "T0", "pool"]


@pytest.fixture
def recorded(db: Any) -> Any:
    """tests/packing/test_replay.py's four hours (a node, pods that need a second one), as the recorded history."""
    h = history()
    history_services.history_record(events=h.events, templates=h.templates)
    return h
