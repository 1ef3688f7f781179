"""A snapshot is replayed once (at upload, or when an operator asks again) and the result stored: views
read it and never run the engines. The JSON download's filename cannot be broken by `output=`."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from console.whatif import selectors, services
from console.whatif.models import Snapshot
from tests.whatif.test_pages_api import SNAP


def _no_replay(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a page view re-ran the engines over a stored snapshot")


def test_views_read_the_stored_replay(db: Any, operator_client: Client, viewer_client: Client,
                                      monkeypatch: Any) -> None:
    assert operator_client.post("/whatif/snapshots/", {"name": "monday", "text": SNAP}).status_code == 302
    assert operator_client.post("/whatif/snapshots/", {"name": "tuesday", "text": SNAP}).status_code == 302
    a, b = Snapshot.objects.order_by("pk")
    assert a.replay is not None and a.replay["plan"]["summary"]["pending_pods"] == 1 and a.replayed_at
    monkeypatch.setattr(selectors, "replay_files", _no_replay)
    for _ in range(2):
        detail = viewer_client.get(f"/whatif/snapshots/{a.pk}/")
        assert detail.status_code == 200 and b"python -m packing plan" in detail.content
        assert b"Replay again" not in detail.content  # a viewer cannot trigger the engines
        assert viewer_client.get(f"/whatif/snapshots/{a.pk}/json/").json()["plan"]["summary"]["pending_pods"] == 1
        assert viewer_client.get(f"/whatif/snapshots/compare/?a={a.pk}&b={b.pk}").status_code == 200


def test_an_unreplayed_snapshot_is_not_replayed_by_a_view(db: Any, operator_client: Client, viewer_client: Client,
                                                         monkeypatch: Any) -> None:
    snap = services.snapshot_create(name="old", files=[("a.yaml", SNAP)], replay=False)  # as before the migration
    other = services.snapshot_create(name="new", files=[("a.yaml", SNAP)])
    with monkeypatch.context() as m:
        m.setattr(selectors, "replay_files", _no_replay)
        page = viewer_client.get(f"/whatif/snapshots/{snap.pk}/")
        assert page.status_code == 200 and b"has not been replayed yet" in page.content
        assert viewer_client.get(f"/whatif/snapshots/{snap.pk}/json/").status_code == 409
        assert viewer_client.get(f"/whatif/snapshots/compare/?a={snap.pk}&b={other.pk}").status_code == 409
        assert viewer_client.post(f"/whatif/snapshots/{snap.pk}/replay/").status_code == 403
    assert b"Replay now" in operator_client.get(f"/whatif/snapshots/{snap.pk}/").content
    assert operator_client.post(f"/whatif/snapshots/{snap.pk}/replay/").status_code == 302
    snap.refresh_from_db()
    assert snap.replay["plan"]["summary"]["pending_pods"] == 1 and snap.replay_error == ""


def test_a_replay_the_engine_cannot_finish_is_reported(db: Any, operator_client: Client, monkeypatch: Any) -> None:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("attempt to get argmin of an empty sequence")

    monkeypatch.setattr(selectors, "replay_files", boom)
    assert operator_client.post("/whatif/snapshots/", {"name": "broken", "text": SNAP}).status_code == 302
    snap = Snapshot.objects.get()
    assert snap.replay is None and "argmin" in snap.replay_error
    page = operator_client.get(f"/whatif/snapshots/{snap.pk}/")
    assert page.status_code == 200 and b"could not be replayed" in page.content


@pytest.mark.parametrize("output", ['plan"; x="y', "plan\r\nSet-Cookie: a=b", "plan\n", "../../etc", "é"])
def test_output_cannot_break_the_download_header(db: Any, viewer_client: Client, output: str) -> None:
    snap = services.snapshot_create(name="s", files=[("a.yaml", SNAP)])
    response = viewer_client.get(f"/whatif/snapshots/{snap.pk}/json/", {"output": output})
    assert response.status_code == 400 and list(response.json()) == ["output"]
    assert "Content-Disposition" not in response and "Set-Cookie" not in response


@pytest.mark.parametrize("output", ["plan", "consolidate", "both"])
def test_download_names(db: Any, viewer_client: Client, output: str) -> None:
    snap = services.snapshot_create(name="s", files=[("a.yaml", SNAP)])
    response = viewer_client.get(f"/whatif/snapshots/{snap.pk}/json/", {"output": output})
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="snapshot-{snap.pk}-{output}.json"'
