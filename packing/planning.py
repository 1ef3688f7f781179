"""One planning run over parsed inputs: the instance catalog it runs on, the nodes it may place pods on, the plan.

What `python -m packing plan` does between reading its files and printing, and what the console's previews and
replays do with documents held in memory. Errors are InputErrors (the CLIs print them as one line and exit 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from packing.buffers import ResolvedBuffer, buffer_reports, resolve_buffers, without_virtual
from packing.catalog import load_builtin
from packing.commitmentpricing import priced_catalog, settle_plan
from packing.commitments import Commitment
from packing.fields import InputError
from packing.instancetype import InstanceType
from packing.kubeobjects import Inputs, expand_workloads, inflight_claims
from packing.nodepool import CAPACITY_TYPE_LABEL, ExistingNodeSpec
from packing.ondemandshare import ShareBook, ShareRow, Split, bind, row, settle, split
from packing.overlay import apply_overlays, resolve_overlays
from packing.poolschedule import pools_at
from packing.requirements import MinValuesPolicy
from packing.scheduling.reservations import without_expiring_blocks
from packing.scheduling.results import Results
from packing.scheduling.scheduler import Scheduler

__all__ = [
    "CatalogUnavailable",
    "buffer_pods",
    "builtin_catalog",
    "existing_nodes",
    "on_demand_now",
    "on_demand_split",
    "overlay_notice",
    "plan",
    "resolve_catalog",
    "skipped_notice",
]


class CatalogUnavailable(InputError):
    """No InstanceType documents were given and the built-in catalog of the region cannot be loaded."""


def builtin_catalog(inp: Inputs, region: str) -> list[InstanceType]:
    """The bundled catalog of `region`, its allocatable computed with the kubelet settings of the NodeClass of
    the heaviest NodePool that has any (else of the first NodeClass by name that has any)."""
    kubelet: dict[str, Any] | None = None
    for pool in sorted(inp.nodepools, key=lambda p: (-p.weight, p.name)):
        k = inp.nodeclasses.get(pool.node_class)
        if k:
            kubelet = dict(k)
            break
    if kubelet is None:
        for name in sorted(inp.nodeclasses):
            if inp.nodeclasses[name]:
                kubelet = dict(inp.nodeclasses[name])
                break
    try:
        return list(load_builtin(region, kubelet=kubelet))
    except ValueError as e:
        raise CatalogUnavailable(f"built-in catalog: {e}") from None


def resolve_catalog(inp: Inputs, catalog_inputs: Inputs, region: str) -> list[InstanceType]:
    """The catalog of a run: the InstanceType documents of its files and of its --catalog files, else the
    built-in catalog of `region`. InputError when an InstanceType is defined twice (naming both places when
    both are known), CatalogUnavailable when there are no documents and no built-in catalog for the region."""
    catalog = inp.instance_types + catalog_inputs.instance_types
    if not catalog:
        catalog = builtin_catalog(inp, region)
    # each Inputs refuses its own duplicates as it reads them; a FILE and a --catalog file may still share a name
    both = sorted(set(inp.origins) & set(catalog_inputs.origins))
    if both:
        name = both[0]
        raise InputError(
            f"{catalog_inputs.origins[name]}: metadata.name: InstanceType {name[:60]} is defined more than once "
            f"(also {inp.origins[name]})"
        )
    names = [it.name for it in catalog]
    if len(set(names)) != len(names):  # objects added without their place (kubeobjects.add_object, where="")
        dup = sorted({n for n in names if names.count(n) > 1})[0]
        raise InputError(f"InstanceType {dup[:60]} is defined more than once")
    # the NodeOverlays of both (packing.overlay), before anything prices or sizes a node
    return apply_overlays(catalog, [*inp.overlays, *catalog_inputs.overlays])


def skipped_notice(*inputs: Inputs) -> str | None:
    """The one notice a CLI prints (on stderr) for the objects of kinds the engine does not read, or None."""
    converted = [n for i in inputs for n in i.converted]  # legacy objects read as v1 ones (packing.legacy)
    if not any(i.skipped_total for i in inputs):
        return "\n".join(converted) or None
    counts: dict[str, int] = {}
    for i in inputs:
        for k, v in i.skipped.items():
            counts[k] = counts.get(k, 0) + v
    kinds = ", ".join(f"{k[:60]} {v}" for k, v in sorted(counts.items())[:20])
    more = ", …" if len(counts) > 20 else ""
    return "\n".join([*converted, f"skipped {sum(counts.values())} objects of other kinds ({kinds}{more})"])


def overlay_notice(catalog: Sequence[InstanceType], *inputs: Inputs) -> str | None:
    """The notice a CLI prints (on stderr) for the NodeOverlays of `inputs` that a conflict kept out of `catalog`
    (resolve_catalog's), or None. Which overlays conflict depends only on what they select (labels, zone,
    capacity type, reservation) and set, never on prices, so it is the same over the overlaid catalog."""
    overlays = [o for i in inputs for o in i.overlays]
    if not overlays:
        return None
    conflicts = resolve_overlays(catalog, overlays).conflicts
    if not conflicts:
        return None
    return "; ".join(str(c) for c in conflicts[:5]) + ("; …" if len(conflicts) > 5 else "")


def existing_nodes(inp: Inputs, catalog: Sequence[InstanceType]) -> list[ExistingNodeSpec]:
    """The capacity pods may be placed on without a launch: the Nodes, and the NodeClaims not registered yet."""
    return [*inp.nodes, *inflight_claims(inp, catalog)]


def buffer_pods(inp: Inputs) -> list[ResolvedBuffer]:
    """The input's CapacityBuffers made into virtual pods (packing.buffers), workloads expanded first."""
    expand_workloads(inp)
    if not inp.buffers:
        return []
    return resolve_buffers(inp.buffers, inp.pod_templates, inp.workloads, [*inp.running, *inp.pending])


