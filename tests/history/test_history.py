"""console/history: the recorded history round-trips through the export, the recorder diffs the simulated
cluster, revisions come from the fleet's change history, retention prunes, and the API's roles and all-or-nothing
import."""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from console.control.lifecycle import lifecycle_run
from console.control.provisioning import provision_run
from console.fleet import services as fleet_services
from console.history import selectors, services
from console.history.models import EventKind, HistoryEvent, HistoryImport, HistorySpec
from packing.history import (
    Header,
    HistoryWriter,
    NodeLaunched,
    NodeTerminated,
    OfferingPrice,
    PodArrived,
    PodBound,
    PodDeparted,
    Prices,
    Revision,
    read_history,
)
from tests.packing.test_history import _events
from tests.simulation.conftest import advance, loop_world, on_demand_pool, pod
from tests.users import make_user


def _export(**kw: Any) -> Any:
    return read_history(list(selectors.history_lines(**kw)), "export")


def test_recorded_events_export_unchanged(db: Any) -> None:
    events, templates = _events()
    services.history_record(events=events, templates=templates)
    got = _export(since=events[0].at)
    assert got.events == events
    assert got.templates == templates
    assert HistorySpec.objects.count() == 1


def test_an_export_starts_with_the_state_in_force(db: Any) -> None:
    events, templates = _events()
    services.history_record(events=events, templates=templates)
    since = events[4].at + timedelta(microseconds=1)  # after the binding
    got = _export(since=since)
    kinds = [type(e).__name__ for e in got.events]
    assert kinds[:4] == ["Revision", "Prices", "NodeLaunched", "PodArrived"]
    assert all(e.at == since for e in got.events[:4])
    arrived = got.events[3]
    assert isinstance(arrived, PodArrived) and arrived.node == "n1"
    assert got.events[1].set == (OfferingPrice("m5.large", "us-east-1a", "on-demand", None),
                                 OfferingPrice("m5.large", "us-east-1a", "spot", 0.04))


def test_retention_forgets_what_ended_and_keeps_what_is_in_force(db: Any, settings: Any) -> None:
    settings.LOADMASTER_HISTORY_DAYS = 14
    now = timezone.now()
    old = now - timedelta(days=20)
    events, templates = _events()
    shifted = [type(e)(**{**{f: getattr(e, f) for f in e.__dataclass_fields__}, "at": old + (e.at - events[0].at)})
               for e in events[:4]]  # revision, prices, a node and a pod still there
    services.history_record(events=shifted, templates=templates)
    services.history_record(events=[
        PodArrived(old, "shop", "gone", shifted[3].spec), PodDeparted(old + timedelta(hours=1), "shop", "gone"),
        NodeLaunched(old, "n-old", "m5.large", "us-east-1a", "spot", 0.04),
        NodeTerminated(old + timedelta(hours=1), "n-old"),
        Prices(old + timedelta(hours=2), (OfferingPrice("m5.large", "us-east-1a", "spot", 0.05),)),
        Revision(old + timedelta(hours=3), shifted[0].kind, "default", shifted[0].manifest, 4),
        PodBound(now - timedelta(days=1), "shop", "web-1", "n1"),
    ])
    before = _export(since=now - timedelta(days=1))
    outcome = services.history_prune(now=now)
    assert outcome.events == 6  # the gone pod and node (4), the first revision, one Prices folded into the other
    after = _export(since=now - timedelta(days=1))
    assert after.events == before.events
    assert not HistoryEvent.objects.filter(subject__in=["shop/gone", "n-old"]).exists()
    prices = HistoryEvent.objects.get(kind=EventKind.PRICES)
    assert prices.payload["set"] == [["m5.large", "us-east-1a", "on-demand", None], ["m5.large", "us-east-1a", "spot", 0.05]]


def test_the_recorder_diffs_the_simulated_cluster(db: Any, settings: Any) -> None:
    clock, config, cluster, cloud = loop_world(settings, on_demand_pool("general", ["c", "m"]))
    for i in range(3):
        cluster.apply(pod(f"web-{i}", namespace="shop", cpu="1", memory="2Gi", labels={"app": "web"}))
    start = clock()
    services.history_observe(cluster=cluster, now=clock())
    advance(clock, config, 1)
    provision_run(cluster=cluster, cloud=cloud, now=clock())
    for _ in range(8):
        advance(clock, config, 10)
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
        services.history_observe(cluster=cluster, now=clock())
    cluster.delete_pod("shop", "web-0", 0)
    advance(clock, config, 1)
    services.history_observe(cluster=cluster, now=clock())
    got = _export(since=start - timedelta(seconds=1))
    arrivals = [e for e in got.events if isinstance(e, PodArrived) and e.namespace == "shop"]
    assert sorted(e.name for e in arrivals) == ["web-0", "web-1", "web-2"]
    launches = [e for e in got.events if isinstance(e, NodeLaunched)]
    assert launches and all(e.price is not None and e.nodepool == "general" for e in launches)
    bound = {e.name for e in got.events if isinstance(e, PodBound)}
    assert {"web-0", "web-1", "web-2"} <= bound
    assert [e.name for e in got.events if isinstance(e, PodDeparted)] == ["web-0"]
    # the replicas share one template
    assert len({e.spec for e in arrivals}) == 1


def test_revisions_come_from_the_fleets_change_history(db: Any) -> None:
    from tests.console_pages import NODECLASS

    user = make_user("op", "operator")
    fleet_services.nodeclass_create(values=NODECLASS, user=user)
    got = _export(since=timezone.now() - timedelta(hours=1))
    revisions = [e for e in got.events if isinstance(e, Revision)]
    assert revisions and revisions[0].manifest is not None
    assert revisions[0].manifest["kind"] == "EC2NodeClass"


