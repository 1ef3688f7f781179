"""PodDisruptionBudgets that block disruption for ever: minAvailable at or above the pods it selects (LM121),
maxUnavailable 0 (LM122), a PDB that selects no pod (LM123), and one that selects the pods of several workloads
(LM124), and pods covered by several PDBs (LM125: the eviction API refuses to evict such a pod at all). LM121,
LM122 and LM125 pin every node their pods run on: evidence names those nodes and what they cost."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from packing.advisor.context import Context
from packing.advisor.finding import HOURS_PER_MONTH, Finding, Severity
from packing.advisor.patches import make_fix
from packing.nodepool import PodDisruptionBudget
from packing.pods import Pod

__all__ = ["PdbCheck"]

_PERCENT = re.compile(r"^([0-9]+)%$")
# the fix of a PDB that allows no eviction: one pod of it may be evicted at a time
ONE_AT_A_TIME: Mapping[str, Any] = {"spec": {"minAvailable": None, "maxUnavailable": 1}}


def _scaled(value: str, pods: int, *, up: bool) -> int | None:
    m = _PERCENT.match(value.strip())
    if m:
        exact = int(m.group(1)) * pods / 100
        return math.ceil(exact) if up else math.floor(exact)
    return int(value) if value.strip().isdigit() else None


def pdb_object(b: PodDisruptionBudget) -> str:
    return f"poddisruptionbudget/{b.namespace}/{b.name}"


class PdbCheck:
    family = "pdbs"
    codes = ("LM121", "LM122", "LM123", "LM124", "LM125")

    def findings(self, ctx: Context) -> list[Finding]:
        selected: dict[str, list[Pod]] = {}
        for p in ctx.pods:
            for key in ctx.pdb_index.cover.get(p.key, ()):
                selected.setdefault(key, []).append(p)
        out: list[Finding] = []
        for b in sorted(ctx.inputs.pdbs, key=lambda b: (b.namespace, b.name)):
            key = f"{b.namespace}/{b.name}"
            pods = selected.get(key, [])
            if not pods:
                out.append(
                    Finding(
                        "LM123",
                        Severity.WARNING,
                        f"PDB {key} selects no pod",
                        (pdb_object(b),),
                        {"selector": dict(b.selector), "null_selector": key in ctx.extras.pdb_null},
                    )
                )
                continue
            owners = sorted({f"{p.owner_kind or 'Pod'}/{p.owner_name or p.name}" for p in pods})
            if len(owners) > 1:
                out.append(
                    Finding(
                        "LM124",
                        Severity.WARNING,
                        f"PDB {key} selects the pods of {len(owners)} workloads",
                        (pdb_object(b),),
                        {"workloads": owners[:20], "pods": len(pods)},
                    )
                )
            blocked = self._blocks(b, len(pods))
            if blocked is None:
                continue
            code, why = blocked
            out.append(self._pinning(ctx, b, code, why, pods))
        out.extend(self._overlapping(ctx))
        return out

    def _overlapping(self, ctx: Context) -> list[Finding]:
        by_pdbs: dict[tuple[str, ...], list[Pod]] = {}
        for p in ctx.pods:
            covering = ctx.pdb_index.cover.get(p.key, [])
            if len(covering) > 1:
                by_pdbs.setdefault(tuple(sorted(covering)), []).append(p)
        out = []
        for keys, pods in sorted(by_pdbs.items(), key=lambda kv: kv[0]):
            nodes, cost, unpriced = self._nodes(ctx, pods)
            objects = tuple(f"poddisruptionbudget/{k}" for k in keys)
            out.append(
                Finding(
                    "LM125",
                    Severity.ERROR,
                    f"{len(pods)} pods are covered by {len(keys)} PDBs ({', '.join(keys)}): none of them can be evicted",
                    objects,
                    {
                        "pods": len(pods),
                        "examples": sorted(p.key for p in pods)[:5],
                        "pinned_nodes": nodes[:50],
                        "pinned_cost_per_hour": round(cost, 6),
                        "pinned_cost_per_month": round(cost * HOURS_PER_MONTH, 2),
                        "unpriced_nodes": unpriced,
                    },
                )
            )
        return out

    def _nodes(self, ctx: Context, pods: list[Pod]) -> tuple[list[str], float, int]:
        """The nodes the pods run on, their $/h together and how many have no price."""
        names = sorted({p.node_name for p in pods if p.node_name})
        prices = [ctx.node_price(n) for n in ctx.inputs.nodes if n.name in names]
        return names, sum(p for p in prices if p is not None), sum(1 for p in prices if p is None)

    def _blocks(self, b: PodDisruptionBudget, pods: int) -> tuple[str, str] | None:
        if b.max_unavailable is not None:
            mu = _scaled(b.max_unavailable, pods, up=False)
            if mu == 0:
                return "LM122", f"maxUnavailable {b.max_unavailable}"
            return None
        if b.min_available is not None:
            ma = _scaled(b.min_available, pods, up=True)
            if ma is not None and ma >= pods:
                return "LM121", f"minAvailable {b.min_available} with {pods} pods"
        return None

    def _pinning(self, ctx: Context, b: PodDisruptionBudget, code: str, why: str, pods: list[Pod]) -> Finding:
        node_names, cost, unpriced = self._nodes(ctx, pods)
        key = f"{b.namespace}/{b.name}"
        manifest = ctx.manifests.get(("PodDisruptionBudget", b.namespace, b.name)) or {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": b.name, "namespace": b.namespace},
            "spec": {},
        }
        return Finding(
            code,
            Severity.ERROR,
            f"PDB {key} never allows an eviction ({why}): its pods' nodes can never be disrupted",
            (pdb_object(b),),
            {
                "pods": len(pods),
                "min_available": b.min_available,
                "max_unavailable": b.max_unavailable,
                "pinned_nodes": node_names[:50],
                "pinned_cost_per_hour": round(cost, 6),
                "pinned_cost_per_month": round(cost * HOURS_PER_MONTH, 2),
                "unpriced_nodes": unpriced,
            },
            None,
            make_fix("PodDisruptionBudget", key, manifest, ONE_AT_A_TIME),
        )
