"""A guaranteed on-demand share, spot first: the annotations that ask for it, whom they bind, and how
provisioning keeps it.

`loadmaster.dev/on-demand-base: "2"` and `loadmaster.dev/on-demand-percentage: "20"` on a NodePool, or on a
Deployment/StatefulSet (its metadata or its pod template; the pods carry the template's), ask that of each
workload's replicas at least `base`, then `percentage` % of the rest (rounded up), run on on-demand nodes; the
others prefer spot. The semantics are those of an EC2 Auto Scaling group's InstancesDistribution
(OnDemandBaseCapacity, OnDemandPercentageAboveBaseCapacity), counted in pods instead of instances.

Which contract binds a workload: its own (the pod template's annotations, else the workload object's, else a
pod's), else that of the first NodePool (by weight, then name) that admits its pods, if that pool has one.

Provisioning (`split` before the solve, `settle` after it) restricts as many of a workload's pending pods as
the contract still lacks, counting its pods already running on on-demand nodes, to
`karpenter.sh/capacity-type In [on-demand]` and gives the others a preferred node affinity for spot. The
scheduling engine itself is not changed: the contract is a rewrite of pod requirements.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from packing.fields import FieldError, sub_path
from packing.instancetype import CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT
from packing.nodepool import CAPACITY_TYPE_LABEL, ExistingNodeSpec, NodePool
from packing.pods import Pod
from packing.requirements import Requirement, Requirements
from packing.scheduling.reasons import DetailValue, Reason, ReasonKind
from packing.scheduling.results import Results
from packing.taints import first_untolerated
from packing.yamlinput import brief

__all__ = [
    "BASE_ANNOTATION",
    "PERCENTAGE_ANNOTATION",
    "Bound",
    "Contract",
    "OnDemandShare",
    "ShareBook",
    "ShareRow",
    "Split",
    "WorkloadRef",
    "allows_on_demand",
    "bind",
    "read_share",
    "row",
    "settle",
    "split",
]

BASE_ANNOTATION = "loadmaster.dev/on-demand-base"
PERCENTAGE_ANNOTATION = "loadmaster.dev/on-demand-percentage"
MAX_BASE = 2**31 - 1
# keys of Inputs.on_demand_shares: (kind, namespace, name); a NodePool's namespace is ""
POD_KIND = "Pod"
NODEPOOL_KIND = "NodePool"
# owners whose pods no share binds: a DaemonSet's and a static pod's run where they must, a CapacityBuffer's are
# virtual (packing.buffers)
_NOT_WORKLOADS = frozenset({"DaemonSet", "Node", "CapacityBuffer"})
_SPOT_PREFERENCE = (1, Requirements([Requirement.new(CAPACITY_TYPE_LABEL, "In", [CAPACITY_TYPE_SPOT])]))


@dataclass(frozen=True, slots=True)
class OnDemandShare:
    base: int = 0
    percentage: int = 0

    def required(self, replicas: int) -> int:
        """How many of `replicas` must run on on-demand: min(base, replicas), then percentage % of the rest,
        rounded up (a fraction of a replica is a whole one on the safe side)."""
        fixed = min(self.base, replicas)
        return fixed + -(-(replicas - fixed) * self.percentage // 100)


def _count(value: Any, path: str, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise FieldError(path, f"must be an integer (as a string, e.g. \"2\"), got {brief(value)}")
    text = str(value).strip()
    digits = text[1:] if text[:1] in "+-" else text
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 18:
        raise FieldError(path, f"must be an integer, got {brief(value)}")
    n = int(text)
    if n < 0:
        raise FieldError(path, f"must not be negative, got {n}")
    if n > hi:
        what = "a percentage: at most 100" if hi == 100 else f"at most {hi}"
        raise FieldError(path, f"must be {what}, got {n}")
    return n


def read_share(annotations: Any, path: str) -> OnDemandShare | None:
    """The contract these annotations ask for (None when they set neither key); FieldError naming the
    annotation when a value is not an integer, is negative, or is a percentage above 100. A missing key is 0."""
    if not isinstance(annotations, Mapping):
        return None  # not an object: not this module's to refuse (the readers that read annotations do)
    ann = annotations
    if BASE_ANNOTATION not in ann and PERCENTAGE_ANNOTATION not in ann:
        return None
    base = ann.get(BASE_ANNOTATION)
    pct = ann.get(PERCENTAGE_ANNOTATION)
    return OnDemandShare(
        0 if base is None else _count(base, sub_path(path, BASE_ANNOTATION), MAX_BASE),
        0 if pct is None else _count(pct, sub_path(path, PERCENTAGE_ANNOTATION), 100),
    )


# ---------------------------------------------------------------- reading (packing.kubeobjects calls these)
def note_object(shares: dict[tuple[str, str, str], OnDemandShare], key: tuple[str, str, str],
                *sources: tuple[Any, str]) -> None:
    """Record the contract of one object under `key`: `sources` are (annotations, path) pairs, the first that
    sets either annotation wins; every source is checked (a bad value is refused wherever it is)."""
    found = [read_share(ann, path) for ann, path in sources]
    share = next((s for s in found if s is not None), None)
    if share is not None:
        shares[key] = share


@dataclass(frozen=True, slots=True, order=True)
class WorkloadRef:
    namespace: str
    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


def workload_key(kind: str, namespace: str, name: str, owner: tuple[str, str] | None) -> tuple[str, str, str]:
    """Where a workload object's contract is recorded: a ReplicaSet a Deployment owns records its Deployment's."""
    if kind == "ReplicaSet" and owner is not None and owner[0] == "Deployment":
        return ("Deployment", namespace, owner[1])
    return (kind, namespace, name)


@dataclass(frozen=True, slots=True)
class Contract:
    workload: WorkloadRef
    share: OnDemandShare
    source: str  # "Deployment default/web" (its own), or "nodepool default"
    pool: str  # the NodePool that admits its pods first ("" when none does)
    pool_allows_on_demand: bool
    replicas: int  # its pods, running and pending
    required: int


class _WorkloadObject(Protocol):
    kind: str
    namespace: str
    name: str
    owner: tuple[str, str] | None


class ShareBook:
    """The contracts of one input: Inputs.on_demand_shares, with the input's workload objects (a ReplicaSet's
    ownerReference names its Deployment). Empty (falsy) when no object asked for a share."""

    def __init__(
        self, shares: Mapping[tuple[str, str, str], OnDemandShare], workloads: Iterable[_WorkloadObject] = ()
    ) -> None:
        self.shares = dict(shares)
        # (namespace, ReplicaSet) -> its Deployment
        self.rs_owners = {
            (w.namespace, w.name): w.owner[1]
            for w in workloads
            if w.kind == "ReplicaSet" and w.owner is not None and w.owner[0] == "Deployment"
        } if self.shares else {}

    def __bool__(self) -> bool:
        return bool(self.shares)

    @property
    def pool_shares(self) -> dict[str, OnDemandShare]:
        return {name: s for (kind, _, name), s in self.shares.items() if kind == NODEPOOL_KIND}

    def workload_of(self, p: Pod) -> WorkloadRef | None:
        """The workload a pod belongs to, by its owner: a ReplicaSet's pods are their Deployment's (the
        ReplicaSet's ownerReference when it is in the input, else the pod-template-hash suffix of its name)."""
        kind, name = p.owner_kind, p.owner_name
        if not kind or not name or kind in _NOT_WORKLOADS:
            return None
        if kind == "ReplicaSet":
            dep = self.rs_owners.get((p.namespace, name))
            h = p.labels.get("pod-template-hash", "")
            if dep is None and h and name.endswith(f"-{h}") and len(name) > len(h) + 1:
                dep = name[: -len(h) - 1]
            if dep is not None:
                return WorkloadRef(p.namespace, "Deployment", dep)
        return WorkloadRef(p.namespace, kind, name)

    def contracts(self, pools: Sequence[NodePool], pods: Iterable[Pod]) -> tuple[dict[WorkloadRef, Contract],
                                                                                   dict[str, WorkloadRef]]:
        """The contract of each workload that has one, and the workload of each of their pods (by key).
        `pods`: the input's running and pending pods (terminating ones do not count as replicas)."""
        if not self.shares:
            return {}, {}
        members: dict[WorkloadRef, list[Pod]] = {}
        for p in pods:
            if p.terminating:
                continue
            w = self.workload_of(p)
            if w is not None:
                members.setdefault(w, []).append(p)
        ordered = sorted(pools, key=lambda q: (-q.weight, q.name))
        pool_shares = self.pool_shares
        out: dict[WorkloadRef, Contract] = {}
        of: dict[str, WorkloadRef] = {}
        for w in sorted(members):
            group = members[w]
            share = self.shares.get((w.kind, w.namespace, w.name))
            source = str(w)
            if share is None:
                share = next(
                    (s for p in group if (s := self.shares.get((POD_KIND, p.namespace, p.name))) is not None), None
                )
            first = next((q for q in ordered if admits(q, group[0])), None)
            if share is None:
                if first is None or first.name not in pool_shares:
                    continue
                share, source = pool_shares[first.name], f"nodepool {first.name}"
            out[w] = Contract(
                w, share, source, first.name if first else "", first is not None and allows_on_demand(first),
                len(group), share.required(len(group)),
            )
            for p in group:
                of[p.key] = w
        return out, of


@dataclass
class Bound:
    """The contracts of one cluster and the workload of each of their pods (by key): what consolidation
    checks its moves against (packing.disruption.ondemand)."""

    contracts: dict[WorkloadRef, Contract] = field(default_factory=dict)
    of: dict[str, WorkloadRef] = field(default_factory=dict)


def bind(book: ShareBook, pools: Sequence[NodePool], pods: Iterable[Pod]) -> Bound:
    return Bound(*book.contracts(pools, pods))


def admits(pool: NodePool, p: Pod) -> bool:
    """Could the pool launch a node for the pod, instance types aside: its taints tolerated, one of the pod's
    node requirement terms compatible with the pool's requirements and labels."""
    if first_untolerated(pool.taints, p.tolerations) is not None:
        return False
    base = Requirements.from_labels(pool.labels).intersect(pool.requirements)
    return any(base.compatible(t) for t in p.node_requirement_terms())


def allows_on_demand(pool: NodePool) -> bool:
    """The pool's requirements and labels allow on-demand capacity (no capacity-type requirement allows it)."""
    r = Requirements.from_labels(pool.labels).intersect(pool.requirements).get(CAPACITY_TYPE_LABEL)
    return r is None or r.has(CAPACITY_TYPE_ON_DEMAND)


def _may_go_on_demand(p: Pod) -> bool:
    return any(
        (r := t.get(CAPACITY_TYPE_LABEL)) is None or r.has(CAPACITY_TYPE_ON_DEMAND) for t in p.node_requirement_terms()
    )


def _pins_capacity_type(p: Pod) -> bool:
    return all(t.get(CAPACITY_TYPE_LABEL) is not None for t in p.node_requirement_terms())


# ---------------------------------------------------------------- provisioning
@dataclass
class ShareRow:
    """One workload's split, as the plan reports it (`on_demand_share`) and the NodePool page shows it."""

    workload: str
    source: str
    pool: str
    base: int
    percentage: int
    replicas: int
    required: int
    on_demand: int
    spot: int
    unschedulable: int = 0

    def json(self) -> dict[str, Any]:
        return {
            "workload": self.workload, "source": self.source, "nodepool": self.pool, "base": self.base,
            "percentage": self.percentage, "replicas": self.replicas, "required": self.required,
            "on_demand": self.on_demand, "spot": self.spot, "unschedulable": self.unschedulable,
        }


@dataclass
class Split:
    pods: list[Pod]  # the pending pods to solve, those of a contract rewritten
    contracts: dict[WorkloadRef, Contract] = field(default_factory=dict)
    of: dict[str, WorkloadRef] = field(default_factory=dict)  # pod key -> workload, for the contracts' pods
    restricted: set[str] = field(default_factory=set)  # keys of the pods put on on-demand
    running: dict[WorkloadRef, dict[str, int]] = field(default_factory=dict)  # capacity type -> running pods
    node_types: dict[str, str] = field(default_factory=dict)  # existing node -> its capacity type


def _capacity_types(nodes: Iterable[ExistingNodeSpec]) -> dict[str, str]:
    return {n.name: n.labels.get(CAPACITY_TYPE_LABEL, "") for n in nodes}


def split(
    book: ShareBook,
    pools: Sequence[NodePool],
    pending: Sequence[Pod],
    running: Sequence[Pod],
    nodes: Sequence[ExistingNodeSpec],
    exclude: Iterable[str] = (),
) -> Split:
    """The pending pods with each contract kept: of each bound workload's pending pods, as many as its contract
    still lacks (required minus its pods running on on-demand nodes) are restricted to on-demand, first by
    name among those whose own requirements allow on-demand; the others get a preferred node affinity for spot
    (weight 1, after their own preferences). `pending` is returned as it is when no contract binds a pod."""
    if not book:
        return Split(list(pending))
    gone = set(exclude)
    live = [p for p in running if p.node_name and p.node_name not in gone]
    contracts, of = book.contracts(pools, [*live, *pending])
    if not contracts:
        return Split(list(pending))
    ct = _capacity_types(nodes)
    counts: dict[WorkloadRef, dict[str, int]] = {w: {} for w in contracts}
    for p in live:
        w = of.get(p.key)
        if w is not None and not p.terminating:
            c = ct.get(p.node_name, "")
            counts[w][c] = counts[w].get(c, 0) + 1
    lacking = {w: c.required - counts[w].get(CAPACITY_TYPE_ON_DEMAND, 0) for w, c in contracts.items()}
    restricted: set[str] = set()
    for p in sorted((p for p in pending if p.key in of), key=lambda p: p.key):
        w = of[p.key]
        if lacking[w] > 0 and _may_go_on_demand(p):
            lacking[w] -= 1
            restricted.add(p.key)
    out: list[Pod] = []
    for p in pending:
        if p.key not in of:
            out.append(p)
        elif p.key in restricted:
            out.append(dataclasses.replace(p, node_selector={**p.node_selector, CAPACITY_TYPE_LABEL: CAPACITY_TYPE_ON_DEMAND}))
        elif _pins_capacity_type(p):
            out.append(p)
        else:
            out.append(dataclasses.replace(p, preferred_terms=(*p.preferred_terms, _SPOT_PREFERENCE)))
    return Split(out, contracts, of, restricted, counts, ct)


def _reason(c: Contract, on_demand_running: int) -> Reason:
    s = c.share
    text = (
        f"the on-demand share of {c.workload} ({c.source}: base {s.base}, {s.percentage}% above it) needs "
        f"{c.required} of its {c.replicas} replicas on on-demand nodes ({on_demand_running} run there): this pod "
        f"must run on karpenter.sh/capacity-type on-demand"
    )
    if not c.pool_allows_on_demand:
        text += (
            f", which nodepool {c.pool} does not allow" if c.pool else ", and no NodePool admits it"
        )
    detail: dict[str, DetailValue] = {
        "workload": str(c.workload), "source": c.source, "base": s.base, "percentage": s.percentage,
        "replicas": c.replicas, "required": c.required, "on_demand_running": on_demand_running,
        "nodepool": c.pool,
    }
    return Reason(ReasonKind.ON_DEMAND_SHARE, "", detail, text)


def settle(sp: Split, res: Results) -> Results:
    """After the solve: each restricted pod left unschedulable is told why first (the contract, its numbers,
    and the pool that forbids on-demand when one does), and Results.on_demand_share gets each workload's split
    after the plan (its running pods plus those placed). Returns `res`."""
    if not sp.contracts:
        return res
    for key in sp.restricted:
        rs = res.unschedulable_reasons.get(key)
        if rs is not None:
            bound = sp.of[key]
            rs.insert(0, _reason(sp.contracts[bound], sp.running[bound].get(CAPACITY_TYPE_ON_DEMAND, 0)))
    placed: dict[WorkloadRef, dict[str, int]] = {w: dict(c) for w, c in sp.running.items()}
    def add(to: dict[WorkloadRef, dict[str, int]], pods: Iterable[Pod], capacity_type: str) -> None:
        for p in pods:
            w = sp.of.get(p.key)
            if w is not None:
                to[w][capacity_type] = to[w].get(capacity_type, 0) + 1

    for claim in res.nodeclaims:
        add(placed, claim.pods, claim.capacity_type)
    for e in res.existing:
        add(placed, e.pods, sp.node_types.get(e.name, ""))
    unplaced: dict[WorkloadRef, int] = {}
    for key in res.unschedulable_reasons:
        if (u := sp.of.get(key)) is not None:
            unplaced[u] = unplaced.get(u, 0) + 1
    res.on_demand_share = [
        row(c, placed[w], unplaced.get(w, 0)) for w, c in sorted(sp.contracts.items())
    ]
    return res


def row(c: Contract, by_type: Mapping[str, int], unschedulable: int = 0) -> ShareRow:
    return ShareRow(
        str(c.workload), c.source, c.pool, c.share.base, c.share.percentage, c.replicas, c.required,
        by_type.get(CAPACITY_TYPE_ON_DEMAND, 0), by_type.get(CAPACITY_TYPE_SPOT, 0), unschedulable,
    )
