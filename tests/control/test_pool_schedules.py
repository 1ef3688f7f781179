"""Clock-policy windows (loadmaster.dev/schedules) in the provision loop: a window's limits hold while it is
open, and the pool is itself again once it closes; the console refuses a bad window at the annotations field."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from console.control.lifecycle import lifecycle_run
from console.control.provisioning import provision_run
from console.fleet import services
from console.fleet.models import Decision, NodeClaim, NodePool
from tests.simulation.conftest import T0, advance, loop_world, on_demand_pool, pod
from tests.users import make_user


def _ticks(clock: Any, config: Any, cluster: Any, cloud: Any, rounds: int = 6) -> None:
    for _ in range(rounds):
        advance(clock, config, 10)
        provision_run(cluster=cluster, cloud=cloud, now=clock())
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())


def test_a_window_limit_holds_launches_until_it_closes(db: Any, settings: Any) -> None:
    freeze = f"- {{name: freeze, schedule: '{T0.minute} {T0.hour} * * *', duration: 20m, limits: {{cpu: '0'}}}}"
    clock, config, cluster, cloud = loop_world(settings, on_demand_pool(
        "web", ["m"], metadata_annotations={"loadmaster.dev/schedules": freeze}))
    cluster.apply(pod("api", cpu="500m", memory="256Mi", owner="ReplicaSet/api-x"))
    _ticks(clock, config, cluster, cloud)
    assert not NodeClaim.objects.exists()
    verdict = Decision.objects.filter(kind=Decision.UNSCHEDULABLE).first()
    assert verdict is not None and "limit" in verdict.why
    advance(clock, config, 21 * 60)
    _ticks(clock, config, cluster, cloud)
    assert NodeClaim.objects.filter(nodepool_name="web").count() == 1


def test_the_console_refuses_a_bad_window_at_the_field(db: Any) -> None:
    from tests.console_pages import NODECLASS

    user = make_user("op", "operator")
    services.nodeclass_create(values=NODECLASS, user=user)
    bad = "- {schedule: '0 8 * * *', duration: 1h, replicas: 2}"
    with pytest.raises(ValidationError) as e:
        services.nodepool_create(values=on_demand_pool(
            "web", ["m"], metadata_annotations={"loadmaster.dev/schedules": bad}), user=user)
    assert "metadata_annotations" in e.value.message_dict
    (message,) = e.value.message_dict["metadata_annotations"]
    assert "loadmaster.dev/schedules[0].replicas" in message and "only a static NodePool" in message
    assert not NodePool.objects.exists()


def test_the_pool_page_shows_which_window_is_open(db: Any) -> None:
    from django.test import Client

    from tests.console_pages import NODECLASS

    user = make_user("viewer", "viewer")
    services.nodeclass_create(values=NODECLASS, user=user)
    windows = ("- {name: always, schedule: '* * * * *', duration: 1h, limits: {cpu: '8'}}\n"
               "- {name: new-year, schedule: '0 0 1 1 *', duration: 1m, consolidationPolicy: WhenEmpty}")
    services.nodepool_create(values=on_demand_pool(
        "web", ["m"], metadata_annotations={"loadmaster.dev/schedules": windows}), user=user)
    client = Client()
    client.force_login(user)
    html = client.get("/nodepools/web/").content.decode()
    assert 'id="clock-policies"' in html and "limits cpu=8" in html
    assert html.count('class="open-window"') == 1 and "opens " in html and "consolidationPolicy WhenEmpty" in html
    NodePool.objects.filter(name="web").update(metadata_annotations={"loadmaster.dev/schedules": "- {schedule: x}"})
    assert "do not parse" in client.get("/nodepools/web/").content.decode()
