"""Node repair's rules without a cluster: which match is due first, and Karpenter's 20% gate (per NodePool,
rounded up, the cluster's for a NodeClaim without a NodePool)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.control.repair import Gate, gate_for, gates, node_health
from console.fleet.models import NodeClaim
from console.repair_policy import DEFAULT_POLICIES, duration_parse, duration_text, policies_parse

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


def _node(name: str, pool: str | None, **conditions: tuple[str, datetime]) -> dict[str, Any]:
    labels = {"karpenter.sh/nodepool": pool} if pool else {}
    return {"metadata": {"name": name, "labels": labels}, "status": {"conditions": [
        {"type": t, "status": s, "lastTransitionTime": when.isoformat()} for t, (s, when) in conditions.items()]}}


def test_the_match_due_first_counts() -> None:
    policies = policies_parse("DiskPressure=True:5m")
    node = _node("n", "a", Ready=("False", T0), DiskPressure=("True", T0 + timedelta(minutes=2)))
    health = node_health(node, policies)
    assert health.unhealthy and len(health.matches) == 2
    assert health.policy is not None and health.policy.condition_type == "DiskPressure"
    assert health.due_at == T0 + timedelta(minutes=7)
    assert not health.is_due(T0 + timedelta(minutes=6)) and health.is_due(T0 + timedelta(minutes=7))
    assert not node_health(_node("ok", "a", Ready=("True", T0)), DEFAULT_POLICIES).unhealthy
    untimed = node_health({"metadata": {"name": "x"}, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}},
                          DEFAULT_POLICIES)
    assert untimed.unhealthy and untimed.due_at is None and not untimed.is_due(T0 + timedelta(days=1))


@pytest.mark.parametrize(("total", "sick", "allowed"), [
    (1, 1, True), (3, 1, True), (5, 1, True), (5, 2, False), (10, 2, True), (10, 3, False), (6, 2, True),
])
def test_twenty_percent_rounded_up(total: int, sick: int, allowed: bool) -> None:
    assert Gate("nodepool", "a", total, tuple(f"n{i}" for i in range(sick))).open is allowed


def test_gates_per_nodepool_and_the_cluster_for_a_claim_without_one() -> None:
    nodes = [_node("a1", "a", Ready=("False", T0)), _node("a2", "a"), _node("a3", "a"),
             _node("b1", "b", Ready=("Unknown", T0)), _node("b2", "b", Ready=("False", T0)),
             _node("x1", None, Ready=("False", T0))]
    health = {str(n["metadata"]["name"]): node_health(n, DEFAULT_POLICIES) for n in nodes}
    pools, cluster = gates(nodes, health)
    assert pools["a"].open and pools["a"].unhealthy == ("a1",) and pools["a"].total == 3
    assert not pools["b"].open and pools["b"].threshold == 1
    assert cluster.total == 6 and len(cluster.unhealthy) == 4 and not cluster.open
    assert gate_for(NodeClaim(nodepool_name=""), pools, cluster) is cluster
    assert gate_for(NodeClaim(nodepool_name="a"), pools, cluster) is pools["a"]
    assert "in the cluster" in cluster.message() and "in the nodepool" in pools["b"].message()


@given(st.integers(min_value=0, max_value=100_000), st.integers(min_value=0, max_value=100_000))
def test_gate_threshold_is_the_rounded_up_fifth(total: int, sick: int) -> None:
    sick = min(sick, total)
    gate = Gate("nodepool", "a", total, tuple(str(i) for i in range(sick)))
    assert gate.threshold == math.ceil(total / 5) and gate.open is (sick <= math.ceil(total / 5))


@given(st.integers(min_value=1, max_value=10 * 24 * 3600))
def test_durations_round_trip(seconds: int) -> None:
    assert duration_parse(duration_text(timedelta(seconds=seconds))) == timedelta(seconds=seconds)
