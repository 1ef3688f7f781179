"""Pods as the scheduler sees them: requests, placement constraints and identity."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from packing.requirements import Requirement, Requirements
from packing.resources import PODS, Resources
from packing.taints import Toleration

__all__ = [
    "ContainerResources",
    "HostPort",
    "IgnoredPod",
    "LabelSelector",
    "NAMESPACE_NAME_LABEL",
    "NamespaceScope",
    "Pod",
    "PodAffinityTerm",
    "SELECTS_NOTHING",
    "TopologySpread",
    "container_requests",
    "containers_requests",
    "pod_requests",
]

HOSTNAME = "kubernetes.io/hostname"
_NO_TERMS: tuple[Requirements, ...] = (Requirements(),)
ZONE = "topology.kubernetes.io/zone"


@dataclass(frozen=True, slots=True)
class ContainerResources:
    requests: Resources
    limits: Resources
    restart_always: bool = False  # an init container with restartPolicy: Always is a sidecar


def container_requests(c: ContainerResources) -> Resources:
    # The API server defaults a missing request to the limit, so a limits-only container requests its limits.
    merged = dict(c.limits.as_dict())
    merged.update(c.requests.as_dict())
    return Resources(merged)


def _max(a: Resources, b: Resources) -> Resources:
    return Resources({k: max(a.get(k, 0), b.get(k, 0)) for k in set(a) | set(b)})


def containers_requests(
    containers: Sequence[ContainerResources], init_containers: Sequence[ContainerResources] = ()
) -> Resources:
    """max(sum of containers + sidecars, each init container + sidecars started before it)."""
    total = Resources()
    for c in containers:
        total = total + container_requests(c)
    sidecars = Resources()
    init_peak = Resources()
    for c in init_containers:
        req = container_requests(c)
        if c.restart_always:
            sidecars = sidecars + req
            init_peak = _max(init_peak, sidecars)
        else:
            init_peak = _max(init_peak, sidecars + req)
    return _max(total + sidecars, init_peak)


def pod_requests(
    containers: Sequence[ContainerResources],
    init_containers: Sequence[ContainerResources] = (),
    overhead: Resources | None = None,
    pod_level: Resources | None = None,
) -> Resources:
    """The containers' requests (containers_requests) + overhead + 1 pod. `pod_level` (spec.resources, as
    packing.podspec.pod_level_requests defaults it) replaces the containers' requests of the resources it
    names: the scheduler takes pod-level requests as the pod's whole need."""
    total = containers_requests(containers, init_containers)
    if pod_level:
        merged = dict(total.as_dict())
        merged.update(pod_level.as_dict())
        total = Resources(merged)
    if overhead:
        total = total + overhead
    return total + Resources({PODS: 1000})


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """matchLabels and matchExpressions; `requirements` is their conjunction. An empty selector matches all."""

    requirements: Requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        return self.requirements.matches(labels)

    def __str__(self) -> str:
        return ", ".join(str(r) for r in self.requirements.values()) or "(all)"


NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # the label the API server puts on every Namespace


# a selector no labels satisfy: what a null labelSelector selects, and what a namespaceSelector resolved against
# the input's namespaces leaves for the namespaces it did not list
SELECTS_NOTHING = LabelSelector(Requirements([Requirement.new("loadmaster.dev/never", "In", ["\x00"])]))


@dataclass(frozen=True, slots=True)
class NamespaceScope:
    """The namespaces whose pods an affinity term (or spread) counts: `names`, plus those whose labels
    `selector` matches (an empty selector matches every namespace). A namespace whose labels are not known
    (no Namespace object in the input) has only its kubernetes.io/metadata.name label."""

    names: frozenset[str]
    selector: LabelSelector | None = None

    def contains(self, namespace: str) -> bool:
        if namespace in self.names:
            return True
        return self.selector is not None and self.selector.matches({NAMESPACE_NAME_LABEL: namespace})


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    selector: LabelSelector
    topology_key: str
    namespaces: frozenset[str] = frozenset()  # empty (and no namespace_selector): the pod's own namespace
    # podAffinityTerm.namespaceSelector: {} selects every namespace; else the namespaces whose labels match
    namespace_selector: LabelSelector | None = None

    def scope(self, own_namespace: str) -> NamespaceScope:
        """The namespaces this term of a pod in `own_namespace` counts (kube-scheduler's rule: the pod's own
        namespace only when neither `namespaces` nor `namespaceSelector` is given)."""
        if self.namespace_selector is None:
            return NamespaceScope(self.namespaces or frozenset({own_namespace}))
        return NamespaceScope(self.namespaces, self.namespace_selector)

    def selects(self, owner_namespace: str, other: Pod) -> bool:
        """Whether this term of a pod in `owner_namespace` counts `other`."""
        return self.scope(owner_namespace).contains(other.namespace) and self.selector.matches(other.labels)


