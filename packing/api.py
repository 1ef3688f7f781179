"""The engine's public API: what the console, the loops and the CLIs call. Pure Python, no Django.

    inputs, extras = read_files(["cluster.yaml"])            # Kubernetes objects -> engine inputs
    catalog = resolve_catalog(inputs, Inputs(), "us-east-1")  # the InstanceType documents, else the built-in one
    results = plan(inputs, catalog)                           # Results: NodeClaims, placements, reasons
    report = consolidate(build_cluster(inputs, extras, catalog), at)   # Report: actions, NotDisrupted

Parsing: `read_files` and `parse_texts` read files as the CLIs do (the first bad field is an InputError naming
file, document and field); `add_objects` reads the objects of a live cluster, where one malformed object must
not stop the others (it is left out and reported); `check_object` tells whether the engine can read an object.
`Inputs` is what provisioning reads, `Extras` what disruption reads besides; `fresh_inputs` / `fresh_extras` give
another run its own lists over the same parsed objects (a run expands workloads into its lists).

Planning: `plan` (a Scheduler over the inputs and the virtual pods of their CapacityBuffers, `buffer_pods`;
`existing_nodes` and `Scheduler` for callers that vary the NodePools), `lower_bound` and `launch_lower_bound` (what no plan can go below), `explain_pod`.
Consolidation: `build_cluster`, `consolidate`, `explain_node`.
Catalog: `resolve_catalog` / `builtin_catalog` for a run, `load_builtin` for the bundled or cached data,
`refresh_catalog` to pull live data into that cache.

The leaf value types and parsers the console also uses (quantities, durations, cron schedules, requirements,
taints, the bounded YAML reader, the CRD defaults and well-known labels) are re-exported here, so that the
console imports the engine through this module only (tests/packing/test_imports.py checks it).

Results are the engine's typed dataclasses. JSON is made only where it is printed or stored: `plan_json` and
`report_json` are the CLIs' documents (and what the console stores in a snapshot replay).
"""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from packing import history, replay, yamlinput  # history and replay: console/history, console/replay
from packing.advisor import Advice, Finding, Severity, advice_json, advise, merge_patch
from packing.advisor import context_from_objects as advisor_context
from packing.advisor.iam import Permission, PermissionStatus, iam_findings
from packing.advisor.iam import preflight as iam_preflight
from packing.bound import lower_bound
from packing.buffers import (
    ACTIVE_CAPACITY,
    BUFFER_KIND,
    BufferReport,
    CapacityBuffer,
    ResolvedBuffer,
    ScalableRef,
    occupied_share,
    read_buffer,
)
from packing.buffers import is_virtual as is_buffer_pod  # the name the console reads
from packing.buffers import without_virtual as without_buffer_pods  # the name the console reads
from packing.catalog import (
    CatalogError,
    KubeletError,
    PriceOverride,
    PricingError,
    catalog_info,
    live,
    load_builtin,
)
from packing.catalog.allocatable import VM_MEMORY_OVERHEAD_PERCENT
from packing.catalog.snapshot import load_bundled
from packing.commitmentdocs import (
    COMMITMENT_API_VERSION,
    COMMITMENT_KIND,
    commitment_document,
    read_commitment,
)
from packing.commitmentpricing import (
    NORMALIZATION_FACTORS,
    CommitmentBook,
    family_and_size,
    priced_catalog,
    settle_plan,
)
from packing.commitments import Commitment, CommitmentKind
from packing.cron import CronError, CronSchedule
from packing.disruption import Action, Cluster, MinSavings, NotDisrupted, Report, consolidate, parse_time
from packing.disruption.balanced import BALANCED, BALANCED_K
from packing.disruption.balanced import THRESHOLD as BALANCED_THRESHOLD
from packing.disruption.donotdisrupt import DO_NOT_DISRUPT, do_not_disrupt_reason
from packing.disruption.drift import drift_reason  # why a node drifted from its NodePool (the drift alert)
from packing.disruption.inputs import Extras, build_cluster, parse_texts, read_extras, read_files
from packing.disruption.model import CheapestOption, MoveDecision, NotDisruptedCategory, ScoreObservation
from packing.disruption.output import action_json, not_disrupted_json
from packing.disruption.output import render_json as report_json
from packing.documents import DEFAULT_MAX_INPUT_BYTES, ByteBudget
from packing.durations import DurationError, format_duration, parse_duration
from packing.fields import FieldError, InputError
from packing.instancetype import (
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_RESERVED,
    InstanceType,
    Offering,
    Reservation,
    ReservationType,
)
from packing.kubeobjects import Inputs, add_object, expand_workloads, expansion_plan
from packing.legacy import (  # legacy Karpenter objects as v1 (console import)
    LEGACY_KINDS,
    convert_tagged,
    is_legacy,
)
from packing.nodepool import (
    BUDGET_NODES_DEFAULT,
    CONSOLIDATE_AFTER_DEFAULT,
    CONSOLIDATION_POLICY_DEFAULT,
    EXPIRE_AFTER_DEFAULT,
    INITIALIZED_LABEL,
    NODEPOOL_LABEL,
    ExistingNodeSpec,
    NodePool,
)
from packing.ondemandshare import BASE_ANNOTATION as ON_DEMAND_BASE_ANNOTATION
from packing.ondemandshare import PERCENTAGE_ANNOTATION as ON_DEMAND_PERCENTAGE_ANNOTATION
from packing.ondemandshare import ShareRow as OnDemandShareRow
from packing.ondemandshare import read_share as read_on_demand_share
from packing.ondemandshare import settle as settle_on_demand
from packing.overlay import NodeOverlay, OverlayConflict, OverlayResult, apply_overlays, resolve_overlays
from packing.overlaydocs import (
    NODEOVERLAY_API_VERSION,
    NODEOVERLAY_KIND,
    check_price,
    check_price_adjustment,
    read_overlay,
)
from packing.plan_output import nodeclaim_json, reason_json, unschedulable_json
from packing.plan_output import render_json as plan_json
from packing.planning import (
    CatalogUnavailable,
    buffer_pods,
    builtin_catalog,
    existing_nodes,
    on_demand_now,
    on_demand_split,
    overlay_notice,
    plan,
    resolve_catalog,
    skipped_notice,
)
from packing.pods import Pod
from packing.podspec import parse_pod_spec
from packing.poolschedule import SCHEDULES_ANNOTATION, OpenWindow, parse_windows, pools_at
from packing.quantity import MAX_QUANTITY, QuantityError, format_quantity, parse_quantity
from packing.requirements import MinValuesPolicy, Requirement, Requirements
from packing.resources import CPU, MEMORY, PODS, Resources
from packing.scheduling.reasons import MISMATCH_KINDS, Reason, ReasonKind
from packing.scheduling.results import ExistingPlacement, PlannedNodeClaim, Results
from packing.scheduling.scheduler import Scheduler
from packing.staticpool import ScaleDownCandidate, scale_down_order, static_nodeclaim
from packing.taints import EFFECTS, Taint, first_untolerated
from packing.yamlinput import brief, load_all, load_one

