"""A preview of an edit that forces replacements (capacity type narrowed to on-demand under a spot node)
shows the replacements that would launch, each removal's reason, and signed before → after changes."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from console.fleet import services as fleet
from console.fleet.models import NodePool
from console.whatif import selectors
from tests.whatif.conftest import add_pod
from tests.whatif.test_pages_api import general_post
from tests.whatif.test_services import karpenter_node

BOTH = {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]}
CATEGORY = {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m"]}
ON_DEMAND = {**BOTH, "values": ["on-demand"]}


@pytest.fixture
def spot_node(world: Any) -> Any:
    """Pool general allows spot; a busy spot m5.2xlarge of it runs 7 pods (too full to consolidate)."""
    fleet.nodepool_update(nodepool=NodePool.objects.get(name="general"), values={"requirements": [BOTH, CATEGORY]},
                          user=None)
    node = karpenter_node("busy", "m5.2xlarge")
    node["metadata"]["labels"]["karpenter.sh/capacity-type"] = "spot"
    world.cluster.apply(node)
    for i in range(7):
        add_pod(world, f"api-{i}", namespace="shop", node_name="busy", cpu="1", memory="3Gi", labels={"app": "api"})
    return world


def test_replacements_reasons_and_signed_changes(spot_node: Any) -> None:
    result = selectors.preview_nodepool_change(values={"requirements": [ON_DEMAND, CATEGORY]}, name="general",
                                            cluster=spot_node.cluster, now=spot_node.clock())
    before, after, deltas = result["before"], result["after"], result["deltas"]
    assert not before["removals"] and not before["replacements"]
    (removal,) = after["removals"]
    assert removal["node"] == "busy" and removal["reason"] == "drifted" and removal["type"] == "replace"
    assert "capacity-type" in removal["why"] and removal["replaced_by"]
    assert after["replacements"] and all(c["capacity_type"] == "on-demand" and c["replaces"] == ["busy"]
                                         for c in after["replacements"])
    assert deltas["replacements_count"] == len(after["replacements"]) and deltas["remove_count"] == 1
    # The drift to on-demand costs more: a positive change, never a negative "saving".
    replaced = sum(c["price_per_hour"] for c in after["replacements"])
    assert after["cost_per_hour_replacements"] == pytest.approx(replaced)
    assert after["cost_per_hour_disruption_change"] > 0
    assert result["cost_per_hour_delta"] == pytest.approx(after["cost_per_hour_after"] - before["cost_per_hour_after"])
    assert result["cost_per_hour_delta"] == pytest.approx(deltas["cost_per_hour_after"]) and deltas["cost_per_hour_after"] > 0
    assert after["cost_per_hour_after"] == pytest.approx(after["cost_per_hour_existing"] + after["cost_per_hour_launch"]
                                                         + after["cost_per_hour_disruption_change"])


def test_preview_page_shows_them(spot_node: Any, viewer_client: Client) -> None:
    post = general_post()
    post["req-0-values"] = "on-demand"  # the capacity-type row, narrowed
    html = viewer_client.post("/whatif/nodepools/general/preview/", post, HTTP_X_REQUESTED_WITH="fetch").content.decode()
    assert 'id="whatif-after-replacements">' in html and 'id="whatif-after-replacements">0<' not in html
    removals = html[html.index('id="whatif-removals"'):].split("</ul>", 1)[0]
    assert "<code>busy</code>: replace (drifted), replaced by " in removals
    assert 'id="whatif-replacements"' in html and "replacing busy (drifted)" in html
    delta = html[html.index('id="whatif-delta">'):].split("</strong>", 1)[0]
    assert delta.startswith('id="whatif-delta">+') and "(the edit costs more)" in html
    assert "Consolidation savings" not in html


def test_preview_of_switching_to_balanced_gives_each_removals_score(world: Any) -> None:
    # two m5.2xlarge nodes of general, each running one small pod: one goes, its pod lands on the other
    world.cluster.apply(karpenter_node("left"))
    world.cluster.apply(karpenter_node("right"))
    add_pod(world, "l", namespace="ops", node_name="left", cpu="500m", memory="1Gi", extra=None)
    add_pod(world, "r", namespace="ops", node_name="right", cpu="500m", memory="1Gi", extra=None)
    result = selectors.preview_nodepool_change(values={"consolidation_policy": "Balanced"}, name="general",
                                               cluster=world.cluster, now=world.clock())
    scored = [r for r in result["after"]["removals"] if r["reason"] in ("underutilized", "empty")]
    assert scored and all(r["score"] is not None and r["score"] >= 0.5 for r in scored if r["reason"] != "empty")
    assert all(r["score"] is None for r in result["before"]["removals"])