@dataclass(frozen=True, slots=True)
class TopologySpread:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # DoNotSchedule | ScheduleAnyway
    selector: LabelSelector
    min_domains: int = 1
    # nodeAffinityPolicy: Honor (the default) counts only the nodes the pod's node affinity and nodeSelector
    # admit as domains; Ignore counts every node
    honor_node_affinity: bool = True


@dataclass(frozen=True, slots=True)
class HostPort:
    port: int
    protocol: str = "TCP"
    ip: str = ""

    def conflicts(self, other: HostPort) -> bool:
        if self.port != other.port or self.protocol != other.protocol:
            return False
        wildcard = ("", "0.0.0.0", "::")
        return self.ip in wildcard or other.ip in wildcard or self.ip == other.ip


@dataclass(slots=True)
class Pod:
    name: str
    namespace: str = "default"
    labels: Mapping[str, str] = field(default_factory=dict)
    requests: Resources = field(default_factory=lambda: Resources({PODS: 1000}))
    node_selector: Mapping[str, str] = field(default_factory=dict)
    # required node affinity: a list of ORed terms, each a conjunction; empty = no constraint
    required_terms: tuple[Requirements, ...] = ()
    preferred_terms: tuple[tuple[int, Requirements], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    spread: tuple[TopologySpread, ...] = ()
    affinity: tuple[PodAffinityTerm, ...] = ()
    anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_affinity: tuple[tuple[int, PodAffinityTerm], ...] = ()
    preferred_anti_affinity: tuple[tuple[int, PodAffinityTerm], ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    node_name: str = ""
    owner_kind: str = ""
    owner_name: str = ""
    uid: str = ""
    # metadata.deletionTimestamp is set: it still holds its node's resources, but no topology domain counts it
    terminating: bool = False
    # namespace/name, read far more often than pods are made
    _key: str = field(default="", init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._key = f"{self.namespace}/{self.name}"

    @property
    def key(self) -> str:
        return self._key

    @property
    def has_topology_rules(self) -> bool:
        """A topology spread or a pod (anti-)affinity, required or preferred."""
        return bool(
            self.spread or self.affinity or self.anti_affinity or self.preferred_affinity
            or self.preferred_anti_affinity
        )

    def on_node(self, node_name: str) -> Pod:
        """This pod running on `node_name` (dataclasses.replace(self, node_name=...), several times faster: the
        disruption simulation moves thousands of pods per run). Every field is passed, in order."""
        return Pod(
            self.name, self.namespace, self.labels, self.requests, self.node_selector, self.required_terms,
            self.preferred_terms, self.tolerations, self.spread, self.affinity, self.anti_affinity,
            self.preferred_affinity, self.preferred_anti_affinity, self.host_ports, node_name, self.owner_kind,
            self.owner_name, self.uid, self.terminating,
        )

    def node_requirement_terms(self) -> tuple[Requirements, ...]:
        """nodeSelector folded into every required term, so each term alone is a full node requirement."""
        if not self.node_selector and not self.required_terms:
            return _NO_TERMS
        base = Requirements(Requirement.new(k, "In", [v]) for k, v in self.node_selector.items())
        if not self.required_terms:
            return (base,)
        return tuple(base.intersect(t) for t in self.required_terms)


@dataclass(frozen=True, slots=True)
class IgnoredPod:
    """A pod without a node that is not provisioned for, as Karpenter leaves it alone: it has scheduling gates, or
    its PodScheduled condition gives a reason other than Unschedulable. `why` says which."""

    pod: Pod
    why: str

    @property
    def key(self) -> str:
        return self.pod.key