__all__ = [
    "priced_catalog",
    "CommitmentBook",
    "NORMALIZATION_FACTORS",
    "family_and_size",
    "settle_plan",
    "CAPACITY_TYPE_ON_DEMAND",
    "CAPACITY_TYPE_RESERVED",
    "Commitment",
    "CommitmentKind",
    "Reservation",
    "ReservationType",
    "SCHEDULES_ANNOTATION",
    "OpenWindow",
    "parse_windows",
    "pools_at",
    "history",
    "Advice",
    "Finding",
    "Permission",
    "PermissionStatus",
    "Severity",
    "advice_json",
    "advise",
    "advisor_context",
    "iam_findings",
    "iam_preflight",
    "merge_patch",
    "COMMITMENT_API_VERSION",
    "COMMITMENT_KIND",
    "commitment_document",
    "read_commitment",
    "NODEOVERLAY_API_VERSION",
    "NODEOVERLAY_KIND",
    "NodeOverlay",
    "OverlayConflict",
    "OverlayResult",
    "apply_overlays",
    "overlay_notice",
    "check_price",
    "check_price_adjustment",
    "read_overlay",
    "resolve_overlays",
    "replay",
    "ACTIVE_CAPACITY",
    "BUFFER_KIND",
    "BufferReport",
    "CapacityBuffer",
    "ResolvedBuffer",
    "ScalableRef",
    "buffer_pods",
    "check_buffer",
    "OnDemandShareRow",
    "ON_DEMAND_BASE_ANNOTATION",
    "ON_DEMAND_PERCENTAGE_ANNOTATION",
    "read_on_demand_share",
    "on_demand_now",
    "on_demand_split",
    "settle_on_demand",
    "is_buffer_pod",
    "without_buffer_pods",
    "occupied_share",
    "yamlinput",
    "BALANCED",
    "BALANCED_K",
    "BALANCED_THRESHOLD",
    "MoveDecision",
    "ScoreObservation",
    "ScaleDownCandidate",
    "scale_down_order",
    "static_nodeclaim",
    "VM_MEMORY_OVERHEAD_PERCENT",
    "load_bundled",
    "CronError",
    "CronSchedule",
    "DurationError",
    "parse_duration",
    "format_duration",
    "DO_NOT_DISRUPT",
    "do_not_disrupt_reason",
    "BUDGET_NODES_DEFAULT",
    "CONSOLIDATE_AFTER_DEFAULT",
    "CONSOLIDATION_POLICY_DEFAULT",
    "EXPIRE_AFTER_DEFAULT",
    "INITIALIZED_LABEL",
    "NODEPOOL_LABEL",
    "MAX_QUANTITY",
    "Requirement",
    "Requirements",
    "CPU",
    "MEMORY",
    "PODS",
    "EFFECTS",
    "Taint",
    "first_untolerated",
    "brief",
    "load_all",
    "load_one",
    "DEFAULT_MAX_INPUT_BYTES",
    "MISMATCH_KINDS",
    "Action",
    "ByteBudget",
    "CatalogError",
    "CatalogUnavailable",
    "CheapestOption",
    "Cluster",
    "ExistingNodeSpec",
    "ExistingPlacement",
    "Extras",
    "FieldError",
    "InputError",
    "Inputs",
    "InstanceType",
    "LEGACY_KINDS",
    "KubeletError",
    "MinSavings",
    "MinValuesPolicy",
    "NodeExplanation",
    "NodePool",
    "NotDisrupted",
    "NotDisruptedCategory",
    "Offering",
    "OnRefused",
    "PlannedNodeClaim",
    "Pod",
    "PodExplanation",
    "PriceOverride",
    "PricingError",
    "QuantityError",
    "Reason",
    "ReasonKind",
    "RefreshReport",
    "Report",
    "Resources",
    "Results",
    "Scheduler",
    "action_json",
    "add_objects",
    "build_cluster",
    "builtin_catalog",
    "catalog_info",
    "check_object",
    "consolidate",
    "convert_tagged",
    "drift_reason",
    "existing_nodes",
    "expand_workloads",
    "expansion_plan",
    "explain_node",
    "explain_pod",
    "format_quantity",
    "fresh_extras",
    "fresh_inputs",
    "have_aws_credentials",
    "is_legacy",
    "launch_lower_bound",
    "load_builtin",
    "lower_bound",
    "nodeclaim_json",
    "not_disrupted_json",
    "parse_pod_spec",
    "parse_quantity",
    "parse_texts",
    "parse_time",
    "plan",
    "plan_json",
    "read_files",
    "reason_json",
    "refresh_catalog",
    "report_json",
    "resolve_catalog",
    "skipped_notice",
    "unschedulable_json",
    "with_min_values_policy",
]

