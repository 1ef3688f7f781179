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
from packing.fields import InputError
from packing.instancetype import InstanceType
from packing.kubeobjects import Inputs, expand_workloads, inflight_claims
from packing.nodepool import ExistingNodeSpec
from packing.poolschedule import pools_at
from packing.requirements import MinValuesPolicy
from packing.scheduling.results import Results
from packing.scheduling.scheduler import Scheduler

__all__ = [
    "CatalogUnavailable",
    "buffer_pods",
    "builtin_catalog",
    "existing_nodes",
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
    return catalog


def skipped_notice(*inputs: Inputs) -> str | None:
    """The one notice a CLI prints (on stderr) for the objects of kinds the engine does not read, or None."""
    if not any(i.skipped_total for i in inputs):
        return None
    counts: dict[str, int] = {}
    for i in inputs:
        for k, v in i.skipped.items():
            counts[k] = counts.get(k, 0) + v
    kinds = ", ".join(f"{k[:60]} {v}" for k, v in sorted(counts.items())[:20])
    more = ", …" if len(counts) > 20 else ""
    return f"skipped {sum(counts.values())} objects of other kinds ({kinds}{more})"


def existing_nodes(inp: Inputs, catalog: Sequence[InstanceType]) -> list[ExistingNodeSpec]:
    """The capacity pods may be placed on without a launch: the Nodes, and the NodeClaims not registered yet."""
    return [*inp.nodes, *inflight_claims(inp, catalog)]


def buffer_pods(inp: Inputs) -> list[ResolvedBuffer]:
    """The input's CapacityBuffers made into virtual pods (packing.buffers), workloads expanded first."""
    expand_workloads(inp)
    if not inp.buffers:
        return []
    return resolve_buffers(inp.buffers, inp.pod_templates, inp.workloads, [*inp.running, *inp.pending])


def plan(
    inp: Inputs,
    catalog: Sequence[InstanceType],
    *,
    lower_bound: bool = True,
    min_values_policy: MinValuesPolicy = MinValuesPolicy.STRICT,
    at: datetime | None = None,
) -> Results:
    """The provisioner's plan for the pending pods of `inp` (workloads without pods expanded first): the
    NodeClaims to launch, the placements on existing nodes, and why each unschedulable pod is. With
    `lower_bound`, Results.lower_bound is the cost below which no plan for the placed pods can go.

    The virtual pods of the input's CapacityBuffers are solved for with the pending pods, so the plan launches
    room for them; they are then taken out of its pending and unschedulable pods and reported in
    Results.buffers instead.

    NodePools with clock-policy windows (packing.poolschedule) are taken as they are at `at` (default now); the
    open windows are in Results.schedules."""
    expand_workloads(inp)
    resolved = buffer_pods(inp)
    nodes = existing_nodes(inp, catalog)
    pools, opened = (pools_at(inp.nodepools, at or datetime.now(UTC)) if any(p.windows for p in inp.nodepools)
                     else (inp.nodepools, []))
    sched = Scheduler(
        pools,
        catalog,
        nodes,
        inp.running,
        inp.daemonsets,
        min_values_policy=min_values_policy,
    )
    if not resolved:
        res = sched.solve(inp.pending, lower_bound=lower_bound)
        res.schedules = opened
        return res
    res = sched.solve([*inp.pending, *(p for r in resolved for p in r.pods)], lower_bound=lower_bound)
    res.buffers = buffer_reports(resolved, res, {n.name: n.allocatable for n in nodes})
    without_virtual(res, resolved)
    res.schedules = opened
    return res
