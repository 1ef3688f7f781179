"""Pods-only solves, remembered: a solve shown no running pod and no node (limit stand-ins aside) is a function of
its pods' scheduling fields, in their input order and in the order the solve takes them, and of its Scheduler's
pools, catalog and DaemonSets; the pods' names only break ties in that order, and nothing else reads them.

Consolidation asks this question thousands of times a replay (packing.disruption.simulation: the pods left over
once some found room on existing nodes, and the repack move's new nodes), and about three times in four it asks
one it asked before, for pods of the same shapes on another node. A remembered answer is given back with the
current pods in the places the earlier pods had (by position), in copies its caller may change; the Scheduler's
record of unusable pools is filled as the solve would have filled it. An answer whose reasons name a pod, or
that placed a pod it was not given, is not remembered. The answer is the one the solve gives (tested).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packing.pods import Pod
from packing.resources import CPU, MEMORY, PODS
from packing.scheduling.queue import order_key
from packing.scheduling.reasons import Reason
from packing.scheduling.results import ExistingPlacement, PlannedNodeClaim, Results

if TYPE_CHECKING:
    from packing.scheduling.scheduler import Scheduler

__all__ = ["PodsOnlySolves", "pods_only"]

MAX_ENTRIES = 50_000  # answers kept per scope (a few hundred bytes each); the memo starts over beyond it


def pods_only(sched: Scheduler) -> bool:
    """True when the Scheduler is shown no running pod and no node but limit stand-ins (which take no pod)."""
    return not sched.running_pods and all(not n.allocatable for n in sched.existing_nodes)


@dataclass
class _Answer:
    claims: list[tuple[PlannedNodeClaim, list[int]]]  # each claim with the input positions of its pods
    unschedulable: list[tuple[int, list[Reason]]]  # input position -> reasons
    stand_ins: list[tuple[str, str, float | None]]  # the limit stand-ins' (empty) placements: name, kind, price


def _signature(p: Pod) -> Hashable:
    """What a pods-only solve reads of a pod (no topology group can exist in one: see the callers)."""
    return (
        p.requests, tuple(sorted(p.node_selector.items())) if p.node_selector else (), p.required_terms,
        p.preferred_terms, p.tolerations, p.host_ports, p.terminating, p.has_topology_rules,
    )


def _copy_claim(c: PlannedNodeClaim, pods: list[Pod]) -> PlannedNodeClaim:
    return dataclasses.replace(
        c, pods=pods, labels=dict(c.labels), taints=list(c.taints), startup_taints=list(c.startup_taints),
        instance_type_options=list(c.instance_type_options), overlays=list(c.overlays),
        covered_by=list(c.covered_by),
    )


class PodsOnlySolves:
    """The answers of one Scheduler scope (pools, catalog, DaemonSets, minValues policy), by the question."""

    def __init__(self) -> None:
        self._answers: dict[Hashable, _Answer] = {}
        self.hits = 0
        self.misses = 0

    def solve(self, sched: Scheduler, pods: Sequence[Pod], strategy: str) -> Results:
        """sched.solve(pods, strategy=strategy) for a pods-only Scheduler (see pods_only)."""
        pods = list(pods)
        keys = [p.key for p in pods]
        if len(set(keys)) != len(keys) or any(p.has_topology_rules for p in pods):
            return sched.solve(pods, strategy=strategy)
        # the order the solve takes them in (packing.scheduling.queue.largest_first): names break ties there
        order = sorted(range(len(pods)), key=lambda i: order_key(pods[i]))
        question = (
            strategy, sched.input_nodes is None,
            tuple((n.name, n.capacity) for n in sched.existing_nodes),
            tuple(_signature(p) for p in pods), tuple(order),
        )
        answer = self._answers.get(question)
        if answer is not None:
            self.hits += 1
            return self._given_back(sched, pods, answer)
        self.misses += 1
        res = sched.solve(pods, strategy=strategy)
        remembered = self._remembered(pods, res)
        if remembered is not None:
            if len(self._answers) >= MAX_ENTRIES:
                self._answers.clear()
            self._answers[question] = remembered
        return res

    @staticmethod
    def _remembered(pods: list[Pod], res: Results) -> _Answer | None:
        if res.lower_bound is not None or any(e.pods for e in res.existing):
            return None
        at = {id(p): i for i, p in enumerate(pods)}
        by_key = {p.key: i for i, p in enumerate(pods)}
        claims: list[tuple[PlannedNodeClaim, list[int]]] = []
        for c in res.nodeclaims:
            places = [at.get(id(p), -1) for p in c.pods]
            if -1 in places:
                return None
            claims.append((_copy_claim(c, []), places))
        unschedulable: list[tuple[int, list[Reason]]] = []
        for key, why in res.unschedulable_reasons.items():
            if key not in by_key:
                return None
            unschedulable.append((by_key[key], list(why)))
        texts = [r.text for _, why in unschedulable for r in why]
        if texts and any(p.name in t for p in pods for t in texts):
            return None
        return _Answer(claims, unschedulable, [(e.name, e.kind, e.price_per_hour) for e in res.existing])

    @staticmethod
    def _given_back(sched: Scheduler, pods: list[Pod], answer: _Answer) -> Results:
        keys = {CPU, MEMORY, PODS}
        for p in pods:
            keys.update(p.requests)
        for ds in sched.daemonsets:
            keys.update(ds.pod.requests)
        sched.templates(tuple(sorted(keys)))  # records the pools it cannot use, as the solve does
        return Results(
            nodeclaims=[_copy_claim(c, [pods[i] for i in places]) for c, places in answer.claims],
            existing=[ExistingPlacement(name, kind, [], price) for name, kind, price in answer.stand_ins],
            unschedulable_reasons={pods[i].key: list(why) for i, why in answer.unschedulable},
            pending=len(pods),
            unusable_nodepool_reasons=dict(sched.unusable_reasons),
        )
