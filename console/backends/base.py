"""The two interfaces the control loops talk to, and the plain values that cross them.

Kubernetes objects cross as dicts in the API's JSON shape (what ``kubectl get -o json`` prints),
because the engine's input parser (packing.kubeobjects) already reads that shape, for the CLI and
for the loops alike.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

KubeObject = dict[str, Any]

# Tags on every instance Loadmaster launches (Karpenter's keys, plus our cluster key for GC).
TAG_NODEPOOL = "karpenter.sh/nodepool"
TAG_NODECLAIM = "karpenter.sh/nodeclaim"
TAG_CLUSTER = "loadmaster.dev/cluster"
TAG_NODECLASS = "karpenter.k8s.aws/ec2nodeclass"
DISRUPTED_TAINT = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}
UNREGISTERED_TAINT_KEY = "karpenter.sh/unregistered"


# --- cloud -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LaunchOption:
    instance_type: str
    zone: str
    capacity_type: Literal["spot", "on-demand", "reserved"]
    price: float
    # capacity_type "reserved" only: the capacity reservation the launch must land in (targeted, so it cannot
    # fall off onto plain on-demand), its karpenter.k8s.aws/capacity-reservation-type and -interruptible
    reservation_id: str = ""
    reservation_type: str = ""            # "default" | "capacity-block"
    reservation_interruptible: bool = False


@dataclass(frozen=True)
class LaunchRequest:
    nodeclaim: str                       # NodeClaim name: tags the instance, seeds the idempotency token
    nodepool: str
    cluster: str
    nodeclass: Mapping[str, Any]         # EC2NodeClass field values (console.fleet.models.EC2NodeClass)
    options: Sequence[LaunchOption]      # cheapest first; the provider may use at most 60
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Mapping[str, str]] = ()


@dataclass(frozen=True)
class Instance:
    instance_id: str
    instance_type: str
    zone: str
    capacity_type: str
    state: str                           # pending | running | shutting-down | terminated | stopping | stopped
    launch_time: datetime | None
    tags: Mapping[str, str] = field(default_factory=dict)
    price: float | None = None
    reservation_id: str = ""             # the capacity reservation it runs in (capacity_type "reserved")

    @property
    def provider_id(self) -> str:
        return f"aws:///{self.zone}/{self.instance_id}"


@dataclass(frozen=True)
class CapacityReservation:
    """One capacity reservation an EC2NodeClass's capacityReservationSelectorTerms select, as the cloud reports it
    (DescribeCapacityReservations): an On-Demand Capacity Reservation (type "default") or a Capacity Block."""

    id: str
    instance_type: str
    zone: str
    available: int                       # AvailableInstanceCount: free to launch into now
    total: int                           # TotalInstanceCount
    owner_id: str
    instance_match_criteria: str         # "open" | "targeted"
    type: str = "default"                # "default" | "capacity-block" (ReservationType)
    interruptible: bool = False
    starts: datetime | None = None
    ends: datetime | None = None         # EndDate; always set for a Capacity Block
    state: str = "active"                # "active" | "expiring" (a Capacity Block inside its last 40 minutes)


class LaunchError(Exception):
    """A launch that did not produce an instance.

    unavailable: offerings AWS refused for capacity (InsufficientInstanceCapacity and friends);
    the caller marks them unavailable for a while and may retry with the rest.
    retryable: the same request may succeed later (throttling, a transient API error).
    """

    def __init__(self, message: str, *, unavailable: Sequence[LaunchOption] = (), retryable: bool = False) -> None:
        super().__init__(message)
        self.unavailable = list(unavailable)
        self.retryable = retryable


@dataclass(frozen=True)
class CloudEvent:
    kind: Literal["spot_interruption", "rebalance", "state_change", "scheduled_change"]
    instance_id: str
    time: datetime
    detail: Mapping[str, Any] = field(default_factory=dict)
    receipt: str = ""                    # handed back to ack() once handled


class CloudProvider(Protocol):
    def launch(self, request: LaunchRequest) -> Instance: ...
    def terminate(self, instance_ids: Sequence[str]) -> None: ...
    def describe(self, instance_ids: Sequence[str]) -> list[Instance]: ...
    def list_instances(self, cluster: str) -> list[Instance]: ...
    def poll_events(self, max_events: int = 10) -> list[CloudEvent]: ...
    def ack(self, event: CloudEvent) -> None: ...
    # The active reservations these capacityReservationSelectorTerms select (Karpenter's resolution).
    def capacity_reservations(self, terms: Sequence[Mapping[str, Any]]) -> list[CapacityReservation]: ...


# --- cluster ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class WatchEvent:
    type: Literal["ADDED", "MODIFIED", "DELETED"]
    object: KubeObject


EvictionOutcome = Literal["evicted", "blocked", "gone"]


class ResourceExpired(Exception):
    """410 Gone: the resourceVersion to resume from was compacted away; list again."""


class NodeNotFound(LookupError):
    """The Node does not exist."""


class ClusterBackend(Protocol):
    # Watches yield events until the server ends the stream; ResourceExpired (410) means: list again.
    def list_pods(self) -> tuple[list[KubeObject], str]: ...          # objects, resourceVersion
    def watch_pods(self, resource_version: str, *, timeout_seconds: int = 60) -> Iterator[WatchEvent]: ...
    def list_nodes(self) -> tuple[list[KubeObject], str]: ...
    def watch_nodes(self, resource_version: str, *, timeout_seconds: int = 60) -> Iterator[WatchEvent]: ...
    def list_pdbs(self) -> list[KubeObject]: ...
    def list_daemonsets(self) -> list[KubeObject]: ...
    def list_pod_templates(self) -> list[KubeObject]: ...          # the shapes CapacityBuffers name (podTemplateRef)
    def pending_pods(self) -> list[KubeObject]: ...
    def pods_on_node(self, node_name: str) -> list[KubeObject]: ...
    def cordon(self, node_name: str) -> None: ...                  # taint karpenter.sh/disrupted:NoSchedule
    def uncordon(self, node_name: str) -> None: ...                # lift it (abandoned disruption)
    def evict(self, namespace: str, name: str) -> EvictionOutcome: ...
    # DELETE the pod (no PDB check) with this grace period: only for a drain past terminationGracePeriod.
    def delete_pod(self, namespace: str, name: str, grace_period_seconds: int) -> bool: ...   # False: already gone
    def delete_node(self, node_name: str) -> None: ...
    def node_by_provider_id(self, provider_id: str) -> KubeObject | None: ...
    def get_node(self, node_name: str) -> KubeObject: ...          # raises NodeNotFound
    # Apply the NodeClaim's labels and taints (startupTaints included) and drop karpenter.sh/unregistered.
    def register_node(self, node_name: str, *, labels: Mapping[str, str], taints: Sequence[Mapping[str, str]]) -> KubeObject: ...
    def mark_initialized(self, node_name: str) -> KubeObject: ...  # label karpenter.sh/initialized=true
