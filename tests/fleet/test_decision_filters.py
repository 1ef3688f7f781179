"""The decisions filter set is one definition for /decisions/ and /api/decisions/: readable labels, and an
invalid value is an error at the field (page) or a 400 naming the field (API), never silently ignored.

An offset beyond ±15:59 is what PostgreSQL refuses with a 500 ("time zone displacement out of range");
the filter refuses it on every database, so this test reproduces the fix on SQLite too, and in CI's
PostgreSQL pass it runs the real query."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from rest_framework.test import APIClient

from console.fleet.filters import DecisionFilterSet
from console.fleet.models import Decision

pytestmark = pytest.mark.django_db

BAD_SINCE = ["2026-12-01T00:00:00+16:00", "2026-12-01T00:00:00-23:59", "yesterday", "2026-13-01",
             "0001-01-01T00:00:00+01:00"]


@pytest.fixture
def decisions(db: Any) -> list[Decision]:
    return [Decision.objects.create(kind=Decision.LAUNCH, why="early", at=datetime(2026, 12, 1, 8, tzinfo=UTC)),
            Decision.objects.create(kind=Decision.LAUNCH, why="late", at=datetime(2026, 12, 1, 12, tzinfo=UTC))]


@pytest.mark.parametrize("since", BAD_SINCE)
def test_api_refuses_a_bad_since_naming_the_field(decisions: Any, viewer_client: APIClient, since: str) -> None:
    response = viewer_client.get("/api/decisions/", {"since": since})
    assert response.status_code == 400, response.content
    assert list(response.json()) == ["since"]


@pytest.mark.parametrize("since", BAD_SINCE)
def test_page_shows_a_bad_since_at_the_field(decisions: Any, viewer_client: APIClient, since: str) -> None:
    response = viewer_client.get("/decisions/", {"since": since})
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="filter-error-since"' in html and 'id="filter-invalid"' in html
    assert "early" not in html and "late" not in html  # nothing listed under a filter that was not applied


def test_offsets_within_range_filter_in_utc(decisions: Any, viewer_client: APIClient) -> None:
    # 15:59 ahead of UTC: 2026-12-01T19:59+15:59 is 04:00Z, before both decisions
    assert viewer_client.get("/api/decisions/", {"since": "2026-12-01T19:59:00+15:59"}).json()["count"] == 2
    # 10:00+00:00 → only the 12:00 one; -02:00 moves it to 12:00Z, inclusive
    assert [d["why"] for d in viewer_client.get("/api/decisions/", {"since": "2026-12-01T10:00:00Z"}).json()["results"]] \
        == ["late"]
    assert viewer_client.get("/api/decisions/", {"since": "2026-12-01T10:00:00-02:00"}).json()["count"] == 1
    assert viewer_client.get("/api/decisions/", {"until": "2026-12-01 09:00"}).json()["count"] == 1  # naive is UTC
    page = viewer_client.get("/decisions/", {"since": "2026-12-01T10:00:00Z"})
    assert page.status_code == 200 and "late" in page.content.decode() and "early" not in page.content.decode()


def test_labels_read_as_words() -> None:
    labels = {name: str(f.label) for name, f in DecisionFilterSet().form.fields.items()}
    assert labels == {"kind": "Kind", "nodepool": "NodePool", "since": "Since (UTC)", "until": "Until (UTC)"}
    assert "greater than" not in DecisionFilterSet().form.as_p()
