"""The disruption loop: emptiness, drift, expiration, multi-node and single-node consolidation, in Karpenter's order.

With Loadmaster's own repack move on (beyond Karpenter; see the "repack" section below: a group of nodes whose
pods are re-planned onto new nodes and the room left on nodes that stay, possibly more nodes than it removes),
consolidation runs in three steps: Karpenter's multi- and single-node moves that only delete nodes (their pods land
in room already paid for, nothing is launched), then repack, then Karpenter's moves that replace nodes with one
cheaper node. Karpenter's k-to-one replacements come last because on a catalog whose cheapest capacity comes in
small nodes they replace a fragmented cluster with a few large nodes, which no later move improves: measured on
the benchmark's full-catalog cluster, one run found 0.68 of the achievable saving in Karpenter's order and 0.95
this way. With repack off, the order is Karpenter's.

Each round tries the methods in order and takes the first action one of them finds; the action is applied to the
simulated cluster (its nodes gone, their pods running where the what-if put them, replacements launched) and the
loop starts again, until no method finds anything. The resulting list is what the disruption controller would do
now if every action succeeded, and it respects the budgets as a whole: every node disrupted earlier in the list
still counts as disrupting for the actions after it.

Pods with no placement constraint that no topology rule can see are placed by first-fit onto the other nodes without
a simulation (room and taints are all that decide where they may run); only what is left over for the one new node
goes through the Scheduler. Once the list is complete, every node a PDB, do-not-disrupt or a budget spares is
priced: what consolidating it alone would save were the rule lifted (NotDisrupted.blocked_by, savings_per_hour).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from packing.disruption.budgets import budget_limit
from packing.disruption.drift import drift_reason
from packing.disruption.firstfit import RoomIndex, first_fit, largest_first
from packing.disruption.model import (
    BUDGET_REASONS,
    DELETION_COST,
    DO_NOT_DISRUPT,
    LAST_POD_EVENT,
    MIRROR_ANNOTATION,
    Action,
    Cluster,
    NodeInfo,
    NotDisrupted,
    Report,
)
from packing.disruption.pdb import PdbIndex
from packing.disruption.simulation import ClusterSim, WhatIf
from packing.durations import DurationError, format_duration, parse_duration
from packing.instancetype import CAPACITY_TYPE_SPOT, InstanceType
from packing.nodepool import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL, NodePool
from packing.plan_cli import render_json
from packing.pods import Pod
from packing.scheduling.amounts import clamped_node, clamped_pod, representable_types
from packing.scheduling.gcpause import gc_paused
from packing.scheduling.results import Results
from packing.scheduling.scheduler import Scheduler

__all__ = ["MAX_MULTI_CANDIDATES", "SPOT_TO_SPOT_MIN_TYPES", "MinSavings", "consolidate", "parse_time"]

MAX_MULTI_CANDIDATES = 100  # Karpenter considers at most 100 nodes per multi-node consolidation
SPOT_TO_SPOT_MIN_TYPES = 15  # and replaces spot with spot only when this many cheaper spot types could launch
# Simulations spent at most on pricing blocked moves (after the action list is complete): a default 10% budget on a
# thousand-node cluster blocks hundreds of nodes, and each one's price would otherwise cost a simulation
MAX_BLOCKED_SOLVES = 32
MAX_BLOCKED_EVALUATIONS = 128  # and full first-fit evaluations (about 2 ms each on a thousand nodes)
ROOMIEST = 64  # nodes the quick pricing test tries a blocked node's pods on
REPACK_MAX_GROUP = 50  # nodes per repack: bounds what one action disrupts (a budget may bound it further)
REPACK_MIN_FRACTION = 0.05  # a repack must save this share of its group's cost (see _repack_need)
REPACK_MIN_DOLLARS = 0.01  # and at least this many dollars per hour
REPACK_SCREEN = 16  # nodes of the largest potential tried first: if they cannot save the margin, nothing is
_EPS = 1e-9
# what a move that needs a new node is told when no nodepool can launch any instance type
NO_TYPE_WHY = "no nodepool can launch a replacement (no instance type of the catalog satisfies any nodepool)"


def parse_time(text: str) -> datetime:
    """ISO-8601 (a trailing Z allowed); a time without an offset is taken as UTC."""
    t = datetime.fromisoformat(text.strip().replace("z", "Z"))
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def _fmt_time(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def money(x: float) -> str:
    return f"${x:.3f}/h" if abs(x) >= 0.01 or x == 0 else f"${x:.4f}/h"


@dataclass(frozen=True)
class MinSavings:
    """--min-savings: dollars per hour ("0.05", "$0.05") or a percent of the disrupted nodes' cost ("5%")."""

    dollars: float | None = None
    percent: float | None = None

    @classmethod
    def parse(cls, text: str) -> MinSavings:
        t = text.strip()
        m = re.fullmatch(r"([0-9]*\.?[0-9]+)\s*%", t)
        if m:
            return cls(percent=float(m.group(1)))
        m = re.fullmatch(r"\$?([0-9]*\.?[0-9]+)(?:/h)?", t)
        if m:
            return cls(dollars=float(m.group(1)))
        raise ValueError(f"invalid --min-savings {text!r}: use dollars per hour (0.05) or a percent (5%)")

    def allows(self, savings: float, cost: float) -> bool:
        if self.dollars is not None and savings + _EPS < self.dollars:
            return False
        return not (self.percent is not None and savings + _EPS < cost * self.percent / 100)

    def __str__(self) -> str:
        return f"{self.percent:g}%" if self.percent is not None else money(self.dollars or 0.0)


def _eviction_cost(p: Pod, meta_annotations: dict[str, str], priority: int) -> float:
    # Karpenter's disruption cost: 1 per pod, nudged by pod-deletion-cost and priority, clamped
    cost = 1.0
    try:
        cost += float(meta_annotations.get(DELETION_COST, "0")) / 2**27
    except ValueError:
        pass
    cost += priority / 2**25
    return max(-10.0, min(10.0, cost))


def _spot_to_spot_why(nodes: int, cheaper_types: int) -> str | None:
    """Karpenter's guard against interruption churn: spot is replaced by spot only for one node, and only with
    at least SPOT_TO_SPOT_MIN_TYPES cheaper spot types to choose from. None when the move may go ahead."""
    if nodes > 1:
        return "spot-to-spot replacement is only done for single-node consolidation"
    if cheaper_types < SPOT_TO_SPOT_MIN_TYPES:
        return (
            f"spot-to-spot replacement needs at least {SPOT_TO_SPOT_MIN_TYPES} cheaper spot instance types, "
            f"found {cheaper_types}"
        )
    return None


def _one_cheaper_node_why(
    fits: npt.NDArray[np.bool_], tprice: npt.NDArray[np.float64], tlabel: Sequence[str], cost: float
) -> str | None:
    """Why no single new node can take pods needing the room `fits` marks, for less than `cost` (None: one can)."""
    if not fits.size:
        return NO_TYPE_WHY
    if not bool(fits.any()):
        return "its pods would need more than one new node (consolidation launches at most one)"
    j = int(np.argmin(np.where(fits, tprice, np.inf)))
    if tprice[j] + _EPS >= cost:
        return (
            f"no cheaper replacement: cheapest fitting option {tlabel[j]} at {money(float(tprice[j]))} "
            f"≥ current {money(cost)}"
        )
    return None