RefreshReport = live.RefreshReport


# ---------------------------------------------------------------- the catalog's live data
# Looked up in packing.catalog.live at each call, so that a test (or the simulator) can stand in for AWS there.
def have_aws_credentials() -> bool:
    """Whether boto3 finds AWS credentials (the environment, a profile, an instance role)."""
    return live.have_credentials()


def refresh_catalog(
    region: str, cache_dir: str | os.PathLike[str], *, types: bool = True, on_demand: bool = True, spot: bool = True
) -> live.RefreshReport:
    """Pull live instance types and offerings (`types`), on-demand prices and spot prices into the cache the
    built-in catalog reads (load_builtin's cache_dir). A failed step keeps its old data and is reported."""
    return live.refresh(region, cache_dir, types=types, on_demand=on_demand, spot=spot)


# ---------------------------------------------------------------- objects of a live cluster

# Told about each object add_objects leaves out, with why: the object and the exception.
OnRefused = Callable[[Mapping[str, Any], Exception], None]


def add_objects(
    objects: Iterable[Mapping[str, Any]],
    inputs: Inputs,
    extras: Extras | None = None,
    *,
    on_refused: OnRefused | None = None,
) -> None:
    """Objects of a live cluster (pods, nodes, PDBs, DaemonSets, NodePools, NodeClasses, NodeClaims) into
    `inputs`, and into `extras` when given.

    An object the engine cannot read is left out, counted in `inputs.skipped` as "invalid <Kind>" and passed to
    `on_refused`: one malformed object in a live cluster must not stop provisioning. Any exception counts, not
    only InputError, for the same reason. (An object read into `inputs` whose disruption fields are bad stays
    in `inputs`.) Files are read by read_files / parse_texts instead, which stop at the first bad field."""
    for obj in objects:
        try:
            add_object(obj, inputs)
            if extras is not None:
                read_extras(obj, extras)
        except Exception as exc:  # noqa: BLE001 - contained: see the docstring
            kind = f"invalid {obj.get('kind')}"
            inputs.skipped[kind] = inputs.skipped.get(kind, 0) + 1
            if on_refused is not None:
                on_refused(obj, exc)


