"""Preview, why-pending and why-node over a simulated cluster: read-only, and suggestions verified."""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps

from console.fleet.models import NodePool
from console.whatif import selectors
from console.whatif import world as world_
from packing import api
from tests.whatif.conftest import add_pod


def row_counts() -> dict[str, int]:
    return {m._meta.label: m.objects.count() for m in apps.get_models()}


def test_preview_never_writes(world: Any) -> None:
    before = row_counts()
    pool = NodePool.objects.get(name="general")
    values = {**pool.field_values(), "limits": {"cpu": "2"}}
    result = selectors.preview_nodepool_change(values=values, name="general", cluster=world.cluster, now=world.clock())
    assert row_counts() == before
    assert NodePool.objects.get(name="general").limits == {"cpu": "16"}
    # 4 pods × 1 cpu do not fit under a 2-cpu limit: some become unschedulable, with the limit as reason.
    assert not result["before"]["unschedulable"]
    assert result["becomes_unschedulable"]
    reasons = [r["reason"] for p in result["becomes_unschedulable"] for r in p["reasons"] if r["nodepool"] == "general"]
    assert reasons and all("limit cpu" in r for r in reasons)
    assert result["before"]["launch"] and result["before"]["lower_bound_per_hour"] is not None
    assert result["after"]["cost_per_hour_launch"] <= result["before"]["cost_per_hour_launch"]


def test_why_pending_suggests_tolerating_a_taint(world: Any) -> None:
    add_pod(world, "trainer", namespace="ml", cpu="2", memory="4Gi",
            node_selector={"karpenter.k8s.aws/instance-category": "g"})
    before = row_counts()
    answer = selectors.why_pending("ml", "trainer", cluster=world.cluster, now=world.clock())
    assert row_counts() == before
    rows = {r["nodepool"]: r for r in answer["pools"]}
    assert rows["gpu"]["suggestion"] == "tolerate nvidia.com/gpu" and rows["gpu"]["verified"]
    assert rows["general"]["suggestion"] == "allow instance-category g in pool general"
    # Applying each suggestion (in memory) really makes the pod schedulable.
    live = world_.live_world(cluster=world.cluster, now=world.clock())
    for row in rows.values():
        changed = selectors.apply_suggestion(live, "ml", "trainer", row["suggestion"])
        plan = world_.run_plan(changed)
        assert "ml/trainer" not in plan.unschedulable


def test_why_pending_finds_the_smallest_limit(world: Any) -> None:
    add_pod(world, "big", namespace="shop", cpu="20", memory="8Gi")
    answer = selectors.why_pending("shop", "big", cluster=world.cluster, now=world.clock())
    rows = {r["nodepool"]: r for r in answer["pools"]}
    suggestion = rows["general"]["suggestion"]
    assert suggestion and suggestion.startswith("raise cpu limit of pool general from 16 to "), rows
    wanted = int(suggestion.rsplit(" ", 1)[1])
    live = world_.live_world(cluster=world.cluster, now=world.clock())
    assert "shop/big" not in world_.run_plan(selectors.apply_suggestion(live, "shop", "big", suggestion)).unschedulable
    # One less is not enough: the suggestion is the smallest.
    smaller = f"raise cpu limit of pool general from 16 to {wanted - 1}"
    assert "shop/big" in world_.run_plan(selectors.apply_suggestion(live, "shop", "big", smaller)).unschedulable