# ---------------------------------------------------------------- the API
def _file() -> bytes:
    events, templates = _events()
    out = io.StringIO()
    writer = HistoryWriter(out, Header(source="elsewhere"))
    for sid, t in templates.items():
        writer.add_template(sid, t)
    writer.write_all(events)
    return out.getvalue().encode()


def test_viewers_read_the_history_and_anonymous_is_refused(db: Any) -> None:
    events, templates = _events()
    services.history_record(events=events, templates=templates)
    anonymous = Client()
    assert anonymous.get("/api/history/").status_code in (401, 403)
    viewer = Client()
    viewer.force_login(make_user("v", "viewer"))
    response = viewer.get("/api/history/", {"since": "2026-12-03T08:00:00Z"})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    body = b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]
    assert read_history(body.splitlines(), "api").events == events
    assert viewer.get("/api/history/", {"since": "soon"}).json() == {
        "since": ["'soon' is not an RFC 3339 time such as 2026-12-03T09:40:00Z."]}
    assert viewer.post("/api/history/", _file(), content_type="application/x-ndjson").status_code == 403


def test_an_import_is_all_or_nothing(db: Any) -> None:
    operator = Client()
    operator.force_login(make_user("op", "operator"))
    lines = _file().decode().splitlines()
    lines[6] = lines[6].replace('"node":"n1"', '"node":7')
    response = operator.post("/api/history/", "\n".join(lines) + "\n", content_type="application/x-ndjson")
    assert response.status_code == 400
    assert response.json()["line"] == 7 and response.json()["field"] == "node"
    assert "line 7: node: must be a string" in response.json()["detail"]
    assert not HistoryImport.objects.exists() and not HistoryEvent.objects.exists()

    response = operator.post("/api/history/", _file(), content_type="application/x-ndjson")
    assert response.status_code == 201
    record = HistoryImport.objects.get()
    assert response.json()["events"] == 10
    got = read_history(b"".join(operator.get("/api/history/", {"since": "2026-12-03T08:00:00Z", "import": record.pk})
                                .streaming_content).decode().splitlines(), "api")  # type: ignore[attr-defined]
    assert got.events == _events()[0]
    # the recorded history is not touched by an import
    assert not HistoryEvent.objects.filter(imported=None).exists()


@pytest.mark.parametrize("bad", ["", "{}\n"])
def test_an_empty_or_headerless_import_is_refused(db: Any, bad: str) -> None:
    operator = Client()
    operator.force_login(make_user("op", "operator"))
    response = operator.post("/api/history/", bad, content_type="application/x-ndjson")
    assert response.status_code == 400 and response.json()["line"] == 1


# ---------------------------------------------------------------- the loops' history, end to end
SPOT_POOL = {"name": "spot", "node_class_name": "default", "consolidate_after": "0s", "budgets": [{"nodes": "100%"}],
             "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
                              {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m"]}]}


def test_an_interrupted_node_is_in_the_history_and_the_file_reads_strictly(db: Any, settings: Any) -> None:
    from console.control.lifecycle import interruption_run
    from console.fleet.models import NodeClaim
    from packing.history import InterruptionKind, NodeInterrupted

    clock, config, cluster, cloud = loop_world(settings, SPOT_POOL)
    start = clock()

    def tick() -> None:
        advance(clock, config, 10)
        provision_run(cluster=cluster, cloud=cloud, now=clock())
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
        interruption_run(cluster=cluster, cloud=cloud, now=clock())
        services.history_observe(cluster=cluster, now=clock())

    cluster.apply(pod("web-0", namespace="shop", cpu="1", memory="1Gi", owner="ReplicaSet/web-abc"))
    services.history_observe(cluster=cluster, now=clock())
    for _ in range(8):
        tick()
    claim = NodeClaim.objects.active().get()
    assert cloud.interrupt(claim.instance_id)
    for _ in range(20):
        tick()
    claim.refresh_from_db()
    assert claim.terminated_at is not None
    got = _export(since=start - timedelta(seconds=1))  # the strict reader: every identity consistent
    interrupted = [e for e in got.events if isinstance(e, NodeInterrupted)]
    assert [(e.name, e.interruption) for e in interrupted] == [(claim.node_name, InterruptionKind.SPOT_INTERRUPTION)]
    ended = [e for e in got.events if isinstance(e, NodeTerminated) and e.name == claim.node_name]
    assert len(ended) == 1 and ended[0].reason == claim.termination_reason and ended[0].at >= interrupted[0].at
    launched = next(e for e in got.events if isinstance(e, NodeLaunched) and e.name == claim.node_name)
    assert launched.price == float(claim.price_per_hour) and launched.capacity_type == "spot"
    assert launched.at == claim.launched_at or launched.at > start


def test_prices_in_force_are_recorded_when_they_change(db: Any) -> None:
    from console.catalog import services as catalog_services

    first = services.history_record_prices()
    assert first > 100  # the whole catalog at first
    assert services.history_record_prices() == 0  # unchanged: nothing recorded
    catalog_services.price_override_create(values={"selector": "m5.large", "capacity_type": "on-demand",
                                                   "price": "0.01"}, user=None)
    from console import adapters

    adapters.clear_catalog_cache()
    changed = services.history_record_prices()
    assert 1 <= changed < first
    got = _export(since=timezone.now() - timedelta(hours=1))
    prices = [e for e in got.events if isinstance(e, Prices)]
    assert len(prices) == 2
    assert {o.price for o in prices[1].set if o.instance_type == "m5.large" and o.capacity_type == "on-demand"} == {0.01}
