"""The disruption engine's view of a cluster and the actions it proposes.

The provisioning engine's model (pods, nodes, pools, catalog) carries what scheduling needs; disruption also needs
time (creation timestamps, the last pod change), annotations (do-not-disrupt, pod-deletion-cost), node health and
each NodePool's disruption settings. Those live here, beside the engine's objects rather than inside them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from packing.buffers import BufferReport, ResolvedBuffer
from packing.commitments import Commitment
from packing.disruption.donotdisrupt import DO_NOT_DISRUPT
from packing.disruption.formatting import money
from packing.durations import parse_duration
from packing.instancetype import InstanceType
from packing.nodepool import (
    BUDGET_NODES_DEFAULT,
    CONSOLIDATE_AFTER_DEFAULT,
    CONSOLIDATION_POLICY_DEFAULT,
    EXPIRE_AFTER_DEFAULT,
    DaemonSet,
    ExistingNodeSpec,
    NodePool,
    PodDisruptionBudget,
)
from packing.ondemandshare import Bound
from packing.pods import Pod
from packing.poolschedule import OpenWindow
from packing.requirements import MinValuesPolicy

__all__ = [
    "BLOCKED_BY",
    "DO_NOT_DISRUPT",
    "EPS",
    "Action",
    "BlockedBy",
    "Budget",
    "CheapestOption",
    "Cluster",
    "DisruptionSettings",
    "MinSavings",
    "MoveDecision",
    "NodeInfo",
    "NotDisrupted",
    "NotDisruptedCategory",
    "PodMeta",
    "Report",
    "ScoreObservation",
]

LAST_POD_EVENT = "karpenter.sh/last-pod-event-time"
DISRUPTED_TAINT = "karpenter.sh/disrupted"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"

# Karpenter v1's defaults for a NodePool that leaves spec.disruption or expireAfter out
# The CRD defaults are written once, in packing/nodepool.py (the console's field table reads them too).
DEFAULT_POLICY = CONSOLIDATION_POLICY_DEFAULT
DEFAULT_EXPIRE_AFTER = parse_duration(EXPIRE_AFTER_DEFAULT)
DEFAULT_CONSOLIDATE_AFTER = parse_duration(CONSOLIDATE_AFTER_DEFAULT)

# The disruption reasons as budgets name them, keyed by the action's reason.
BUDGET_REASONS = {"empty": "Empty", "underutilized": "Underutilized", "drifted": "Drifted"}

EPS = 1e-9  # dollars per hour: how close two prices may be and still count as equal


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
        if self.dollars is not None and savings + EPS < self.dollars:
            return False
        return not (self.percent is not None and savings + EPS < cost * self.percent / 100)

    def __str__(self) -> str:
        return f"{self.percent:g}%" if self.percent is not None else money(self.dollars or 0.0)


@dataclass(frozen=True)
class Budget:
    """One entry of spec.disruption.budgets, kept as written; budgets.py decides what it allows and when."""

    nodes: str = BUDGET_NODES_DEFAULT
    schedule: str | None = None
    duration: str | None = None
    reasons: tuple[str, ...] | None = None  # None: applies to every reason
    index: int = 0
    error: str = ""  # set when the entry itself is malformed (a budget that fails to parse allows nothing)


@dataclass(frozen=True)
class DisruptionSettings:
    policy: str = DEFAULT_POLICY
    consolidate_after: timedelta | None = DEFAULT_CONSOLIDATE_AFTER  # None: Never
    expire_after: timedelta | None = DEFAULT_EXPIRE_AFTER  # None: Never
    budgets: tuple[Budget, ...] = (Budget(),)
    # spec.template.spec.terminationGracePeriod; None: not set (a drain may wait for ever)
    termination_grace_period: timedelta | None = None


@dataclass
class NodeInfo:
    """A Node as the disruption engine sees it."""

    spec: ExistingNodeSpec
    created: datetime | None = None
    annotations: Mapping[str, str] = field(default_factory=dict)
    deleting: bool = False  # deletionTimestamp set, or Karpenter's disrupted taint: already on its way out
    ready: bool = True

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def nodepool(self) -> str | None:
        return self.spec.nodepool


@dataclass(frozen=True)
class PodMeta:
    annotations: Mapping[str, str] = field(default_factory=dict)
    created: datetime | None = None
    priority: int = 0


@dataclass
class Cluster:
    """Everything one disruption run looks at. Pods are keyed namespace/name in `pod_meta`."""

    nodepools: list[NodePool]
    catalog: list[InstanceType]
    nodes: list[NodeInfo]
    running: list[Pod] = field(default_factory=list)
    pending: list[Pod] = field(default_factory=list)
    daemonsets: list[DaemonSet] = field(default_factory=list)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    settings: dict[str, DisruptionSettings] = field(default_factory=dict)
    pod_meta: dict[str, PodMeta] = field(default_factory=dict)
    # status.disruptionsAllowed as the cluster reported it, keyed namespace/name, when the input carried it
    pdb_status: dict[str, int] = field(default_factory=dict)
    # policy/v1: a PDB whose selector is null selects no pod (an empty one selects every pod of its namespace)
    pdb_null_selector: set[str] = field(default_factory=set)
    inflight: list[ExistingNodeSpec] = field(default_factory=list)  # NodeClaims not yet registered as Nodes
    # what replacements do when a NodeClaim cannot keep a requirement's minValues (--min-values-policy)
    min_values_policy: MinValuesPolicy = MinValuesPolicy.STRICT
    # the input's CapacityBuffers as resolved (packing.buffers): their virtual pods are among `pending`
    buffers: list[ResolvedBuffer] = field(default_factory=list)
    # the workloads' on-demand shares (packing.ondemandshare): no move may leave one below its share
    on_demand: Bound = field(default_factory=Bound)
    # Reserved Instances and Savings Plans (packing.commitmentpricing): nodes they cover are priced at what
    # removing them saves, new nodes at their marginal cost
    commitments: list[Commitment] = field(default_factory=list)
    # whether the `capacity-block` method drains the nodes of ending Capacity Blocks; off where another loop does
    # (the console's capacity-block loop deletes their NodeClaims itself, as Karpenter's expiration controller)
    capacity_block_expiry: bool = True

    def settings_for(self, pool: str) -> DisruptionSettings:
        return self.settings.get(pool, DisruptionSettings())


@dataclass
class Action:
    type: str  # delete | replace
    reason: str  # empty | drifted | expired | underutilized
    nodes: list[str]
    replacements: list[dict[str, Any]]  # nodeclaim objects exactly as `python -m packing plan` prints them
    savings_per_hour: float
    moves: dict[str, str]  # pod key -> node or new nodeclaim name
    why: str
    cost_before: float = 0.0  # of the disrupted nodes
    cost_after: float = 0.0  # of the replacements
    # the method that found it: emptiness, drift, expiration, multi-node, single-node, or repack (Loadmaster's own,
    # the only underutilized action that may launch several nodes)
    method: str = ""
    # consolidationPolicy Balanced: the move's score (its lowest Balanced pool's; balanced.py), None when none of
    # its nodes is in a Balanced pool or the action is not consolidation (drift, expiration)
    score: float | None = None


class BlockedBy(StrEnum):
    """The kinds of rule that can forbid a move that would otherwise be judged on its money."""

    PDB = "pdb"
    DO_NOT_DISRUPT = "do-not-disrupt"
    BUDGET = "budget"


BLOCKED_BY = tuple(BlockedBy)


class NotDisruptedCategory(StrEnum):
    """Why the engine did not disrupt a node, as a closed set (NotDisrupted.text says it in words)."""

    # a rule forbids the move (NotDisrupted.blocked_by names the rule)
    PDB = "pdb"  # a PodDisruptionBudget allows no eviction of one of its pods (or several cover one pod)
    DO_NOT_DISRUPT = "do-not-disrupt"  # the node or one of its pods carries karpenter.sh/do-not-disrupt
    BUDGET = "budget"  # its NodePool's disruption budget allows no more disruptions now
    # the node is not a candidate
    NOT_MANAGED = "not-managed"  # no karpenter.sh/nodepool label
    NODEPOOL_NOT_FOUND = "nodepool-not-found"
    NOT_INITIALIZED = "not-initialized"
    BEING_DISRUPTED = "being-disrupted"  # deleting, or already tainted by Karpenter
    LAUNCHED_BY_ACTION = "launched-by-action"  # a replacement an earlier action of the list launches
    PRICE_UNKNOWN = "price-unknown"  # no offering of the catalog prices it: no saving can be weighed
    # its NodePool's consolidation settings leave it alone
    CONSOLIDATE_AFTER = "consolidate-after"  # consolidateAfter Never, or not passed since the last pod change
    WHEN_EMPTY = "when-empty"  # consolidationPolicy WhenEmpty and pods run on it
    STATIC_NODEPOOL = "static-nodepool"  # its NodePool is static (spec.replicas): never consolidated (drift applies)
    # the move was looked for and refused
    PENDING_POD_BOUND = "pending-pod-bound"  # an empty node a pending pod would schedule on
    PODS_DO_NOT_FIT = "pods-do-not-fit"  # some pod finds no place on the other nodes (and a new node)
    NEEDS_SEVERAL_NODES = "needs-several-nodes"  # consolidation launches at most one
    NO_LAUNCHABLE_TYPE = "no-launchable-type"  # no nodepool can launch any instance type of the catalog
    NO_CHEAPER_REPLACEMENT = "no-cheaper-replacement"  # NotDisrupted.cheapest_replacement: the cheapest that fits
    SPOT_TO_SPOT = "spot-to-spot"  # Karpenter's limits on replacing spot with spot
    # the move would take pods off a capacity reservation (prepaid) onto a new node that is not on one
    RESERVED_CAPACITY = "reserved-capacity"
    NO_SAVING = "no-saving"  # the pods would cost as much elsewhere
    BELOW_MIN_SAVINGS = "below-min-savings"  # the move saves less than --min-savings
    # consolidationPolicy Balanced: the move's score is below 1/k (NotDisrupted.score says by how much)
    BELOW_SCORE_THRESHOLD = "below-score-threshold"
    # the move would leave a workload with fewer on-demand replicas than its on-demand share (packing.ondemandshare)
    ON_DEMAND_SHARE = "on-demand-share"
    NO_CHEAPER_ARRANGEMENT = "no-cheaper-arrangement"  # no method found a move that saves
    NOT_EVALUATED = "not-evaluated"  # the simulation limit was reached first
    OTHER = "other"  # a record built outside the engine without a category (the engine always gives one)

    @property
    def blocked_by(self) -> BlockedBy | None:
        """The rule behind the category, for the three a rule decides (None for the others)."""
        return _RULES.get(self)


_RULES = {
    NotDisruptedCategory.PDB: BlockedBy.PDB,
    NotDisruptedCategory.DO_NOT_DISRUPT: BlockedBy.DO_NOT_DISRUPT,
    NotDisruptedCategory.BUDGET: BlockedBy.BUDGET,
}


@dataclass(frozen=True)
class CheapestOption:
    """The cheapest launch that would hold a node's pods (for a node no cheaper replacement exists for)."""

    instance_type: str
    capacity_type: str
    price_per_hour: float


