"""Disruption settings that keep waste or old nodes around: consolidation off or WhenEmpty (LM151, with the
waste: what the pool's nodes cost beyond a fresh plan of their pods), expireAfter Never (LM152), disruption
budgets that allow 0 nodes at all times for every reason (LM153), and karpenter.sh/do-not-disrupt on more than
a set share of the pods (LM154)."""

from __future__ import annotations

from packing.advisor.check import pool_object
from packing.advisor.context import DO_NOT_DISRUPT_SHARE, Context
from packing.advisor.finding import HOURS_PER_MONTH, Finding, Severity
from packing.advisor.patches import make_fix
from packing.disruption.donotdisrupt import DO_NOT_DISRUPT
from packing.disruption.model import Budget
from packing.durations import format_duration
from packing.nodepool import (
    BUDGET_NODES_DEFAULT,
    CONSOLIDATE_AFTER_DEFAULT,
    CONSOLIDATION_POLICY_DEFAULT,
    EXPIRE_AFTER_DEFAULT,
    NodePool,
)

__all__ = ["DO_NOT_DISRUPT_SHARE", "DisruptionCheck"]

BUDGET_REASONS = frozenset({"Empty", "Underutilized", "Drifted"})


def _zero(b: Budget) -> bool:
    return not b.error and b.schedule is None and b.nodes.strip() in ("0", "0%")


class DisruptionCheck:
    family = "disruption"
    codes = ("LM151", "LM152", "LM153", "LM154")

    def findings(self, ctx: Context) -> list[Finding]:
        out: list[Finding] = []
        for pool in ctx.pools:
            if pool.static:
                continue  # consolidation leaves a static pool's nodes alone by design
            s = ctx.settings(pool.name)
            manifest = ctx.pool_manifest(pool.name)
            if s.policy == "WhenEmpty" or s.consolidate_after is None:
                disruption: dict[str, object] = {"consolidationPolicy": CONSOLIDATION_POLICY_DEFAULT}
                if s.consolidate_after is None:
                    disruption["consolidateAfter"] = CONSOLIDATE_AFTER_DEFAULT
                waste = self._waste(ctx, pool)
                off = "consolidateAfter Never" if s.consolidate_after is None else "consolidationPolicy WhenEmpty"
                out.append(
                    Finding(
                        "LM151",
                        Severity.WARNING,
                        f"NodePool {pool.name} never consolidates underutilized nodes ({off})",
                        (pool_object(pool.name),),
                        {
                            "consolidation_policy": s.policy,
                            "consolidate_after": format_duration(s.consolidate_after),
                            "nodes": len(ctx.nodes_by_pool.get(pool.name, [])),
                            "waste_per_hour": None if waste is None else round(waste, 6),
                        },
                        None if waste is None else round(waste * HOURS_PER_MONTH, 2),
                        make_fix("NodePool", pool.name, manifest, {"spec": {"disruption": disruption}}),
                    )
                )
            if s.expire_after is None:
                out.append(
                    Finding(
                        "LM152",
                        Severity.INFO,
                        f"NodePool {pool.name} never expires its nodes (expireAfter Never)",
                        (pool_object(pool.name),),
                        {"expire_after": "Never", "nodes": len(ctx.nodes_by_pool.get(pool.name, []))},
                        None,
                        make_fix(
                            "NodePool",
                            pool.name,
                            manifest,
                            {"spec": {"template": {"spec": {"expireAfter": EXPIRE_AFTER_DEFAULT}}}},
                        ),
                    )
                )
            zero = [b for b in s.budgets if _zero(b)]
            covered = set().union(*(set(b.reasons) if b.reasons is not None else BUDGET_REASONS for b in zero)) if zero else set()
            if covered >= BUDGET_REASONS:
                out.append(
                    Finding(
                        "LM153",
                        Severity.WARNING,
                        f"NodePool {pool.name}: its disruption budgets allow 0 nodes at all times",
                        (pool_object(pool.name),),
                        {"budgets": [{"nodes": b.nodes, "reasons": list(b.reasons or [])} for b in s.budgets]},
                        None,
                        make_fix(
                            "NodePool", pool.name, manifest, {"spec": {"disruption": {"budgets": [{"nodes": BUDGET_NODES_DEFAULT}]}}}
                        ),
                    )
                )
        out.extend(self._do_not_disrupt(ctx))
        return out

    def _waste(self, ctx: Context, pool: NodePool) -> float | None:
        """$/h the pool's nodes cost beyond a fresh plan of the pods on them (None: a node is not priced, or
        the fresh plan cannot place them all)."""
        nodes = ctx.nodes_by_pool.get(pool.name, [])
        if not nodes:
            return None
        prices = [ctx.node_price(n) for n in nodes]
        if any(p is None for p in prices):
            return None
        names = {n.name for n in nodes}
        pods = [p for p in ctx.inputs.running if p.node_name in names and p.owner_kind != "DaemonSet"]
        fresh = ctx.fresh_cost([pool], pods)
        if fresh.unschedulable:
            return None
        return max(0.0, sum(p for p in prices if p is not None) - fresh.per_hour)

    def _do_not_disrupt(self, ctx: Context) -> list[Finding]:
        pods = [p for p in ctx.inputs.running if p.owner_kind != "DaemonSet"]
        if not pods:
            return []
        marked = []
        for p in pods:
            annotations = ctx.extras.pods.get(p.key, ({}, None, 0))[0]
            value = annotations.get(DO_NOT_DISRUPT)
            if value is not None and value.strip() != "false":
                marked.append(p)
        share = len(marked) / len(pods)
        if share <= ctx.do_not_disrupt_share:
            return []
        namespaces: dict[str, int] = {}
        for p in marked:
            namespaces[p.namespace] = namespaces.get(p.namespace, 0) + 1
        return [
            Finding(
                "LM154",
                Severity.WARNING,
                f"{share:.0%} of the running pods carry {DO_NOT_DISRUPT}: their nodes are never consolidated",
                ("cluster",),
                {
                    "pods": len(marked),
                    "running_pods": len(pods),
                    "share_percent": round(100 * share, 1),
                    "threshold_percent": round(100 * ctx.do_not_disrupt_share, 1),
                    "by_namespace": dict(sorted(namespaces.items())),
                    "nodes": len({p.node_name for p in marked}),
                },
            )
        ]
