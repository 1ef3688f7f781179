"""One consolidate run's shared state: the cluster as the action list leaves it, the actions, and facts about nodes.

Every method reads and moves the same RunState. What is known about a node holds until its pods change, and only
an action changes them: commit() is the one place such answers (NodeFacts) are forgotten, for the nodes the action
removes and the nodes its pods land on. What depends on the catalog, the pools or a pod's own spec alone (the type
table, whether room alone decides where a pod may go) holds for the whole run and is never forgotten.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from functools import cached_property
from typing import Any, Generic, TypeVar, cast

from packing.commitmentpricing import existing_prices, priced_catalog
from packing.disruption.balanced import Scorer, pod_disruption_cost
from packing.disruption.budgets import budget_limit
from packing.disruption.donotdisrupt import do_not_disrupt_reason
from packing.disruption.formatting import format_time, parse_time
from packing.disruption.launchable import TypeTable, resource_keys
from packing.disruption.model import (
    BUDGET_REASONS,
    DO_NOT_DISRUPT,
    LAST_POD_EVENT,
    MIRROR_ANNOTATION,
    Action,
    Cluster,
    MinSavings,
    NodeInfo,
    NotDisruptedCategory,
)
from packing.disruption.pdb import PdbIndex
from packing.disruption.refusals import Refusal, SpareLog
from packing.disruption.simulation import ClusterSim, WhatIf
from packing.durations import format_duration
from packing.instancetype import InstanceType
from packing.nodepool import NodePool
from packing.pods import Pod
from packing.scheduling.reservations import without_expiring_blocks
from packing.scheduling.results import PlannedNodeClaim
from packing.scheduling.scheduler import Scheduler
from packing.scheduling.tablecache import TableCache

__all__ = ["Fact", "NodeFacts", "RunState"]

Category = NotDisruptedCategory
T = TypeVar("T")


class Fact(Generic[T]):
    """One kind of answer about a node that holds until its pods change (a key of NodeFacts)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Fact({self.name})"


class NodeFacts:
    """Answers about nodes, each computed once and kept until forget() drops the node's."""

    __slots__ = ("_known",)

    def __init__(self) -> None:
        self._known: dict[str, dict[Fact[Any], Any]] = {}

    def recall(self, fact: Fact[T], name: str, compute: Callable[[str], T]) -> T:
        known = self._known.get(name)
        if known is None:
            known = self._known[name] = {}
        elif fact in known:
            return cast(T, known[fact])
        value = known[fact] = compute(name)
        return value

    def forget(self, names: Iterable[str]) -> None:
        for n in names:
            self._known.pop(n, None)


HARD: Fact[Refusal | None] = Fact("hard")
GATE: Fact[Refusal | None] = Fact("gate")
NODE_ONLY: Fact[Refusal | None] = Fact("node only")
EVICTION_COST: Fact[float] = Fact("eviction cost")


