"""Why a pod cannot go somewhere, as data: a Reason's kind, the NodePool it is about, the figures and names it
is made from, and the sentence a person reads.

Each constructor below builds the detail and the text from the same values, so the two never disagree; the
texts are the engine's established wording (the CLI prints them, the console stores them). Which reason
applies is worked out in packing.scheduling.explain; nodes and NodeClaims refuse pods with the same Reasons
(packing.scheduling.fit).

A consumer switches on `kind` and reads `detail` (plain JSON values: str, int, tuples of str, dicts of str
to str or int); `text` is for people. The detail keys of each kind are listed on ReasonKind.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeAlias

from packing.quantity import counted_in_bytes, format_quantity
from packing.requirements import Requirement
from packing.resources import CPU, MAX_AMOUNT, MEMORY, PODS, Resources
from packing.taints import Taint

__all__ = [
    "MISMATCH_KINDS",
    "DetailValue",
    "Reason",
    "ReasonKind",
    "UnusableCause",
    "beyond_range",
    "could_not_explain",
    "daemonset_host_port",
    "host_port_in_use",
    "human_quantity",
    "insufficient_resources",
    "label_not_carried",
    "limit_exceeded",
    "limits_exceeded",
    "min_values_not_met",
    "no_domain",
    "no_instance_type_large_enough",
    "no_nodepool",
    "no_offering_for_nodepool",
    "node_affinity",
    "node_affinity_matches_no_offering",
    "nodepool_unusable",
    "pairs",
    "pool_catalog_empty",
    "pool_daemonsets_too_large",
    "pool_no_matching_type",
    "pool_no_offering",
    "pool_preparation_failed",
    "requirement_conflict",
    "requirement_matches_no_offering",
    "requirement_not_in_labels",
    "requirements_match_no_offering",
    "reservation_full",
    "static_nodepool",
    "taint_not_tolerated",
    "topology",
    "unsatisfiable_together",
]


class ReasonKind(StrEnum):
    """What failed. The detail keys each kind carries are listed per member."""

    NO_NODEPOOL = "no_nodepool"  # no NodePool is defined; nodepool "", detail {}
    # the pool cannot launch at all (Results.unusable_nodepool_reasons), or a pod's reason for a pool left out
    # of the solve: detail "cause" (an UnusableCause) and that cause's figures (see the pool_* constructors)
    NODEPOOL_UNUSABLE = "nodepool_unusable"
    TAINT = "taint"  # key, value ("" when the taint has none), effect
    # a pod requirement that contradicts one of the NodePool's: the pod's (key, operator, values,
    # requirement: as written) and the pool's (nodepool_operator, nodepool_values, nodepool_requirement)
    REQUIREMENT_CONFLICT = "requirement_conflict"
    # a pod requirement on a label only the NodePool sets, which its labels do not satisfy: key, operator,
    # values, requirement
    REQUIREMENT_LABELS = "requirement_labels"
    # the requirements leave no launchable offering: one requirement's key, operator, values, requirement;
    # or requirements (several, together); or {} (the pool has none at all, or the node affinity as a whole)
    OFFERING = "offering"
    # no instance type has room for the pod: requests and largest (milli-units per resource shown in the
    # text); {} when a node or NodeClaim refuses it for room
    RESOURCES = "resources"
    # a NodePool limit: resource, limit and in_use (quantities as the text shows them), limit_milli,
    # in_use_milli; {} when no single resource is to blame
    LIMIT = "limit"
    # a topology spread or pod (anti-)affinity: constraint (spread, affinity, anti-affinity), topology_key,
    # selector, max_skew (spread only); or topology_key alone when no domain is left; or constraint, topology_key
    # and missing_label (true) when no node of the pool can carry the key at all (label_not_carried)
    TOPOLOGY = "topology"
    HOST_PORT = "host_port"  # port, protocol; a pod already on the node holds it
    # a DaemonSet holds the port: on the existing node, or on every new node of the pool the pod fits (it runs
    # on each instance type left): port, protocol, daemonset ("namespace/name")
    DAEMONSET_HOST_PORT = "daemonset_host_port"
    # a NodePool requirement's minValues that the instance types left to the NodeClaim cannot meet (policy
    # Strict): key, min_values, remaining (how many distinct values are left), values (those left, sorted)
    MIN_VALUES = "min_values"
    NODE_AFFINITY = "node_affinity"  # an existing node's labels match none of the pod's terms; {}
    CONSTRAINTS = "constraints"  # each constraint passes alone but no type satisfies all together; {}
    # requests beyond the largest amount the engine computes with; nodepool "": resources, requests_milli,
    # max_milli
    BEYOND_RANGE = "beyond_range"
    UNEXPLAINED = "unexplained"  # working out the reason failed: error_type, error
    # a static NodePool (spec.replicas) that the pod would suit: it keeps a fixed number of nodes and launches none
    # for pending pods; replicas
    STATIC_NODEPOOL = "static_nodepool"
    # the pod is one of those a workload's on-demand share (packing.ondemandshare) puts on on-demand capacity;
    # nodepool "", detail workload, source, base, percentage, replicas, required, on_demand_running, nodepool
    ON_DEMAND_SHARE = "on_demand_share"


class UnusableCause(StrEnum):
    """Why a NodePool can launch nothing (detail "cause" of a NODEPOOL_UNUSABLE reason)."""

    EMPTY_CATALOG = "empty_catalog"  # detail {}
    NO_MATCHING_TYPE = "no_matching_type"  # catalog_types
    NO_OFFERING = "no_offering"  # matching_types
    DAEMONSET_OVERHEAD = "daemonset_overhead"  # daemonset_requests (quantities per resource), launchable_types
    PREPARATION_FAILED = "preparation_failed"  # error_type, error


# the kinds that say a pod was never meant for the pool (it does not tolerate the pool's taint, or its
# requirements contradict the pool's), as opposed to a pool that could take it but cannot now
MISMATCH_KINDS = frozenset({ReasonKind.TAINT, ReasonKind.REQUIREMENT_CONFLICT, ReasonKind.REQUIREMENT_LABELS})

DetailValue: TypeAlias = str | int | float | None | tuple[str, ...] | Mapping[str, str] | Mapping[str, int]


@dataclass(frozen=True, slots=True)
class Reason:
    kind: ReasonKind
    nodepool: str  # "" when the reason is about no pool in particular
    detail: Mapping[str, DetailValue] = field(hash=False)
    text: str

    def __str__(self) -> str:
        return self.text


def pairs(reasons: Iterable[Reason]) -> list[tuple[str, str]]:
    """(nodepool, text) per reason: the shape Results.unschedulable has always had."""
    return [(r.nodepool, r.text) for r in reasons]


# --------------------------------------------------------------------------------------------- quantities

# the binary units for byte resources, largest first
_BYTE_UNITS = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def human_quantity(milli: int, key: str, *, round_up: bool) -> str:
    """An amount as a person reads it: cpu and counts in units with up to 3 decimals (exact: a milli-unit
    is 0.001) or as millis below one unit; bytes in the largest binary unit with up to 2 decimals.

    Bytes that 2 decimals cannot show exactly are rounded up (what a pod asks for) or down (what a node
    offers), so a request that does not fit never reads as no larger than the largest offer.
    """
    if counted_in_bytes(key):
        if milli % 1000 or milli < 1000 * 1024:
            return format_quantity(milli, key)
        b = milli // 1000
        for suffix, size in _BYTE_UNITS:
            if b >= size:
                hundredths, rest = divmod(b * 100, size)
                if rest and round_up:
                    hundredths += 1
                whole, frac = divmod(hundredths, 100)
                return f"{whole}.{frac:02d}".rstrip("0").rstrip(".") + suffix
    if milli < 1000 and milli % 1000:
        return f"{milli}m"
    whole, frac = divmod(milli, 1000)
    return f"{whole}.{frac:03d}".rstrip("0").rstrip(".")


def _amount(key: str, milli: int) -> str:
    q = human_quantity(milli, key, round_up=False)
    if key == CPU:
        return f"{q} cpu"
    if key == MEMORY:
        return q
    return f"{q} {key}"


def _shown(keys: Sequence[str], vec: Sequence[int]) -> Iterator[tuple[int, str, int]]:
    """(position, key, amount) of the requested resources a reason names: not pods, not zero."""
    for i, (k, v) in enumerate(zip(keys, vec, strict=True)):
        if k != PODS and v:
            yield i, k, v


def _describe_request(keys: Sequence[str], vec: Sequence[int]) -> str:
    parts = []
    for _, k, v in _shown(keys, vec):
        q = human_quantity(v, k, round_up=True)
        parts.append(f"{q} cpu" if k == CPU else f"{q} memory" if k == MEMORY else f"{q} {k}")
    return " and ".join(parts) or "the requested resources"


# --------------------------------------------------------------------------------------------- constructors


def _requirement(r: Requirement) -> dict[str, DetailValue]:
    if r.operator in ("Gt", "Gte", "Lt", "Lte"):
        values: tuple[str, ...] = (str(r).rsplit(" ", 1)[1],)
    else:
        values = tuple(sorted(r.values))
    return {"key": r.key, "operator": r.operator, "values": values, "requirement": str(r)}


def no_nodepool() -> Reason:
    return Reason(ReasonKind.NO_NODEPOOL, "", {}, "no nodepool is defined")


def nodepool_unusable(nodepool: str, why: Reason | None) -> Reason:
    """A pod's reason for a pool left out of the solve, carrying the pool's own reason's detail."""
    if why is None:
        return Reason(ReasonKind.NODEPOOL_UNUSABLE, nodepool, {}, "nodepool unusable: not prepared")
    return Reason(ReasonKind.NODEPOOL_UNUSABLE, nodepool, why.detail, f"nodepool unusable: {why.text}")


