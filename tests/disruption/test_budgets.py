"""Disruption budgets: counts, percents, schedules, reasons, the unparsable, the default, and the list as a whole."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from packing.disruption import Budget, DisruptionSettings, consolidate
from packing.disruption.budgets import budget_limit
from tests.engine_builders import AT, bound_pod, cluster, disruption_settings, node, pool, small_catalog

M4 = {it.name: it for it in small_catalog()}["m-4x"]


def reasons(report: object) -> dict[str, str]:
    return {n.node: n.reason for n in report.not_disrupted}  # type: ignore[attr-defined]


def empties(n: int, **kw: object) -> list:  # type: ignore[type-arg]
    return [node(f"n{i:02d}", M4, **kw) for i in range(n)]  # type: ignore[arg-type]


def test_count_budget_limits_emptiness() -> None:
    st = {"default": disruption_settings(Budget(nodes="1"))}
    r = consolidate(cluster(empties(3), [], pool_settings=st), AT)
    assert [len(a.nodes) for a in r.actions] == [1]
    assert sorted(reasons(r).values()) == ["budget 1 node for Empty (1 already disrupting)"] * 2


def test_percent_budget_rounds_up() -> None:
    st = {"default": disruption_settings(Budget(nodes="10%"))}
    r = consolidate(cluster(empties(12), [], pool_settings=st), AT)
    assert sum(len(a.nodes) for a in r.actions) == 2  # 10% of 12 = 1.2 -> 2
    assert "budget 10% of 12 (2 nodes) for Empty" in next(iter(reasons(r).values()))


def test_default_budget_is_ten_percent() -> None:
    r = consolidate(cluster(empties(20), [], pool_settings={"default": DisruptionSettings()}), AT)
    assert sum(len(a.nodes) for a in r.actions) == 2


def test_scheduled_budget_applies_only_in_its_window() -> None:
    b = Budget(nodes="0", schedule="0 6 * * *", duration="2h")
    st = {"default": disruption_settings(b)}
    inside = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)
    r = consolidate(cluster(empties(2), [], pool_settings=st), inside)
    assert not r.actions
    assert set(reasons(r).values()) == {"budget 0 nodes for Empty until 2026-12-01T08:00Z"}
    outside = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    assert sum(len(a.nodes) for a in consolidate(cluster(empties(2), [], pool_settings=st), outside).actions) == 2


def test_budget_reasons_select_what_they_limit() -> None:
    b = Budget(nodes="0", schedule="0 0 * * *", duration="24h", reasons=("Underutilized",))
    st = {"default": disruption_settings(b, Budget(nodes="100%"))}
    nodes = [node("e", M4), node("u1", M4), node("u2", M4)]
    at = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    r = consolidate(cluster(nodes, [bound_pod("a", "u1", "1"), bound_pod("b", "u2", "1")], pool_settings=st), at)
    assert [(a.reason, a.nodes) for a in r.actions] == [("empty", ["e"])]
    assert reasons(r)["u1"] == "budget 0 nodes for Underutilized until 2026-12-01T00:00Z (1 already disrupting)"


def test_most_restrictive_active_budget_wins() -> None:
    st = DisruptionSettings(budgets=(Budget(nodes="50%"), Budget(nodes="3"), Budget(nodes="1", reasons=("Drifted",))))
    assert budget_limit("default", st, "Empty", AT, 10).nodes == 3
    assert budget_limit("default", st, "Drifted", AT, 10).nodes == 1
    assert budget_limit("default", st, "Underutilized", AT, 4).nodes == 2
    assert budget_limit("default", DisruptionSettings(budgets=()), "Empty", AT, 4).nodes is None


@pytest.mark.parametrize(
    "bad",
    [
        Budget(nodes="ten"),
        Budget(nodes="10%", schedule="61 * * * *", duration="1h"),
        Budget(nodes="10%", schedule="0 * * * *"),
        Budget(nodes="10%", schedule="0 * * * *", duration="1d"),
        Budget(nodes="10%", reasons=("Expired",)),
        Budget(error="must be an object, got str"),
    ],
)
def test_unparsable_budget_allows_nothing(bad: Budget) -> None:
    st = {"default": disruption_settings(bad, Budget(nodes="100%"))}
    r = consolidate(cluster(empties(2), [], pool_settings=st), AT)
    assert not r.actions
    assert all("does not parse" in why and "allows nothing" in why for why in reasons(r).values())


def test_deleting_and_not_ready_nodes_consume_the_budget() -> None:
    st = {"default": disruption_settings(Budget(nodes="2"))}
    nodes = [*empties(2), node("gone", M4, deleting=True), node("sick", M4, ready=False, labels={"x": "y"})]
    r = consolidate(cluster(nodes, [bound_pod("s", "sick", "3")], pool_settings=st), AT)
    assert not r.actions
    assert "(2 already disrupting)" in reasons(r)["n00"]


def test_earlier_actions_count_against_later_ones() -> None:
    st = {"default": disruption_settings(Budget(nodes="2"))}
    nodes = [*empties(2), node("u1", M4), node("u2", M4)]
    r = consolidate(cluster(nodes, [bound_pod("a", "u1", "1"), bound_pod("b", "u2", "1")], pool_settings=st), AT)
    assert sum(len(a.nodes) for a in r.actions) == 2
    assert [a.reason for a in r.actions] == ["empty"]
    assert "budget 2 nodes for Underutilized (2 already disrupting)" in reasons(r)["u1"]


def test_budgets_are_per_nodepool() -> None:

    pools = [pool("a"), pool("b")]
    st = {"a": disruption_settings(Budget(nodes="0")), "b": disruption_settings(Budget(nodes="100%"))}
    nodes = [node("a1", M4, pool_name="a"), node("b1", M4, pool_name="b")]
    r = consolidate(cluster(nodes, [], pools=pools, pool_settings=st), AT)
    assert [a.nodes for a in r.actions] == [["b1"]]
