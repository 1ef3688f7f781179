"""/whatif/replay/ and /api/replays/: roles (viewers read, operators start and cancel, anonymous is sent to sign
in), a bad change refused at its field with nothing saved, the task's progress and Cancel, and the result page."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
import yaml
from django.test import Client

from console.history import selectors as history_selectors
from console.history.models import HistoryImport
from console.replay import services, tasks
from console.replay.models import Replay, ReplayStatus
from packing.history import read_history
from packing.replay import replay
from tests.replay.conftest import T0, pool

WINDOW = {"start": "2026-11-23 08:00:00", "end": "2026-11-23 12:00:00", "seed": "0"}
ON_DEMAND = yaml.safe_dump(pool(["on-demand"]))


def _start(**kw: Any) -> Replay:
    return services.replay_start(start=T0, end=T0 + timedelta(hours=4), **kw)


# ---------------------------------------------------------------- roles
def test_anonymous_is_sent_to_sign_in_and_the_api_refuses(db: Any) -> None:
    anonymous = Client()
    response = anonymous.get("/whatif/replay/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert anonymous.get("/whatif/replay/1/").status_code == 302
    assert anonymous.get("/api/replays/").status_code in (401, 403)
    assert anonymous.post("/api/replays/", {}, content_type="application/json").status_code in (401, 403)
    assert not Replay.objects.exists()


def test_viewers_read_but_cannot_start_or_cancel(viewer_client: Client, recorded: Any) -> None:
    run = _start()
    page = viewer_client.get("/whatif/replay/")
    assert page.status_code == 200
    assert b'id="replay-start"' not in page.content and f'href="/whatif/replay/{run.pk}/"'.encode() in page.content
    assert viewer_client.post("/whatif/replay/", WINDOW).status_code == 403
    assert viewer_client.post(f"/whatif/replay/{run.pk}/cancel/").status_code == 403
    detail = viewer_client.get(f"/whatif/replay/{run.pk}/")
    assert detail.status_code == 200 and b'id="replay-cancel"' not in detail.content
    assert viewer_client.get(f"/whatif/replay/{run.pk}/progress/").json()["status"] == "queued"
    assert viewer_client.get("/api/replays/").json()["results"][0]["id"] == run.pk
    assert viewer_client.get(f"/api/replays/{run.pk}/").status_code == 200
    assert viewer_client.post("/api/replays/", {}, content_type="application/json").status_code == 403
    assert viewer_client.post(f"/api/replays/{run.pk}/cancel/").status_code == 403
    run.refresh_from_db()
    assert Replay.objects.count() == 1 and run.status == ReplayStatus.QUEUED and not run.cancel_requested


def test_missing_replays_are_404(viewer_client: Client) -> None:
    assert viewer_client.get("/whatif/replay/99/").status_code == 404
    assert viewer_client.get("/whatif/replay/99/progress/").status_code == 404
    assert viewer_client.get("/api/replays/99/").status_code == 404


# ---------------------------------------------------------------- starting
def test_the_form_starts_from_the_last_week_and_from_a_fleet_object(operator_client: Client, recorded: Any) -> None:
    from console.fleet import services as fleet_services
    from tests.console_pages import NODECLASS

    fleet_services.nodeclass_create(values=NODECLASS, user=None)
    page = operator_client.get("/whatif/replay/")
    assert page.status_code == 200 and b'id="replay-start"' in page.content
    start, end = page.context["form"].initial["start"], page.context["form"].initial["end"]
    from datetime import datetime

    fmt = "%Y-%m-%d %H:%M:%S"
    assert datetime.strptime(end, fmt) - datetime.strptime(start, fmt) == timedelta(days=7)
    assert b"?pick=EC2NodeClass/default" in page.content
    picked = operator_client.get("/whatif/replay/", {"pick": "EC2NodeClass/default"})
    change = picked.context["form"].initial["change"]
    assert yaml.safe_load(change)["kind"] == "EC2NodeClass" and "name: default" in change


def test_an_import_is_replayed_over_its_own_window_by_default(operator_client: Client, db: Any) -> None:
    from tests.packing.test_replay import history

    h = history()
    record = HistoryImport.objects.create(name="elsewhere", start=h.header.start, end=h.header.end)
    from console.history import services as history_services

    history_services.history_record(events=h.events, templates=h.templates, imported=record)
    page = operator_client.get("/whatif/replay/", {"history": record.pk})
    assert page.context["form"].initial["start"] == "2026-11-23 08:00:00"
    assert page.context["form"].initial["end"] == "2026-11-23 12:00:00"
    response = operator_client.post("/api/replays/", {"import": record.pk}, content_type="application/json")
    assert response.status_code == 201
    assert (response.json()["from"], response.json()["to"]) == ("2026-11-23T08:00:00Z", "2026-11-23T12:00:00Z")
    assert response.json()["source"] == f"import {record.pk} elsewhere"


@pytest.mark.parametrize(("change", "says"), [
    ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n", "change: document 1: kind:"),
    (ON_DEMAND.replace("consolidateAfter: 0s", "consolidateAfter: soon"), "consolidateAfter"),
    ("kind: [NodePool\n", "not valid YAML"),
])
def test_a_bad_change_is_refused_at_its_field_and_nothing_is_saved(operator_client: Client, recorded: Any,
                                                                   change: str, says: str) -> None:
    response = operator_client.post("/whatif/replay/", {**WINDOW, "change": change})
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert list(errors) == ["change"] and says in errors["change"][0]
    assert b'id="field-change"' in response.content and b"has-error" in response.content
    api = operator_client.post("/api/replays/", {"from": "2026-11-23T08:00:00Z", "to": "2026-11-23T12:00:00Z",
                                                 "change": change}, content_type="application/json")
    assert api.status_code == 400 and says in api.json()["change"][0]
    assert not Replay.objects.exists()


def test_a_window_that_ends_before_it_starts_is_refused(operator_client: Client, recorded: Any) -> None:
    response = operator_client.post("/whatif/replay/", {**WINDOW, "end": "2026-11-23 07:00:00"})
    assert response.status_code == 400 and list(response.context["form"].errors) == ["end"]
    api = operator_client.post("/api/replays/", {"from": "2026-11-23T08:00:00Z", "to": "2026-11-23T07:00:00Z"},
                               content_type="application/json")
    assert api.status_code == 400 and "to" in api.json()
    assert not Replay.objects.exists()


def test_an_operator_starts_a_replay_and_reads_its_result(operator_client: Client, recorded: Any,
                                                          django_capture_on_commit_callbacks: Any) -> None:
    with django_capture_on_commit_callbacks(execute=True) as callbacks:  # the task runs (eagerly) once committed
        response = operator_client.post("/whatif/replay/", {**WINDOW, "change": ON_DEMAND, "seed": "3"})
    assert response.status_code == 302 and len(callbacks) == 1
    run = Replay.objects.get()
    assert response["Location"] == f"/whatif/replay/{run.pk}/"
    assert run.status == ReplayStatus.DONE and run.progress == 1.0 and run.change_names == ["NodePool/default"]
    # the same JSON as the CLI: the exported window replayed directly with the same change and seed
    h = read_history(list(history_selectors.history_lines(since=run.start, until=run.end)), "export")
    from packing.replay import change_manifests

    expected = replay(h, change=change_manifests([("x", yaml.safe_load(ON_DEMAND))]), start=run.start, end=run.end,
                      seed=3, parallel=False).as_json()
    got = operator_client.get(f"/api/replays/{run.pk}/").json()
    assert got["status"] == "done" and got["change"] == ["NodePool/default"]
    for doc in (got["result"], expected):
        doc.pop("replay_seconds")
    assert got["result"] == json.loads(json.dumps(expected))
    page = operator_client.get(f"/whatif/replay/{run.pk}/")
    assert page.status_code == 200
    body = page.content.decode()
    assert 'id="replay-totals"' in body and 'id="replay-difference"' in body and 'id="replay-days"' in body
    assert "<td>2026-11-23</td>" in body  # the day the difference comes from
    assert 'id="replay-cost"' in body and 'id="replay-pending"' in body and "/static-vendor/plotly-" in body
    assert "replayed: with the change" in body and "actual (recorded)" in body
    assert [r for r in page.context["runs"]] == ["actual", "current", "changed"]
    assert 'id="replay-cancel"' not in body  # finished


def test_the_api_starts_a_replay_with_the_default_window(operator_client: Client, recorded: Any) -> None:
    response = operator_client.post("/api/replays/", {"seed": 1}, content_type="application/json")
    assert response.status_code == 201
    doc = response.json()
    assert doc["status"] == "queued" and doc["seed"] == 1 and doc["change"] == [] and doc["result"] is None
    assert doc["source"] == "recorded history"
    run = Replay.objects.get()
    assert run.end - run.start == timedelta(days=7)


# ---------------------------------------------------------------- the task: progress and Cancel
def test_the_task_reports_progress_and_stores_the_result(recorded: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(services, "PROGRESS_WRITE_EVERY", 0.0)
    run = _start(change_yaml=ON_DEMAND)
    seen: list[float] = []
    real = services._progress

    def spy(pk: int) -> Any:
        report = real(pk)

        def wrapped(share: float) -> None:
            report(share)
            seen.append(Replay.objects.get(pk=pk).progress)

        return wrapped

    monkeypatch.setattr(services, "_progress", spy)
    tasks.run_replay(run.pk)
    run.refresh_from_db()
    assert run.status == ReplayStatus.DONE and run.result is not None and run.finished_at is not None
    assert seen[0] == 0.05 and seen[-1] == 1.0 and seen == sorted(seen) and 0.5 in seen
    # a second delivery of the task does nothing: the replay was claimed once
    assert services.replay_run(pk=run.pk) is None


def test_cancel_stops_a_running_replay_at_its_next_progress_report(recorded: Any, monkeypatch: Any,
                                                                   viewer: Any) -> None:
    monkeypatch.setattr(services, "PROGRESS_WRITE_EVERY", 0.0)
    run = _start(change_yaml=ON_DEMAND)
    real = services._progress
    reports: list[float] = []

    def spy(pk: int) -> Any:
        report = real(pk)

        def wrapped(share: float) -> None:
            reports.append(share)
            if len(reports) == 1:
                report(share)
                # an operator presses Cancel while the replay runs
                operator = Client()
                from tests.users import make_user

                operator.force_login(make_user("ops", "operator"))
                assert operator.post(f"/whatif/replay/{pk}/cancel/").status_code == 302
                assert Replay.objects.get(pk=pk).cancel_requested
                return
            report(share)

        return wrapped

    monkeypatch.setattr(services, "_progress", spy)
    assert services.replay_run(pk=run.pk) == ReplayStatus.CANCELLED
    run.refresh_from_db()
    assert run.status == ReplayStatus.CANCELLED and run.result is None and run.progress == 0.05
    assert reports == [0.05, 0.5]  # it stopped at the report after Cancel, before the changed run


def test_cancelling_a_queued_replay_means_it_never_runs(operator_client: Client, recorded: Any) -> None:
    run = _start()
    response = operator_client.post(f"/api/replays/{run.pk}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert services.replay_run(pk=run.pk) is None
    run.refresh_from_db()
    assert run.status == ReplayStatus.CANCELLED and run.started_at is None
    # cancelling a finished replay leaves it as it is
    assert operator_client.post(f"/api/replays/{run.pk}/cancel/").json()["status"] == "cancelled"


def test_a_replay_of_a_deleted_import_fails_saying_why(recorded: Any) -> None:
    record = HistoryImport.objects.create(name="gone")
    run = _start(imported=record)
    record.delete()
    assert services.replay_run(pk=run.pk) == ReplayStatus.FAILED
    run.refresh_from_db()
    assert run.error == "the imported history this replay reads was deleted" and run.source == "a deleted import"