def check_object(obj: Mapping[str, Any]) -> None:
    """InputError (a FieldError naming the field) when the engine cannot read `obj`; nothing when it can."""
    add_object(obj, Inputs())


def check_buffer(obj: Mapping[str, Any]) -> CapacityBuffer:
    """The spec of a CapacityBuffer object as its CRD validates it; FieldError naming the field when bad."""
    raw = obj.get("metadata")
    meta: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    return read_buffer(obj, str(meta.get("name", "")), str(meta.get("namespace") or "default"))


def fresh_inputs(inputs: Inputs) -> Inputs:
    """A copy of `inputs` with lists and maps of its own over the same parsed objects, for another run: plan
    and build_cluster extend the lists they get (expand_workloads), and the engines never change the objects."""
    return Inputs(**{f.name: copy.copy(getattr(inputs, f.name)) for f in dataclasses.fields(Inputs)})


def fresh_extras(extras: Extras) -> Extras:
    """As fresh_inputs, for Extras."""
    out = Extras()
    for name, value in vars(extras).items():
        setattr(out, name, copy.copy(value))
    return out


# ---------------------------------------------------------------- bounds and explanations
def with_min_values_policy(cluster: Cluster, policy: str) -> Cluster:
    """The cluster with its replacements planned under this minValues policy ("Strict" or "BestEffort")."""
    return dataclasses.replace(cluster, min_values_policy=MinValuesPolicy(policy))


def launch_lower_bound(sched: Scheduler, results: Results) -> float:
    """A lower bound ($/h) on any set of new nodes for the pods this plan launches NodeClaims for.

    Not Results.lower_bound: that one covers every pod the plan placed and lets them use the free room of all
    existing nodes pooled together (a relaxation), so pods that fit on no existing node but add up to less than
    the fragments get a bound of $0. The pods on new NodeClaims did not fit on an existing node, so their bound
    is taken over new capacity alone. `sched` is the Scheduler that made `results`."""
    if not results.nodeclaims:
        return 0.0
    return float(lower_bound(sched, Results(nodeclaims=list(results.nodeclaims)), []))


@dataclass(frozen=True)
class PodExplanation:
    """Where the plan puts one pod, or why it cannot."""

    pod: str  # namespace/name
    unschedulable: bool
    placed_on: PlannedNodeClaim | ExistingPlacement | None
    # one Reason per NodePool that cannot take it (nodepool "" when none is to blame); empty if placed
    reasons: list[Reason]


def explain_pod(results: Results, pod: str) -> PodExplanation:
    """Where `results` places the pod `namespace/name` (on a new NodeClaim, else on an existing node), or why
    it cannot. A pod the run did not plan for is neither placed nor unschedulable."""
    reasons = results.unschedulable_reasons.get(pod)
    placed: PlannedNodeClaim | ExistingPlacement | None = next(
        (c for c in results.nodeclaims if any(p.key == pod for p in c.pods)), None
    )
    if placed is None:
        placed = next((e for e in results.existing if any(p.key == pod for p in e.pods)), None)
    return PodExplanation(pod, reasons is not None, placed, list(reasons or []))


@dataclass(frozen=True)
class NodeExplanation:
    """What one consolidation run does with one node: the action that disrupts it (and its place in the
    report's order, from 1), or why the node is spared. Both None: the run did not consider the node."""

    node: str
    order: int | None = None
    action: Action | None = None
    spared: NotDisrupted | None = None


def explain_node(report: Report, node: str) -> NodeExplanation:
    """The action of `report` that disrupts `node` (the first: a node is in one action at most), else why the
    run spares it."""
    for order, action in enumerate(report.actions, 1):
        if node in action.nodes:
            return NodeExplanation(node, order, action)
    spared = next((n for n in report.not_disrupted if n.node == node), None)
    return NodeExplanation(node, spared=spared)