def could_not_explain(nodepool: str, e: Exception) -> Reason:
    return Reason(
        ReasonKind.UNEXPLAINED,
        nodepool,
        {"error_type": type(e).__name__, "error": str(e)},
        f"could not be explained ({type(e).__name__}: {e})",
    )


def taint_not_tolerated(nodepool: str, t: Taint) -> Reason:
    return Reason(
        ReasonKind.TAINT,
        nodepool,
        {"key": t.key, "value": t.value, "effect": t.effect},
        f"taint {t} not tolerated",
    )


def static_nodepool(nodepool: str, replicas: int) -> Reason:
    return Reason(
        ReasonKind.STATIC_NODEPOOL,
        nodepool,
        {"replicas": replicas},
        f"nodepool is static (spec.replicas: {replicas}): it keeps a fixed number of nodes and launches none for "
        "pending pods",
    )


def reservation_full(nodepool: str, reservation_id: str) -> Reason:
    """Every offering left to a NodeClaim is on capacity that is used up: a reservation with no instance left,
    and the requirements allow no other capacity type (detail: reservation)."""
    return Reason(
        ReasonKind.OFFERING,
        nodepool,
        {"reservation": reservation_id},
        f"capacity reservation {reservation_id} has no instance left, and no other offering is allowed",
    )