def on_demand_split(inp: Inputs, sched: Scheduler) -> Split:
    """The pending pods of `inp` rewritten to keep each workload's on-demand share (packing.ondemandshare.split),
    counting the pods running on the scheduler's existing nodes; solve Split.pods, then `settle` the results."""
    return split(
        ShareBook(inp.on_demand_shares, inp.workloads), sched.nodepools, inp.pending, inp.running, sched.existing_nodes
    )


def on_demand_now(inp: Inputs) -> list[ShareRow]:
    """Each workload's on-demand share as the cluster runs now (workloads without pods expanded first): its
    replicas, how many the contract requires on on-demand, and how many run on on-demand and on spot nodes
    (ShareRow.unschedulable: those still pending)."""
    expand_workloads(inp)
    bound = bind(ShareBook(inp.on_demand_shares, inp.workloads), inp.nodepools, [*inp.running, *inp.pending])
    types = {n.name: n.labels.get(CAPACITY_TYPE_LABEL, "") for n in inp.nodes}
    counts: dict[str, dict[str, int]] = {}
    for p in (*inp.running, *inp.pending):
        w = bound.of.get(p.key)
        if w is not None:
            ct = types.get(p.node_name, "") if p.node_name else "pending"
            by = counts.setdefault(str(w), {})
            by[ct] = by.get(ct, 0) + 1
    return [row(c, counts.get(str(w), {}), counts.get(str(w), {}).get("pending", 0))
            for w, c in sorted(bound.contracts.items())]


def plan(
    inp: Inputs,
    catalog: Sequence[InstanceType],
    *,
    lower_bound: bool = True,
    min_values_policy: MinValuesPolicy = MinValuesPolicy.STRICT,
    commitments: Sequence[Commitment] = (),
    at: datetime | None = None,
) -> Results:
    """The provisioner's plan for the pending pods of `inp` (workloads without pods expanded first): the
    NodeClaims to launch, the placements on existing nodes, and why each unschedulable pod is. With
    `lower_bound`, Results.lower_bound is the cost below which no plan for the placed pods can go.

    The virtual pods of the input's CapacityBuffers are solved for with the pending pods, so the plan launches
    room for them; they are then taken out of its pending and unschedulable pods and reported in
    Results.buffers instead.

    NodePools with clock-policy windows (packing.poolschedule) are taken as they are at `at` (default now); the
    open windows are in Results.schedules.

    `commitments` (Reserved Instances, Savings Plans; packing.commitmentpricing): the solve prices on-demand
    capacity they cover at the marginal cost the bill sees, after the existing nodes have used them, and each
    NodeClaim gets its effective price and the commitments that cover it (Results.commitments: their use).
    `at` leaves out the commitments not in force then and the Capacity Blocks that end within the drain lead
    time (None: all commitments count and every block is open)."""
    expand_workloads(inp)
    resolved = buffer_pods(inp)
    nodes = existing_nodes(inp, catalog)
    if at is not None:
        catalog = without_expiring_blocks(catalog, at)  # a Capacity Block about to end takes no new node
    priced = priced_catalog(catalog, commitments, nodes, at) if commitments else catalog
    pools, opened = (pools_at(inp.nodepools, at or datetime.now(UTC)) if any(p.windows for p in inp.nodepools)
                     else (inp.nodepools, []))
    sched = Scheduler(
        pools,
        priced,
        nodes,
        inp.running,
        inp.daemonsets,
        min_values_policy=min_values_policy,
    )
    # each workload's on-demand share (packing.ondemandshare): a rewrite of the pending pods' requirements
    share = on_demand_split(inp, sched)
    if not resolved:
        res = settle(share, sched.solve(share.pods, lower_bound=lower_bound))
    else:
        res = settle(share, sched.solve([*share.pods, *(p for r in resolved for p in r.pods)], lower_bound=lower_bound))
        res.buffers = buffer_reports(resolved, res, {n.name: n.allocatable for n in nodes})
        without_virtual(res, resolved)
    res.schedules = opened
    if commitments:
        settle_plan(res, catalog, commitments, nodes, at)
    return res
