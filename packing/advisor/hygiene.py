"""How pools and pods are laid out: pods without requests (LM161: the scheduler packs them as if they needed
nothing), one NodePool for every kind of workload (LM162), taints no pod tolerates (LM163: a pool nothing can
use), and a pool a heavier one shadows (LM164: everything it could launch the heavier pool launches first)."""

from __future__ import annotations

from packing.advisor.check import pool_object
from packing.advisor.context import Context, pool_requirements
from packing.advisor.finding import Finding, Severity
from packing.advisor.patches import make_fix
from packing.nodepool import NodePool
from packing.pods import Pod
from packing.resources import CPU, MEMORY
from packing.taints import first_untolerated

__all__ = ["HygieneCheck", "persona"]

_SERVICE_OWNERS = frozenset({"Deployment", "ReplicaSet", "ReplicationController"})


def persona(p: Pod) -> str | None:
    """The kind of workload a pod belongs to, as the seed's one-pool-per-persona advice groups them."""
    if any("gpu" in k or "neuron" in k for k in p.requests):
        return "gpu"
    if p.owner_kind in ("Job", "CronJob"):
        return "batch"
    if p.owner_kind == "StatefulSet":
        return "stateful"
    if p.owner_kind in _SERVICE_OWNERS:
        return "service"
    return None


def _workload(p: Pod) -> str:
    if p.owner_kind and p.owner_name:
        return f"{p.owner_kind.lower()}/{p.namespace}/{p.owner_name}"
    return f"pod/{p.namespace}/{p.name}"


class HygieneCheck:
    family = "hygiene"
    codes = ("LM161", "LM162", "LM163", "LM164")

    def findings(self, ctx: Context) -> list[Finding]:
        pods = [p for p in ctx.pods if p.owner_kind != "DaemonSet"]
        out = self._no_requests(pods)
        dynamic = [p for p in ctx.pools if not p.static]
        kinds = sorted({k for k in (persona(p) for p in pods) if k is not None})
        if len(dynamic) == 1 and len(kinds) > 1:
            out.append(
                Finding(
                    "LM162",
                    Severity.INFO,
                    f"One NodePool ({dynamic[0].name}) runs every kind of workload ({', '.join(kinds)})",
                    (pool_object(dynamic[0].name),),
                    {"workload_kinds": kinds, "nodepools": 1},
                )
            )
        for pool in dynamic:
            out.extend(self._untolerated(ctx, pool, pods))
        out.extend(self._shadowed(ctx, dynamic))
        return out

    def _no_requests(self, pods: list[Pod]) -> list[Finding]:
        by_workload: dict[str, list[str]] = {}
        for p in pods:
            if p.requests.get(CPU, 0) == 0 and p.requests.get(MEMORY, 0) == 0:
                by_workload.setdefault(_workload(p), []).append(p.key)
        return [
            Finding(
                "LM161",
                Severity.WARNING,
                f"{obj.split('/', 1)[0].capitalize()} {obj.split('/', 1)[1]}: {len(keys)} pods request no CPU "
                "and no memory",
                (obj,),
                {"pods": len(keys), "examples": sorted(keys)[:5]},
            )
            for obj, keys in sorted(by_workload.items())
        ]

    def _untolerated(self, ctx: Context, pool: NodePool, pods: list[Pod]) -> list[Finding]:
        hard = [t for t in pool.taints if t.effect in ("NoSchedule", "NoExecute")]
        if not hard or not pods:
            return []
        if any(first_untolerated(hard, p.tolerations) is None for p in pods):
            return []
        manifest = ctx.pool_manifest(pool.name)
        kept = [t for t in pool.taints if t not in hard]
        patch = {"spec": {"template": {"spec": {"taints": [t.to_dict() for t in kept] if kept else None}}}}
        return [
            Finding(
                "LM163",
                Severity.WARNING,
                f"NodePool {pool.name}: no pod tolerates its taints, so nothing can use it",
                (pool_object(pool.name),),
                {"taints": [str(t) for t in hard], "pods": len(pods)},
                None,
                make_fix("NodePool", pool.name, manifest, patch),
            )
        ]

    def _shadowed(self, ctx: Context, pools: list[NodePool]) -> list[Finding]:
        """A lighter pool B is shadowed by a heavier unlimited pool A when every pod B can take A takes first: A
        offers all B offers (types, zones, capacity types), A's taints are B's or fewer, and A's labels carry B's."""
        offers = {
            p.name: {(it.name, o.zone, o.capacity_type) for it, os in ctx.pool_offerings(p) for o in os} for p in pools
        }
        type_keys = {k for it in ctx.catalog for k in it.labels}
        out = []
        for b in pools:
            if not offers[b.name]:
                continue
            for a in pools:
                if a.name == b.name or a.weight <= b.weight or a.limits:
                    continue
                reqs_b = pool_requirements(b)
                if not offers[b.name] <= offers[a.name]:
                    continue
                if not set(a.taints) <= set(b.taints):
                    continue
                if not set(b.labels.items()) <= set(a.labels.items()):
                    continue
                # a pod may still pick B by a requirement key only B's requirements define (a custom label)
                if any(k not in pool_requirements(a) and k not in type_keys for k in reqs_b):
                    continue
                out.append(
                    Finding(
                        "LM164",
                        Severity.WARNING,
                        f"NodePool {b.name} is shadowed by the heavier NodePool {a.name} (weight {a.weight} > "
                        f"{b.weight}): {a.name} launches everything {b.name} could",
                        (pool_object(b.name), pool_object(a.name)),
                        {"weights": {a.name: a.weight, b.name: b.weight}, "offerings": len(offers[b.name])},
                    )
                )
                break
        return out