class _Engine:
    def __init__(
        self,
        cluster: Cluster,
        at: datetime,
        min_savings: MinSavings | None,
        max_solves: int,
        price_blocked: bool = True,
        repack: bool = True,
    ) -> None:
        self.c = cluster
        self.price_blocked = price_blocked
        self.repack_enabled = repack
        self.at = at
        self.min_savings = min_savings
        self.max_solves = max_solves
        self.pools: dict[str, NodePool] = {p.name: p for p in cluster.nodepools}
        self.catalog: dict[str, InstanceType] = {it.name: it for it in cluster.catalog}
        self.base = Scheduler(cluster.nodepools, cluster.catalog, (), (), cluster.daemonsets)
        self.info: dict[str, NodeInfo] = {n.name: n for n in cluster.nodes}
        self.input_order = [n.name for n in cluster.nodes]
        fixed = {p.key for p in cluster.running if self._is_fixed(p)}
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
        self.total: dict[str, int] = {}
        self.busy: dict[str, set[str]] = {}
        for n in cluster.nodes:
            pool = n.nodepool or ""
            self.total[pool] = self.total.get(pool, 0) + 1
            if n.deleting or not n.ready:
                self.busy.setdefault(pool, set()).add(n.name)
        self.pdb = PdbIndex(
            cluster.pdbs, [*cluster.running, *cluster.pending], cluster.pdb_status, cluster.pdb_null_selector
        )
        self.disrupted: set[str] = set()
        self.new_nodes: set[str] = set()
        self.touched: set[str] = set()
        self.why_not: dict[str, str] = {}
        self.method_why: dict[str, str] = {}  # drift or expiration found the node but could not act: said first
        self.failed: dict[tuple[str, str], int] = {}  # (method, node) -> epoch it failed at
        self.multi_failed_epoch: dict[bool, int] = {}  # delete_only -> epoch its search last found nothing at
        self._repack_rate: npt.NDArray[np.float64] | None = None
        self._offers: dict[tuple[str, str, str], float] | None = None
        self._repack_failed: set[tuple[Any, ...]] = set()
        self._repack_holes: frozenset[str] = frozenset()

        self.claim_seq: dict[str, int] = {}
        self.used_names: set[str] = set(self.info) | {s.name for s in cluster.inflight}
        self.actions: list[Action] = []
        self.truncated = False
        self._hard_cache: dict[str, tuple[str | None, str | None]] = {}
        self.why_kind: dict[str, str] = {}  # node -> "budget" when why_not[node] is a budget's refusal
        self.method_kind: dict[str, str] = {}  # the same for method_why
        self._drifted: dict[str, str] | None = None  # node -> why it drifted, found on the first drift() call
        self._expired: list[tuple[datetime, str, str]] | None = None  # (created, node, why), the same for expiry
        self._evict_cache: dict[str, float] = {}
        # per node, until its pods change (dropped in _commit with _evict_cache): repack's view of it
        self._demand_cache: dict[str, npt.NDArray[np.int64]] = {}
        self._repackable_cache: dict[str, bool] = {}
        self._gate_cache: dict[str, str | None] = {}
        self._pdb_cache: dict[str, dict[str, int] | None] = {}
        self._potential_cache: dict[str, float] = {}
        self._ff_decides: dict[str, bool] = {}  # per pod key: see _first_fit_decides
        # every per-node answer that holds until the node's pods change (_commit drops them for the nodes it touches)
        self._node_caches: tuple[dict[str, Any], ...] = (
            self._hard_cache, self._evict_cache, self._demand_cache, self._repackable_cache, self._gate_cache,
            self._pdb_cache, self._potential_cache,
        )
        self._by_price: tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]] | None = None
        self._types: tuple[tuple[str, ...], npt.NDArray[np.int64], npt.NDArray[np.float64], list[str]] | None = None

    # ------------------------------------------------------------------ facts about nodes
    def _is_fixed(self, p: Pod) -> bool:
        """DaemonSet and mirror (static) pods never move and never keep a node alive."""
        if p.owner_kind in ("DaemonSet", "Node"):
            return True
        meta = self.c.pod_meta.get(p.key)
        return meta is not None and MIRROR_ANNOTATION in meta.annotations

    def _pods(self, name: str) -> list[Pod]:
        return self.sim.node_pods(name)

    def _pod_dnd(self, p: Pod) -> str | None:
        meta = self.c.pod_meta.get(p.key)
        if meta is None:
            return None
        v = meta.annotations.get(DO_NOT_DISRUPT)
        if v is None or v.strip() == "false":
            return None
        if v.strip() == "true":
            return f"pod {p.key} has do-not-disrupt"
        try:
            d = parse_duration(v, allow_never=False)
        except DurationError:
            return f"pod {p.key} has do-not-disrupt {v!r}, which is neither true nor a duration (treated as true)"
        if meta.created is None or d is None:
            return f"pod {p.key} has do-not-disrupt {v}"
        end = meta.created + d
        if self.at < end:
            return f"pod {p.key} has do-not-disrupt until {_fmt_time(end)}"
        return None

    def hard_reason(self, name: str) -> str | None:
        """Why the node may not be disrupted by any method (None: it is a candidate). Cached until pods move."""
        return self.hard_block(name)[0]

    def hard_block(self, name: str) -> tuple[str | None, str | None]:
        """hard_reason with the kind of rule behind it ("pdb", "do-not-disrupt"; None when the node is simply not
        a candidate, or is one)."""
        if name not in self._hard_cache:
            self._hard_cache[name] = self._hard_reason(name)
        return self._hard_cache[name]

    def _hard_reason(self, name: str) -> tuple[str | None, str | None]:
        info = self.info.get(name)
        if info is None:
            return "launched by an earlier action in this list", None
        spec = info.spec
        pool = spec.nodepool
        if not pool:
            return "not managed (no karpenter.sh/nodepool label)", None
        if pool not in self.pools:
            return f"nodepool {pool} not found in the input", None
        if not spec.initialized:
            return "not initialized yet (no karpenter.sh/initialized=true label)", None
        if info.deleting:
            return "already being disrupted", None
        if info.annotations.get(DO_NOT_DISRUPT, "").strip() == "true":
            return f"node {name} has do-not-disrupt", "do-not-disrupt"
        for p in (*self._pods(name), *self.sim.fixed_on.get(name, ())):
            r = self._pod_dnd(p)
            if r:
                return r, "do-not-disrupt"
        r = self.pdb.blocking(self._pods(name))
        return r, ("pdb" if r else None)

    def _spare(self, name: str, why: str, kind: str | None = None) -> None:
        """Remember why a method passed the node over (and whether a budget was the reason)."""
        self.why_not[name] = why
        if kind is None:
            self.why_kind.pop(name, None)
        else:
            self.why_kind[name] = kind

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
            for p in (*self._pods(name), *self.sim.fixed_on.get(name, ()))
            if (m := self.c.pod_meta.get(p.key)) is not None
        ]
        known = [t for t in times if t is not None]
        return max(known) if known else None

    def gate_reason(self, name: str) -> str | None:
        """Why consolidation (emptiness, multi- and single-node) may not touch the node. Cached until pods move."""
        if name not in self._gate_cache:
            self._gate_cache[name] = self._gate_reason(name)
        return self._gate_cache[name]

    def _gate_reason(self, name: str) -> str | None:
        pool = self.info[name].nodepool or ""
        st = self.c.settings_for(pool)
        if st.consolidate_after is None:
            return f"nodepool {pool} has consolidateAfter Never"
        if st.consolidate_after:
            last = self.last_pod_change(name)
            if last is not None and self.at < last + st.consolidate_after:
                return (
                    f"consolidateAfter {format_duration(st.consolidate_after)} has not passed since the last pod "
                    f"change at {_fmt_time(last)} (until {_fmt_time(last + st.consolidate_after)})"
                )
        pods = self._pods(name)
        if st.policy == "WhenEmpty" and pods:
            return f"nodepool {pool} consolidates only empty nodes (WhenEmpty) and {len(pods)} pods run here"
        return None

    def budget_room(self, pool: str, reason: str) -> tuple[int | None, str]:
        """How many more of the pool's nodes may be disrupted for `reason`, and the binding budget's text."""
        lim = budget_limit(pool, self.c.settings_for(pool), BUDGET_REASONS.get(reason), self.at, self.total.get(pool, 0))
        if lim.nodes is None:
            return None, ""
        used = len(self.busy.get(pool, ()))
        text = lim.text + (f" ({used} already disrupting)" if used else "")
        return max(0, lim.nodes - used), text

    def eviction_cost(self, name: str) -> float:
        hit = self._evict_cache.get(name)
        if hit is None:
            hit = self._evict_cache[name] = self._eviction_cost_of(name)
        return hit

    def _eviction_cost_of(self, name: str) -> float:
        total = 0.0
        for p in self._pods(name):
            meta = self.c.pod_meta.get(p.key)
            ann = dict(meta.annotations) if meta else {}
            total += _eviction_cost(p, ann, meta.priority if meta else 0)
        return max(0.0, total)

    def candidates(self) -> list[str]:
        return [n for n in self.sim.order if n in self.info and n not in self.disrupted]

    def _out_of_solves(self) -> bool:
        if self.sim.solves >= self.max_solves:
            self.truncated = True
            return True
        return False

    # ------------------------------------------------------------------ committing an action
    def _claim_name(self, pool: str) -> str:
        n = self.claim_seq.get(pool, 0)
        while True:
            n += 1
            name = f"{pool}-{n}"
            if name not in self.used_names:
                self.claim_seq[pool] = n
                self.used_names.add(name)
                return name

    def _type_price(self, it_name: str, pool: str, capacity_type: str) -> float | None:
        """The cheapest available offering of a type in the zones its pool allows (for the replacement's options)."""
        it = self.catalog.get(it_name)
        if it is None:
            return None
        p = self.pools.get(pool)
        zr = p.requirements.get(ZONE_LABEL) if p else None
        prices = [
            o.price
            for o in it.offerings
            if o.available and o.price is not None and o.capacity_type == capacity_type
            and (zr is None or zr.has(o.zone))
        ]
        return min(prices) if prices else None

    def _commit(
        self,
        names: Sequence[str],
        wi: WhatIf,
        reason: str,
        why: str,
        savings: float,
        options: dict[str, list[str]] | None = None,
        method: str = "",
    ) -> Action:
        renamed: dict[str, str] = {}
        claims = []
        for c in wi.claims:
            new = self._claim_name(c.nodepool)
            renamed[c.name] = new
            claims.append(dataclasses.replace(c, name=new))
        replacements: list[dict[str, Any]] = render_json(Results(nodeclaims=claims))["nodeclaims"] if claims else []
        for c, obj in zip(wi.claims, replacements, strict=True):
            if options and c.name in options:
                obj["instance_type_options"] = options[c.name]
        moves = {}
        for p in sorted(wi.evicted, key=lambda q: q.key):
            claim = wi.claim_targets.get(p.key)
            moves[p.key] = renamed[claim] if claim is not None else wi.targets[p.key]
        cost = sum(self.price[n] for n in names)
        after = sum(c.price_per_hour for c in wi.claims)
        action = Action(
            type="replace" if wi.claims else "delete",
            reason=reason,
            nodes=list(names),
            replacements=replacements,
            savings_per_hour=round(savings, 6),
            moves=moves,
            why=why,
            cost_before=cost,
            cost_after=after,
            method=method,
        )
        self.sim.apply(names, wi, renamed)
        for n in names:
            self.disrupted.add(n)
            self.busy.setdefault(self.info[n].nodepool or "", set()).add(n)
            self.why_not.pop(n, None)
            self.why_kind.pop(n, None)
            self.method_why.pop(n, None)
            self.method_kind.pop(n, None)
        self.new_nodes.update(renamed.values())
        self.touched.update(t for t in wi.targets.values())
        for n in (*names, *wi.targets.values()):
            for cache in self._node_caches:
                cache.pop(n, None)
        self.actions.append(action)
        return action

    # ------------------------------------------------------------------ judging a consolidation what-if
    def _judge(
        self, names: Sequence[str], wi: WhatIf, *, honour_min_savings: bool = True
    ) -> tuple[str, float, dict[str, list[str]], str]:
        """(failure, savings, replacement options, note) for consolidating `names` as `wi` proposes."""
        cost = sum(self.price[n] for n in names)
        if not wi.ok:
            return wi.failure, 0.0, {}, ""
        if len(wi.claims) > 1:
            return (
                f"its pods would need {len(wi.claims)} new nodes (consolidation launches at most one)",
                0.0,
                {},
                "",
            )
        options: dict[str, list[str]] = {}
        note = ""
        if wi.claims:
            c = wi.claims[0]
            if c.price_per_hour + _EPS >= cost:
                return (
                    f"no cheaper replacement: cheapest fitting option {c.instance_type} {c.capacity_type} at "
                    f"{money(c.price_per_hour)} ≥ current {money(cost)}",
                    0.0,
                    {},
                    "",
                )
            cts = {self.info[n].spec.labels.get(CAPACITY_TYPE_LABEL, "") for n in names}
            if c.capacity_type == CAPACITY_TYPE_SPOT:
                cheaper = [
                    t
                    for t in c.instance_type_options
                    if (sp := self._type_price(t, c.nodepool, CAPACITY_TYPE_SPOT)) is not None and sp + _EPS < cost
                ]
                if c.instance_type in cheaper:
                    cheaper.remove(c.instance_type)
                cheaper.insert(0, c.instance_type)
                if cts == {CAPACITY_TYPE_SPOT}:
                    refused = _spot_to_spot_why(len(names), len(cheaper))
                    if refused:
                        return refused, 0.0, {}, ""
                    cheaper = cheaper[:SPOT_TO_SPOT_MIN_TYPES]
                else:
                    note = "; replacement pinned to spot"
                options[c.name] = cheaper
            else:
                kept = [
                    t
                    for t in c.instance_type_options
                    if (pr := self._type_price(t, c.nodepool, c.capacity_type)) is not None and pr + _EPS < cost
                ]
                if c.instance_type in kept:
                    kept.remove(c.instance_type)
                options[c.name] = [c.instance_type, *kept]
        savings = cost - wi.extra_cost
        if savings <= _EPS:
            return f"no saving: its pods would cost {money(wi.extra_cost)} elsewhere ≥ current {money(cost)}", 0.0, {}, ""
        if honour_min_savings and self.min_savings is not None and not self.min_savings.allows(savings, cost):
            return f"saving {money(savings)} is below --min-savings {self.min_savings}", savings, {}, ""
        return "", savings, options, note

    def _consolidation_why(self, names: Sequence[str], wi: WhatIf, savings: float, note: str) -> str:
        cost = sum(self.price[n] for n in names)
        k = len(wi.evicted)
        what = f"node {names[0]}" if len(names) == 1 else f"{len(names)} nodes"
        if not wi.claims:
            return f"underutilized: the {k} pods of {what} ({money(cost)}) fit on other nodes; saves {money(savings)}"
        c = wi.claims[0]
        evicted = {q.key for q in wi.evicted}
        on_new = sum(1 for p in c.pods if p.key in evicted)
        held = f"all {k} of its pods" if on_new == k else f"{on_new} of its {k} pods, the rest fit on other nodes"
        bound = sum(1 for p in c.pods if p.key not in evicted)
        if bound:
            # pending pods the provisioner would have put on the removed node need a place too
            held += f", and {bound} pending pod{'s' if bound > 1 else ''} that would have scheduled on it"
        return (
            f"underutilized: {what} ({money(cost)}) replaced by one {c.instance_type} {c.capacity_type} at "
            f"{money(c.price_per_hour)} holding {held}; saves {money(savings)}{note}"
        )

    # ------------------------------------------------------------------ methods
    def emptiness(self) -> bool:
        empties: list[str] = []
        for n in self.candidates():
            if self._pods(n):
                continue
            r = self.hard_reason(n) or self.gate_reason(n)
            if r:
                continue
            empties.append(n)
        if not empties:
            return False
        for n in list(empties):
            # an empty node the pending pods would land on is not idle: deleting it would only launch another
            bound = self.sim.reserved_on.get(n)
            if bound:
                self._spare(n, f"pending pod {min(p.key for p in bound)} would schedule on it")
                empties.remove(n)
        chosen: list[str] = []
        by_pool: dict[str, list[str]] = {}
        for n in empties:
            by_pool.setdefault(self.info[n].nodepool or "", []).append(n)
        for pool, names in sorted(by_pool.items()):
            names.sort(key=lambda n: (-self.price[n], n))
            room, text = self.budget_room(pool, "empty")
            take = names if room is None else names[:room]
            chosen.extend(take)
            for n in names[len(take) :]:
                self._spare(n, text, "budget")
        if not chosen:
            return False
        chosen.sort(key=self.input_order.index)
        savings = sum(self.price[n] for n in chosen)
        if self.min_savings is not None and not self.min_savings.allows(savings, savings):
            for n in chosen:
                self._spare(n, f"saving {money(savings)} is below --min-savings {self.min_savings}")
            return False
        wi = WhatIf(Results(), [])
        what = f"node {chosen[0]} is" if len(chosen) == 1 else f"{len(chosen)} nodes are"
        self._commit(
            chosen,
            wi,
            "empty",
            f"empty: {what} running no pods besides DaemonSet and mirror pods; saves {money(savings)}",
            savings,
            method="emptiness",
        )
        return True

    def _replace_or_delete(self, name: str, reason: str, method: str, detail: str) -> bool:
        """Drift and expiration: move the pods wherever the simulation puts them, with any number of new nodes."""
        if self.failed.get((method, name)) == self.sim.epoch or self._out_of_solves():
            return False
        wi = self.sim.what_if([name])
        if not wi.ok:
            self.failed[(method, name)] = self.sim.epoch
            self.method_why[name] = f"{detail}, but {wi.failure}"
            self.method_kind.pop(name, None)
            return False
        cost = self.price[name]
        savings = cost - wi.extra_cost
        new = ""
        if wi.claims:
            new = f" and {len(wi.claims)} new nodeclaim{'s' if len(wi.claims) > 1 else ''} ({money(sum(c.price_per_hour for c in wi.claims))})"
        moved = f"; its {len(wi.evicted)} pods move to other nodes{new}" if wi.evicted else "; it runs no pods to move"
        self._commit([name], wi, reason, f"{detail}{moved}", savings, method="expiration" if method == "expire" else method)
        return True

    def drift(self) -> bool:
        if self._drifted is None:
            # a node's labels, taints and pool do not change during a run: which nodes drifted is found once
            self._drifted = {}
            for n in self.candidates():
                pool = self.pools.get(self.info[n].nodepool or "")
                if pool is None:
                    continue
                spec = self.info[n].spec
                r = drift_reason(spec.labels, spec.taints, pool, self.catalog)
                if r is not None:
                    self._drifted[n] = r
        drifted: list[tuple[bool, datetime, str, str]] = []
        for n, r in self._drifted.items():
            if n in self.disrupted or n not in self.sim.specs or self.hard_reason(n):
                continue
            created = self.info[n].created or datetime.min.replace(tzinfo=UTC)
            drifted.append((bool(self._pods(n)), created, n, r))
        drifted.sort()  # empty drifted nodes first, then the oldest
        for _, _, n, r in drifted:
            pool_name = self.info[n].nodepool or ""
            room, text = self.budget_room(pool_name, "drifted")
            if room is not None and room <= 0:
                self.method_why[n] = f"drifted ({r}), but {text}"
                self.method_kind[n] = "budget"
                continue
            if self._replace_or_delete(n, "drifted", "drift", f"drifted: {r}"):
                return True
        return False

    def expiration(self) -> bool:
        if self._expired is None:
            # the clock is fixed for the run, so which nodes are past their pool's expireAfter is found once
            self._expired = []
            for n in self.candidates():
                info = self.info[n]
                st = self.c.settings_for(info.nodepool or "")
                if st.expire_after is None or info.created is None or info.nodepool not in self.pools:
                    continue
                if info.created + st.expire_after <= self.at:
                    detail = (
                        f"expired: created {_fmt_time(info.created)}, older than expireAfter "
                        f"{format_duration(st.expire_after)}"
                    )
                    self._expired.append((info.created, n, detail))
        expired = [
            e for e in self._expired if e[1] not in self.disrupted and e[1] in self.sim.specs and not self.hard_reason(e[1])
        ]
        expired.sort()
        for _, n, detail in expired:  # expiration is not budgeted, but the nodes it takes count as disrupting
            if self._replace_or_delete(n, "expired", "expire", detail):
                return True
        return False

    def _consolidatable(self) -> list[str]:
        out = []
        for n in self.candidates():
            if not self._pods(n) or not self.price_known[n]:
                # empty nodes are emptiness's; and a node of unknown price has no saving to weigh
                continue
            r = self.hard_reason(n) or self.gate_reason(n)
            if r:
                continue
            out.append(n)
        score = {n: self.price[n] / (1.0 + self.eviction_cost(n)) for n in out}
        out.sort(key=lambda n: (-score[n], n))
        return out

    def _within_limits(self, ordered: Iterable[str], limit: int) -> list[str]:
        """The first nodes of `ordered` that budgets and PDBs allow to go together."""
        picked: list[str] = []
        taken: dict[str, int] = {}
        pdb_used: dict[str, int] = {}
        rooms: dict[str, tuple[int | None, str]] = {}
        allowed = self.pdb.allowed
        for n in ordered:
            pool = self.info[n].nodepool or ""
            if pool not in rooms:
                rooms[pool] = self.budget_room(pool, "underutilized")
            room, text = rooms[pool]
            if room is not None and taken.get(pool, 0) >= room:
                self._spare(n, text, "budget")
                continue
            usage = self._pdb_usage(n)
            if usage is None:
                continue  # a pod covered by several PDBs cannot be evicted (hard_reason says so)
            if any(pdb_used.get(k, 0) + v > allowed.get(k, 0) for k, v in usage.items()):
                continue  # alone it is fine (hard_reason passed); together with the others it is not
            for k, v in usage.items():
                pdb_used[k] = pdb_used.get(k, 0) + v
            taken[pool] = taken.get(pool, 0) + 1
            picked.append(n)
            if len(picked) >= limit:
                break
        return picked

    def _pdb_usage(self, name: str) -> dict[str, int] | None:
        """Evictions the node's pods would take from each PDB (None when one is covered by several). Cached until
        its pods change."""
        if name not in self._pdb_cache:
            pods = self._pods(name)
            multi = any(len(self.pdb.cover.get(p.key, ())) > 1 for p in pods)
            self._pdb_cache[name] = None if multi else self.pdb.usage(pods)
        return self._pdb_cache[name]

    def multi_node(self, *, delete_only: bool = False) -> bool:
        # A search that found nothing is not repeated until capacity has been added (a replacement launched):
        # deletions since then only took room away, which cannot make a larger set fit.
        if self.multi_failed_epoch.get(delete_only) == self.sim.epoch:
            return False
        cands = self._within_limits(self._consolidatable(), MAX_MULTI_CANDIDATES)
        if len(cands) < 2 or not self._multi_search(cands, delete_only=delete_only):
            self.multi_failed_epoch[delete_only] = self.sim.epoch
            return False
        return True

    def _first_fit_decides(self, pods: Sequence[Pod]) -> bool:
        """True when room alone decides where these pods may go (first-fit onto existing nodes is then valid)."""
        if not pods:
            return False
        known = self._ff_decides
        for p in pods:
            hit = known.get(p.key)
            if hit is None:
                hit = known[p.key] = self._unconstrained(p) and self.sim.inert(p) and p.requests.get("pods", 0) > 0
            if not hit:
                return False
        return True

    def _delete_whatif(self, names: Sequence[str]) -> WhatIf | None:
        """The move that deletes `names` with every pod landing on the other nodes, launching nothing; None when
        the pods need a new node (or the simulation limit is reached). Pods that room alone decides are placed by
        first-fit without a simulation: what first-fit leaves over is exactly what the Scheduler, which fills
        existing nodes the same way, would have to open a new node for."""
        own = [p for n in names for p in self._pods(n)]
        bound = [p for n in names for p in self.sim.reserved_on.get(n, ())]
        pods = own + bound
        if not pods:
            return None
        if self._first_fit_decides(pods):
            targets, rest, _ = self._first_fit_elsewhere(names, pods, all_or_nothing=True)
            if rest:
                return None  # a pod needs a new node
            return WhatIf(Results(), own, targets=targets, displaced=bound)
        if self._out_of_solves():
            return None
        wi = self.sim.what_if(names, max_new=1)
        return wi if wi.ok and not wi.claims else None

    def _multi_search(self, cands: list[str], *, delete_only: bool = False) -> bool:
        """Karpenter's multi-node search over `cands` in order: the longest prefix that can go (binary search).
        delete_only: the longest prefix whose pods all land on the other nodes, launching nothing."""
        best: tuple[list[str], WhatIf, float, dict[str, list[str]], str] | None = None

        def attempt(n: int) -> bool:
            nonlocal best
            prefix = cands[:n]
            # (a delete's own first-fit is a cheaper test than the precheck's necessary condition)
            if not delete_only and self._precheck(prefix):
                return False
            if delete_only:
                wi = self._delete_whatif(prefix)
                if wi is None:
                    return False
            else:
                wi = self._first_fit_whatif(prefix)  # its own first-fit pass also rules out _first_fit_check's
            if wi is None:
                if self._first_fit_check(prefix) or self._out_of_solves():
                    return False
                wi = self.sim.what_if(prefix, max_new=1)
            fail, savings, options, note = self._judge(prefix, wi)
            if fail:
                return False
            best = (prefix, wi, savings, options, note)
            return True

        # The whole list is probed first: when it works no smaller prefix can be larger, and on a fragmented
        # cluster it often does, which saves the search's other five or six simulations.
        hi = self._longest_plausible_prefix(cands)
        if hi >= 1 and not attempt(hi):
            lo, hi = 1, hi - 1
            while lo <= hi and not self.truncated:
                mid = (lo + hi) // 2
                if attempt(mid):
                    lo = mid + 1
                else:
                    hi = mid - 1
        if best is None:
            return False
        prefix, wi, savings, options, note = best
        why = self._consolidation_why(prefix, wi, savings, note)
        self._commit(prefix, wi, "underutilized", why, savings, options, method="multi-node")
        return True

    def _type_table(self) -> tuple[tuple[str, ...], npt.NDArray[np.int64], npt.NDArray[np.float64], list[str]]:
        """Every type some pool could launch: allocatable, and its cheapest offering's price and capacity type.

        Optimistic on purpose (DaemonSet overhead and the pods' own constraints ignored): it only serves to skip
        simulations that cannot succeed, so it must never say no where the simulation could say yes.
        """
        if self._types is None:
            keys = {"cpu", "memory", "pods"}
            for p in (*self.c.running, *self.c.pending):
                keys.update(p.requests)
            kt = tuple(sorted(keys))
            rows: list[list[int]] = []
            prices: list[float] = []
            labels: list[str] = []
            for it in self.c.catalog:
                best: tuple[float, str] | None = None
                for pool in self.c.nodepools:
                    tl = dict(it.labels)
                    tl[INSTANCE_TYPE_LABEL] = it.name
                    reqs = pool.requirements
                    if not all(r.has(tl.get(k)) for k, r in reqs.items() if k not in (ZONE_LABEL, CAPACITY_TYPE_LABEL)):
                        continue
                    zr, cr = reqs.get(ZONE_LABEL), reqs.get(CAPACITY_TYPE_LABEL)
                    for o in it.offerings:
                        if not o.available or o.price is None:
                            continue
                        if (zr is not None and not zr.has(o.zone)) or (cr is not None and not cr.has(o.capacity_type)):
                            continue
                        if best is None or o.price < best[0]:
                            best = (o.price, o.capacity_type)
                if best is None:
                    continue
                rows.append([it.allocatable.get(k, 0) for k in kt])
                prices.append(best[0])
                labels.append(f"{it.name} {best[1]}")
            self._types = (
                kt,
                np.array(rows, dtype=np.int64).reshape(len(rows), len(kt)),
                np.array(prices, dtype=np.float64),
                labels,
            )
        return self._types

    def _sorted_types(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
        """Type prices ascending, and the running maximum allocatable over the types up to each one."""
        if self._by_price is None:
            _, talloc, tprice, _ = self._type_table()
            order = np.argsort(tprice, kind="stable")
            cm = np.maximum.accumulate(talloc[order], axis=0) if len(order) else talloc
            self._by_price = (tprice[order], cm)
        return self._by_price

    def _biggest_cheaper(self, costs: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
        """Per cost, the elementwise largest allocatable among types strictly cheaper (zeros when none)."""
        prices, cm = self._sorted_types()
        idx = np.searchsorted(prices, costs - _EPS, side="left")
        out = np.zeros((len(costs), cm.shape[1] if cm.ndim == 2 else 0), dtype=np.int64)
        has = idx > 0
        if bool(has.any()):
            out[has] = cm[idx[has] - 1]
        return out

    def _longest_plausible_prefix(self, cands: Sequence[str]) -> int:
        """The longest prefix whose pods could fit at all: their total must not exceed the free room left on the
        other nodes plus the largest type cheaper than the prefix (a necessary condition, so nothing valid is
        lost)."""
        keys = self._type_table()[0]
        names, free = self.sim.free_matrix(keys)
        row = {n: i for i, n in enumerate(names)}
        freec = np.clip(free, 0, None)
        total = freec.sum(axis=0)
        # what the nodes' pods request, with the pending pods bound for them (which must move too)
        pods = np.array([self._demand(n) for n in cands], dtype=np.int64).reshape(len(cands), len(keys))
        own = np.array([freec[row[n]] if n in row else np.zeros(len(keys), dtype=np.int64) for n in cands])
        costs = np.cumsum(np.array([self.price[n] for n in cands], dtype=np.float64))
        ok = np.all(np.cumsum(pods, axis=0) <= total - np.cumsum(own, axis=0) + self._biggest_cheaper(costs), axis=1)
        good = np.flatnonzero(ok)
        return int(good[-1]) + 1 if len(good) else 0

    def _precheck_many(self, cands: Sequence[str]) -> dict[str, str]:
        """_precheck for many single nodes at once (one numpy pass instead of one per node)."""
        keys, talloc, tprice, tlabel = self._type_table()
        names, free = self.sim.free_matrix(keys)
        row = {n: i for i, n in enumerate(names)}
        pod_rows: list[list[int]] = []
        owner: list[int] = []
        cidx: list[int] = []
        for ci, n in enumerate(cands):
            for p in self._pods(n):
                pod_rows.append([p.requests.get(k, 0) for k in keys])
                owner.append(row.get(n, -1))
                cidx.append(ci)
        if not pod_rows or not len(names):
            return {}
        pm = np.array(pod_rows, dtype=np.int64)
        uniq, inv = np.unique(pm, axis=0, return_inverse=True)
        inv = np.asarray(inv).reshape(-1)
        fit_u = np.all(uniq[:, None, :] <= free[None, :, :], axis=2)  # distinct pod shapes x nodes
        count = fit_u.sum(axis=1)[inv]
        own_row = np.asarray(owner, dtype=np.int64)
        own_fit = np.where(own_row >= 0, fit_u[inv, np.clip(own_row, 0, None)], False)
        elsewhere = (count - own_fit.astype(np.int64)) > 0
        ci_arr = np.asarray(cidx, dtype=np.int64)
        nc = len(cands)
        stuck = np.zeros((nc, len(keys)), dtype=np.int64)
        np.add.at(stuck, ci_arr[~elsewhere], pm[~elsewhere])
        total_pods = np.zeros((nc, len(keys)), dtype=np.int64)
        np.add.at(total_pods, ci_arr, pm)
        freec = np.clip(free, 0, None)
        own_free = np.array([freec[row[n]] if n in row else np.zeros(len(keys), dtype=np.int64) for n in cands])
        costs = np.array([self.price[n] for n in cands], dtype=np.float64)
        roomy = np.all(total_pods <= freec.sum(axis=0) - own_free + self._biggest_cheaper(costs), axis=1)
        out: dict[str, str] = {}
        has_stuck = np.any(stuck > 0, axis=1)
        for ci in np.flatnonzero(~roomy).tolist():
            out[cands[ci]] = "its pods do not fit in the free room of the other nodes plus one cheaper node"
        check = np.flatnonzero(has_stuck)  # the more telling reason, when there is one, replaces the above
        if len(check):
            ok = np.all(talloc[None, :, :] >= stuck[check][:, None, :], axis=2)  # candidates x types
            priced = np.where(ok, tprice[None, :], np.inf)
            # no type at all (no pool can launch anything): no column to take the minimum over
            best = np.argmin(priced, axis=1) if priced.shape[1] else np.zeros(len(check), dtype=np.int64)
            for j, ci in enumerate(check.tolist()):
                n = cands[ci]
                if not priced.shape[1]:
                    out[n] = NO_TYPE_WHY
                elif not bool(ok[j].any()):
                    out[n] = "its pods would need more than one new node (consolidation launches at most one)"
                elif tprice[best[j]] + _EPS >= costs[ci]:
                    out[n] = (
                        f"no cheaper replacement: cheapest fitting option {tlabel[best[j]]} at "
                        f"{money(float(tprice[best[j]]))} ≥ current {money(float(costs[ci]))}"
                    )
        return out

    @staticmethod
    def _unconstrained(p: Pod) -> bool:
        return not (
            p.node_selector or p.required_terms or p.preferred_terms or p.tolerations or p.spread or p.affinity
            or p.anti_affinity or p.preferred_affinity or p.preferred_anti_affinity or p.host_ports
        )

    def _first_fit_whatif(self, names: Sequence[str], *, simulate: bool = True) -> WhatIf | None:
        """The move that deletes `names`, built without a simulation when first-fit places every pod to move.

        A pod with no placement constraint that no topology rule in the cluster can see (sim.inert) is decided by
        room and taints alone, so first-fit onto the other untainted nodes (largest pod first, nodes in the order
        the Scheduler tries them) is a valid placement with every constraint honoured; the pending pods bound for
        `names` move with the evicted ones. None when that does not hold or something is left over for a new node
        (then a simulation decides, since only it can plan the new node).

        When some pods are left over, only those are simulated, against no existing node (sim.what_if_rest): the
        new node the move needs is planned by the provisioning engine without it scanning the whole cluster; and
        when no pool may launch a node, the move fails without a simulation. None: not applicable (the caller
        runs the full simulation), or simulate is off, or the simulation limit is reached."""
        own = [p for n in names for p in self._pods(n)]
        bound = [p for n in names for p in self.sim.reserved_on.get(n, ())]
        pods = own + bound
        if not self._first_fit_decides(pods):
            return None
        keys = self._type_table()[0]
        if not len(self.sim.first_fit_matrix(keys)[0]):
            return None
        targets, rest, left = self._first_fit_elsewhere(names, pods)
        if not rest:
            return WhatIf(Results(), own, targets=targets, displaced=bound)
        # what is left needs the one new node: the same necessary condition as _first_fit_check, from this pass
        _, talloc, tprice, tlabel = self._type_table()
        cost = sum(self.price[n] for n in names)
        why = _one_cheaper_node_why(np.all(talloc >= left, axis=1), tprice, tlabel, cost)
        if why:
            wi = WhatIf(Results(), [])
            wi.failure = why
            return wi
        if self.sim.no_new_node(names):
            # what first-fit leaves over needs a new node, and no pool may launch one
            wi = WhatIf(Results(), [])
            who = "pending pod" if any(p.key == rest[0].key for p in bound) else "pod"
            wi.failure = f"{who} {rest[0].key} would not fit elsewhere (every nodepool has reached its limits)"
            return wi
        if not simulate or self._out_of_solves():
            return None
        return self.sim.what_if_rest(names, own, bound, targets, rest)

    def _first_fit_applies(self, names: Sequence[str]) -> bool:
        """True when the pods of `names` have no placement constraint at all and no pending pod is bound for them
        (pending pods bound elsewhere already hold their room in the free matrix)."""
        if any(self.sim.reserved_on.get(n) for n in names):
            return False  # those pending pods would have to move too: let the simulation place them
        pods = [p for n in names for p in self._pods(n)]
        return bool(pods) and all(self._unconstrained(p) for p in pods)

    def _first_fit_check(self, names: Sequence[str]) -> str | None:
        """For pods with no placement constraints at all, the simulation's existing-node step is plain first-fit:
        largest pod first, nodes in name order (skipping tainted ones, which such pods cannot use). Emulating it
        tells what is left for the one new node, and whether a type cheaper than the node could hold that, without
        the cost of a simulation. None: nothing ruled out (the simulation decides)."""
        left = self._first_fit_left(names)
        if left is None or not bool(left.any()):
            return None
        _, talloc, tprice, tlabel = self._type_table()
        cost = sum(self.price[n] for n in names)
        return _one_cheaper_node_why(np.all(talloc >= left, axis=1), tprice, tlabel, cost)

    def _first_fit_left(self, names: Sequence[str]) -> npt.NDArray[np.int64] | None:
        """What first-fit onto the other nodes leaves over of the pods of `names` (None when _first_fit_applies
        does not hold). All zeros means every pod fits on an existing node, which for such pods is a valid
        placement whatever order a simulation would try nodes in."""
        if not self._first_fit_applies(names):
            return None
        return self._first_fit_elsewhere(names, [p for n in names for p in self._pods(n)])[2]

    def _first_fit_elsewhere(
        self, names: Sequence[str], pods: Sequence[Pod], *, all_or_nothing: bool = False
    ) -> tuple[dict[str, str], list[Pod], npt.NDArray[np.int64]]:
        """_first_fit of `pods` onto the untainted nodes but `names`, in the order the Scheduler tries them."""
        keys = self._type_table()[0]
        rows, free = self.sim.first_fit_matrix(keys)
        skip = [rows[n] for n in names if n in rows]  # the nodes themselves are going
        return first_fit(
            pods, keys, free, self.sim.first_fit_names(keys), all_or_nothing=all_or_nothing, skip=skip
        )

    def _precheck(self, names: Sequence[str]) -> str | None:
        """A necessary condition, checked before paying for a simulation: the pods of `names` must fit in the free
        room of the other nodes plus one new node cheaper than `names`. Returns why not, or None to simulate."""
        keys, talloc, tprice, tlabel = self._type_table()
        pods = [p for n in names for p in self._pods(n)]
        if not pods:
            return None
        cost = sum(self.price[n] for n in names)
        others, free = self.sim.free_matrix(keys)
        row = self.sim.row_index(keys)
        drop = [row[n] for n in names if n in row]
        f = np.delete(free, drop, axis=0) if drop else free
        pm = np.array([[p.requests.get(k, 0) for k in keys] for p in pods], dtype=np.int64)
        fits = np.any(np.all(pm[:, None, :] <= f[None, :, :], axis=2), axis=1) if len(f) else np.zeros(len(pods), dtype=bool)
        cheaper = tprice < cost - _EPS
        biggest = talloc[cheaper].max(axis=0) if bool(cheaper.any()) else np.zeros(len(keys), dtype=np.int64)
        roomy = not bool((pm.sum(axis=0) > np.clip(f, 0, None).sum(axis=0) + biggest).any())
        stuck = pm[~fits]
        if len(stuck):
            need = stuck.sum(axis=0)
            why = _one_cheaper_node_why(np.asarray((talloc >= need).all(axis=1), dtype=bool), tprice, tlabel, cost)
            if why:
                return why
        if not roomy:
            return "its pods do not fit in the free room of the other nodes plus one cheaper node"
        return None

    def single_node(self, *, delete_only: bool = False) -> bool:
        """Karpenter's single-node consolidation over the candidates in order, every move found in one pass.
        delete_only: only moves whose pods all land on other nodes, launching nothing."""
        tag = "single-delete" if delete_only else "single"
        did = False
        cands = self._consolidatable()
        todo = [n for n in cands if self.failed.get((tag, n)) != self.sim.epoch]
        # capacity only shrinks within the pass except where a replacement adds some, and then the epoch moves
        # and the next pass looks again: so one necessary-condition check at the start of the pass is enough
        early = self._precheck_many(todo)
        index: RoomIndex | None = None
        for n in cands:
            if n in self.disrupted or n not in self.sim.specs:
                continue
            if self.failed.get((tag, n)) == self.sim.epoch:
                continue
            pool = self.info[n].nodepool or ""
            room, text = self.budget_room(pool, "underutilized")
            if room is not None and room <= 0:
                self._spare(n, text, "budget")
                continue
            if self.hard_reason(n) or self.gate_reason(n) or not self._pods(n):
                continue  # an earlier action this pass moved pods onto it
            pre = early.get(n)
            if pre is None and did and not self._first_fit_applies([n]):
                pre = self._precheck([n])  # the state moved since the pass began: look again, it is cheap
            if pre:
                self.failed[(tag, n)] = self.sim.epoch
                self._spare(n, pre)
                continue
            placed: tuple[list[int], list[tuple[int, ...]]] | None = None
            if delete_only:
                own = self._pods(n)
                bound = self.sim.reserved_on.get(n, [])
                if self._first_fit_decides([*own, *bound]):
                    # most nodes of a pass fail this check once earlier deletes have taken the room: the index
                    # answers it without numpy, and is kept up to date as the deletes are applied
                    keys = self._type_table()[0]
                    if index is None:
                        index = RoomIndex(self.sim.first_fit_names(keys), self.sim.first_fit_matrix(keys)[1])
                    moving = largest_first([*own, *bound])
                    vecs = [p.requests.vector(keys) for p in moving]
                    rows = index.place(n, vecs)
                    wi = None
                    if rows is not None:
                        targets = {p.key: index.names[r] for p, r in zip(moving, rows, strict=True)}
                        wi = WhatIf(Results(), list(own), targets=targets, displaced=list(bound))
                        placed = (rows, vecs)
                else:
                    wi = self._delete_whatif([n])
                if wi is None:
                    self.failed[(tag, n)] = self.sim.epoch
                    if self.truncated:
                        break
                    continue
            else:
                wi = self._first_fit_whatif([n])  # its first-fit pass also rules out what _first_fit_check would
            if wi is None:
                pre = self._first_fit_check([n]) if self._first_fit_applies([n]) else None
                if pre:
                    self.failed[(tag, n)] = self.sim.epoch
                    self._spare(n, pre)
                    continue
                if self._out_of_solves():
                    break
                wi = self.sim.what_if([n], max_new=1)
            fail, savings, options, note = self._judge([n], wi)
            if fail:
                self.failed[(tag, n)] = self.sim.epoch
                self._spare(n, fail)
                continue
            why = self._consolidation_why([n], wi, savings, note)
            self._commit([n], wi, "underutilized", why, savings, options, method="single-node")
            did = True
            if index is not None:
                if placed is not None:
                    index.apply(n, *placed)
                else:
                    index = None  # a move the index did not see: build it again from the new state
        return did

    # ------------------------------------------------------------------ repack (Loadmaster's own, beyond Karpenter)
    # Karpenter's moves only ever remove nodes (k nodes -> at most one). When the cheapest capacity comes in small
    # nodes (burstables price a vCPU 2-4x below anything else), the cheapest arrangement of a fragmented cluster has
    # MORE, smaller nodes, which no such move can reach. A repack takes a group of candidate nodes of one NodePool
    # and capacity type, plans all their pods onto new nodes only with the provisioning Scheduler's cost packer, and
    # replaces the group with whatever it launches when that is cheaper by a margin.

    def _repackable(self, name: str) -> bool:
        """True when the node's pods, and the pending pods bound for it, may be planned onto new nodes without the
        Scheduler seeing the rest of the cluster: none has a spread or pod (anti-)affinity rule of its own, required
        or preferred, and no such rule of any pod selects it (so neither they nor anyone else can count them).
        Node selectors, node affinity, tolerations and host ports are fine: the Scheduler honours them among the
        new nodes, which hold nothing else."""
        hit = self._repackable_cache.get(name)
        if hit is None:
            hit = self._repackable_cache[name] = not any(
                p.spread or p.affinity or p.anti_affinity or p.preferred_affinity or p.preferred_anti_affinity
                or self.sim.seen_by_topology(p)
                for p in (*self._pods(name), *self.sim.reserved_on.get(name, ()))
            )
        return hit

    def _unit_rates(self) -> npt.NDArray[np.float64]:
        """Per resource of the type table, the lowest price per unit of allocatable over the types any pool may
        launch. Any set of new nodes holding R of a resource costs at least R x its rate, so the largest such
        product is a lower bound on what a group's pods cost anywhere: it orders the groups and skips the hopeless
        ones without a simulation."""
        if self._repack_rate is None:
            _, talloc, tprice, _ = self._type_table()
            with np.errstate(divide="ignore", invalid="ignore"):
                per = np.where(talloc > 0, tprice[:, None] / np.where(talloc > 0, talloc, 1), np.inf)
            rates = per.min(axis=0) if len(per) else np.zeros(talloc.shape[1])
            self._repack_rate = np.where(np.isfinite(rates), rates, 0.0)
        return self._repack_rate

    def _demand(self, name: str) -> npt.NDArray[np.int64]:
        """What the node's pods and the pending pods bound for it request, over the type table's resources."""
        hit = self._demand_cache.get(name)
        if hit is None:
            keys = self._type_table()[0]
            vecs = [p.requests.vector(keys) for p in (*self._pods(name), *self.sim.reserved_on.get(name, ()))]
            hit = self._demand_cache[name] = (
                np.array(vecs, dtype=np.int64).sum(axis=0) if vecs else np.zeros(len(keys), dtype=np.int64)
            )
        return hit

    def _potential(self, name: str, rates: npt.NDArray[np.float64]) -> float:
        """The node's price minus a lower bound on what its pods cost anywhere (see _unit_rates); cached."""
        hit = self._potential_cache.get(name)
        if hit is None:
            hit = self._potential_cache[name] = self.price[name] - float((self._demand(name) * rates).max())
        return hit

    def _repack_need(self, cost: float) -> float:
        """The least a repack of nodes costing `cost` must save. A repack evicts every pod of its group and launches
        several nodes, and the cost packer's plans vary by a few percent with the exact pods they are given: 5% of
        the group's cost keeps that noise from churning the cluster (a later run cannot undo and redo a move for
        the same few percent), and $0.01/h (about $7 a month) keeps whole-node evictions from being made for cents.
        --min-savings raises it, never lowers it."""
        need = max(REPACK_MIN_FRACTION * cost, REPACK_MIN_DOLLARS)
        if self.min_savings is not None:
            need = max(need, self.min_savings.dollars or 0.0, cost * (self.min_savings.percent or 0.0) / 100)
        return need

    def _offer_price(self, it_name: str, zone: str, capacity_type: str) -> float | None:
        """The price of the type's available offering in that zone and capacity type (what a launch would pay)."""
        if self._offers is None:
            self._offers = {}
            for it in self.c.catalog:
                for o in it.offerings:
                    if o.available and o.price is not None:
                        k = (it.name, o.zone, o.capacity_type)
                        self._offers[k] = min(o.price, self._offers.get(k, o.price))
        return self._offers.get((it_name, zone, capacity_type))

    def _repack_whatif(self, names: Sequence[str]) -> WhatIf:
        """The repack of `names`: the pods that room alone places (no constraint, seen by no topology rule) first
        fill the free room of the nodes the run leaves in place (_repack_holes), first-fit, largest first; every
        other pod, and the pending pods bound for `names`, are planned onto new nodes by the cost packer."""
        pods = [*(p for n in names for p in self._pods(n)), *(p for n in names for p in self.sim.reserved_on.get(n, ()))]
        fill = [p for p in pods if self._first_fit_decides([p])]
        targets: dict[str, str] = {}
        if fill and self._repack_holes:
            keys = self._type_table()[0]
            free = self.sim.first_fit_matrix(keys)[1]
            names_ff = self.sim.first_fit_names(keys)
            holes = self._repack_holes
            allow = np.fromiter((n in holes for n in names_ff), dtype=bool, count=len(names_ff))
            if bool(allow.any()):
                targets = first_fit(fill, keys, free, names_ff, allow=allow)[0]
        if not targets:
            return self.sim.what_if_new_nodes(names)
        wi = self.sim.what_if_new_nodes(names, only=[p for p in pods if p.key not in targets])
        if wi.ok:
            wi.targets.update(targets)
        return wi

    def _judge_repack(self, names: Sequence[str], wi: WhatIf) -> tuple[str, float, dict[str, list[str]], str]:
        """(failure, savings, launch options per new nodeclaim, note) for repacking `names` as `wi` plans it."""
        cost = sum(self.price[n] for n in names)
        if not wi.ok:
            return wi.failure, 0.0, {}, ""
        if not wi.claims:
            return "no new node planned", 0.0, {}, ""
        need = self._repack_need(cost)
        savings = cost - wi.extra_cost
        if savings + _EPS < need:
            return (
                f"repacking onto {len(wi.claims)} new nodes saves {money(savings)}, less than the {money(need)} a "
                "repack must save",
                savings,
                {},
                "",
            )
        # Each claim may launch any of its types priced at most its planned price plus an equal share of the margin
        # above `need`: whatever every claim ends up launching, the move still saves at least `need`.
        allowance = (savings - need) / len(wi.claims)
        from_spot = any(self.info[n].spec.labels.get(CAPACITY_TYPE_LABEL) == CAPACITY_TYPE_SPOT for n in names)
        options: dict[str, list[str]] = {}
        pinned = False
        for c in wi.claims:
            ceiling = c.price_per_hour + allowance + _EPS
            opts = [c.instance_type] + [
                t
                for t in c.instance_type_options
                if t != c.instance_type
                and (pr := self._offer_price(t, c.zone, c.capacity_type)) is not None
                and pr <= ceiling
            ]
            if c.capacity_type == CAPACITY_TYPE_SPOT:
                if from_spot:
                    refused = _spot_to_spot_why(len(names), len(opts))
                    if refused:
                        return refused, 0.0, {}, ""
                    opts = opts[:SPOT_TO_SPOT_MIN_TYPES]
                else:
                    pinned = True
            options[c.name] = opts
        return "", savings, options, "; replacements pinned to spot" if pinned else ""

    def _repack_why(self, names: Sequence[str], wi: WhatIf, savings: float, note: str) -> str:
        cost = sum(self.price[n] for n in names)
        counts: dict[str, int] = {}
        for c in wi.claims:
            t = f"{c.instance_type} {c.capacity_type}"
            counts[t] = counts.get(t, 0) + 1
        mix = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        shown = ", ".join(f"{k}x {t}" for t, k in mix[:4]) + (", ..." if len(mix) > 4 else "")
        evicted = {p.key for p in wi.evicted}
        bound = sum(1 for c in wi.claims for p in c.pods if p.key not in evicted)
        on_new = sum(1 for c in wi.claims for p in c.pods if p.key in evicted)
        if on_new == len(evicted):
            held = f"all {len(evicted)} of their pods"
        else:
            held = f"{on_new} of their {len(evicted)} pods, the rest in room left on nodes that stay"
        if bound:
            held += f" and {bound} pending pod{'s' if bound > 1 else ''} that would have scheduled on them"
        what = "1 node" if len(names) == 1 else f"{len(names)} nodes"
        new = "1 new node" if len(wi.claims) == 1 else f"{len(wi.claims)} new nodes"
        return (
            f"underutilized, repack (Loadmaster, beyond Karpenter): {what} ({money(cost)}) replaced by {new} "
            f"({money(wi.extra_cost)}: {shown}) holding {held}; saves {money(savings)}{note}"
        )

    def repack(self) -> bool:
        """One repack action, or False. Groups are formed per NodePool and capacity type from the consolidatable
        nodes whose pods _repackable allows, the largest potential saving first (price minus the lower bound on
        its pods' cost), at most REPACK_MAX_GROUP, within the Underutilized budget and the PDBs taken together (as
        multi-node does)."""
        movable = self._consolidatable()
        cands = [n for n in movable if self._repackable(n)]
        if not cands:
            return False
        # nodes this run leaves in place (launched by earlier actions, spared by a rule, or not candidates at all):
        # a repack may use their free room, and no later repack moves what it puts there
        self._repack_holes = frozenset(self.sim.specs) - frozenset(movable)
        rates = self._unit_rates()
        demand = {n: self._demand(n) for n in cands}
        potential = {n: self._potential(n, rates) for n in cands}
        # the margin's share of a node's price (its dollar floor applies to a group as a whole, not to each node)
        share = max(REPACK_MIN_FRACTION, (self.min_savings.percent or 0.0) / 100 if self.min_savings else 0.0)
        buckets: dict[tuple[str, str], list[str]] = {}
        for n in cands:
            if potential[n] < share * self.price[n]:
                continue  # even a perfect packing of its pods would not save the margin's share: it would dilute
            labels = self.info[n].spec.labels
            buckets.setdefault((self.info[n].nodepool or "", labels.get(CAPACITY_TYPE_LABEL, "")), []).append(n)
        for names in buckets.values():
            names.sort(key=lambda n: (-potential[n], n))
        did = False
        while True:
            found = None
            live = [(key, names) for key, names in buckets.items() if names]
            for _, names in sorted(live, key=lambda kv: (-potential[kv[1][0]], kv[0])):
                group = self._within_limits(names, REPACK_MAX_GROUP)
                found = self._repack_search(group, demand, rates) if group else None
                if found is not None or self.truncated:
                    break
            if found is None:
                return did
            chosen, wi, savings, options, note = found
            why = self._repack_why(chosen, wi, savings, note)
            self._commit(chosen, wi, "underutilized", why, savings, options, method="repack")
            did = True
            # The next repack is looked for at once, without the setup above: a repack moves pods only onto new
            # nodes and nodes that are not candidates, so the other candidates, their pods and their order are as
            # they were. Emptiness, drift and expiration, which come first in every round, are asked first.
            if self.emptiness() or self.drift() or self.expiration():
                return True
            gone = set(chosen)
            for names in buckets.values():
                names[:] = [n for n in names if n not in gone]
            self._repack_holes = frozenset(self.sim.specs) - frozenset(movable)

    def _repack_search(
        self, group: Sequence[str], demand: dict[str, npt.NDArray[np.int64]], rates: npt.NDArray[np.float64]
    ) -> tuple[list[str], WhatIf, float, dict[str, list[str]], str] | None:
        """The largest prefix of `group` (all of it, then halves) whose repack clears the margin.

        The largest group that saves enough saves the most in one action. Measured on the benchmark's full-catalog
        cluster, the smaller groups a "best saving per disrupted node" rule prefers (the first node alone, usually:
        the group is ordered by potential) saved no larger share of their cost, took 13 actions instead of 3, and
        the provisioning Scheduler packs a large group both better and faster per pod than several small ones. A
        size whose lower bound already rules out the margin is not simulated.

        The whole group is tried first: on a fragmented cluster it usually clears the margin, which settles the
        search in one simulation. When it does not, the REPACK_SCREEN nodes of the largest potential are tried
        together before the halving: when even they cannot save the margin's share of their cost, a group of them
        and nodes of less potential rarely does, and the halving would spend a simulation per size for nothing.
        Measured on the benchmark: with no screen, a run that proposes nothing spent 1.4 s of 1.9 s halving (0.7 s
        in all with the screen); a screen of one or 8 nodes was cheaper but missed groups whose pods complement each
        other (Karpenter's example pool: 0.868 of the gap instead of 0.89). Trying the screen before the whole group,
        as an earlier version did, stopped the full catalog without burstables after five repacks (a 16-node plan
        the packer made 10% dearer than the whole group's), leaving 194 single-node replacements to Karpenter's
        methods.
        """
        share = max(REPACK_MIN_FRACTION, (self.min_savings.percent or 0.0) / 100 if self.min_savings else 0.0)

        def plan(names: list[str]) -> tuple[str, WhatIf | None, float, dict[str, list[str]], str]:
            cost = sum(self.price[n] for n in names)
            total = np.sum([demand[n] for n in names], axis=0)
            if cost - float((total * rates).max()) + _EPS < share * cost:
                return "bound", None, 0.0, {}, ""  # no plan can save the margin's share
            # the plan depends only on these nodes' pods, and on the limits when a pool has some
            # (and on the room left on the nodes that stay, which every action changes)
            key = (tuple(names), tuple(len(self._pods(n)) for n in names), len(self.actions))
            if key in self._repack_failed or self._out_of_solves():
                return "known", None, 0.0, {}, ""
            wi = self._repack_whatif(names)
            fail, savings, options, note = self._judge_repack(names, wi)
            if fail:
                self._repack_failed.add(key)
            return fail, wi, savings, options, note

        fallback: tuple[list[str], WhatIf, float, dict[str, list[str]], str] | None = None
        floor = 0  # sizes at or below this are settled by the screen
        whole = list(group)
        fail, wi, savings, options, note = plan(whole)
        if not fail and wi is not None:
            return whole, wi, savings, options, note
        if len(group) > REPACK_SCREEN:
            names = list(group[:REPACK_SCREEN])
            fail, wi, savings, options, note = plan(names)
            if wi is None or (wi.ok and savings < share * sum(self.price[n] for n in names) - _EPS):
                return None  # even the nodes of the largest potential cannot save the margin's share
            if wi.ok:  # (when some pod cannot move, the halving below finds the group without its node)
                floor = REPACK_SCREEN
                if not fail:
                    fallback = (names, wi, savings, options, note)
        size = len(group) // 2
        while size > floor:
            names = list(group[:size])
            fail, wi, savings, options, note = plan(names)
            if not fail and wi is not None:
                return names, wi, savings, options, note
            size //= 2
        return fallback

    # ------------------------------------------------------------------ what a blocked move would save
    def _price_blocked(self, names: Sequence[str]) -> dict[str, float]:
        """For nodes a rule spares (PDB, do-not-disrupt, budget): the saving per hour of consolidating each alone,
        with the rule lifted, in the cluster as the action list leaves it. Judged as single-node consolidation
        judges a move (delete if the pods land elsewhere with every constraint, else one strictly cheaper
        replacement, spot rules included) but without --min-savings, which is a policy rather than a fact about
        the move. Nodes with no saving move, or that the simulation limit left unevaluated, are absent."""
        out: dict[str, float] = {}
        todo = [
            n
            for n in names
            if n in self.sim.specs and self.price_known[n] and self.gate_reason(n) is None
        ]
        if not todo:
            return out
        early = self._precheck_many(todo)
        first = self.sim.solves
        full = 0
        roomy = self._roomiest_rows()
        # the most expensive nodes first: when the allowance runs out, the large savings are known
        todo.sort(key=lambda n: (-self.price[n], n))
        for n in todo:
            if n in early:
                continue
            if not self._pods(n) and not self.sim.reserved_on.get(n):
                out[n] = self.price[n]  # an empty node: deleting it saves what it costs
                continue
            if self._fits_in_roomiest(n, roomy):
                out[n] = self.price[n]  # its pods fit on other nodes as they are: deleting it saves its price
                continue
            # best effort: past the allowance nothing more is priced; those nodes stay unknown (None), and the
            # run itself is never marked truncated for it
            if full >= MAX_BLOCKED_EVALUATIONS or self.sim.solves - first >= MAX_BLOCKED_SOLVES:
                continue
            full += 1
            capped = self.sim.solves >= self.max_solves
            wi = self._first_fit_whatif([n], simulate=not capped)
            if wi is None:
                if capped or self._first_fit_check([n]):
                    continue
                wi = self.sim.what_if([n], max_new=1)
            fail, savings, _, _ = self._judge([n], wi, honour_min_savings=False)
            if not fail and savings > _EPS:
                out[n] = round(savings, 6)
        return out

    def _roomiest_rows(self) -> tuple[dict[str, int], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The first-fit matrix's rows and the ROOMIEST + 1 rows with the most free cpu (then memory)."""
        keys = self._type_table()[0]
        rows, free = self.sim.first_fit_matrix(keys)
        if not len(rows):
            return rows, free, np.zeros(0, dtype=np.int64)
        ci, mi = keys.index("cpu"), keys.index("memory")
        order = np.lexsort((-free[:, mi], -free[:, ci]))[: ROOMIEST + 1]
        return rows, free, order.astype(np.int64)

    def _fits_in_roomiest(
        self, name: str, roomy: tuple[dict[str, int], npt.NDArray[np.int64], npt.NDArray[np.int64]]
    ) -> bool:
        """A cheap sufficient test for pricing: the node's pods (room alone deciding where they go, none pending
        bound for it) first-fit onto the roomiest other nodes. Any placement that fits is a valid one, so a yes
        proves the delete; a no proves nothing (the full evaluation decides)."""
        rows, free, order = roomy
        pods = self._pods(name)
        if not len(order) or not self._first_fit_applies([name]) or not all(
            self.sim.inert(p) and p.requests.get("pods", 0) > 0 for p in pods
        ):
            return False
        own = rows.get(name)
        pick = order[order != own][:ROOMIEST] if own is not None else order[:ROOMIEST]
        f = free[pick].copy()
        keys = self._type_table()[0]
        for p in sorted(pods, key=lambda q: (-q.requests.get("cpu", 0), -q.requests.get("memory", 0), q.key)):
            v = np.array([p.requests.get(k, 0) for k in keys], dtype=np.int64)
            ok = np.flatnonzero(np.all(f >= v, axis=1))
            if not len(ok):
                return False
            f[ok[0]] -= v
        return True

    # ------------------------------------------------------------------ the loop
    def run(self) -> Report:
        started = time.perf_counter()
        repacking = False
        while True:
            if self.emptiness() or self.drift() or self.expiration():
                continue
            if self.repack_enabled:
                # Moves that only delete nodes come first: their pods land in room already paid for, nothing is
                # launched. Then repack, before Karpenter's replacements (k nodes -> one cheaper node): see the
                # module's docstring for why this order. While repacks follow one another, deletes are not looked
                # for between them; once repack finds nothing, they are, with all the room the repacks left.
                if not repacking and (self.multi_node(delete_only=True) or self.single_node(delete_only=True)):
                    continue
                if self.repack():
                    repacking = True
                    continue
                if repacking:
                    repacking = False
                    continue
            if self.multi_node() or self.single_node():
                continue
            break
        report = Report(actions=self.actions)
        report.nodes = len(self.input_order)
        report.cost_before = round(sum(self.price.values()), 6)
        report.cost_after = round(report.cost_before - sum(a.savings_per_hour for a in self.actions), 6)
        for n in self.input_order:
            if n in self.disrupted:
                continue
            r, kind = self.hard_block(n)
            if r is None and n in self.method_why:
                r, kind = self.method_why[n], self.method_kind.get(n)
            if r is None and not self.price_known[n]:
                r = "its price is unknown (the catalog has no offering for its instance type, zone and capacity type)"
            if r is None and n in self.why_not:
                r, kind = self.why_not[n], self.why_kind.get(n)
            r = r or self.gate_reason(n)
            if r is None:
                if self.truncated:
                    r = "not evaluated: the simulation limit was reached"
                else:
                    r = "no cheaper arrangement of its pods was found"
            report.not_disrupted.append(NotDisrupted(n, r, kind))
        blocked = [x.node for x in report.not_disrupted if x.blocked_by is not None]
        prices = self._price_blocked(blocked) if self.price_blocked else {}
        for x in report.not_disrupted:
            x.savings_per_hour = prices.get(x.node)
        report.solves = self.sim.solves
        report.unusable_nodepools = self.sim.unusable_nodepools(self._type_table()[0])
        report.solve_seconds = time.perf_counter() - started
        return report


def consolidate(
    cluster: Cluster,
    at: datetime | None = None,
    *,
    min_savings: MinSavings | None = None,
    max_solves: int = 20_000,
    price_blocked: bool = True,
    repack: bool = True,
) -> Report:
    """The actions the disruption controller would take now, in order, with the reasons for every node it spares.

    price_blocked: work out what each move a PDB, do-not-disrupt or budget blocks would save (NotDisrupted's
    savings_per_hour); a caller that never shows it (the preview) saves the time. The actions are the same.
    repack: also try Loadmaster's repack move (groups of nodes whose pods are re-planned onto new nodes, possibly
    more of them), after the moves that only delete nodes and before Karpenter's replacements; False gives
    Karpenter's result.
    """
    now = at or datetime.now(UTC)
    with gc_paused():  # one collection after the run instead of one after each of its solves
        return _Engine(_in_engine_range(cluster), now, min_savings, max_solves, price_blocked, repack).run()


def _in_engine_range(c: Cluster) -> Cluster:
    """The cluster with every amount the engine computes with within MAX_AMOUNT (packing.resources): instance
    types beyond it left out, nodes' allocatable and pods' requests clamped. `c` itself when all are within."""
    specs = [n.spec for n in c.nodes] + list(c.inflight)
    if (
        all(it.capacity.in_range() and it.overhead.in_range() for it in c.catalog)
        and all(s.allocatable.in_range() and (s.capacity is None or s.capacity.in_range()) for s in specs)
        and all(p.requests.in_range() for p in c.running)
        and all(p.requests.in_range() for p in c.pending)
        and all(ds.pod.requests.in_range() for ds in c.daemonsets)
    ):
        return c
    return dataclasses.replace(
        c,
        catalog=representable_types(c.catalog),
        nodes=[n if (s := clamped_node(n.spec)) is n.spec else dataclasses.replace(n, spec=s) for n in c.nodes],
        running=[clamped_pod(p) for p in c.running],
        pending=[clamped_pod(p) for p in c.pending],
        inflight=[clamped_node(s) for s in c.inflight],
        daemonsets=[
            ds if ds.pod.requests.in_range() else dataclasses.replace(ds, pod=clamped_pod(ds.pod))
            for ds in c.daemonsets
        ],
    )
