"""Why a pod cannot be placed: one reason per NodePool, naming only the constraint that failed.

The checks run in the order a human would look: taints, then requirements, then sizes, then limits, then
topology, so that the first failing one is reported and nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from packing.quantity import counted_in_bytes, format_quantity
from packing.requirements import Requirements
from packing.resources import CPU, MEMORY, PODS
from packing.taints import first_untolerated

if TYPE_CHECKING:
    from packing.scheduling.scheduler import PodContext, PoolTemplate, _Solve

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


def _describe_request(keys: tuple[str, ...], vec: tuple[int, ...]) -> str:
    parts = []
    for k, v in zip(keys, vec, strict=True):
        if k == PODS or not v:
            continue
        q = human_quantity(v, k, round_up=True)
        parts.append(f"{q} cpu" if k == CPU else f"{q} memory" if k == MEMORY else f"{q} {k}")
    return " and ".join(parts) or "the requested resources"


def _describe_largest(keys: tuple[str, ...], vec: tuple[int, ...], largest: tuple[int, ...]) -> str:
    parts = []
    for k, v, m in zip(keys, vec, largest, strict=True):
        if k == PODS or not v:
            continue
        parts.append(_amount(k, m))
    return ", ".join(parts)


def explain_pool(s: _Solve, ctx: PodContext, tpl: PoolTemplate) -> str:
    pod = ctx.pod
    t = first_untolerated(tpl.pool.taints, pod.tolerations)
    if t is not None:
        return f"taint {t} not tolerated"
    if not tpl.options:
        return "no instance type offering is available for the nodepool's requirements"
    # requirements: the first term that passes the nodepool is the one we diagnose further
    term_reqs: Requirements | None = None
    first_problem = ""
    for term in ctx.terms:
        c = term.conflict(tpl.base)
        if c is not None:
            first_problem = first_problem or f"requirement {c[0]} conflicts with nodepool requirement {c[1]}"
            continue
        reqs = tpl.base.intersect(term)
        bad = tpl.pool_key_failure(reqs)
        if bad is not None:
            first_problem = (
                first_problem
                or f"requirement {term.get(bad.key) or bad} is not satisfied by the nodepool's labels"
            )
            continue
        if not tpl.viable(reqs):
            if not first_problem:
                culprit = None
                for k in sorted(term):
                    if not tpl.viable(tpl.base.intersect(Requirements([term[k]]))):
                        culprit = term[k]
                        break
                first_problem = (
                    f"requirement {culprit} matches no offering"
                    if culprit is not None
                    else "requirements "
                    + "; ".join(str(r) for r in term.values())
                    + " together match no offering"
                )
            continue
        term_reqs = reqs
        break
    if term_reqs is None:
        return first_problem or "node affinity matches no offering"
    viable = tpl.viable(term_reqs)
    used = tuple(a + b for a, b in zip(tpl.ds_vec, ctx.vec, strict=True))
    fitting = [o for o in viable if all(x <= y for x, y in zip(used, o.alloc, strict=True))]
    if not fitting:
        largest = tuple(max(o.alloc[i] for o in viable) for i in range(len(s.keys)))
        return (
            f"no instance type has {_describe_request(s.keys, ctx.vec)} available "
            f"(largest offered: {_describe_largest(s.keys, ctx.vec, largest)})"
        )
    limits = tpl.pool.limits
    if limits and not any(s._limit_ok(tpl, o.it.capacity) for o in fitting):
        used_l = s.limit_used[tpl.name]
        smallest = min(fitting, key=lambda o: (o.it.capacity.get(CPU, 0), o.it.capacity.get(MEMORY, 0)))
        for k in sorted(limits):
            add = 1000 if k == "nodes" else smallest.it.capacity.get(k, 0)
            if used_l.get(k, 0) + add > limits[k]:
                return (
                    f"limit {k}={format_quantity(limits[k], k)} would be exceeded "
                    f"(in use {format_quantity(used_l.get(k, 0), k)})"
                )
        return "nodepool limits would be exceeded"
    # everything static passes, so a dynamic constraint (topology, host ports) must have failed
    import numpy as np

    from packing.scheduling.scheduler import NodeClaim, topology_pins

    probe = NodeClaim(
        f"{tpl.name}-probe", tpl, tpl.base, np.array([o.index for o in fitting], dtype=np.int64)
    )
    for term in ctx.terms:
        reqs = tpl.base.intersect(term)
        pinned = topology_pins(ctx, s.topo, probe.name, reqs, tpl)
        if isinstance(pinned, str):
            return pinned
    return "no instance type satisfies all of the pod's constraints together"


def explain(s: _Solve, ctx: PodContext) -> list[tuple[str, str]]:
    if not s.tpls and not s.s.unusable:
        return [("", "no nodepool is defined")]
    out: list[tuple[str, str]] = []
    kept = {tpl.name for tpl in s.tpls}
    for pool in s.s.nodepools:
        if pool.name not in kept:
            # left out of the solve because preparing it failed (Scheduler.templates)
            out.append((pool.name, f"nodepool unusable: {s.s.unusable.get(pool.name, 'not prepared')}"))
    for tpl in s.tpls:
        try:
            why = explain_pool(s, ctx, tpl)
        except Exception as e:  # noqa: BLE001 - a reason that cannot be worked out must not abort the solve
            why = f"could not be explained ({type(e).__name__}: {e})"
        out.append((tpl.name, why))
    order = {p.name: i for i, p in enumerate(s.s.nodepools)}
    out.sort(key=lambda r: order.get(r[0], -1))
    return out
