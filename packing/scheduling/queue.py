"""The order pods are scheduled in (Karpenter's queue.go): largest first, so big pods open the nodes that small
ones then fill. Karpenter's queue also re-pushes a pod that failed until a whole cycle places nothing; the solve
keeps such pods in a RetryQueue, each waiting on the topology groups whose counts could let it in, and retries
a pod only once a placement has moved one of them (packing.scheduling.solve.Solve._retry)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from packing.pods import Pod
from packing.resources import CPU, MEMORY

if TYPE_CHECKING:
    from packing.scheduling.preferences import PodContext
    from packing.scheduling.topology import TopologyGroup

__all__ = ["RetryQueue", "largest_first", "order_key"]


def order_key(p: Pod) -> tuple[int, int, str, str]:
    """Where a pod comes in the order solves take pods in: most cpu, then most memory, then by name."""
    return -p.requests.get(CPU, 0), -p.requests.get(MEMORY, 0), p.namespace, p.name


def largest_first(ctxs: Sequence[PodContext], *, keys: Sequence[str] = ()) -> list[PodContext]:
    """Pods by cpu, then memory, largest first; names break ties so the plan is deterministic.

    `keys`, the resource order of the contexts' vectors, lets the sort read them instead of calling each
    pod's request mapping twice (the same amounts; the calls dominate the sort on 10,000 pods)."""
    if CPU in keys and MEMORY in keys:
        ci, mi = list(keys).index(CPU), list(keys).index(MEMORY)
        return sorted(ctxs, key=lambda c: (-c.vec[ci], -c.vec[mi], c.pod.namespace, c.pod.name))
    return sorted(ctxs, key=lambda c: order_key(c.pod))


class RetryQueue:
    """Pods that failed, each waiting on the groups (its required spreads and pod affinities) whose counts could
    let it in: only a placement that counts in one of them (a pod the group selects) makes it due again.

    Everything else that decides a place (room, host ports, anti-affinity) only tightens as pods are placed, so
    a pod with no such group never waits here. (Limits loosen once the open claims are finalized and their
    reservations shrink: Solve._retry_under_limits tries the pods they refused then.) Due pods come back in the order they first failed (the
    queue's order), so a chain of affinities is retried link by link, each retry costing one attempt.
    """

    def __init__(self) -> None:
        self._seq = 0
        self._waiting: dict[int, PodContext] = {}  # sequence number (first failure order) -> pod
        self._by_group: dict[int, list[int]] = {}  # id(group) -> sequence numbers waiting on it
        self._due: dict[int, PodContext] = {}

    def __bool__(self) -> bool:
        return bool(self._waiting)

    def wait(self, ctx: PodContext, groups: Iterable[TopologyGroup], seq: int | None = None) -> bool:
        """Park a pod that failed on `groups`; False (nothing parked) when it has none. `seq` keeps the place a
        retried pod first had."""
        ids = {id(g) for g in groups}
        if not ids:
            return False
        if seq is None:
            seq = self._seq
            self._seq += 1
        self._waiting[seq] = ctx
        for i in ids:
            self._by_group.setdefault(i, []).append(seq)
        return True

    def counted(self, groups: Iterable[TopologyGroup]) -> None:
        """A pod was placed that these groups count: the pods waiting on any of them are due."""
        by_group = self._by_group
        for g in groups:
            seqs = by_group.pop(id(g), None)
            if seqs:
                for seq in seqs:
                    ctx = self._waiting.pop(seq, None)  # gone already when another group woke it
                    if ctx is not None:
                        self._due[seq] = ctx

    def take_due(self) -> list[tuple[int, PodContext]]:
        """The due pods in their first-failure order, and none left due."""
        due = sorted(self._due.items(), key=lambda kv: kv[0])
        self._due = {}
        return due

    def forget(self, pod_key: str) -> None:
        """A waiting pod was placed another way (a retry under limits): it is due no more."""
        for pending in (self._waiting, self._due):
            for seq in [s for s, ctx in pending.items() if ctx.pod.key == pod_key]:
                del pending[seq]
