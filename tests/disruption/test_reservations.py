"""Consolidation around capacity reservations: work may move into a reservation with room, never off one onto
a new node that is not on one; nodes on a Capacity Block are drained before the block ends."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from packing.commitments import Commitment, CommitmentKind
from packing.disruption import NotDisruptedCategory, consolidate
from packing.scheduling.reservations import CAPACITY_BLOCK_LEAD, RESERVATION_ID_LABEL, RESERVATION_TYPE_LABEL
from tests.engine_builders import (
    AT,
    all_capacity_pool,
    bound_pod,
    cluster,
    node,
    small_catalog,
    term,
    with_reservation,
)

CAT = {it.name: it for it in small_catalog()}


def catalog_with(rid: str, available: int, type_name: str = "m-4x", **kw: object) -> list:  # type: ignore[type-arg]
    return [with_reservation(it, rid, available, **kw) if it.name == type_name else it for it in small_catalog()]  # type: ignore[arg-type]


def on(rid: str, block: bool = False) -> dict[str, str]:
    return {RESERVATION_ID_LABEL: rid, RESERVATION_TYPE_LABEL: "capacity-block" if block else "default"}


def test_a_node_on_a_reservation_is_not_replaced_by_cheaper_capacity_off_it() -> None:
    cat = catalog_with("cr-1", 0)
    n = node("n1", CAT["m-4x"], ct="reserved", labels=on("cr-1"))
    r = consolidate(cluster([n], [bound_pod("a", "n1", "1")], pools=[all_capacity_pool()], cat=cat), AT)
    assert not r.actions
    (spared,) = r.not_disrupted
    assert spared.category == NotDisruptedCategory.RESERVED_CAPACITY
    assert "cr-1" in spared.text


def test_work_moves_into_a_reservation_with_room() -> None:
    # an on-demand m-8x running 3 cpu: the free m-4x reservation holds it at no extra cost
    cat = catalog_with("cr-1", 1)
    n = node("n1", CAT["m-8x"], ct="on-demand")
    r = consolidate(cluster([n], [bound_pod("a", "n1", "3")], pools=[all_capacity_pool()], cat=cat), AT)
    (a,) = r.actions
    assert a.type == "replace"
    (rep,) = a.replacements
    assert rep["capacity_type"] == "reserved" and rep["reservation_id"] == "cr-1"
    assert a.savings_per_hour == CAT["m-8x"].offerings[0].price  # the reservation is prepaid


def test_consolidation_never_overfills_a_reservation() -> None:
    cat = catalog_with("cr-1", 1)
    # one pod per node (hostname anti-affinity): each action could move one pod into the reservation, and the
    # replacements earlier actions launched onto it count against its free instance
    nodes = [node(f"n{i}", CAT["m-8x"], ct="on-demand") for i in range(3)]
    anti = [term("kubernetes.io/hostname", app="x")]
    pods = [bound_pod(f"a{i}", f"n{i}", "3", labels={"app": "x"}, anti_affinity=anti) for i in range(3)]
    r = consolidate(cluster(nodes, pods, pools=[all_capacity_pool()], cat=cat), AT)
    onto = [rep for a in r.actions for rep in a.replacements if rep.get("reservation_id") == "cr-1"]
    assert len(onto) == 1  # one node moves into it; the others find it full


def test_nodes_on_an_ending_capacity_block_are_drained_before_it_ends() -> None:
    ends = AT + CAPACITY_BLOCK_LEAD - timedelta(minutes=1)
    cat = catalog_with("cb-1", 3, ends=ends, block=True)
    n = node("n1", CAT["m-4x"], ct="reserved", labels=on("cb-1", block=True))
    r = consolidate(cluster([n], [bound_pod("a", "n1", "1")], pools=[all_capacity_pool()], cat=cat), AT)
    (a,) = [x for x in r.actions if x.reason == "capacity-block-expiring"]
    assert a.method == "capacity-block" and a.nodes == ["n1"]
    assert "cb-1" in a.why
    # the replacement is not launched onto the block that is ending
    assert all(rep.get("reservation_id") != "cb-1" for rep in a.replacements)


def test_capacity_block_expiry_off_leaves_an_ending_block_to_the_caller() -> None:
    # the console's capacity-block loop deletes those NodeClaims itself: the disrupt loop turns the method off
    ends = AT + CAPACITY_BLOCK_LEAD - timedelta(minutes=1)
    cat = catalog_with("cb-1", 3, ends=ends, block=True)
    n = node("n1", CAT["m-4x"], ct="reserved", labels=on("cb-1", block=True))
    c = cluster([n], [bound_pod("a", "n1", "1")], pools=[all_capacity_pool()], cat=cat)
    c.capacity_block_expiry = False
    assert not [x for x in consolidate(c, AT).actions if x.reason == "capacity-block-expiring"]


def test_a_capacity_block_not_yet_within_the_lead_time_is_left_alone() -> None:
    ends = AT + CAPACITY_BLOCK_LEAD + timedelta(minutes=5)
    cat = catalog_with("cb-1", 3, ends=ends, block=True)
    n = node("n1", CAT["m-4x"], ct="reserved", labels=on("cb-1", block=True))
    r = consolidate(cluster([n], [bound_pod("a", "n1", "1")], pools=[all_capacity_pool()], cat=cat), AT)
    assert not [x for x in r.actions if x.reason == "capacity-block-expiring"]


def with_commitments(c: object, *commitments: Commitment) -> object:
    return dataclasses.replace(c, commitments=list(commitments))  # type: ignore[type-var]


def test_a_node_a_reserved_instance_covers_is_not_moved_to_spot() -> None:
    # list prices say spot saves money; the RI bills on, so the move would raise the bill
    ri = Commitment("ri", CommitmentKind.RESERVED_INSTANCES, instance_type="m-4x", count=1)
    c = cluster([node("n1", CAT["m-4x"])], [bound_pod("a", "n1", "1")])
    assert consolidate(c, AT).actions  # without the commitment: replaced by spot
    r = consolidate(with_commitments(c, ri), AT)  # type: ignore[arg-type]
    assert not r.actions


def test_work_moves_onto_an_unused_reserved_instance_and_uses_it_once() -> None:
    ri = Commitment("ri", CommitmentKind.RESERVED_INSTANCES, instance_type="m-4x", count=1)
    nodes = [node(f"n{i}", CAT["m-8x"]) for i in range(3)]
    anti = [term("kubernetes.io/hostname", app="x")]
    pods = [bound_pod(f"a{i}", f"n{i}", "3", labels={"app": "x"}, anti_affinity=anti) for i in range(3)]
    r = consolidate(with_commitments(cluster(nodes, pods), ri), AT)  # type: ignore[arg-type]
    covered = [rep for a in r.actions for rep in a.replacements if rep.get("covered_by") == ["ri"]]
    assert len(covered) == 1
    assert covered[0]["instance_type"] == "m-4x" and covered[0]["effective_price_per_hour"] == 0.0
