"""What-if scheduling for disruption: the cluster as it stands after earlier actions, and "what if these nodes went".

Every what-if is one call of the provisioning engine's Scheduler.solve(pods, exclude_nodes=...): the evicted pods
(as pending) and the cluster's pending pods, which compete for the same room as Karpenter's simulation has them do.
The Scheduler is given a compact but equivalent picture of the cluster: a running pod that no topology rule can
see (no host ports, no anti-affinity of its own, matched by no pod's spread or (anti-)affinity selector) affects
scheduling only through the room it takes, so it is folded into its node's allocatable instead of being listed.
On a thousand-node cluster that turns each what-if from re-adding every running pod into one pass over the nodes.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from packing.nodepool import HOSTNAME_LABEL, ExistingNodeSpec
from packing.pods import LabelSelector, Pod
from packing.resources import Resources
from packing.scheduling.scheduler import PlannedNodeClaim, Results, Scheduler

__all__ = ["ClusterSim", "WhatIf"]


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
    evicted: list[Pod]
    failure: str = ""  # why not every evicted pod found a place ("" when all did)
    claims: list[PlannedNodeClaim] = field(default_factory=list)  # new nodeclaims holding evicted pods
    extra_cost: float = 0.0  # $/h of new nodeclaims beyond what the pending pods alone would launch
    targets: dict[str, str] = field(default_factory=dict)  # evicted pod key -> existing node
    claim_targets: dict[str, str] = field(default_factory=dict)  # evicted pod key -> (solve-local) claim name

    @property
    def ok(self) -> bool:
        return not self.failure


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
        self._inert_cache: dict[frozenset[tuple[str, str]], bool] = {}
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
        self._matrix: dict[tuple[str, ...], tuple[list[str], npt.NDArray[np.int64]]] = {}
        self.orphans: list[Pod] = []  # running pods on nodes the input did not include (kept for topology)
        for p in running:
            if p.node_name not in self.specs:
                self.orphans.append(p)
                continue
            (self.fixed_on if p.key in self.fixed else self.pods_on)[p.node_name].append(p)
            self._place(p, p.node_name)
        self._view: Scheduler | None = None
        self._baseline: dict[str, float] = {}
        self.solves = 0
        self.epoch = 0  # bumped whenever capacity is added, so remembered failures can be retried

    # ------------------------------------------------------------------ state
    def inert(self, p: Pod) -> bool:
        if p.host_ports or p.anti_affinity:
            return False
        k = frozenset(p.labels.items())
        hit = self._inert_cache.get(k)
        if hit is None:
            # namespaces are ignored on purpose: matching more pods than needed only costs speed, never safety
            hit = not any(s.matches(p.labels) for s in self._selectors)
            self._inert_cache[k] = hit
        return hit

    def _place(self, p: Pod, node: str) -> None:
        if self.inert(p):
            self._folded[node] = self._folded[node] + p.requests
        else:
            self._live[node].append(p)
        self._compact.pop(node, None)
        self._free_cache.pop(node, None)
        self._rows.pop(node, None)
        self._matrix_dirty()

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
            hit = self._matrix[keys] = (names, m)
        return hit

    def node_pods(self, name: str) -> list[Pod]:
        return self.pods_on.get(name, [])

    def free_room(self, name: str) -> Resources:
        s = self.compact_spec(name)
        used = Resources()
        for p in self._live[name]:
            used = used + p.requests
        return s.allocatable - used

    # ------------------------------------------------------------------ what-if
    def _matrix_dirty(self) -> None:
        self._matrix.clear()
        self._row_index.clear()
        self._ff.clear()

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
        hit = self._ff.get(keys)
        if hit is None:
            names, free = self.free_matrix(keys)
            kind = {s.name: s.kind for s in self.inflight}
            specs = {s.name: s for s in self.inflight}
            specs.update(self.specs)
            usable = [
                i for i, n in enumerate(names)
                if not any(t.effect in ("NoSchedule", "NoExecute") for t in specs[n].taints)
            ]
            usable.sort(key=lambda i: (0 if kind.get(names[i], "Node") == "Node" else 1, names[i]))
            m = free[usable] if usable else np.zeros((0, len(keys)), dtype=np.int64)
            hit = self._ff[keys] = ({names[i]: r for r, i in enumerate(usable)}, m)
        return hit

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
        """True when nothing in this what-if involves topology or host ports, so only room matters."""
        if any(p.host_ports or p.anti_affinity for n in self.order for p in self._live[n]):
            return False
        return not any(
            p.spread or p.affinity or p.anti_affinity or p.preferred_affinity or p.preferred_anti_affinity
            or p.host_ports
            for p in pods
        )

    def _solve(self, pods: Sequence[Pod], exclude: Collection[str], strategy: str) -> Results:
        self.solves += 1
        view = self.scheduler()
        if pods and self._resource_only(pods):
            # Only room decides where these pods go, so a node none of them fits on cannot take part: leave it
            # out of the simulation (nodes of pools with limits stay, they count toward the limits). On a large
            # cluster most nodes are full, and the simulation's cost grows with the nodes it is shown.
            keys = tuple(sorted({k for p in pods for k in p.requests}))
            reqs = np.unique(np.array([[p.requests.get(k, 0) for k in keys] for p in pods], dtype=np.int64), axis=0)
            limited = {p.name for p in view.nodepools if p.limits}
            keep: list[ExistingNodeSpec] = []
            names, free = self.free_matrix(keys)
            if names:
                room = np.any(np.all(free[:, None, :] >= reqs[None, :, :], axis=2), axis=1)
                for n, ok in zip(names, [bool(x) for x in room], strict=True):
                    if n in self.specs and n not in exclude and (ok or self.specs[n].nodepool in limited):
                        keep.append(self.compact_spec(n))
            sub = copy.copy(view)
            sub.existing_nodes = keep + list(self.inflight)
            kept = {s.name for s in keep}
            sub.running_pods = [p for n in self.order if n in kept for p in self._live[n]]
            return self._call(sub, pods, (), strategy)
        return self._call(view, pods, exclude, strategy)

    @staticmethod
    def _call(sched: Scheduler, pods: Sequence[Pod], exclude: Collection[str], strategy: str) -> Results:
        try:
            return sched.solve(pods, exclude_nodes=exclude, strategy=strategy)
        except ValueError as e:
            if "strategy" not in str(e) or strategy == "cost":
                raise
            # a Scheduler without the pod-by-pod strategy: the cost packer still answers the question safely,
            # it only sometimes proposes two new nodes where one would have done (and the move is then skipped)
            return sched.solve(pods, exclude_nodes=exclude)

    def baseline_cost(self, strategy: str) -> float:
        """$/h of the nodeclaims the pending pods alone would launch in the current state (same strategy as the
        what-if it is compared with, so that the difference is the evicted pods' doing and not the packer's)."""
        if not self.pending:
            return 0.0
        hit = self._baseline.get(strategy)
        if hit is None:
            hit = self._baseline[strategy] = self._solve(self.pending, self.excluded, strategy).cost_per_hour
        return hit

    def what_if(self, names: Sequence[str], *, max_new: int | None = None) -> WhatIf:
        """Remove `names` and reschedule their pods. max_new: try Karpenter's pod-by-pod packing when the cost
        packer spreads the evicted pods over more new nodeclaims than allowed (it fills one claim first)."""
        evicted = [dataclasses.replace(p, node_name="") for n in names for p in self.pods_on[n]]
        keys = {p.key for p in evicted}
        exclude = set(names) | self.excluded
        pods = evicted + [p for p in self.pending if p.key not in keys]
        # Consolidation may launch at most one node, and Karpenter's pod-by-pod packing (the engine's "greedy"
        # strategy) fills one new nodeclaim before it opens another, launching the cheapest type that holds
        # them all: exactly the question "do the pods fit elsewhere plus one cheaper node". Drift and expiration
        # may launch several nodes, and there the cost packer's cheaper arrangement is the better answer.
        strategy = "greedy" if max_new is not None else "cost"
        return self._interpret(self._solve(pods, exclude, strategy), evicted, keys, strategy)

    def _interpret(self, res: Results, evicted: list[Pod], keys: set[str], strategy: str) -> WhatIf:
        wi = WhatIf(res, evicted)
        for key in sorted(keys & set(res.unschedulable)):
            reasons = res.unschedulable[key]
            detail = "; ".join(f"nodepool {np_}: {r}" if np_ else r for np_, r in reasons[:2]) or "no place"
            wi.failure = f"pod {key} would not fit elsewhere ({detail})"
            return wi
        for e in res.existing:
            for p in e.pods:
                if p.key in keys:
                    wi.targets[p.key] = e.name
        for c in res.nodeclaims:
            mine = [p for p in c.pods if p.key in keys]
            if mine:
                wi.claims.append(c)
                for p in mine:
                    wi.claim_targets[p.key] = c.name
        wi.extra_cost = max(0.0, res.cost_per_hour - self.baseline_cost(strategy))
        return wi

    # ------------------------------------------------------------------ apply
    def remove(self, names: Iterable[str]) -> None:
        for n in names:
            self.specs.pop(n, None)
            self.pods_on.pop(n, None)
            self.fixed_on.pop(n, None)
            self._folded.pop(n, None)
            self._live.pop(n, None)
            self._compact.pop(n, None)
            self._free_cache.pop(n, None)
            self._rows.pop(n, None)
        gone = set(names)
        self.order = [n for n in self.order if n not in gone]
        self._matrix_dirty()
        self._view = None
        self._baseline.clear()

    def apply(self, names: Sequence[str], wi: WhatIf, renamed: Mapping[str, str]) -> None:
        """Delete `names`, launch the what-if's claims under their new names, and run the evicted pods there."""
        self.remove(names)
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
            self.fixed_on[name] = []
            self._folded[name] = Resources()
            self._live[name] = []
            self.epoch += 1
            self._matrix_dirty()
        for p in wi.evicted:
            claim = wi.claim_targets.get(p.key)
            target = renamed[claim] if claim is not None else wi.targets[p.key]
            moved = dataclasses.replace(p, node_name=target)
            if target in self.specs:
                self.pods_on[target].append(moved)
                self._place(moved, target)
            else:  # an in-flight NodeClaim: not a candidate, so only its room matters
                self.orphans.append(moved)
                self._matrix_dirty()
        self._view = None
        self._baseline.clear()