def no_offering_for_nodepool(nodepool: str) -> Reason:
    return Reason(
        ReasonKind.OFFERING, nodepool, {}, "no instance type offering is available for the nodepool's requirements"
    )


def requirement_conflict(nodepool: str, pod_req: Requirement, pool_req: Requirement) -> Reason:
    detail = _requirement(pod_req)
    theirs = _requirement(pool_req)
    detail["nodepool_operator"] = theirs["operator"]
    detail["nodepool_values"] = theirs["values"]
    detail["nodepool_requirement"] = theirs["requirement"]
    return Reason(
        ReasonKind.REQUIREMENT_CONFLICT,
        nodepool,
        detail,
        f"requirement {pod_req} conflicts with nodepool requirement {pool_req}",
    )


def requirement_not_in_labels(nodepool: str, r: Requirement) -> Reason:
    return Reason(
        ReasonKind.REQUIREMENT_LABELS,
        nodepool,
        _requirement(r),
        f"requirement {r} is not satisfied by the nodepool's labels",
    )


def requirement_matches_no_offering(nodepool: str, r: Requirement) -> Reason:
    return Reason(ReasonKind.OFFERING, nodepool, _requirement(r), f"requirement {r} matches no offering")


def requirements_match_no_offering(nodepool: str, reqs: Iterable[Requirement]) -> Reason:
    texts = tuple(str(r) for r in reqs)
    return Reason(
        ReasonKind.OFFERING,
        nodepool,
        {"requirements": texts},
        "requirements " + "; ".join(texts) + " together match no offering",
    )