class RunState:
    def __init__(self, cluster: Cluster, at: datetime, min_savings: MinSavings | None, max_solves: int,
                 tables: TableCache | None = None) -> None:
        self.cluster = cluster
        self.tables = tables
        self.at = at
        self.min_savings = min_savings
        self.max_solves = max_solves
        self.pools: dict[str, NodePool] = {p.name: p for p in cluster.nodepools}
        self.catalog: dict[str, InstanceType] = {it.name: it for it in cluster.catalog}
        # a Capacity Block about to end takes no new node (packing.disruption.capacityblock drains its nodes)
        catalog = without_expiring_blocks(cluster.catalog, at)
        existing = [*(n.spec for n in cluster.nodes), *cluster.inflight]
        if cluster.commitments:
            # on-demand capacity the commitments cover, at its marginal price, after the input's nodes used them
            catalog = priced_catalog(catalog, cluster.commitments, existing, at)
        self.base = Scheduler(
            cluster.nodepools,
            catalog,
            (),
            (),
            cluster.daemonsets,
            min_values_policy=cluster.min_values_policy,
            tables=tables,
        )
        # the replacements the run launches take their share of reservations and commitments
        self.base.input_nodes = frozenset([*(n.name for n in cluster.nodes), *(s.name for s in cluster.inflight)])
        self.info: dict[str, NodeInfo] = {n.name: n for n in cluster.nodes}
        self.input_order = [n.name for n in cluster.nodes]
        fixed = {p.key for p in cluster.running if self.is_fixed(p)}
        deleting = {n.name for n in cluster.nodes if n.deleting}
        self.sim = ClusterSim(
            self.base,
            [n.spec for n in cluster.nodes],
            cluster.running,
            cluster.pending,
            cluster.inflight,
            fixed,
            deleting,
        )
        self.price: dict[str, float] = {}
        self.price_known: dict[str, bool] = {}
        for n in cluster.nodes:
            pr = self.base.price_of(n.spec.labels)
            self.price[n.name] = pr or 0.0
            self.price_known[n.name] = pr is not None
        if cluster.commitments:
            # a node a commitment covers saves only its uncovered share when it goes: the commitment bills on
            self.price.update(existing_prices(cluster.commitments, existing, cluster.catalog, at))
        self.total: dict[str, int] = {}  # nodes per pool, for budgets given as a percent
        self.busy: dict[str, set[str]] = {}  # per pool, the nodes disrupting (before the run or by its actions)
        for n in cluster.nodes:
            pool = n.nodepool or ""
            self.total[pool] = self.total.get(pool, 0) + 1
            if n.deleting or not n.ready:
                self.busy.setdefault(pool, set()).add(n.name)
        self.pdb = PdbIndex(
            cluster.pdbs, [*cluster.running, *cluster.pending], cluster.pdb_status, cluster.pdb_null_selector
        )
        self.disrupted: set[str] = set()
        self.touched: set[str] = set()  # nodes an action moved pods onto: their last pod change is now
        self.spared = SpareLog()
        self.claim_seq: dict[str, int] = {}
        self.used_names: set[str] = set(self.info) | {s.name for s in cluster.inflight}
        self.actions: list[Action] = []
        # per action, the nodeclaims it launches under their new names with the instance types each may launch
        # (None: the claim's own); engine.py renders them into the action's replacements
        self.launches: list[list[tuple[PlannedNodeClaim, list[str] | None]]] = []
        self.truncated = False  # the simulation limit stopped a search
        self.facts = NodeFacts()
        self.room_decides: dict[str, bool] = {}  # per pod key: see whatifs.room_decides
        self.scorer = Scorer(self)  # consolidationPolicy Balanced (balanced.py)

    @cached_property
    def types(self) -> TypeTable:
        def build() -> TypeTable:
            return TypeTable(self.cluster, self.pools, self.catalog)

        if self.tables is None:
            return build()
        # it reads the catalog, the pools and the resource keys alone
        objects = (*self.cluster.catalog, *self.cluster.nodepools)
        return self.tables.get("disruption types", objects, resource_keys(self.cluster), build)

    # ------------------------------------------------------------------ facts about nodes
    def is_fixed(self, p: Pod) -> bool:
        """DaemonSet and mirror (static) pods never move and never keep a node alive."""
        if p.owner_kind in ("DaemonSet", "Node"):
            return True
        meta = self.cluster.pod_meta.get(p.key)
        return meta is not None and MIRROR_ANNOTATION in meta.annotations

    def pods(self, name: str) -> list[Pod]:
        return self.sim.node_pods(name)

    def _pod_dnd(self, p: Pod) -> str | None:
        meta = self.cluster.pod_meta.get(p.key)
        if meta is None:
            return None
        return do_not_disrupt_reason(f"pod {p.key}", meta.annotations.get(DO_NOT_DISRUPT), meta.created, self.at)

    def hard_reason(self, name: str) -> Refusal | None:
        """Why the node may not be disrupted by any method (None: it is a candidate)."""
        return self.facts.recall(HARD, name, self._hard_reason)

    def forceful_reason(self, name: str) -> Refusal | None:
        """hard_reason for drift and expiration. When the node's NodePool sets terminationGracePeriod, pods that
        a PDB or do-not-disrupt protects do not spare the node, as in Karpenter: its drain waits for them, but
        only until the grace period ends. Without it they spare the node (for expiration that is Loadmaster's
        choice: Karpenter would start a drain that may never end)."""
        r = self.hard_reason(name)
        if r is None or r.category not in (Category.PDB, Category.DO_NOT_DISRUPT):
            return r
        pool = self.info[name].nodepool or ""
        if self.cluster.settings_for(pool).termination_grace_period is None:
            return r
        return self.facts.recall(NODE_ONLY, name, self._node_reason)

    def _hard_reason(self, name: str) -> Refusal | None:
        r = self._node_reason(name)
        if r is not None:
            return r
        for p in (*self.pods(name), *self.sim.fixed_on.get(name, ())):
            why = self._pod_dnd(p)
            if why:
                return Refusal(why, Category.DO_NOT_DISRUPT)
        why = self.pdb.blocking(self.pods(name))
        return Refusal(why, Category.PDB) if why else None

    def _node_reason(self, name: str) -> Refusal | None:
        """What spares the node itself, whatever its pods."""
        info = self.info.get(name)
        if info is None:
            return Refusal("launched by an earlier action in this list", Category.LAUNCHED_BY_ACTION)
        spec = info.spec
        pool = spec.nodepool
        if not pool:
            return Refusal("not managed (no karpenter.sh/nodepool label)", Category.NOT_MANAGED)
        if pool not in self.pools:
            return Refusal(f"nodepool {pool} not found in the input", Category.NODEPOOL_NOT_FOUND)
        if not spec.initialized:
            return Refusal("not initialized yet (no karpenter.sh/initialized=true label)", Category.NOT_INITIALIZED)
        if info.deleting:
            return Refusal("already being disrupted", Category.BEING_DISRUPTED)
        r = do_not_disrupt_reason(f"node {name}", info.annotations.get(DO_NOT_DISRUPT), info.created, self.at)
        return Refusal(r, Category.DO_NOT_DISRUPT) if r else None

    def last_pod_change(self, name: str) -> datetime | None:
        if name in self.touched:
            return self.at
        info = self.info[name]
        raw = info.annotations.get(LAST_POD_EVENT)
        if raw:
            try:
                return parse_time(raw)
            except ValueError:
                pass
        times = [info.created] + [
            m.created
            for p in (*self.pods(name), *self.sim.fixed_on.get(name, ()))
            if (m := self.cluster.pod_meta.get(p.key)) is not None
        ]
        known = [t for t in times if t is not None]
        return max(known) if known else None

    def gate_reason(self, name: str) -> Refusal | None:
        """Why consolidation (emptiness, multi- and single-node, repack) may not touch the node."""
        return self.facts.recall(GATE, name, self._gate_reason)

    def _gate_reason(self, name: str) -> Refusal | None:
        pool = self.info[name].nodepool or ""
        static = self.pools.get(pool)
        if static is not None and static.replicas is not None:
            return Refusal(
                f"nodepool {pool} is static (spec.replicas: {static.replicas}): its nodes are never consolidated, "
                "only replaced when they drift or expire",
                Category.STATIC_NODEPOOL,
            )
        st = self.cluster.settings_for(pool)
        if st.consolidate_after is None:
            return Refusal(f"nodepool {pool} has consolidateAfter Never", Category.CONSOLIDATE_AFTER)
        if st.consolidate_after:
            last = self.last_pod_change(name)
            if last is not None and self.at < last + st.consolidate_after:
                return Refusal(
                    f"consolidateAfter {format_duration(st.consolidate_after)} has not passed since the last pod "
                    f"change at {format_time(last)} (until {format_time(last + st.consolidate_after)})",
                    Category.CONSOLIDATE_AFTER,
                )
        pods = self.pods(name)
        if st.policy == "WhenEmpty" and pods:
            return Refusal(
                f"nodepool {pool} consolidates only empty nodes (WhenEmpty) and {len(pods)} pods run here",
                Category.WHEN_EMPTY,
            )
        return None

    def budget_room(self, pool: str, reason: str) -> tuple[int | None, str]:
        """How many more of the pool's nodes may be disrupted for `reason`, and the binding budget's text."""
        lim = budget_limit(
            pool, self.cluster.settings_for(pool), BUDGET_REASONS.get(reason), self.at, self.total.get(pool, 0)
        )
        if lim.nodes is None:
            return None, ""
        used = len(self.busy.get(pool, ()))
        text = lim.text + (f" ({used} already disrupting)" if used else "")
        return max(0, lim.nodes - used), text

    def eviction_cost(self, name: str) -> float:
        return self.facts.recall(EVICTION_COST, name, self._eviction_cost_of)

    def _eviction_cost_of(self, name: str) -> float:
        total = 0.0
        for p in self.pods(name):
            meta = self.cluster.pod_meta.get(p.key)
            total += pod_disruption_cost(meta.annotations, meta.priority) if meta else 1.0
        return max(0.0, total)

    def candidates(self) -> list[str]:
        return [n for n in self.sim.order if n in self.info and n not in self.disrupted]

    def out_of_solves(self) -> bool:
        if self.sim.solves >= self.max_solves:
            self.truncated = True
            return True
        return False

    def cost(self, names: Iterable[str]) -> float:
        return sum(self.price[n] for n in names)

    # ------------------------------------------------------------------ committing an action
    def _score(self, names: Sequence[str], reason: str, savings: float) -> float | None:
        """The Balanced score an action is shown with: consolidation's only (drift and expiration are not scored)."""
        if reason not in ("empty", "underutilized"):
            return None
        s = self.scorer.score(names, savings)
        return None if s is None else s.value

    def _claim_name(self, pool: str) -> str:
        n = self.claim_seq.get(pool, 0)
        while True:
            n += 1
            name = f"{pool}-{n}"
            if name not in self.used_names:
                self.claim_seq[pool] = n
                self.used_names.add(name)
                return name

    def commit(
        self,
        names: Sequence[str],
        wi: WhatIf,
        reason: str,
        why: str,
        savings: float,
        options: dict[str, list[str]] | None = None,
        method: str = "",
    ) -> None:
        """Append the action that disrupts `names` as `wi` moves their pods, and move the cluster forward as if it
        had succeeded. options: per (solve-local) nodeclaim name, the instance types it may launch."""
        renamed: dict[str, str] = {}
        launched: list[tuple[PlannedNodeClaim, list[str] | None]] = []
        for c in wi.claims:
            new = self._claim_name(c.nodepool)
            renamed[c.name] = new
            launched.append((dataclasses.replace(c, name=new), options.get(c.name) if options else None))
        moves = {}
        for p in sorted(wi.evicted, key=lambda q: q.key):
            claim = wi.claim_targets.get(p.key)
            moves[p.key] = renamed[claim] if claim is not None else wi.targets[p.key]
        self.actions.append(
            Action(
                type="replace" if wi.claims else "delete",
                reason=reason,
                nodes=list(names),
                replacements=[],
                savings_per_hour=round(savings, 6),
                moves=moves,
                why=why,
                cost_before=self.cost(names),
                cost_after=sum(c.price_per_hour for c in wi.claims),
                method=method,
                score=self._score(names, reason, savings),
            )
        )
        self.launches.append(launched)
        self.sim.apply(names, wi, renamed)
        for n in names:
            self.disrupted.add(n)
            self.busy.setdefault(self.info[n].nodepool or "", set()).add(n)
        self.spared.forget(names)
        self.touched.update(t for t in wi.targets.values())
        self.facts.forget((*names, *wi.targets.values()))
