"""First-fit placement for the disruption engine: the numpy first_fit and the RoomIndex emulation of it agree."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from packing.disruption.firstfit import RoomIndex, first_fit, largest_first
from packing.pods import Pod
from packing.resources import Resources

KEYS = ("cpu", "memory", "pods")


def _pod(i: int, cpu: int, mem: int) -> Pod:
    return Pod(f"p{i}", requests=Resources({"cpu": cpu, "memory": mem, "pods": 1000}))


shapes = st.tuples(st.sampled_from([100, 250, 500, 1000, 1500]), st.sampled_from([256, 512, 1024, 4096]))


@settings(max_examples=200, deadline=None)
@given(
    free=st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 8192), st.integers(0, 5000)), min_size=1, max_size=12),
    groups=st.lists(st.lists(shapes, min_size=1, max_size=6), min_size=1, max_size=6),
)
def test_room_index_places_as_first_fit_does(free: list[tuple[int, int, int]], groups: list[list[tuple[int, int]]]) -> None:
    # nodes n0..nk; node "c<j>" (not in the matrix unless j < len(free)) is the one whose pods move; deletes are
    # applied one after another, as the single-node pass does, and every answer is compared with first_fit on the
    # room as it then is
    names = [f"n{i}" for i in range(len(free))]
    room = np.array(free, dtype=np.int64).reshape(len(free), 3)
    index = RoomIndex(names, room)
    pid = 0
    for j, group in enumerate(groups):
        pods = []
        for cpu, mem in group:
            pods.append(_pod(pid, cpu, mem))
            pid += 1
        own = names[j % len(names)] if j % 2 else "elsewhere"
        skip = [names.index(own)] if own in names else []
        gone = [i for i in range(len(names)) if not index.alive[i]]
        targets, rest, _ = first_fit(pods, KEYS, room, names, all_or_nothing=True, skip=skip + gone)
        ordered = largest_first(pods)
        vecs = [p.requests.vector(KEYS) for p in ordered]
        rows = index.place(own, vecs)
        if rest:
            assert rows is None
            continue
        assert rows is not None
        assert {p.key: names[r] for p, r in zip(ordered, rows, strict=True)} == targets
        for r, v in zip(rows, vecs, strict=True):
            room[r] -= np.asarray(v)
        assert (room >= 0).all()
        index.apply(own, rows, vecs)
        assert index.room == room.tolist()
        if own in names:
            assert not index.alive[names.index(own)]


def test_first_fit_fills_each_node_in_order_and_reports_what_is_left() -> None:
    pods = [_pod(i, 1000, 1024) for i in range(5)] + [_pod(9, 3000, 1024)]
    room = np.array([[2000, 4096, 10_000], [2500, 4096, 10_000], [500, 4096, 10_000]], dtype=np.int64)
    targets, rest, left = first_fit(pods, KEYS, room, ["a", "b", "c"])
    # the 3-cpu pod fits nowhere; the 1-cpu pods fill a (2), then b (2), and the fifth finds no room
    assert [p.key for p in rest] == ["default/p9", "default/p4"]
    assert targets == {"default/p0": "a", "default/p1": "a", "default/p2": "b", "default/p3": "b"}
    assert left.tolist() == [4000, 2 * 1024, 2000]
    # all_or_nothing stops at the first pod with no room
    _, rest, _ = first_fit(pods, KEYS, room, ["a", "b", "c"], all_or_nothing=True)
    assert [p.key for p in rest] == ["default/p9"]
