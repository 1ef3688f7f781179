"""Why a pod cannot be placed: one Reason per NodePool, naming only the constraint that failed.

The checks run in the order a human would look: taints, then requirements, then sizes, then limits, then
topology, so that the first failing one is reported and nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from packing.nodepool import NodePool
from packing.requirements import Requirements
from packing.resources import CPU, MEMORY
from packing.scheduling import reasons
from packing.scheduling.minvalues import shortfall
from packing.scheduling.nodeclaim import NodeClaim
from packing.scheduling.reasons import Reason
from packing.scheduling.topology import topology_pins
from packing.taints import first_untolerated

if TYPE_CHECKING:
    from packing.scheduling.preferences import PodContext
    from packing.scheduling.solve import Solve
    from packing.scheduling.templates import PoolTemplate

__all__ = ["explain", "explain_pool"]


def explain_pool(s: Solve, ctx: PodContext, tpl: PoolTemplate) -> Reason:
    pod = ctx.pod
    name = tpl.name
    t = first_untolerated(tpl.pool.taints, pod.tolerations)
    if t is not None:
        return reasons.taint_not_tolerated(name, t)
    if not tpl.options:
        return reasons.no_offering_for_nodepool(name)
    # requirements: the first term that passes the nodepool is the one we diagnose further
    term_reqs: Requirements | None = None
    first_problem: Reason | None = None
    for term in ctx.terms:
        c = term.conflict(tpl.base)
        if c is not None:
            first_problem = first_problem or reasons.requirement_conflict(name, c[0], c[1])
            continue
        reqs = tpl.base.intersect(term)
        bad = tpl.pool_key_failure(reqs)
        if bad is not None:
            first_problem = first_problem or reasons.requirement_not_in_labels(name, term.get(bad.key) or bad)
            continue
        if not tpl.viable(reqs):
            if first_problem is None:
                culprit = None
                for k in sorted(term):
                    if not tpl.viable(tpl.base.intersect(Requirements([term[k]]))):
                        culprit = term[k]
                        break
                first_problem = (
                    reasons.requirement_matches_no_offering(name, culprit)
                    if culprit is not None
                    else reasons.requirements_match_no_offering(name, term.values())
                )
            continue
        term_reqs = reqs
        break
    if term_reqs is None:
        return first_problem or reasons.node_affinity_matches_no_offering(name)
    viable = tpl.viable(term_reqs)
    used = ctx.vec
    fitting = [o for o in viable if all(x <= y for x, y in zip(used, o.alloc, strict=True))]
    if not fitting:
        largest = tuple(max(o.alloc[i] for o in viable) for i in range(len(s.keys)))
        return reasons.no_instance_type_large_enough(name, s.keys, ctx.vec, largest)
    if pod.host_ports and tpl.port_daemonsets:
        mask = tpl.port_mask(pod.host_ports)
        free = [o for o in fitting if mask[o.index]]
        if not free:
            clash = tpl.port_clash(pod.host_ports, fitting[0])
            assert clash is not None
            return reasons.daemonset_host_port(name, clash[0].port, clash[0].protocol, clash[1].key)
        fitting = free
    limits = tpl.pool.limits
    if limits and not any(s.limits.ok(tpl, o.it.capacity) for o in fitting):
        used_l = s.limits.used[name]
        smallest = min(fitting, key=lambda o: (o.it.capacity.get(CPU, 0), o.it.capacity.get(MEMORY, 0)))
        for k in sorted(limits):
            add = 1000 if k == "nodes" else smallest.it.capacity.get(k, 0)
            if used_l.get(k, 0) + add > limits[k]:
                return reasons.limit_exceeded(name, k, limits[k], used_l.get(k, 0))
        return reasons.limits_exceeded(name)
    if s.strict_min_values:
        short = shortfall(tpl, term_reqs, np.array([o.index for o in fitting], dtype=np.int64))
        if short is not None:
            return reasons.min_values_not_met(name, short.key, short.minimum, short.remaining)
    # everything static passes, so a dynamic constraint (topology, host ports) must have failed
    probe = NodeClaim(f"{name}-probe", tpl, tpl.base, np.array([o.index for o in fitting], dtype=np.int64))
    for term in ctx.terms:
        reqs = tpl.base.intersect(term)
        pinned = topology_pins(ctx, s.topo, probe.name, reqs, tpl)
        if isinstance(pinned, Reason):
            return pinned
    return reasons.unsatisfiable_together(name)


def static_reason(ctx: PodContext, pool: NodePool) -> Reason:
    """A static pool launches nothing for pods: say so, unless the pod was never meant for it (a taint it does
    not tolerate, requirements that contradict the pool's), which is said instead."""
    t = first_untolerated(pool.taints, ctx.pod.tolerations)
    if t is not None:
        return reasons.taint_not_tolerated(pool.name, t)
    base = pool.requirements.intersect(Requirements.from_labels(pool.labels))
    conflicts = [c for c in (term.conflict(base) for term in ctx.terms) if c is not None]
    if ctx.terms and len(conflicts) == len(ctx.terms):
        return reasons.requirement_conflict(pool.name, conflicts[0][0], conflicts[0][1])
    return reasons.static_nodepool(pool.name, pool.replicas or 0)


def explain(s: Solve, ctx: PodContext) -> list[Reason]:
    if not s.tpls and not s.s.unusable_reasons and not any(p.static for p in s.s.nodepools):
        return [reasons.no_nodepool()]
    out: list[Reason] = []
    kept = {tpl.name for tpl in s.tpls}
    for pool in s.s.nodepools:
        if pool.static:
            out.append(static_reason(ctx, pool))
        elif pool.name not in kept:
            # left out of the solve because preparing it failed (Scheduler.templates)
            out.append(reasons.nodepool_unusable(pool.name, s.s.unusable_reasons.get(pool.name)))
    for tpl in s.tpls:
        try:
            why = explain_pool(s, ctx, tpl)
        except Exception as e:  # noqa: BLE001 - a reason that cannot be worked out must not abort the solve
            why = reasons.could_not_explain(tpl.name, e)
        out.append(why)
    order = {p.name: i for i, p in enumerate(s.s.nodepools)}
    out.sort(key=lambda r: order.get(r.nodepool, -1))
    return out
