"""Instance diversity: a pool that may launch in one zone only (LM111), from one instance family only (LM112),
or from fewer than 15 instance types on spot (LM113: Karpenter's spot-to-spot consolidation needs at least 15
cheaper types to replace a spot node with another spot node), and every pool confined to one zone (LM114)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from packing.advisor.check import pool_object, requirement_patch
from packing.advisor.context import Context
from packing.advisor.finding import Finding, Severity
from packing.advisor.patches import make_fix
from packing.disruption.consolidation import SPOT_TO_SPOT_MIN_TYPES  # the floor the disruption engine keeps
from packing.instancetype import CAPACITY_TYPE_SPOT
from packing.nodepool import INSTANCE_TYPE_LABEL, ZONE_LABEL, NodePool

__all__ = ["DiversityCheck", "SPOT_TO_SPOT_MIN_TYPES"]

FAMILY_LABEL = "karpenter.k8s.aws/instance-family"
CATEGORY_LABEL = "karpenter.k8s.aws/instance-category"
SIZE_LABEL = "karpenter.k8s.aws/instance-size"
# the instance categories of Karpenter's example NodePools (general purpose, compute and memory optimized)
EXAMPLE_CATEGORIES = ("c", "m", "r")
# the requirement keys that name instance types: LM112's and LM113's fix drops them
TYPE_KEYS = (INSTANCE_TYPE_LABEL, FAMILY_LABEL, SIZE_LABEL)


def _without(pool: NodePool, keys: Sequence[str]) -> NodePool:
    return dataclasses.replace(pool, requirements=pool.requirements.without(keys))


class DiversityCheck:
    family = "diversity"
    codes = ("LM111", "LM112", "LM113", "LM114")

    def findings(self, ctx: Context) -> list[Finding]:
        zones_all = sorted({o.zone for it in ctx.catalog for o in it.offerings if o.available})
        out: list[Finding] = []
        pool_zones: dict[str, set[str]] = {}
        for pool in ctx.pools:
            if pool.static:
                continue
            offers = ctx.pool_offerings(pool)
            if not offers:
                continue  # a pool that can launch nothing is reported by the engine (unusable_nodepools)
            zones = {o.zone for _, os in offers for o in os}
            pool_zones[pool.name] = zones
            manifest = ctx.pool_manifest(pool.name)
            # the zones and families the pool would have without its own requirements on them: the catalog's
            # offerings of the types it allows may be in one zone (or of one family) anyway, and then the
            # requirement is not what confines it
            unzoned = {o.zone for _, os in ctx.pool_offerings(_without(pool, [ZONE_LABEL])) for o in os}
            if len(zones) == 1 and len(unzoned) > 1:
                patch = requirement_patch(manifest, [ZONE_LABEL])
                out.append(
                    Finding(
                        "LM111",
                        Severity.WARNING,
                        f"NodePool {pool.name} may launch in one zone only ({next(iter(zones))})",
                        (pool_object(pool.name),),
                        {"zones": sorted(zones), "zones_in_region": zones_all},
                        ctx.saving(pool.name, patch),
                        make_fix("NodePool", pool.name, manifest, patch),
                    )
                )
            families = {it.labels.get(FAMILY_LABEL) for it, _ in offers} - {None}
            any_family = {
                it.labels.get(FAMILY_LABEL) for it, _ in ctx.pool_offerings(_without(pool, TYPE_KEYS))
            } - {None}
            if len(families) == 1 and len(any_family) > 1:
                patch = self._widened(ctx, manifest)
                out.append(
                    Finding(
                        "LM112",
                        Severity.WARNING,
                        f"NodePool {pool.name} may launch one instance family only ({next(iter(families))})",
                        (pool_object(pool.name),),
                        {"families": sorted(str(f) for f in families), "instance_types": len(offers)},
                        ctx.saving(pool.name, patch),
                        make_fix("NodePool", pool.name, manifest, patch),
                    )
                )
            spot_types = sorted(it.name for it, os in offers if any(o.capacity_type == CAPACITY_TYPE_SPOT for o in os))
            if spot_types and len(spot_types) < SPOT_TO_SPOT_MIN_TYPES:
                out.append(self._few_spot(ctx, pool, manifest, spot_types))
        zones_used = set().union(*pool_zones.values()) if pool_zones else set()
        # the pools their own zone requirement confines (LM111): widening one of them is the fix
        confined = [p.name for p in ctx.pools if any(f.code == "LM111" and f.objects == (pool_object(p.name),) for f in out)]
        if len(zones_used) == 1 and len(pool_zones) > 1 and confined:
            first = confined[0]
            patch = requirement_patch(ctx.pool_manifest(first), [ZONE_LABEL])
            out.append(
                Finding(
                    "LM114",
                    Severity.WARNING,
                    f"Every NodePool launches in one zone ({next(iter(zones_used))}): a zone outage stops all "
                    "provisioning",
                    tuple(pool_object(n) for n in sorted(pool_zones)),
                    {"zone": next(iter(zones_used)), "zones_in_region": zones_all},
                    None,
                    make_fix("NodePool", first, ctx.pool_manifest(first), patch),
                )
            )
        return out

    def _widened(self, ctx: Context, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """The pool's requirements without those naming instance types, families or sizes; when it then has
        no instance-category requirement and the catalog labels categories, Karpenter's example one (c, m, r)."""
        patch = requirement_patch(manifest, TYPE_KEYS)
        reqs = patch["spec"]["template"]["spec"]["requirements"]
        if not any(r.get("key") == CATEGORY_LABEL for r in reqs) and any(
            CATEGORY_LABEL in it.labels for it in ctx.catalog
        ):
            reqs.append({"key": CATEGORY_LABEL, "operator": "In", "values": list(EXAMPLE_CATEGORIES)})
        return patch

    def _few_spot(self, ctx: Context, pool: NodePool, manifest: Mapping[str, Any], spot_types: list[str]) -> Finding:
        patch = self._widened(ctx, manifest)
        widened = ctx.patched_pool(pool.name, patch)
        more = 0
        if widened is not None:
            more = sum(
                1 for _, os in ctx.pool_offerings(widened) if any(o.capacity_type == CAPACITY_TYPE_SPOT for o in os)
            )
        fix = make_fix("NodePool", pool.name, manifest, patch) if more > len(spot_types) else None
        return Finding(
            "LM113",
            Severity.WARNING,
            f"NodePool {pool.name} allows spot on {len(spot_types)} instance types, fewer than the "
            f"{SPOT_TO_SPOT_MIN_TYPES} spot-to-spot consolidation needs",
            (pool_object(pool.name),),
            {
                "spot_instance_types": len(spot_types),
                "minimum": SPOT_TO_SPOT_MIN_TYPES,
                "types": spot_types[:20],
                "after_fix": more if fix is not None else None,
            },
            ctx.saving(pool.name, patch) if fix is not None else None,
            fix,
        )