def karpenter_node(name: str, itype: str = "m5.2xlarge") -> dict[str, Any]:
    from tests.simulation.conftest import node

    doc = node(name, cpu="8", memory="30Gi", labels={
        "karpenter.sh/nodepool": "general", "node.kubernetes.io/instance-type": itype,
        "karpenter.sh/capacity-type": "on-demand", "topology.kubernetes.io/zone": "us-east-1a"})
    doc["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    return doc


def test_why_node_explains_candidates_and_blockers(world: Any) -> None:
    world.cluster.apply(karpenter_node("idle"))
    world.cluster.apply(karpenter_node("pinned"))
    add_pod(world, "keep", namespace="ops", node_name="pinned", cpu="1", memory="1Gi",
            extra=None, labels={"app": "keep"})
    pod = next(p for p in world.cluster.list_pods()[0] if p["metadata"]["name"] == "keep")
    pod["metadata"].setdefault("annotations", {})["karpenter.sh/do-not-disrupt"] = "true"
    world.cluster.apply(pod)
    before = row_counts()
    idle = selectors.why_node("idle", cluster=world.cluster, now=world.clock())
    pinned = selectors.why_node("pinned", cluster=world.cluster, now=world.clock())
    assert row_counts() == before
    assert idle["candidate"] and idle["savings_per_hour"] > 0 and idle["action"]["type"] == "delete", idle
    assert not pinned["candidate"] and "do-not-disrupt" in pinned["blocked_by"], pinned
    assert pinned["category"] == "do-not-disrupt" and pinned["blocked_kind"] == "do-not-disrupt"
    # what lifting the block would save is the engine's simulated figure, never more than the node costs
    assert pinned["savings_per_hour"] is None or pinned["savings_per_hour"] > 0


def test_preview_leaves_expired_unavailable_offerings_alone(world: Any) -> None:
    """The provision loop prunes expired offerings; a preview reads only the live ones and deletes nothing."""
    from datetime import timedelta

    from console.control.models import UnavailableOffering

    UnavailableOffering.objects.create(instance_type="m5.large", zone="us-east-1a", capacity_type="on-demand",
                                       reason="ICE", expires_at=world.clock() - timedelta(minutes=5))
    before = row_counts()
    selectors.preview_nodepool_change(values={"weight": 50}, name="general", cluster=world.cluster, now=world.clock())
    assert row_counts() == before


def test_bench_runs_small(db: Any) -> None:
    from console.whatif import bench

    figures = bench.run(nodes=20, pods=200, pending=20, repeat=1)
    assert figures["seconds_median"] > 0 and figures["nodes"] == 20


@pytest.mark.parametrize(("category", "label"), [
    (api.NotDisruptedCategory.PDB, "PodDisruptionBudget"),
    (api.NotDisruptedCategory.DO_NOT_DISRUPT, "do-not-disrupt"),
    (api.NotDisruptedCategory.BUDGET, "budget window"),
    (api.NotDisruptedCategory.CONSOLIDATE_AFTER, "consolidateAfter"),
    (api.NotDisruptedCategory.NO_CHEAPER_REPLACEMENT, "no cheaper replacement"),
    (api.NotDisruptedCategory.BELOW_SCORE_THRESHOLD, "Balanced consolidation score"),
    (api.NotDisruptedCategory.WHEN_EMPTY, "other"),
    (api.NotDisruptedCategory.NOT_EVALUATED, "other"),
])
def test_blocker_categories(category: api.NotDisruptedCategory, label: str) -> None:
    """The why-node headline follows the engine's category, never its wording."""
    assert selectors._category(category) == label


def test_why_node_names_the_cheapest_replacement_from_the_engine(world: Any) -> None:
    world.cluster.apply(karpenter_node("snug", itype="m5.large"))
    add_pod(world, "fill", namespace="ops", node_name="snug", cpu="1500m", memory="6Gi", extra=None,
            labels={"app": "fill"})
    why = selectors.why_node("snug", cluster=world.cluster, now=world.clock())
    assert why["category"] == "no cheaper replacement", why
    cheapest = why["cheapest_replacement"]
    assert cheapest is not None and cheapest["instance_type"] in why["blocked_by"]
    # the engine's own figure, not the text's rounding to three decimals
    assert f"${cheapest['price_per_hour']:.3f}/h" in why["blocked_by"] and cheapest["price_per_hour"] >= 0.096


def test_why_node_of_a_deleted_nodepool(world: Any, viewer_client: Any) -> None:
    """A node whose NodePool was deleted is being removed; the page says so instead of "not found"."""
    from decimal import Decimal

    from console.fleet.models import NodeClaim

    node = karpenter_node("orphan")
    node["metadata"]["labels"]["karpenter.sh/nodepool"] = "gone"
    world.cluster.apply(node)
    NodeClaim.objects.create(name="gone-abc12", nodepool_name="gone", instance_type="m5.2xlarge",
                             capacity_type="on-demand", zone="us-east-1a", node_name="orphan",
                             price_per_hour=Decimal("0.384"), price_source="snapshot")
    answer = selectors.why_node("orphan", cluster=world.cluster, now=world.clock())
    assert answer["nodepool_deleted"] and answer["nodepool"] == "gone" and not answer["candidate"]
    assert "was deleted" in answer["blocked_by"] and "not found in the input" not in answer["blocked_by"]
    assert answer["savings_per_hour"] == 0.384
    html = viewer_client.get("/whatif/nodes/orphan/").content.decode()
    assert 'id="why-nodepool-deleted"' in html and "NodePool <code>gone</code> was deleted" in html
    assert "not found in the input" not in html


def test_why_node_gives_the_balanced_score_and_threshold(world: Any, viewer_client: Any) -> None:
    NodePool.objects.filter(name="general").update(consolidation_policy="Balanced")
    world.cluster.apply(karpenter_node("costly"))
    world.cluster.apply(karpenter_node("plain"))
    add_pod(world, "light", namespace="ops", node_name="plain", cpu="100m", memory="128Mi", extra=None)
    for i in range(5):
        add_pod(world, f"cache-{i}", namespace="ops", node_name="costly", cpu="100m", memory="128Mi", extra=None)
        p = next(p for p in world.cluster.list_pods()[0] if p["metadata"]["name"] == f"cache-{i}")
        p["metadata"].setdefault("annotations", {})["controller.kubernetes.io/pod-deletion-cost"] = "2147483647"
        world.cluster.apply(p)
    costly = selectors.why_node("costly", cluster=world.cluster, now=world.clock())
    assert not costly["candidate"] and costly["category"] == "Balanced consolidation score", costly
    assert costly["score"] < costly["score_threshold"] == 0.5
    plain = selectors.why_node("plain", cluster=world.cluster, now=world.clock())
    assert plain["candidate"] and plain["score"] >= plain["score_threshold"] == 0.5, plain
    # the page as the view renders it (the view asks at the wall clock, past these nodes' expireAfter)
    from unittest import mock

    with mock.patch.object(selectors, "why_node", return_value=costly):
        page = viewer_client.get("/whatif/nodes/costly/")
    assert page.status_code == 200
    assert f"Balanced consolidation score <strong>{costly['score']:.2f}</strong>, below the threshold 0.50".encode() \
        in page.content
