"""What-if scheduling for disruption: the cluster as it stands after earlier actions, and "what if these nodes went".

Every what-if is one call of the provisioning engine's Scheduler.solve(pods, exclude_nodes=...) for the evicted pods
(as pending). The cluster's pending pods are placed once, first, as the provisioner would place them, and their
places are part of the state every move sees: a pending pod bound for an existing node holds that room (a move may
not take it), and one bound for a new nodeclaim keeps its claim, which no move touches. Karpenter simulates the
pending pods again with every move; holding their places instead never accepts a move that takes room a pending
pod needs (it may only refuse a move the joint simulation would have found by moving a pending pod aside), and it
spares every what-if the cost of re-placing hundreds of pending pods. A move that removes a node a pending pod was
bound for re-places that pod with the evicted ones: it must land, and a new node it needs is part of the move.
The Scheduler is given a compact but equivalent picture of the cluster: a running pod that no topology rule can
see (no host ports, no anti-affinity of its own, matched by no pod's spread or (anti-)affinity selector) affects
scheduling only through the room it takes, so it is folded into its node's allocatable instead of being listed.
On a thousand-node cluster that turns each what-if from re-adding every running pod into one pass over the nodes.

(Above 700 lines on purpose: ClusterSim's placements, its free-room and first-fit matrices and their incremental
updates change together in apply(); split apart, each piece would have to reach into the others' internals.)
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from packing.buffers import is_virtual
from packing.disruption.model import NotDisruptedCategory
from packing.disruption.refusals import Refusal
from packing.nodepool import (
    CAPACITY_TYPE_LABEL,
    HOSTNAME_LABEL,
    INSTANCE_TYPE_LABEL,
    ZONE_LABEL,
    ExistingNodeSpec,
    NodePool,
)
from packing.pods import LabelSelector, Pod
from packing.resources import Resources
from packing.scheduling.compact import (
    ONE_NODE,
    compact_nodes,
    limit_stand_in,
    request_rows,
    room_only,
    rows_fit,
)
from packing.scheduling.podsonly import PodsOnlySolves, pods_only
from packing.scheduling.results import PlannedNodeClaim, Results
from packing.scheduling.scheduler import Scheduler

__all__ = ["ClusterSim", "WhatIf"]


def _untainted(spec: ExistingNodeSpec) -> bool:
    """No NoSchedule or NoExecute taint: pods without tolerations (the only ones first-fit places) may land."""
    return not any(t.effect in ("NoSchedule", "NoExecute") for t in spec.taints)


def topology_selectors(pods: Iterable[Pod]) -> set[LabelSelector]:
    """Every selector a pod's spread or (anti-)affinity rule counts pods with."""
    out: set[LabelSelector] = set()
    for p in pods:
        for s in p.spread:
            out.add(s.selector)
        for t in (*p.affinity, *p.anti_affinity):
            out.add(t.selector)
        for _, t in (*p.preferred_affinity, *p.preferred_anti_affinity):
            out.add(t.selector)
    return out


@dataclass
class WhatIf:
    results: Results
    # the pods that move, as they run now (the Scheduler plans the pods it is given wherever they run: it reads
    # node_name only of the running pods it is shown)
    evicted: list[Pod]
    failure: Refusal | None = None  # why the move cannot be made (None when every pod found a place)
    claims: list[PlannedNodeClaim] = field(default_factory=list)  # new nodeclaims holding evicted pods
    extra_cost: float = 0.0  # $/h of the new nodeclaims the move launches
    targets: dict[str, str] = field(default_factory=dict)  # evicted pod key -> existing node
    claim_targets: dict[str, str] = field(default_factory=dict)  # evicted pod key -> (solve-local) claim name
    displaced: list[Pod] = field(default_factory=list)  # pending pods that were bound for the removed nodes

    @property
    def ok(self) -> bool:
        return self.failure is None