def node_affinity_matches_no_offering(nodepool: str) -> Reason:
    return Reason(ReasonKind.OFFERING, nodepool, {}, "node affinity matches no offering")


def no_instance_type_large_enough(
    nodepool: str, keys: Sequence[str], request: Sequence[int], largest: Sequence[int]
) -> Reason:
    """`request`: the pod's requests along `keys`; `largest`: the largest allocatable offered per key."""
    shown = list(_shown(keys, request))
    largest_text = ", ".join(_amount(k, largest[i]) for i, k, _ in shown)
    return Reason(
        ReasonKind.RESOURCES,
        nodepool,
        {"requests": {k: v for _, k, v in shown}, "largest": {k: largest[i] for i, k, _ in shown}},
        f"no instance type has {_describe_request(keys, request)} available (largest offered: {largest_text})",
    )


def limit_exceeded(nodepool: str, resource: str, limit: int, in_use: int) -> Reason:
    lim, used = format_quantity(limit, resource), format_quantity(in_use, resource)
    return Reason(
        ReasonKind.LIMIT,
        nodepool,
        {"resource": resource, "limit": lim, "in_use": used, "limit_milli": limit, "in_use_milli": in_use},
        f"limit {resource}={lim} would be exceeded (in use {used})",
    )


def limits_exceeded(nodepool: str) -> Reason:
    return Reason(ReasonKind.LIMIT, nodepool, {}, "nodepool limits would be exceeded")


def topology(nodepool: str, constraint: str, key: str, selector: str, max_skew: int, text: str) -> Reason:
    """A topology group refuses the pod (the text is the group's own description)."""
    detail: dict[str, DetailValue] = {"constraint": constraint, "topology_key": key, "selector": selector}
    if constraint == "spread":
        detail["max_skew"] = max_skew
    return Reason(ReasonKind.TOPOLOGY, nodepool, detail, text)


def no_domain(nodepool: str, key: str) -> Reason:
    return Reason(ReasonKind.TOPOLOGY, nodepool, {"topology_key": key}, f"no {key} domain available")


def label_not_carried(nodepool: str, constraint: str, key: str, *, on_some_node: bool) -> Reason:
    """A topology constraint on a key no new node of the pool would carry (no offering, type label or pool
    requirement gives it a value). on_some_node: an existing node carries it, so only new nodes lack it."""
    text = (
        f"no new node of nodepool {nodepool} would carry label {key}"
        if on_some_node
        else f"no node of nodepool {nodepool} carries label {key}"
    )
    detail: dict[str, DetailValue] = {"constraint": constraint, "topology_key": key, "missing_label": True}
    return Reason(ReasonKind.TOPOLOGY, nodepool, detail, text)


def unsatisfiable_together(nodepool: str) -> Reason:
    return Reason(
        ReasonKind.CONSTRAINTS, nodepool, {}, "no instance type satisfies all of the pod's constraints together"
    )


def insufficient_resources(nodepool: str) -> Reason:
    return Reason(ReasonKind.RESOURCES, nodepool, {}, "insufficient resources")


def node_affinity(nodepool: str) -> Reason:
    return Reason(ReasonKind.NODE_AFFINITY, nodepool, {}, "node affinity")


