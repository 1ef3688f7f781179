"""The disruption engine's view of a cluster and the actions it proposes.

The provisioning engine's model (pods, nodes, pools, catalog) carries what scheduling needs; disruption also needs
time (creation timestamps, the last pod change), annotations (do-not-disrupt, pod-deletion-cost), node health and
each NodePool's disruption settings. Those live here, beside the engine's objects rather than inside them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from packing.instancetype import InstanceType
from packing.nodepool import DaemonSet, ExistingNodeSpec, NodePool, PodDisruptionBudget
from packing.pods import Pod

__all__ = [
    "BLOCKED_BY",
    "DO_NOT_DISRUPT",
    "Action",
    "Budget",
    "Cluster",
    "DisruptionSettings",
    "NodeInfo",
    "NotDisrupted",
    "PodMeta",
    "Report",
]

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
LAST_POD_EVENT = "karpenter.sh/last-pod-event-time"
DISRUPTED_TAINT = "karpenter.sh/disrupted"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"

# Karpenter v1's defaults for a NodePool that leaves spec.disruption or expireAfter out
DEFAULT_POLICY = "WhenEmptyOrUnderutilized"
DEFAULT_EXPIRE_AFTER = timedelta(hours=720)

# The disruption reasons as budgets name them, keyed by the action's reason.
BUDGET_REASONS = {"empty": "Empty", "underutilized": "Underutilized", "drifted": "Drifted"}


@dataclass(frozen=True)
class Budget:
    """One entry of spec.disruption.budgets, kept as written; budgets.py decides what it allows and when."""

    nodes: str = "10%"
    schedule: str | None = None
    duration: str | None = None
    reasons: tuple[str, ...] | None = None  # None: applies to every reason
    index: int = 0
    error: str = ""  # set when the entry itself is malformed (a budget that fails to parse allows nothing)


@dataclass(frozen=True)
class DisruptionSettings:
    policy: str = DEFAULT_POLICY
    consolidate_after: timedelta | None = timedelta(0)  # None: Never
    expire_after: timedelta | None = DEFAULT_EXPIRE_AFTER  # None: Never
    budgets: tuple[Budget, ...] = (Budget(),)


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


# The kinds of rule that can forbid a move that would otherwise be judged on its money (NotDisrupted.blocked_by)
BLOCKED_BY = ("pdb", "do-not-disrupt", "budget")


@dataclass
class NotDisrupted:
    node: str
    reason: str
    # "pdb", "do-not-disrupt" or "budget" when a rule spares the node; None when it is spared for any other reason
    # (no cheaper arrangement, consolidateAfter, not a candidate...)
    blocked_by: str | None = None
    # for a blocked node: what consolidating it would save per hour if the block were lifted, judged as single-node
    # consolidation judges a move, in the cluster as the action list leaves it; None when no saving move exists or
    # it could not be evaluated (the simulation limit)
    savings_per_hour: float | None = None


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

    @property
    def savings_per_hour(self) -> float:
        return round(self.cost_before - self.cost_after, 6)