class ClusterSim:
    """The cluster state across the action list; apply() moves it forward as if an action had succeeded."""

    def __init__(
        self,
        base: Scheduler,
        nodes: Sequence[ExistingNodeSpec],
        running: Sequence[Pod],
        pending: Sequence[Pod],
        inflight: Sequence[ExistingNodeSpec] = (),
        fixed: Collection[str] = (),
        excluded: Collection[str] = (),
    ) -> None:
        """fixed: keys of pods that never move (DaemonSet and mirror pods); excluded: nodes nothing may land on."""
        self.base = base
        self.pending = list(pending)
        self.inflight = list(inflight)
        self.fixed = set(fixed)
        self.excluded = set(excluded)
        self._selectors = topology_selectors([*running, *pending])
        self._inert_pod: dict[str, bool] = {}
        self._seen_cache: dict[frozenset[tuple[str, str]], bool] = {}
        self.specs: dict[str, ExistingNodeSpec] = {n.name: n for n in nodes}
        self.order: list[str] = [n.name for n in nodes]
        self.pods_on: dict[str, list[Pod]] = {n.name: [] for n in nodes}  # pods that move when the node goes
        self.fixed_on: dict[str, list[Pod]] = {n.name: [] for n in nodes}  # pods that die with it
        self._folded: dict[str, Resources] = {n.name: Resources() for n in nodes}
        self._live: dict[str, list[Pod]] = {n.name: [] for n in nodes}
        self._compact: dict[str, ExistingNodeSpec] = {}
        self._free_cache: dict[str, Resources] = {}
        self._rows: dict[str, dict[tuple[str, ...], list[int]]] = {}
        self._row_index: dict[tuple[str, ...], dict[str, int]] = {}
        self._ff: dict[tuple[str, ...], tuple[dict[str, int], npt.NDArray[np.int64]]] = {}
        self._ff_names: dict[tuple[str, ...], list[str]] = {}
        self._stale: set[str] = set()  # nodes whose room changed since their matrix rows were computed
        self._matrix: dict[tuple[str, ...], tuple[list[str], npt.NDArray[np.int64]]] = {}
        self.orphans: list[Pod] = []  # running pods on nodes the input did not include (kept for topology)
        on_node: dict[str, list[Pod]] = {}
        for p in running:
            if p.node_name not in self.specs:
                self.orphans.append(p)
                continue
            (self.fixed_on if p.key in self.fixed else self.pods_on)[p.node_name].append(p)
            on_node.setdefault(p.node_name, []).append(p)
        for node, pods in on_node.items():
            self._place_many(pods, node)
        self._view: Scheduler | None = None
        self._usage: dict[str, Resources] | None = None
        self._cap_range: dict[str, tuple[Resources, Resources]] = {}
        self._unlimited: Scheduler | None = None
        self._memos: dict[Hashable, PodsOnlySolves] = {}
        self.solves = 0
        self.epoch = 0  # bumped whenever capacity is added, so remembered failures can be retried
        # pending pods the provisioner would bind to each existing node (they hold that room in every what-if)
        self.reserved_on: dict[str, list[Pod]] = {n.name: [] for n in nodes}
        if self.pending:
            self._reserve_pending()

    def _reserve_pending(self) -> None:
        """Place the pending pods once, as the provisioning engine would, and keep the existing-node places."""
        res = self._solve(self.pending, self.excluded, "cost")
        for e in res.existing:
            for p in e.pods:
                placed = p.on_node(e.name)
                if e.name in self.specs:
                    self.reserved_on[e.name].append(placed)
                    self._place(placed, e.name)
                else:  # an in-flight NodeClaim: never a candidate, only its room matters
                    self.orphans.append(placed)
                    self._matrix_dirty()
        self._view = None

    # ------------------------------------------------------------------ state
    def inert(self, p: Pod) -> bool:
        """True when no topology rule can see the pod and it has neither host ports nor anti-affinity: only the
        room it takes matters. Kept per pod (a pod's labels and rules do not change as it moves)."""
        hit = self._inert_pod.get(p.key)
        if hit is None:
            hit = self._inert_pod[p.key] = not (p.host_ports or p.anti_affinity) and not self.seen_by_topology(p)
        return hit

    def _place(self, p: Pod, node: str) -> None:
        self._place_many([p], node)

    def _place_many(self, pods: Sequence[Pod], node: str) -> None:
        """Run `pods` on `node`: inert ones folded into its allocatable (summed once), the others listed. A
        DaemonSet's pod stays listed: the Scheduler reserves the room of every DaemonSet it does not see running
        on a node, so a folded one would take its room twice."""
        folded: dict[str, int] | None = None
        for p in pods:
            if self.inert(p) and p.owner_kind != "DaemonSet":
                if folded is None:
                    folded = dict(self._folded[node])
                for k, v in p.requests.items():
                    folded[k] = folded.get(k, 0) + v
            else:
                self._live[node].append(p)
        if folded is not None:
            self._folded[node] = Resources(folded)
        self._compact.pop(node, None)
        self._free_cache.pop(node, None)
        self._rows.pop(node, None)
        self._stale.add(node)

    def compact_spec(self, name: str) -> ExistingNodeSpec:
        hit = self._compact.get(name)
        if hit is None:
            s = self.specs[name]
            folded = self._folded[name]
            alloc = s.allocatable - folded if folded else s.allocatable
            hit = dataclasses.replace(s, allocatable=alloc, capacity=s.capacity or s.allocatable)
            self._compact[name] = hit
        return hit

    def scheduler(self) -> Scheduler:
        """A Scheduler over the current state that shares the base one's per-pool instance-type tables.

        copy.copy keeps the catalog tables (the expensive part, built once per resource-key set); only the public
        existing_nodes and running_pods are swapped for the current state.
        """
        if self._view is None:
            v = copy.copy(self.base)
            v.existing_nodes = [self.compact_spec(n) for n in self.order] + list(self.inflight)
            v.running_pods = [p for n in self.order for p in self._live[n]] + self.orphans
            self._view = v
        return self._view

    def free_matrix(self, keys: tuple[str, ...]) -> tuple[list[str], npt.NDArray[np.int64]]:
        """Nodes that can take pods (in order) and their free room over `keys`, cached until the state changes."""
        self._patch_stale()
        hit = self._matrix.get(keys)
        if hit is None:
            names = [n for n in self.order if n not in self.excluded]
            rows = [self._row(n, keys) for n in names]
            for spec in self.inflight:  # in-flight NodeClaims take pods too
                used = Resources()
                for p in self.orphans:
                    if p.node_name == spec.name:
                        used = used + p.requests
                names.append(spec.name)
                rows.append([(spec.allocatable - used).get(k, 0) for k in keys])
            m = np.array(rows, dtype=np.int64).reshape(len(names), len(keys))
            m.setflags(write=False)  # shared until the state changes: callers copy what they modify
            hit = self._matrix[keys] = (names, m)
        return hit

    def node_pods(self, name: str) -> list[Pod]:
        return self.pods_on.get(name, [])

    def free_room(self, name: str) -> Resources:
        """The node's allocatable minus what its pods request (folded and listed alike), as compact_spec's
        allocatable minus the listed pods, without building the compact spec."""
        room = dict(self.specs[name].allocatable)
        for src in (self._folded[name], *(p.requests for p in self._live[name])):
            for k, v in src.items():
                room[k] = room.get(k, 0) - v
        return Resources(room)

    # ------------------------------------------------------------------ what-if
    def _matrix_dirty(self) -> None:
        """Forget every cached matrix (a change the incremental upkeep below does not follow)."""
        self._usage = None
        self._matrix.clear()
        self._row_index.clear()
        self._ff.clear()
        self._ff_names.clear()
        self._stale.clear()

    # The free-room matrices are kept up to date instead of being rebuilt after every action: a node whose room
    # changed is marked stale and its rows are patched on the next read; removed nodes' rows are dropped and new
    # nodes' rows inserted where a rebuild would put them. A rebuild gives the same matrices (tested).
    def _patch_stale(self) -> None:
        if not self._stale:
            return
        stale = self._stale
        self._stale = set()
        for keys, (names, m) in list(self._matrix.items()):
            idx = self._row_index.get(keys)
            if idx is None:
                idx = self._row_index[keys] = {n: i for i, n in enumerate(names)}
            self._matrix[keys] = (names, self._patched(m, idx, stale, keys))
        for keys, (pos, m) in list(self._ff.items()):
            self._ff[keys] = (pos, self._patched(m, pos, stale, keys))

    def _patched(
        self, m: npt.NDArray[np.int64], pos: Mapping[str, int], stale: set[str], keys: tuple[str, ...]
    ) -> npt.NDArray[np.int64]:
        """`m` with the rows of the stale nodes it has recomputed (a new read-only array; `m` itself if none)."""
        rows = [(pos[n], n) for n in stale if n in pos]
        if not rows:
            return m
        m = m.copy()
        for r, n in rows:
            m[r] = self._row(n, keys)
        m.setflags(write=False)
        return m

    def _drop_rows(self, gone: set[str]) -> None:
        self._stale -= gone
        for keys, (names, m) in list(self._matrix.items()):
            keep = [i for i, n in enumerate(names) if n not in gone]
            if len(keep) != len(names):
                kept = m[keep]
                kept.setflags(write=False)
                self._matrix[keys] = ([names[i] for i in keep], kept)
        self._row_index.clear()
        for keys, (_, m) in list(self._ff.items()):
            names = self._ff_names[keys]
            keep = [i for i, n in enumerate(names) if n not in gone]
            if len(keep) != len(names):
                self._set_ff(keys, [names[i] for i in keep], m[keep])
        self._usage = None

    def _insert_rows(self, added: Sequence[str]) -> None:
        """Rows for nodes just added, in this order, to the end of `order` (no pods yet)."""
        if not added:
            return
        n_inflight = len(self.inflight)
        for keys, (names, m) in list(self._matrix.items()):
            at = len(names) - n_inflight  # in-flight claims' rows come last
            rows = np.array([self._row(n, keys) for n in added], dtype=np.int64).reshape(len(added), len(keys))
            grown = np.concatenate([m[:at], rows, m[at:]])
            grown.setflags(write=False)
            self._matrix[keys] = ([*names[:at], *added, *names[at:]], grown)
        self._row_index.clear()
        untainted = [n for n in added if _untainted(self.specs[n])]
        if untainted:
            rank = self._ff_rank()
            untainted.sort(key=rank)
            for keys, (_, m) in list(self._ff.items()):
                names = self._ff_names[keys]
                places = [bisect.bisect_left(names, rank(n), key=rank) for n in untainted]
                rows = np.array([self._row(n, keys) for n in untainted], dtype=np.int64).reshape(
                    len(untainted), len(keys)
                )
                new_names = list(names)
                for a, n in sorted(zip(places, untainted, strict=True), reverse=True):
                    new_names.insert(a, n)
                self._set_ff(keys, new_names, np.insert(m, places, rows, axis=0))
        self._usage = None

    def _row(self, name: str, keys: tuple[str, ...]) -> list[int]:
        per = self._rows.setdefault(name, {})
        hit = per.get(keys)
        if hit is None:
            free = self._free(name)
            hit = per[keys] = [free.get(k, 0) for k in keys]
        return hit

    def first_fit_matrix(self, keys: tuple[str, ...]) -> tuple[dict[str, int], npt.NDArray[np.int64]]:
        """Free room of the untainted nodes in the order the Scheduler tries existing nodes (Nodes by name, then
        in-flight NodeClaims by name), with each node's row."""
        self._patch_stale()
        hit = self._ff.get(keys)
        if hit is None:
            names, free = self.free_matrix(keys)
            specs = {s.name: s for s in self.inflight}
            specs.update(self.specs)
            rank = self._ff_rank()
            usable = [i for i, n in enumerate(names) if _untainted(specs[n])]
            usable.sort(key=lambda i: rank(names[i]))
            m = free[usable] if usable else np.zeros((0, len(keys)), dtype=np.int64)
            self._set_ff(keys, [names[i] for i in usable], m)
            hit = self._ff[keys]
        return hit

    def _ff_rank(self) -> Callable[[str], tuple[int, str]]:
        """The order first-fit tries nodes in, as the Scheduler does: Nodes by name, then in-flight NodeClaims."""
        kind = {s.name: s.kind for s in self.inflight}
        return lambda n: (0 if kind.get(n, "Node") == "Node" else 1, n)

    def _set_ff(self, keys: tuple[str, ...], names: list[str], m: npt.NDArray[np.int64]) -> None:
        m.setflags(write=False)  # shared until the state changes: callers copy what they modify
        self._ff[keys] = ({n: r for r, n in enumerate(names)}, m)
        self._ff_names[keys] = names

    def first_fit_names(self, keys: tuple[str, ...]) -> list[str]:
        """The nodes of first_fit_matrix(keys), row by row."""
        self.first_fit_matrix(keys)
        return self._ff_names[keys]

    def row_index(self, keys: tuple[str, ...]) -> dict[str, int]:
        """Row of each node in free_matrix(keys)."""
        names, _ = self.free_matrix(keys)
        hit = self._row_index.get(keys)
        if hit is None or len(hit) != len(names):
            hit = self._row_index[keys] = {n: i for i, n in enumerate(names)}
        return hit

    def _free(self, name: str) -> Resources:
        hit = self._free_cache.get(name)
        if hit is None:
            hit = self.free_room(name)
            self._free_cache[name] = hit
        return hit

    def _resource_only(self, pods: Sequence[Pod]) -> bool:
        """True when nothing in this what-if involves topology or host ports, so only room matters (the folded pods
        have neither)."""
        return room_only(pods, (p for n in self.order for p in self._live[n]))

    def _solve(self, pods: Sequence[Pod], exclude: Collection[str], strategy: str) -> Results:
        self.solves += 1
        view = self.scheduler()
        if pods and self._resource_only(pods):
            # Only room decides where these pods go, so a node none of them fits on cannot take part: leave it
            # out of the simulation. On a large cluster most nodes are full, and the simulation's cost grows with
            # the nodes it is shown. What the nodes left out of a pool with limits count toward those limits is
            # kept by one stand-in node per pool that holds their capacity and can take no pod (no allocatable,
            # and a taint); a pool limiting its number of nodes keeps its nodes instead.
            keys, reqs = request_rows(pods)
            names, free = self.free_matrix(keys)
            candidates = [
                (self.compact_spec(n), ok) for n, ok in zip(names, rows_fit(free, reqs), strict=True)
                if n in self.specs and n not in exclude
            ]
            if self.limited() and self._far_from_limits(exclude, len(pods)):
                # so far from every limit that none can bind: the pools' limits are lifted for this solve, which
                # spares the Scheduler its limit bookkeeping (and its modest claim sizes under limits)
                sub = self._unlimited_scheduler()
                keep = [spec for spec, ok in candidates if ok]
                sub.existing_nodes = keep + list(self.inflight)
                kept = {s.name for s in keep}
                sub.running_pods = [p for n in self.order if n in kept for p in self._live[n]]
                return self._call(sub, pods, (), strategy)
            keep = compact_nodes(candidates, view.nodepools)
            sub = copy.copy(view)
            sub.existing_nodes = keep + list(self.inflight)
            kept = {s.name for s in keep}
            sub.running_pods = [p for n in self.order if n in kept for p in self._live[n]]
            return self._call(sub, pods, (), strategy)
        return self._call(view, pods, exclude, strategy)

    def _call(self, sched: Scheduler, pods: Sequence[Pod], exclude: Collection[str], strategy: str) -> Results:
        try:
            if not exclude and pods_only(sched):
                return self._pods_only_solves(sched).solve(sched, pods, strategy)
            return sched.solve(pods, exclude_nodes=exclude, strategy=strategy)
        except ValueError as e:
            if "strategy" not in str(e) or strategy == "cost":
                raise
            # a Scheduler without the pod-by-pod strategy: the cost packer still answers the question safely,
            # it only sometimes proposes two new nodes where one would have done (and the move is then skipped)
            return sched.solve(pods, exclude_nodes=exclude)

    def _pods_only_solves(self, sched: Scheduler) -> PodsOnlySolves:
        """The remembered pods-only solves of the Scheduler's pools, catalog and DaemonSets: kept in its TableCache
        when it has one (so later consolidate runs over the same objects ask them again), else for this run."""
        scope = (*sched.nodepools, sched.instance_types, *sched.daemonsets)
        if sched.tables is not None:
            return sched.tables.get("pods-only solves", scope, sched.min_values_policy, PodsOnlySolves)
        # the Schedulers of this run hold these objects while it lasts, so their ids are not reused meanwhile
        return self._memos.setdefault((tuple(map(id, scope)), sched.min_values_policy), PodsOnlySolves())

    def what_if(self, names: Sequence[str], *, max_new: int | None = None) -> WhatIf:
        """Remove `names` and reschedule their pods. max_new: try Karpenter's pod-by-pod packing when the cost
        packer spreads the evicted pods over more new nodeclaims than allowed (it fills one claim first)."""
        evicted = [p for n in names for p in self.pods_on[n]]
        displaced = [p for n in names for p in self.reserved_on.get(n, ())]
        exclude = set(names) | self.excluded
        pods = evicted + displaced
        if not pods:
            return WhatIf(Results(), [])
        # Consolidation may launch at most one node, and Karpenter's pod-by-pod packing (the engine's "greedy"
        # strategy) fills one new nodeclaim before it opens another, launching the cheapest type that holds
        # them all: exactly the question "do the pods fit elsewhere plus one cheaper node". Drift and expiration
        # may launch several nodes, and there the cost packer's cheaper arrangement is the better answer.
        strategy = "greedy" if max_new is not None else "cost"
        return self._interpret(self._solve(pods, exclude, strategy), evicted, displaced)

    def usage_without(self, names: Iterable[str]) -> dict[str, Resources]:
        """What the nodes that stay (and in-flight claims) count toward each limited pool's limits."""
        usage = self._limit_usage()
        for n in set(names) - self.excluded:  # the usage already leaves the excluded nodes out
            spec = self.specs.get(n)
            if spec is not None and spec.nodepool in usage:
                usage[spec.nodepool] = usage[spec.nodepool] - (spec.capacity or spec.allocatable) - ONE_NODE
        return usage

    def no_new_node(self, names: Sequence[str]) -> bool:
        """True when every pool has limits too close to launch even its smallest type once `names` are gone: then
        nothing new can start, whatever the simulation would choose."""
        usage = self.usage_without(names)
        return all(
            p.limits is not None and p.name in usage and any(
                usage[p.name].get(k, 0) + (1000 if k == "nodes" else self._capacity_range(p)[1].get(k, 0)) > v
                for k, v in p.limits.items()
            )
            for p in self.base.nodepools
        )

    def what_if_rest(
        self, names: Sequence[str], evicted: list[Pod], displaced: list[Pod], targets: Mapping[str, str],
        rest: Sequence[Pod],
    ) -> WhatIf:
        """Remove `names` when the caller has already placed some of the pods to move on existing nodes (`targets`)
        and only `rest` is left for new nodes: the simulation plans those alone, against no existing node (one
        stand-in per pool with limits holds what the nodes that stay count toward them, unless no limit can bind).
        Only for pods that room alone decides (no constraint, seen by no topology rule)."""
        exclude = set(names) | self.excluded
        if self._far_from_limits(exclude, len(rest)):
            view = self._unlimited_scheduler()
            view.existing_nodes = []
        else:
            view = copy.copy(self.scheduler())
            # the Scheduler counts each stand-in as one node of its own: take that one out of the count it carries
            view.existing_nodes = [
                limit_stand_in(pool, cap - ONE_NODE) for pool, cap in sorted(self.usage_without(exclude).items())
            ]
        view.running_pods = []
        self.solves += 1
        pods = list(rest)
        wi = self._interpret(self._call(view, pods, (), "greedy"), evicted, displaced)
        if wi.ok:
            wi.targets.update(targets)
        return wi

    def what_if_new_nodes(self, names: Sequence[str], *, only: Sequence[Pod] | None = None) -> WhatIf:
        """Remove `names` and plan all their pods, and the pending pods bound for them, onto new nodes only, with
        the cost packer (the repack move). The simulation sees no existing node: only for pods with no inter-pod
        rule that no topology rule can see (the caller checks), for which the rest of the cluster is invisible.
        Limits count `names` as still there (they go only once their replacements run, and a failed drain would
        leave them): one stand-in per limited pool holds the capacity of every node and in-flight claim.
        only: plan just these of those pods (the caller places the others on existing nodes and adds them to the
        result's targets)."""
        evicted = [p for n in names for p in self.pods_on[n]]
        displaced = [p for n in names for p in self.reserved_on.get(n, ())]
        pods = evicted + displaced
        if only is not None:
            keep = {p.key for p in only}
            pods = [p for p in pods if p.key in keep]
        if not pods:
            return WhatIf(Results(), evicted, displaced=displaced)
        usage = self._limit_usage()
        if self._usage_far_from_limits(usage, len(pods)):
            view = self._unlimited_scheduler()
            view.existing_nodes = []
        else:
            view = copy.copy(self.scheduler())
            # the Scheduler counts each stand-in as one node of its own: take that one out of the count it carries
            view.existing_nodes = [limit_stand_in(pool, cap - ONE_NODE) for pool, cap in sorted(usage.items())]
        view.running_pods = []
        self.solves += 1
        return self._interpret(self._call(view, pods, (), "cost"), evicted, displaced)

    def seen_by_topology(self, p: Pod) -> bool:
        """True when some pod's spread or (anti-)affinity selector matches the pod (namespaces ignored: safe)."""
        k = frozenset(p.labels.items())
        hit = self._seen_cache.get(k)
        if hit is None:
            # namespaces are ignored on purpose: matching more pods than needed only costs speed, never safety
            hit = self._seen_cache[k] = any(s.matches(p.labels) for s in self._selectors)
        return hit

    def limited(self) -> bool:
        return any(p.limits for p in self.base.nodepools)

    def _far_from_limits(self, exclude: Collection[str], n_pods: int) -> bool:
        """True when no limit can bind in a solve of n_pods pods (each opens at most one node)."""
        if not any(p.limits for p in self.base.nodepools):
            return True
        return self._usage_far_from_limits(self.usage_without(exclude), n_pods)

    def _usage_far_from_limits(self, usage: Mapping[str, Resources], n_pods: int) -> bool:
        if not any(p.limits for p in self.base.nodepools):
            return True
        for p in self.base.nodepools:
            if not p.limits:
                continue
            biggest = self._capacity_range(p)[0]
            used = usage.get(p.name, Resources())
            for k, v in p.limits.items():
                add = 1000 * n_pods if k == "nodes" else n_pods * biggest.get(k, 0)
                if used.get(k, 0) + add > v:
                    return False
        return True

    def _limit_usage(self) -> dict[str, Resources]:
        """Capacity of the nodes and in-flight claims of each pool with limits (a copy: callers adjust it)."""
        if self._usage is None:
            limited = {p.name for p in self.base.nodepools if p.limits}
            if not limited:
                self._usage = {}
                return {}
            usage: dict[str, Resources] = {}
            for spec in [*(self.specs[n] for n in self.order if n not in self.excluded), *self.inflight]:
                pool = spec.nodepool or ""
                if pool in limited:
                    usage[pool] = usage.get(pool, Resources()) + (spec.capacity or spec.allocatable) + ONE_NODE
            self._usage = usage
        return dict(self._usage)

    def _capacity_range(self, pool: NodePool) -> tuple[Resources, Resources]:
        """Elementwise largest and smallest capacity among the types the pool could launch (zone and capacity
        type aside, which only widens the range: both serve as bounds)."""
        hit = self._cap_range.get(pool.name)
        if hit is None:
            big: dict[str, int] = {}
            small: dict[str, int] = {}
            reqs = [(k, r) for k, r in pool.requirements.items() if k not in (ZONE_LABEL, CAPACITY_TYPE_LABEL)]
            for it in self.base.instance_types:
                labels = dict(it.labels)
                labels[INSTANCE_TYPE_LABEL] = it.name
                if all(r.has(labels.get(k)) for k, r in reqs):
                    for k in {*it.capacity, *small}:
                        v = it.capacity.get(k, 0)
                        big[k] = max(big.get(k, 0), v)
                        small[k] = min(small.get(k, v), v)
            hit = self._cap_range[pool.name] = (Resources(big), Resources(small))
        return hit

    def unusable_nodepools(self, keys: Sequence[str]) -> dict[str, str]:
        """NodePools the simulations' Schedulers cannot launch from, with why (see Scheduler.templates)."""
        found = self.base.unusable_nodepools(keys)
        if self._unlimited is not None and self._unlimited is not self.base:
            for name, why in self._unlimited.unusable.items():
                found.setdefault(name, why)
        return dict(sorted(found.items()))

    def _unlimited_scheduler(self) -> Scheduler:
        """The base Scheduler with every pool's limits lifted (for solves the limits provably cannot bind)."""
        if self._unlimited is None:
            b = self.base
            if not any(p.limits for p in b.nodepools):
                self._unlimited = b  # nothing to lift: share its per-pool tables instead of building them again
            else:
                def lifted() -> list[NodePool]:
                    return [dataclasses.replace(p, limits=None) for p in b.nodepools]

                # the same lifted pools for the same pools, so that their tables are found again
                pools = lifted() if b.tables is None else b.tables.get("unlimited pools", b.nodepools, None, lifted)
                self._unlimited = Scheduler(
                    pools, b.instance_types, (), (), b.daemonsets, min_values_policy=b.min_values_policy,
                    tables=b.tables,
                )
        return copy.copy(self._unlimited)

    @staticmethod
    def _interpret(res: Results, evicted: list[Pod], displaced: list[Pod]) -> WhatIf:
        wi = WhatIf(res, evicted, displaced=displaced)
        keys = {p.key for p in evicted}
        virtual = {p.key for p in displaced if is_virtual(p)}
        for who, group in (("pod", keys), ("pending pod", {p.key for p in displaced})):
            for key in sorted(group & set(res.unschedulable)):
                reasons = res.unschedulable[key]
                detail = "; ".join(f"nodepool {np_}: {r}" if np_ else r for np_, r in reasons[:2]) or "no place"
                if who == "pod":
                    text = f"pod {key} would not fit elsewhere ({detail})"
                elif key in virtual:
                    text = f"the room of CapacityBuffer pod {key} is held on it and would not fit elsewhere ({detail})"
                else:
                    text = f"pending pod {key} would schedule on it and would not fit elsewhere ({detail})"
                wi.failure = Refusal(text, NotDisruptedCategory.PODS_DO_NOT_FIT)
                return wi
        for e in res.existing:
            for p in e.pods:
                wi.targets[p.key] = e.name
        for c in res.nodeclaims:
            # only evicted and displaced pods were solved for, so every new nodeclaim is the move's own
            wi.claims.append(c)
            for p in c.pods:
                wi.claim_targets[p.key] = c.name
        # what the new nodes add to the bill: a NodeClaim on a reservation with room adds nothing (prepaid)
        wi.extra_cost = max(0.0, sum(c.effective_price for c in res.nodeclaims))
        return wi

    # ------------------------------------------------------------------ apply
    def remove(self, names: Iterable[str]) -> None:
        for n in names:
            self.specs.pop(n, None)
            self.pods_on.pop(n, None)
            self.reserved_on.pop(n, None)
            self.fixed_on.pop(n, None)
            self._folded.pop(n, None)
            self._live.pop(n, None)
            self._compact.pop(n, None)
            self._free_cache.pop(n, None)
            self._rows.pop(n, None)
        gone = set(names)
        self.order = [n for n in self.order if n not in gone]
        self._drop_rows(gone)
        self._view = None

    def apply(self, names: Sequence[str], wi: WhatIf, renamed: Mapping[str, str]) -> None:
        """Delete `names`, launch the what-if's claims under their new names, and run the evicted pods there."""
        self.remove(names)
        added: list[str] = []
        for c in wi.claims:
            name = renamed[c.name]
            labels = dict(c.labels)
            labels[HOSTNAME_LABEL] = name
            # the claim's requests include its DaemonSet overhead; those pods are not listed, so keep the room
            # they take out of the node's allocatable
            pods_req = Resources()
            for p in c.pods:
                pods_req = pods_req + p.requests
            ds = (c.requests - pods_req).clamp_nonnegative()
            spec = ExistingNodeSpec(
                name=name,
                labels=labels,
                allocatable=(c.allocatable - ds),
                taints=tuple(c.taints) + tuple(c.startup_taints),
                initialized=False,
                kind="Node",
                capacity=c.allocatable,
            )
            self.specs[name] = spec
            self.order.append(name)
            self.pods_on[name] = []
            self.reserved_on[name] = []
            self.fixed_on[name] = []
            self._folded[name] = Resources()
            self._live[name] = []
            self.epoch += 1
            added.append(name)
        self._insert_rows(added)
        for group, where in ((wi.evicted, self.pods_on), (wi.displaced, self.reserved_on)):
            by_target: dict[str, list[Pod]] = {}
            for p in group:
                claim = wi.claim_targets.get(p.key)
                target = renamed[claim] if claim is not None else wi.targets[p.key]
                by_target.setdefault(target, []).append(p.on_node(target))
            for target, moved in by_target.items():
                if target in self.specs:
                    where[target].extend(moved)
                    self._place_many(moved, target)
                else:  # an in-flight NodeClaim: not a candidate, so only its room matters
                    self.orphans.extend(moved)
                    self._matrix_dirty()
        self._view = None