def host_port_in_use(nodepool: str, port: int, protocol: str) -> Reason:
    return Reason(
        ReasonKind.HOST_PORT, nodepool, {"port": port, "protocol": protocol}, f"host port {port}/{protocol} in use"
    )


def daemonset_host_port(nodepool: str, port: int, protocol: str, daemonset: str) -> Reason:
    """`daemonset`: "namespace/name" of the DaemonSet whose pod holds the port."""
    return Reason(
        ReasonKind.DAEMONSET_HOST_PORT,
        nodepool,
        {"port": port, "protocol": protocol, "daemonset": daemonset},
        f"host port {port}/{protocol} in use by DaemonSet {daemonset}",
    )


def min_values_not_met(nodepool: str, key: str, minimum: int, remaining: Sequence[str]) -> Reason:
    shown = ", ".join(remaining[:10]) + (", …" if len(remaining) > 10 else "")
    left = f"{len(remaining)} remain ({shown})" if remaining else "none remain"
    return Reason(
        ReasonKind.MIN_VALUES,
        nodepool,
        {"key": key, "min_values": minimum, "remaining": len(remaining), "values": tuple(remaining)},
        f"minValues {minimum} on {key} not met: {left}",
    )


def beyond_range(requests: Resources) -> Reason:
    """Why a pod requesting more than the engine computes with cannot be placed."""
    over = sorted(k for k, v in requests.items() if not -MAX_AMOUNT <= v <= MAX_AMOUNT)
    return Reason(
        ReasonKind.BEYOND_RANGE,
        "",
        {"resources": tuple(over), "requests_milli": {k: requests[k] for k in over}, "max_milli": MAX_AMOUNT},
        f"requests {', '.join(f'{k}={format_quantity(requests[k], k)}' for k in over)} beyond the largest "
        f"amount the engine plans with ({', '.join(format_quantity(MAX_AMOUNT, k) for k in over)})",
    )


def pool_catalog_empty(nodepool: str) -> Reason:
    return Reason(
        ReasonKind.NODEPOOL_UNUSABLE,
        nodepool,
        {"cause": UnusableCause.EMPTY_CATALOG},
        "the catalog has no instance types",
    )


def pool_no_matching_type(nodepool: str, catalog_types: int) -> Reason:
    return Reason(
        ReasonKind.NODEPOOL_UNUSABLE,
        nodepool,
        {"cause": UnusableCause.NO_MATCHING_TYPE, "catalog_types": catalog_types},
        f"no instance type of the catalog ({catalog_types} types) matches its requirements",
    )


def pool_no_offering(nodepool: str, matching_types: int) -> Reason:
    return Reason(
        ReasonKind.NODEPOOL_UNUSABLE,
        nodepool,
        {"cause": UnusableCause.NO_OFFERING, "matching_types": matching_types},
        f"none of the {matching_types} instance types matching its requirements has an available, priced "
        "offering in the zones and capacity types it allows",
    )


def pool_daemonsets_too_large(nodepool: str, overhead: Mapping[str, str], launchable_types: int) -> Reason:
    """`overhead`: the DaemonSets' summed requests as quantities."""
    return Reason(
        ReasonKind.NODEPOOL_UNUSABLE,
        nodepool,
        {
            "cause": UnusableCause.DAEMONSET_OVERHEAD,
            "daemonset_requests": dict(overhead),
            "launchable_types": launchable_types,
        },
        f"its DaemonSets' requests ({', '.join(f'{k}={v}' for k, v in overhead.items())}) "
        f"exceed the allocatable of every one of the {launchable_types} instance types it could launch",
    )


def pool_preparation_failed(nodepool: str, e: Exception) -> Reason:
    return Reason(
        ReasonKind.NODEPOOL_UNUSABLE,
        nodepool,
        {"cause": UnusableCause.PREPARATION_FAILED, "error_type": type(e).__name__, "error": str(e)},
        f"the engine could not prepare it ({type(e).__name__}: {e})",
    )
