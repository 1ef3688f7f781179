"""The why-node page and its API show a node's health as node repair sees it."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from console.fleet.models import NodeClaim
from console.whatif import selectors
from tests.whatif.test_services import karpenter_node


def _claimed_node(world: Any, name: str) -> None:
    world.cluster.apply(karpenter_node(name))
    NodeClaim.objects.create(name=f"general-{name}", nodepool_name="general", instance_type="m5.2xlarge",
                             capacity_type="on-demand", zone="us-east-1a", node_name=name,
                             price_per_hour=Decimal("0.384"), price_source="snapshot")


def test_health_of_an_unhealthy_node(world: Any, settings: Any, viewer_client: Any) -> None:
    settings.LOADMASTER_NODE_REPAIR = True
    _claimed_node(world, "sick")
    _claimed_node(world, "fine")
    healthy = selectors.node_health("fine", cluster=world.cluster, now=world.clock())
    assert healthy["unhealthy"] is False and healthy["verdict"] == "healthy"

    world.cluster.set_node_condition("sick", "Ready", "False")
    since = world.clock()
    world.clock.advance(600)
    health = selectors.node_health("sick", cluster=world.cluster, now=world.clock())
    assert health["unhealthy"] and health["matches"] == [
        {"condition": "Ready=False", "toleration": "30m", "since": since.isoformat()}]
    assert health["due_at"] == (since + timedelta(minutes=30)).isoformat()
    assert health["verdict"].startswith("to be repaired at")
    # 1 of 2 nodes of general: within ceil(20% of 2) = 1.
    assert health["gate"] == {"scope": "nodepool", "nodepool": "general", "nodes": 2, "unhealthy": 1,
                              "threshold": 1, "open": True}
    settings.LOADMASTER_NODE_REPAIR = False
    assert "node repair is off" in selectors.node_health("sick", cluster=world.cluster)["verdict"]

    html = viewer_client.get("/whatif/nodes/sick/").content.decode()
    assert 'id="node-health"' in html and "<code>Ready=False</code>" in html
    api = viewer_client.get("/api/nodes/sick/why")
    assert api.status_code == 200 and api.json()["health"]["matches"][0]["condition"] == "Ready=False"
    with pytest.raises(selectors.NotFound):
        selectors.node_health("nope", cluster=world.cluster)
