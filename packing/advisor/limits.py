"""NodePool limits (spec.limits): pods left pending by a limit (LM101), usage above 90 % of a limit (LM102),
and a limit below the capacity of one node of the smallest type the pool may launch (LM103).

Usage counts the capacity of the pool's nodes and in-flight NodeClaims, as Karpenter's limits do ("nodes"
counts 1000 milli-units per node, like the engine's limits)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

from packing.advisor.check import pool_object
from packing.advisor.context import Context, replan
from packing.advisor.finding import Finding, Severity
from packing.advisor.patches import make_fix
from packing.nodepool import NodePool
from packing.planning import existing_nodes
from packing.quantity import counted_in_bytes, format_quantity
from packing.resources import Resources
from packing.scheduling.reasons import ReasonKind

__all__ = ["LimitsCheck", "NEAR_LIMIT", "pool_usage"]

NEAR_LIMIT = 0.9  # LM102: usage above this share of a limit
# LM102's fix raises the limit so that the usage of today fills three quarters of it
NEAR_LIMIT_TARGET = 0.75
_GI = 2**30 * 1000  # milli-bytes in a GiB: memory limits are proposed in whole GiB


def pool_usage(ctx: Context, pool: str) -> dict[str, int]:
    used: dict[str, int] = {}
    for n in existing_nodes(ctx.inputs, ctx.catalog):
        if n.nodepool != pool:
            continue
        for k, v in (n.capacity or n.allocatable).items():
            used[k] = used.get(k, 0) + v
        used["nodes"] = used.get("nodes", 0) + 1000
    return used


def _rounded_up(resource: str, milli: int) -> int:
    step = _GI if counted_in_bytes(resource) else 1000
    return max(step, math.ceil(milli / step) * step)


def _limit_patch(values: Mapping[str, int]) -> dict[str, object]:
    return {"spec": {"limits": {k: format_quantity(v, k) for k, v in sorted(values.items())}}}


class LimitsCheck:
    family = "limits"
    codes = ("LM101", "LM102", "LM103")

    def findings(self, ctx: Context) -> list[Finding]:
        out: list[Finding] = []
        for pool in ctx.pools:
            if not pool.limits:
                continue
            out.extend(self._blocking(ctx, pool))
            out.extend(self._near(ctx, pool))
            out.extend(self._below_one_node(ctx, pool))
        return out

    def _blocking(self, ctx: Context, pool: NodePool) -> list[Finding]:
        limits = dict(pool.limits or {})
        blocked: dict[str, list[str]] = {}
        for pod, reasons in ctx.baseline.unschedulable_reasons.items():
            for r in reasons:
                if r.kind is ReasonKind.LIMIT and r.nodepool == pool.name:
                    blocked.setdefault(str(r.detail.get("resource", "")), []).append(pod)
        if not blocked:
            return []
        # what the pool would need: its usage plus the capacity of what it launches once unlimited
        unlimited = dataclasses.replace(pool, limits=None)
        res = replan(ctx, [unlimited if p.name == pool.name else p for p in ctx.pools])
        need = Resources(pool_usage(ctx, pool.name))
        by_name = {it.name: it for it in ctx.catalog}
        for claim in res.nodeclaims:
            if claim.nodepool == pool.name:
                it = by_name.get(claim.instance_type)
                need = need + (it.capacity if it is not None else claim.allocatable) + Resources({"nodes": 1000})
        raised = {k: _rounded_up(k, need.get(k, 0)) for k in limits if need.get(k, 0) > limits[k]}
        pods = sorted({p for ps in blocked.values() for p in ps})
        fix = None
        if raised:
            fix = make_fix("NodePool", pool.name, ctx.pool_manifest(pool.name), _limit_patch(raised))
        return [
            Finding(
                "LM101",
                Severity.ERROR,
                f"NodePool {pool.name}: {len(pods)} pods pending because of its limits",
                (pool_object(pool.name),),
                {
                    "pending_pods": len(pods),
                    "pods": pods[:20],
                    "resources": sorted(k for k in blocked if k),
                    "limits": {k: format_quantity(v, k) for k, v in sorted(limits.items())},
                    "needed": {k: format_quantity(need.get(k, 0), k) for k in sorted(limits)},
                },
                None,
                fix,
            )
        ]

    def _near(self, ctx: Context, pool: NodePool) -> list[Finding]:
        limits = dict(pool.limits or {})
        used = pool_usage(ctx, pool.name)
        near = {k: used.get(k, 0) for k, lim in limits.items() if lim > 0 and used.get(k, 0) > NEAR_LIMIT * lim}
        if not near:
            return []
        share = {k: round(100 * near[k] / limits[k], 1) for k in near}
        raised = {k: _rounded_up(k, math.ceil(v / NEAR_LIMIT_TARGET)) for k, v in near.items()}
        raised = {k: v for k, v in raised.items() if v > limits[k]}
        fix = make_fix("NodePool", pool.name, ctx.pool_manifest(pool.name), _limit_patch(raised)) if raised else None
        return [
            Finding(
                "LM102",
                Severity.WARNING,
                f"NodePool {pool.name} uses more than {NEAR_LIMIT:.0%} of its limit on "
                + ", ".join(sorted(near)),
                (pool_object(pool.name),),
                {
                    "usage_percent": share,
                    "in_use": {k: format_quantity(v, k) for k, v in sorted(near.items())},
                    "limits": {k: format_quantity(limits[k], k) for k in sorted(near)},
                },
                None,
                fix,
            )
        ]

    def _below_one_node(self, ctx: Context, pool: NodePool) -> list[Finding]:
        limits = dict(pool.limits or {})
        types = [it for it, _ in ctx.pool_offerings(pool)]
        if not types:
            return []
        short: dict[str, tuple[int, str]] = {}
        for k, lim in limits.items():
            if k == "nodes":
                if lim < 1000:
                    short[k] = (1000, "")
                continue
            smallest = min(types, key=lambda it: (it.capacity.get(k, 0), it.name))
            need = smallest.capacity.get(k, 0)
            if need > lim:
                short[k] = (need, smallest.name)
        if not short:
            return []
        fix = make_fix(
            "NodePool",
            pool.name,
            ctx.pool_manifest(pool.name),
            _limit_patch({k: _rounded_up(k, need) for k, (need, _) in short.items()}),
        )
        return [
            Finding(
                "LM103",
                Severity.ERROR,
                f"NodePool {pool.name}: its limit on {', '.join(sorted(short))} is below one node of the "
                "smallest type it may launch",
                (pool_object(pool.name),),
                {
                    "limits": {k: format_quantity(limits[k], k) for k in sorted(short)},
                    "one_node": {k: format_quantity(need, k) for k, (need, _) in sorted(short.items())},
                    "smallest_type": {k: name for k, (_, name) in sorted(short.items()) if name},
                },
                None,
                fix,
            )
        ]
