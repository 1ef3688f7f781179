"""Why-pending suggestions: for a NodePool that rules a pending pod out, the changes that could let it schedule
(tolerate a taint, raise a limit, allow or stop excluding a value, drop a requirement), each checked by
applying it to the world in memory and re-running the engine.

What to try follows from the engine's Reason for the pool: its kind, and the names and figures of its detail.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from console.fleet.models import NodePool
from console.whatif.world import Doc, World, edited_instance, object_key, run_plan
from packing import api

PoolValues = dict[str, Any]  # a NodePool row's field values, as the edit form holds them



# How small and targeted a change is, smallest first: the order the why-pod page recommends them in
# (then by what the launch that places the pod costs). Removing a requirement opens a pool to every value.
CHANGE_KINDS = {"toleration": (0, "add a toleration to the pod"),
                "limit": (1, "raise a NodePool limit"),
                "allow": (2, "allow one more value in a NodePool requirement"),
                "stop-excluding": (2, "stop excluding one value in a NodePool requirement"),
                "remove-requirement": (4, "remove a NodePool requirement: a broad change, every value is allowed")}


@dataclass
class Candidate:
    text: str
    apply: Callable[[World], World]
    kind: str = "remove-requirement"


def _with_pod(world: World, key: str, change: Callable[[Doc], None]) -> World:
    workload = []
    for d in world.workload:
        if d.get("kind") == "Pod" and object_key(d) == key:
            d = copy.deepcopy(d)
            change(d)
        workload.append(d)
    return world.replaced(workload=workload)


def _with_pool(world: World, pool: NodePool, change: Callable[[PoolValues], None]) -> World:
    values = copy.deepcopy(pool.field_values())
    change(values)
    return world.replaced(pool=edited_instance(NodePool, values, None))


def _pool_change(pool: NodePool, change: Callable[[PoolValues], None]) -> Callable[[World], World]:
    return lambda w: _with_pool(w, pool, change)


def _allow_value(i: int, value: str) -> Callable[[PoolValues], None]:
    def change(v: PoolValues) -> None:
        v["requirements"][i]["values"] = [*v["requirements"][i]["values"], value]
    return change


def _stop_excluding(i: int, value: str) -> Callable[[PoolValues], None]:
    def change(v: PoolValues) -> None:
        v["requirements"][i]["values"] = [x for x in v["requirements"][i]["values"] if x != value] or ["__none__"]
    return change


def _drop_requirement(i: int) -> Callable[[PoolValues], None]:
    def change(v: PoolValues) -> None:
        v["requirements"].pop(i)
    return change


def _pod_wants(pod: Doc) -> dict[str, set[str]]:
    """Label values the pod asks for: nodeSelector and required node-affinity `In` terms."""
    spec = pod.get("spec") or {}
    wants: dict[str, set[str]] = {k: {str(v)} for k, v in (spec.get("nodeSelector") or {}).items()}
    terms = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    for term in terms[:1]:
        for expr in term.get("matchExpressions") or []:
            if expr.get("operator") == "In":
                wants.setdefault(expr["key"], set()).update(str(v) for v in expr.get("values") or [])
    return wants


def _units(milli: object) -> float:
    """A limit Reason's milli-unit figure (limit_milli, in_use_milli: always integers) in units (cores, bytes)."""
    assert isinstance(milli, int), milli
    return milli / 1000


def candidates(world: World, pod: Doc, key: str, pool: NodePool, reason: api.Reason) -> list[Candidate | SearchCandidate]:
    """The changes that might let the pod onto `pool`, given the engine's `reason` for the pool, most targeted
    first; none is checked yet (schedulable / search do that)."""
    out: list[Candidate | SearchCandidate] = []
    detail = reason.detail
    if reason.kind is api.ReasonKind.TAINT:
        taint_key = str(detail["key"])
        tol = {"key": taint_key, "operator": "Exists", "effect": str(detail["effect"])}
        out.append(Candidate(f"tolerate {taint_key}", lambda w, t=tol: _with_pod(  # type: ignore[misc]
            w, key, lambda d: d.setdefault("spec", {}).setdefault("tolerations", []).append(t)), "toleration"))
        return out
    if reason.kind is api.ReasonKind.LIMIT and "resource" in detail:
        res, shown_limit = str(detail["resource"]), str(detail["limit"])
        limit = _units(detail["limit_milli"])
        used = _units(detail["in_use_milli"])

        def raise_to(value: float) -> Candidate:
            shown = str(int(value)) if res != "memory" else f"{int(math.ceil(value / 2**30))}Gi"
            return Candidate(f"raise {res} limit of pool {pool.name} from {shown_limit} to {shown}",
                             lambda w: _with_pool(w, pool, lambda v: v.setdefault("limits", {}).__setitem__(res, shown)),
                             "limit")

        # Smallest limit that works: search upwards from what is in use (each probe re-runs the engine).
        step = 1.0 if res != "memory" else float(2**30)
        lo, hi = max(limit, used) + step, max(limit, used) * 2 + 64 * step
        out.append(SearchCandidate(raise_to, lo, hi, step))
        return out
    wants = _pod_wants(pod)
    for i, req in enumerate(pool.requirements or []):
        rkey, op, vals = req.get("key"), req.get("operator"), list(req.get("values") or [])
        if rkey in wants and op == "In" and not wants[rkey] & set(vals):
            value = sorted(wants[rkey])[0]
            label = rkey.split("/")[-1] if rkey.startswith("karpenter.k8s.aws/") else rkey
            out.append(Candidate(f"allow {label} {value} in pool {pool.name}",
                                 _pool_change(pool, _allow_value(i, value)), "allow"))
        elif rkey in wants and op == "NotIn" and wants[rkey] & set(vals):
            bad = sorted(wants[rkey] & set(vals))[0]
            out.append(Candidate(f"stop excluding {rkey} {bad} in pool {pool.name}",
                                 _pool_change(pool, _stop_excluding(i, bad)), "stop-excluding"))
    # Fallback: drop one requirement of the pool at a time (verified like the rest).
    for i, req in enumerate(pool.requirements or []):
        out.append(Candidate(f"remove requirement {req.get('key')} {req.get('operator')} from pool {pool.name}",
                             _pool_change(pool, _drop_requirement(i)), "remove-requirement"))
    return out


@dataclass
class SearchCandidate:
    """A limit to raise: the smallest value in [lo, hi] (whole steps) that schedules the pod, found by search."""

    make: Callable[[float], Candidate]
    lo: float
    hi: float
    step: float


def schedulable(world: World, key: str, types: Sequence[api.InstanceType]) -> bool:
    return placed(world, key, types) is not None


def placed(world: World, key: str, types: Sequence[api.InstanceType]) -> api.Results | None:
    """The plan when it places the pod, else None."""
    plan = run_plan(world, types)
    return None if key in plan.unschedulable else plan


def search(c: SearchCandidate, world: World, key: str, types: Sequence[api.InstanceType], probes: int,
           max_probes: int) -> tuple[Candidate | None, int]:
    # Binary search for the smallest limit (in whole steps) that lets the pod schedule.
    lo, hi = int(c.lo / c.step), int(math.ceil(c.hi / c.step))
    probes += 1
    if not schedulable(c.make(hi * c.step).apply(world), key, types):
        return None, probes
    while lo < hi and probes < max_probes:
        mid = (lo + hi) // 2
        probes += 1
        if schedulable(c.make(mid * c.step).apply(world), key, types):
            hi = mid
        else:
            lo = mid + 1
    return c.make(hi * c.step), probes


