"""The events of a cluster's history: what arrived, left, launched, ended and changed, each at a time.

A history is what a replay runs the engines over (issue 21): the pods (with everything the engines read of them,
kept as a pod template that packing.podspec parses, so a replayed Pod is the Pod the engine would have read from
the cluster), the nodes with their instance type, zone, capacity type and price, the NodePool and EC2NodeClass
manifests in force, and the prices in force. docs/history.md documents the JSON-lines file these are written to
(packing.history.jsonl).

Identity: a pod is its namespace/name (at most one pod of a name lives at a time; its uid is kept as well), a node
its name, a manifest its kind and name, an offering its (instance type, zone, capacity type).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = [
    "EVENT_ORDER",
    "Event",
    "EventName",
    "InterruptionKind",
    "ManifestKind",
    "NodeInterrupted",
    "NodeLaunched",
    "NodeTerminated",
    "OfferingPrice",
    "PodArrived",
    "PodBound",
    "PodDeparted",
    "PodEnd",
    "Prices",
    "Revision",
]


class EventName(enum.StrEnum):
    """The `event` of a line of the file."""

    POD_SPEC = "PodSpec"  # not an event: the template pods name by its id (packing.history.jsonl)
    POD_ARRIVED = "PodArrived"
    POD_BOUND = "PodBound"
    POD_DEPARTED = "PodDeparted"
    NODE_LAUNCHED = "NodeLaunched"
    NODE_INTERRUPTED = "NodeInterrupted"
    NODE_TERMINATED = "NodeTerminated"
    REVISION = "Revision"
    PRICES = "Prices"


class PodEnd(enum.StrEnum):
    """How a pod left: deleted (or gone from the cluster), or finished (it no longer holds its node's room)."""

    DELETED = "Deleted"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


class InterruptionKind(enum.StrEnum):
    """The cloud's notice about a node's instance (the interruption queue's kinds, as Karpenter names them)."""

    SPOT_INTERRUPTION = "SpotInterruption"
    SCHEDULED_CHANGE = "ScheduledChange"
    STATE_CHANGE = "StateChange"
    REBALANCE = "RebalanceRecommendation"


class ManifestKind(enum.StrEnum):
    NODEPOOL = "NodePool"
    NODECLASS = "EC2NodeClass"


@dataclass(frozen=True, slots=True)
class PodArrived:
    """A pod appeared: `spec` is the id of its template (a PodSpec line; many replicas share one). `node` is set
    when it was already bound when first seen (a history's first state, a dump's pods)."""

    at: datetime
    namespace: str
    name: str
    spec: str
    uid: str = ""
    owner_kind: str = ""
    owner_name: str = ""
    node: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class PodBound:
    """A pending pod was bound to a node (its pending time ends here)."""

    at: datetime
    namespace: str
    name: str
    node: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class PodDeparted:
    at: datetime
    namespace: str
    name: str
    end: PodEnd = PodEnd.DELETED

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class NodeLaunched:
    """A node began (billing starts): its instance type, zone, capacity type and $/hour (None: unknown), and,
    when known, its labels, taints (Kubernetes' spelling), allocatable and capacity (quantity strings)."""

    at: datetime
    name: str
    instance_type: str
    zone: str
    capacity_type: str
    price: float | None = None
    nodepool: str = ""
    provider_id: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, str], ...] = ()
    allocatable: Mapping[str, str] = field(default_factory=dict)
    capacity: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NodeInterrupted:
    """The cloud gave notice about the node's instance; its termination follows (a NodeTerminated)."""

    at: datetime
    name: str
    interruption: InterruptionKind


@dataclass(frozen=True, slots=True)
class NodeTerminated:
    """A node ended (billing stops); `reason` is free text ("" when unknown), e.g. "consolidation: empty"."""

    at: datetime
    name: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Revision:
    """A NodePool or EC2NodeClass as it is from `at` on: its Karpenter v1 manifest (the YAML, as JSON), or None
    when it was deleted."""

    at: datetime
    kind: ManifestKind
    name: str
    manifest: Mapping[str, Any] | None
    revision: int | None = None


@dataclass(frozen=True, slots=True)
class OfferingPrice:
    instance_type: str
    zone: str
    capacity_type: str
    price: float | None  # None: offered, price unknown

    @property
    def key(self) -> tuple[str, str, str]:
        return self.instance_type, self.zone, self.capacity_type


@dataclass(frozen=True, slots=True)
class Prices:
    """A change of the prices in force: `set` offerings take these prices, `unset` ones are no longer offered.
    The prices in force at a time are every Prices event up to it, in order; an export starts with all of them."""

    at: datetime
    set: tuple[OfferingPrice, ...] = ()
    unset: tuple[tuple[str, str, str], ...] = ()


Event = PodArrived | PodBound | PodDeparted | NodeLaunched | NodeInterrupted | NodeTerminated | Revision | Prices

# Of events at one time, the order writers put them in: what is in force first, nodes before the pods bound to
# them, departures before arrivals (a pod replaced under its own name), terminations last.
EVENT_ORDER: dict[type[Any], int] = {
    Revision: 0,
    Prices: 1,
    NodeLaunched: 2,
    PodDeparted: 3,
    PodArrived: 4,
    PodBound: 5,
    NodeInterrupted: 6,
    NodeTerminated: 7,
}