@dataclass
class NotDisrupted:
    node: str
    text: str  # why, in words (the JSON's "reason")
    # the rule that spares the node (a PDB, do-not-disrupt or a budget); None when it is spared for any other
    # reason (no cheaper arrangement, consolidateAfter, not a candidate...)
    blocked_by: BlockedBy | None = None
    # for a blocked node: what consolidating it would save per hour if the block were lifted, judged as single-node
    # consolidation judges a move, in the cluster as the action list leaves it; None when no saving move exists or
    # it could not be evaluated (the simulation limit)
    savings_per_hour: float | None = None
    category: NotDisruptedCategory = NotDisruptedCategory.OTHER
    # set with NO_CHEAPER_REPLACEMENT: the cheapest launch that would hold the pods, which costs at least the node
    cheapest_replacement: CheapestOption | None = None
    # set with BELOW_SCORE_THRESHOLD: the Balanced score of the move that failed (below balanced.THRESHOLD)
    score: float | None = None

    @property
    def reason(self) -> str:
        """The text under its JSON name."""
        return self.text


class MoveDecision(StrEnum):
    """The decision label of karpenter_consolidation_score and karpenter_consolidation_moves_total."""

    APPROVED = "approved"
    REJECTED = "rejected"


@dataclass(frozen=True)
class ScoreObservation:
    """One evaluated consolidation move as Karpenter's metrics count it, per source pool: its policy, the score
    (None for a pool that is not Balanced: counted in moves_total, absent from the histogram) and the decision."""

    nodepool: str
    policy: str
    score: float | None
    decision: MoveDecision


@dataclass
class Report:
    actions: list[Action] = field(default_factory=list)
    not_disrupted: list[NotDisrupted] = field(default_factory=list)
    nodes: int = 0
    cost_before: float = 0.0
    cost_after: float = 0.0
    solve_seconds: float = 0.0
    solves: int = 0  # scheduling simulations run, for the benchmark
    # NodePools the engine cannot launch from, with why (as Results.unusable_nodepools): the run went on with
    # the other pools. Empty when every pool is usable.
    unusable_nodepools: dict[str, str] = field(default_factory=dict)
    # per CapacityBuffer of the input, where its virtual pods' room is held once the actions are taken
    buffers: list[BufferReport] = field(default_factory=list)
    # every consolidation move evaluated, as karpenter_consolidation_score / _moves_total count them (balanced.py)
    score_observations: list[ScoreObservation] = field(default_factory=list)
    # the NodePools' clock-policy windows open at the run's time (packing.poolschedule), in force for it
    schedules: list[OpenWindow] = field(default_factory=list)

    @property
    def savings_per_hour(self) -> float:
        return round(self.cost_before - self.cost_after, 6)
