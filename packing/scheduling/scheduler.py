"""The scheduling simulation's entry point: where would pending pods go, and which nodes must be launched.

A Scheduler holds the NodePools, the catalog, the existing nodes and running pods, and the per-pool
instance-type tables (templates) built for them; solve() runs one Solve (packing.scheduling.solve) and
returns its Results. solve() does no I/O and mutates nothing it was given, so the disruption engine can call
it repeatedly with nodes removed (exclude_nodes).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Collection, Mapping, Sequence
from enum import StrEnum

from packing import bound
from packing.gcpause import gc_paused
from packing.instancetype import InstanceType
from packing.nodepool import (
    CAPACITY_TYPE_LABEL,
    HOSTNAME_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
    DaemonSet,
    ExistingNodeSpec,
    NodePool,
)
from packing.pods import Pod
from packing.requirements import MinValuesPolicy
from packing.resources import CPU, MEMORY, PODS
from packing.scheduling import reasons
from packing.scheduling.amounts import clamped_node, clamped_pod, no_options_reason, representable_types
from packing.scheduling.reasons import Reason
from packing.scheduling.reservations import choice_catalog, has_limited
from packing.scheduling.results import Results
from packing.scheduling.solve import Solve
from packing.scheduling.tablecache import TableCache
from packing.scheduling.templates import PoolTemplate

__all__ = ["Scheduler", "Strategy"]


class Strategy(StrEnum):
    COST = "cost"  # the cost packer for pods without topology involvement, pod-by-pod first-fit for the rest
    GREEDY = "greedy"  # every pod through Karpenter's pod-by-pod first-fit (the benchmark's baseline)


class Scheduler:
    """Plans capacity for pending pods. Construct once; solve() is pure and may be called many times."""

    def __init__(
        self,
        nodepools: Sequence[NodePool],
        instance_types: Sequence[InstanceType],
        existing_nodes: Sequence[ExistingNodeSpec] = (),
        running_pods: Sequence[Pod] = (),
        daemonsets: Sequence[DaemonSet] = (),
        *,
        min_values_policy: MinValuesPolicy = MinValuesPolicy.STRICT,
        tables: TableCache | None = None,
    ) -> None:
        # heavier pools first, then by name so that the plan never depends on input order
        self.min_values_policy = MinValuesPolicy(min_values_policy)
        self.nodepools = sorted(nodepools, key=lambda p: (-p.weight, p.name))
        # tables of the catalog alone (the same for every Scheduler over it: see packing.scheduling.tablecache)
        self.tables = tables
        catalog_tables = (
            tables.get("catalog", instance_types, None, lambda: _catalog_tables(instance_types))
            if tables is not None
            else _catalog_tables(instance_types)
        )
        self.instance_types, self.limited, self.type_keys, self._price = catalog_tables
        # the disruption simulation's input nodes: the others were launched by its actions and take their
        # share of reservations and commitments (packing.scheduling.reservations.Ledger); None in a plan
        self.input_nodes: frozenset[str] | None = None
        self.existing_nodes = [clamped_node(n) for n in existing_nodes]
        self.running_pods = [clamped_pod(p) for p in running_pods]
        self.daemonsets = [
            ds if ds.pod.requests.in_range() else dataclasses.replace(ds, pod=clamped_pod(ds.pod))
            for ds in daemonsets
        ]
        # pool name -> why the engine cannot launch from it, filled as templates are built (see templates())
        self.unusable_reasons: dict[str, Reason] = {}
        self._tpl_cache: dict[tuple[str, ...], list[PoolTemplate]] = {}

    def price_of(self, labels: Mapping[str, str]) -> float | None:
        return self._price.get(
            (
                labels.get(INSTANCE_TYPE_LABEL, ""),
                labels.get(ZONE_LABEL, ""),
                labels.get(CAPACITY_TYPE_LABEL, ""),
            )
        )

    def templates(self, keys: tuple[str, ...]) -> list[PoolTemplate]:
        """The pools prepared for these resource keys, heaviest first. A pool whose preparation fails is left
        out (and named in `unusable_reasons` with the error) so that every other pool is still planned; a pool with no
        launchable type stays in (its pods' reasons say so) and is named in `unusable_reasons` too."""
        hit = self._tpl_cache.get(keys)
        if hit is None:
            hit = []
            for p in self.nodepools:
                if p.static:
                    continue  # a static pool never launches a node for pods (explain.static_reasons says so)
                try:
                    tpl = self._template(p, keys)
                except Exception as e:  # noqa: BLE001 - contained: one broken pool must not stop the others
                    self.unusable_reasons.setdefault(p.name, reasons.pool_preparation_failed(p.name, e))
                    continue
                if not tpl.options:
                    self.unusable_reasons.setdefault(p.name, no_options_reason(tpl, self.instance_types))
                hit.append(tpl)
            self._tpl_cache[keys] = hit
        return hit

    def _template(self, pool: NodePool, keys: tuple[str, ...]) -> PoolTemplate:
        def build() -> PoolTemplate:
            return PoolTemplate(pool, self.instance_types, self.daemonsets, keys, self.type_keys)

        if self.tables is None:
            return build()
        return self.tables.get("template", (pool, *self.instance_types, *self.daemonsets), keys, build)

    @property
    def unusable(self) -> dict[str, str]:
        """unusable_reasons as text."""
        return {name: r.text for name, r in self.unusable_reasons.items()}

    def unusable_nodepool_reasons(self, keys: Sequence[str] = ()) -> dict[str, Reason]:
        """Pools the engine cannot launch from, with why, once templates for `keys` (with cpu, memory and
        pods) are built: what Results.unusable_nodepool_reasons reports, for callers that run no solve."""
        self.templates(tuple(sorted({CPU, MEMORY, PODS, *keys})))
        return dict(self.unusable_reasons)

    def unusable_nodepools(self, keys: Sequence[str] = ()) -> dict[str, str]:
        """unusable_nodepool_reasons(keys) as text (what Results.unusable_nodepools reports)."""
        return {name: r.text for name, r in self.unusable_nodepool_reasons(keys).items()}

    def solve(
        self,
        pods: Sequence[Pod],
        *,
        exclude_nodes: Collection[str] = (),
        lower_bound: bool = False,
        strategy: Strategy | str = Strategy.COST,
    ) -> Results:
        """Plan for `pods`. exclude_nodes: existing nodes to pretend are gone (what-if for disruption).

        strategy="greedy" sends every pod through Karpenter's pod-by-pod first-fit instead of the cost packer;
        the benchmark uses it as the Karpenter-style baseline.
        """
        if strategy not in tuple(Strategy):
            raise ValueError(f"unknown strategy {strategy!r}")
        exclude = frozenset(exclude_nodes)
        with gc_paused():
            if strategy == Strategy.GREEDY:
                return Solve(self, pods, exclude, greedy=True).run(lower_bound)
            return self._solve_cheapest_order(pods, exclude, lower_bound)

    def _solve_cheapest_order(self, pods: Sequence[Pod], exclude: frozenset[str], lower_bound: bool) -> Results:
        """Solve with the pools in weight order and, where pools of equal weight could launch nodes, with each
        of them first in its tie as well; the plan that schedules the most pods, then costs least, wins (the
        name order on a tie, as Karpenter). Weighted pools keep strict priority: only the order within a
        weight changes. One tie at a time, heaviest first, keeping the best order found so far: 1 + sum(k - 1)
        solves for ties of k pools, and one solve when no pools tie or no node is launched."""
        started = time.perf_counter()
        sv = Solve(self, pods, exclude)
        base_tpls = list(sv.tpls)
        best = sv.run(False)
        ties = _weight_ties(base_tpls)
        if ties and best.nodeclaims:
            order = base_tpls
            best_key = _plan_key(best)
            for tie in ties:
                front = order.index(tie[0])
                for tpl in tie[1:]:
                    if tpl is order[front]:
                        continue
                    block = [tpl] + [t for t in order[front : front + len(tie)] if t is not tpl]
                    trial = order[:front] + block + order[front + len(tie) :]
                    sv = Solve(self, pods, exclude)
                    sv.tpls = trial
                    res = sv.run(False)
                    key = _plan_key(res)
                    if key < best_key:
                        best, best_key, order = res, key, trial
        best.solve_seconds = time.perf_counter() - started
        if lower_bound:
            best.lower_bound = bound.lower_bound(self, best, list(pods))
            best.solve_seconds = time.perf_counter() - started
        return best


CatalogTables = tuple[list[InstanceType], bool, frozenset[str], dict[tuple[str, str, str], float]]


def _catalog_tables(instance_types: Sequence[InstanceType]) -> CatalogTables:
    """The catalog as solves use it, whether it has limited offerings, the label keys of its types, and each
    offering's price by (type, zone, capacity type)."""
    # amounts beyond MAX_AMOUNT are not computed with (see packing.resources.MAX_AMOUNT)
    types = representable_types(instance_types)
    # reserved offerings and commitments' shares are limited (packing.scheduling.reservations)
    limited = has_limited(types)
    if limited:
        types = choice_catalog(types)
    tk: set[str] = {ZONE_LABEL, CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL}
    for it in types:
        tk.update(it.labels)
    tk.discard(NODEPOOL_LABEL)
    tk.discard(HOSTNAME_LABEL)
    price: dict[tuple[str, str, str], float] = {}
    for it in types:
        for o in it.offerings:
            if o.coverage is not None:
                continue  # a commitment's share of an on-demand offering lists at that offering's price
            if o.price is not None:
                price[(it.name, o.zone, o.capacity_type)] = o.list_price if o.list_price is not None else o.price
    return types, limited, frozenset(tk), price


def _weight_ties(tpls: Sequence[PoolTemplate]) -> list[list[PoolTemplate]]:
    """Runs of pools of equal weight (in the solve's order) with at least two that have a launchable type."""
    runs: list[list[PoolTemplate]] = []
    for tpl in tpls:
        if runs and runs[-1][0].pool.weight == tpl.pool.weight:
            runs[-1].append(tpl)
        else:
            runs.append([tpl])
    return [run for run in runs if sum(1 for t in run if t.options) >= 2]


def _plan_key(res: Results) -> tuple[int, float]:
    """Fewer unschedulable pods first, then the lower cost (rounded, so that float noise never decides)."""
    return (len(res.unschedulable_reasons), round(res.effective_cost_per_hour, 9))
