"""What every advisor check reads: the parsed inputs, the disruption extras, the catalog, the objects'
manifests as written (a fix is a patch on one of them), the pools' nodes and pods, and the engine runs the
dollars come from (a fresh plan of a set of pods on a set of NodePools, priced by the catalog)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from typing import Any

from packing.advisor.finding import HOURS_PER_MONTH
from packing.advisor.patches import merge_patch
from packing.disruption.inputs import Extras
from packing.disruption.model import DisruptionSettings
from packing.disruption.pdb import PdbIndex
from packing.fields import InputError
from packing.instancetype import InstanceType, Offering
from packing.kubeobjects import Inputs, add_object, expand_workloads
from packing.nodepool import (
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
    ExistingNodeSpec,
    NodePool,
)
from packing.planning import plan
from packing.pods import Pod
from packing.requirements import Requirements
from packing.scheduling.results import Results
from packing.scheduling.scheduler import Scheduler

__all__ = ["DO_NOT_DISRUPT_SHARE", "Context", "Manifests", "PoolCost", "manifest_key", "replan"]

# LM154: do-not-disrupt on more than this share of the running pods (--do-not-disrupt-share)
DO_NOT_DISRUPT_SHARE = 0.2

# (kind, namespace, name) -> the object as read; cluster-scoped kinds have namespace ""
Manifests = dict[tuple[str, str, str], Mapping[str, Any]]
_CLUSTER_SCOPED = frozenset({"Namespace", "Node", "NodeClaim", "NodePool", "EC2NodeClass", "InstanceType"})


def manifest_key(doc: Mapping[str, Any]) -> tuple[str, str, str] | None:
    meta = doc.get("metadata")
    if not isinstance(meta, Mapping) or not isinstance(doc.get("kind"), str):
        return None
    kind = str(doc["kind"])
    ns = "" if kind in _CLUSTER_SCOPED else str(meta.get("namespace") or "default")
    return kind, ns, str(meta.get("name", ""))


@dataclasses.dataclass(frozen=True)
class PoolCost:
    """A fresh plan of some pods: its $/h and how many pods it could not place."""

    per_hour: float
    unschedulable: int


class Context:
    def __init__(
        self,
        inputs: Inputs,
        extras: Extras,
        catalog: Sequence[InstanceType],
        manifests: Manifests,
        *,
        do_not_disrupt_share: float = DO_NOT_DISRUPT_SHARE,
    ) -> None:
        expand_workloads(inputs)
        self.do_not_disrupt_share = do_not_disrupt_share
        self.inputs = inputs
        self.extras = extras
        self.catalog = list(catalog)
        self.manifests = manifests
        self.pools = sorted(inputs.nodepools, key=lambda p: (-p.weight, p.name))
        self._costs: dict[tuple[Any, ...], PoolCost] = {}

    # ------------------------------------------------------------ objects
    def pool_manifest(self, name: str) -> Mapping[str, Any]:
        return self.manifests.get(("NodePool", "", name)) or {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": name},
            "spec": {},
        }

    def settings(self, pool: str) -> DisruptionSettings:
        return self.extras.settings.get(pool, DisruptionSettings())

    @cached_property
    def types_by_name(self) -> dict[str, InstanceType]:
        return {it.name: it for it in self.catalog}

    @cached_property
    def pods(self) -> list[Pod]:
        return [*self.inputs.running, *self.inputs.pending]

    @cached_property
    def baseline(self) -> Results:
        """The provisioner's plan for the pending pods, as `python -m packing plan` makes it."""
        inp = Inputs(**{f.name: _copied(getattr(self.inputs, f.name)) for f in dataclasses.fields(Inputs)})
        return plan(inp, self.catalog, lower_bound=False)

    @cached_property
    def nodes_by_pool(self) -> dict[str, list[ExistingNodeSpec]]:
        out: dict[str, list[ExistingNodeSpec]] = {}
        for n in self.inputs.nodes:
            if n.nodepool:
                out.setdefault(n.nodepool, []).append(n)
        return out

    @cached_property
    def pods_by_pool(self) -> dict[str, list[Pod]]:
        """The pods each pool runs (on its nodes) or would launch for (the baseline plan)."""
        pool_of_node = {n.name: n.nodepool for n in self.inputs.nodes if n.nodepool}
        out: dict[str, list[Pod]] = {}
        for p in self.inputs.running:
            pool = pool_of_node.get(p.node_name)
            if pool:
                out.setdefault(pool, []).append(p)
        for claim in self.baseline.nodeclaims:
            out.setdefault(claim.nodepool, []).extend(claim.pods)
        return out

    @cached_property
    def pdb_index(self) -> PdbIndex:
        return PdbIndex(self.inputs.pdbs, self.pods, self.extras.pdb_status, self.extras.pdb_null)

    # ------------------------------------------------------------ the catalog as a pool sees it
    def pool_offerings(self, pool: NodePool) -> list[tuple[InstanceType, list[Offering]]]:
        """The instance types the pool may launch and, for each, the available offerings its requirements allow
        (zone and capacity type). A requirement on a label the type does not carry is the pool's own label."""
        reqs = pool_requirements(pool)
        zr, cr = reqs.get(ZONE_LABEL), reqs.get(CAPACITY_TYPE_LABEL)
        out = []
        for it in self.catalog:
            if not _type_allowed(reqs, it):
                continue
            offers = [
                o
                for o in it.offerings
                if o.available and (zr is None or zr.has(o.zone)) and (cr is None or cr.has(o.capacity_type))
            ]
            if offers:
                out.append((it, offers))
        return out

    def node_price(self, node: ExistingNodeSpec) -> float | None:
        """$/h of an existing node, from the catalog (its instance type, zone and capacity type labels)."""
        it = self.types_by_name.get(node.labels.get(INSTANCE_TYPE_LABEL, ""))
        if it is None:
            return None
        zone, ct = node.labels.get(ZONE_LABEL), node.labels.get(CAPACITY_TYPE_LABEL)
        prices = [
            o.price
            for o in it.offerings
            if o.price is not None and (zone is None or o.zone == zone) and (ct is None or o.capacity_type == ct)
        ]
        return min(prices) if prices else None

    # ------------------------------------------------------------ engine runs behind the dollars
    def fresh_cost(self, pools: Sequence[NodePool], pods: Iterable[Pod]) -> PoolCost:
        """What the provisioner would pay per hour to place `pods` on new nodes of `pools` alone (no existing
        node): the measure the savings of a fix are taken with, before and after the fix."""
        todo = [p.on_node("") if p.node_name else p for p in pods]
        key = (tuple(repr(p) for p in pools), tuple(sorted(p.key for p in todo)))
        hit = self._costs.get(key)
        if hit is None:
            res = Scheduler(pools, self.catalog, (), (), self.inputs.daemonsets).solve(todo)
            hit = PoolCost(res.cost_per_hour, len(res.unschedulable_reasons))
            self._costs[key] = hit
        return hit

    def patched_pool(self, name: str, patch: Mapping[str, Any]) -> NodePool | None:
        """The NodePool the engine reads from the pool's manifest with `patch` applied (None if it cannot)."""
        doc = merge_patch(self.pool_manifest(name), patch)
        out = Inputs()
        try:
            add_object(doc, out)
        except InputError:
            return None
        return out.nodepools[0] if out.nodepools else None

    def saving(self, name: str, patch: Mapping[str, Any], pods: Sequence[Pod] | None = None) -> float | None:
        """Dollars per month the patch on pool `name` saves on `pods` (default: the pods the pool runs or would
        launch for): a fresh plan of those pods on the pool before and after it, x 730 h. None when there is
        nothing to price, the patched pool cannot be read, or the two plans do not place the same pods."""
        pool = next((p for p in self.pools if p.name == name), None)
        pods = self.pods_by_pool.get(name, []) if pods is None else pods
        after_pool = self.patched_pool(name, patch)
        if pool is None or after_pool is None or not pods:
            return None
        before, after = self.fresh_cost([pool], pods), self.fresh_cost([after_pool], pods)
        if before.unschedulable != after.unschedulable:
            return None
        return round((before.per_hour - after.per_hour) * HOURS_PER_MONTH, 2)


def pool_requirements(pool: NodePool) -> Requirements:
    """The pool's requirements with its template labels as In requirements, as its nodes would carry them."""
    return pool.requirements.intersect(Requirements.from_labels(pool.labels)) if pool.labels else pool.requirements


def _type_allowed(reqs: Requirements, it: InstanceType) -> bool:
    for key, r in reqs.items():
        if key in (ZONE_LABEL, CAPACITY_TYPE_LABEL, NODEPOOL_LABEL):
            continue
        value = it.labels.get(key, it.name if key == INSTANCE_TYPE_LABEL else None)
        if value is not None and not r.has(value):
            return False
    return True


def _copied(value: Any) -> Any:
    return value.copy() if isinstance(value, list | dict | set) else value


def replan(ctx: Context, pools: Sequence[NodePool]) -> Results:
    """The provisioner's plan for the pending pods with `pools` in place of the input's NodePools."""
    inp = Inputs(**{f.name: _copied(getattr(ctx.inputs, f.name)) for f in dataclasses.fields(Inputs)})
    inp.nodepools = list(pools)
    return plan(inp, ctx.catalog, lower_bound=False)
