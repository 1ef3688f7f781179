"""Cheaper capacity a pool forbids: spot (LM131: pods that could run on spot in a pool that allows on-demand
only, with the saving), a spot-only pool with no on-demand fallback for a workload with a PDB (LM132), and
Graviton (LM141: pods that do not pin amd64 in a pool that forbids arm64, with the saving).

"Could run on" is read from the pods' own nodeSelector and required node affinity: a pod none of whose terms
excludes spot (or arm64) could. Images are not looked at: a pod whose image has no arm64 build must pin
amd64 (Kubernetes' kubernetes.io/arch label) before LM141's fix is applied."""

from __future__ import annotations

from collections.abc import Sequence

from packing.advisor.check import pool_object, requirement_patch
from packing.advisor.context import Context, pool_requirements
from packing.advisor.finding import Finding, Severity
from packing.advisor.patches import make_fix
from packing.instancetype import CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT
from packing.nodepool import CAPACITY_TYPE_LABEL, NodePool
from packing.pods import Pod
from packing.taints import first_untolerated

__all__ = ["ARCH_LABEL", "CapacityCheck"]

ARCH_LABEL = "kubernetes.io/arch"


def _allows(pool: NodePool, key: str, value: str) -> bool:
    r = pool_requirements(pool).get(key)
    return r is None or r.has(value)


def _could_run(p: Pod, key: str, value: str) -> bool:
    """Whether one of the pod's node requirement terms admits `value` for `key`."""
    return any((t.get(key) is None or t[key].has(value)) for t in p.node_requirement_terms())


def _owners(pods: Sequence[Pod]) -> list[str]:
    return sorted({f"{p.namespace}/{p.owner_name or p.name}" for p in pods})


class CapacityCheck:
    family = "capacity"
    codes = ("LM131", "LM132", "LM141")

    def findings(self, ctx: Context) -> list[Finding]:
        out: list[Finding] = []
        has_spot = any(o.capacity_type == CAPACITY_TYPE_SPOT for it in ctx.catalog for o in it.offerings)
        has_arm = any(it.labels.get(ARCH_LABEL) == "arm64" for it in ctx.catalog)
        for pool in ctx.pools:
            if pool.static:
                continue
            pods = ctx.pods_by_pool.get(pool.name, [])
            manifest = ctx.pool_manifest(pool.name)
            spot, od = _allows(pool, CAPACITY_TYPE_LABEL, CAPACITY_TYPE_SPOT), _allows(
                pool, CAPACITY_TYPE_LABEL, CAPACITY_TYPE_ON_DEMAND
            )
            both = {"key": CAPACITY_TYPE_LABEL, "operator": "In", "values": [CAPACITY_TYPE_SPOT, CAPACITY_TYPE_ON_DEMAND]}
            if has_spot and not spot and pods:
                flexible = [p for p in pods if _could_run(p, CAPACITY_TYPE_LABEL, CAPACITY_TYPE_SPOT)]
                patch = requirement_patch(manifest, [CAPACITY_TYPE_LABEL], [both])
                saving = ctx.saving(pool.name, patch, flexible) if flexible else None
                if saving is not None and saving > 0:
                    out.append(
                        Finding(
                            "LM131",
                            Severity.INFO,
                            f"NodePool {pool.name} forbids spot, but {len(flexible)} of its pods could run on it",
                            (pool_object(pool.name),),
                            {"pods": len(flexible), "workloads": _owners(flexible)[:20]},
                            saving,
                            make_fix("NodePool", pool.name, manifest, patch),
                        )
                    )
            if spot and not od and pods:
                guarded = [p for p in pods if ctx.pdb_index.cover.get(p.key)]
                stranded = [p for p in guarded if not self._fallback(ctx, pool, p)]
                if stranded:
                    patch = requirement_patch(manifest, [CAPACITY_TYPE_LABEL], [both])
                    out.append(
                        Finding(
                            "LM132",
                            Severity.WARNING,
                            f"NodePool {pool.name} is spot only and no pool can run its PDB-guarded pods on "
                            "on-demand when spot runs out",
                            (pool_object(pool.name),),
                            {
                                "pods": len(stranded),
                                "workloads": _owners(stranded)[:20],
                                "pdbs": sorted({k for p in stranded for k in ctx.pdb_index.cover.get(p.key, ())})[:20],
                            },
                            None,
                            make_fix("NodePool", pool.name, manifest, patch),
                        )
                    )
            if has_arm and not _allows(pool, ARCH_LABEL, "arm64") and pods:
                flexible = [p for p in pods if _could_run(p, ARCH_LABEL, "arm64")]
                arches = {"key": ARCH_LABEL, "operator": "In", "values": ["amd64", "arm64"]}
                patch = requirement_patch(manifest, [ARCH_LABEL], [arches])
                saving = ctx.saving(pool.name, patch, flexible) if flexible else None
                if saving is not None and saving > 0:
                    out.append(
                        Finding(
                            "LM141",
                            Severity.INFO,
                            f"NodePool {pool.name} forbids arm64 (Graviton), but {len(flexible)} of its pods do not "
                            "pin amd64",
                            (pool_object(pool.name),),
                            {
                                "pods": len(flexible),
                                "workloads": _owners(flexible)[:20],
                                "images_checked": False,
                            },
                            saving,
                            make_fix("NodePool", pool.name, manifest, patch),
                        )
                    )
        return out

    def _fallback(self, ctx: Context, spot_pool: NodePool, p: Pod) -> bool:
        """Whether another pool allowing on-demand could take the pod (its taints tolerated, its requirements
        compatible with the pod's)."""
        for other in ctx.pools:
            if other.name == spot_pool.name or other.static:
                continue
            if not _allows(other, CAPACITY_TYPE_LABEL, CAPACITY_TYPE_ON_DEMAND):
                continue
            if first_untolerated(other.taints, p.tolerations) is not None:
                continue
            reqs = pool_requirements(other)
            if any(t.compatible(reqs) for t in p.node_requirement_terms()):
                return True
        return False
