"""Drift, as the dry-run CLI defines it: the node no longer matches what its NodePool would launch today.

A node is drifted when its labels (completed with its instance type's catalog labels, as a NodeClaim's would be)
no longer satisfy the pool's requirements, when it lacks a label the pool's template sets or carries another
value, when its taints differ from the template's (startup taints and the taints Kubernetes and Karpenter manage
themselves aside), or when its instance type has left the catalog.

The Drift method replaces drifted nodes one at a time, the empty ones first, then the oldest, within each pool's
Drifted budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from packing.disruption.model import NotDisruptedCategory
from packing.disruption.refusals import Refusal
from packing.disruption.replacement import replace_or_delete
from packing.disruption.state import RunState
from packing.disruption.staticdrift import static_replacement
from packing.instancetype import InstanceType
from packing.nodepool import INSTANCE_TYPE_LABEL, NodePool
from packing.scheduling.results import PlannedNodeClaim
from packing.taints import Taint

__all__ = ["Drift", "drift_reason"]

# taints the node's lifecycle adds and removes (not-ready, unschedulable, Karpenter's disrupted marker): not drift
_MANAGED_TAINT_PREFIXES = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/", "karpenter.sh/")


def _taint_set(taints: tuple[Taint, ...], startup: tuple[Taint, ...]) -> set[Taint]:
    skip = set(startup)
    return {t for t in taints if t not in skip and not t.key.startswith(_MANAGED_TAINT_PREFIXES)}


def drift_reason(
    labels: Mapping[str, str],
    taints: tuple[Taint, ...],
    pool: NodePool,
    catalog: Mapping[str, InstanceType],
) -> str | None:
    """Why the node has drifted from its NodePool, or None when it still matches."""
    it_name = labels.get(INSTANCE_TYPE_LABEL, "")
    it = catalog.get(it_name)
    if it is None:
        return f"instance type {it_name or '(none)'} is no longer in the catalog"
    merged = dict(it.labels)
    merged.update(labels)
    bad = pool.requirements.first_unmatched(merged)
    if bad is not None:
        have = merged.get(bad.key)
        got = "absent" if have is None else f"{have}"
        return f"label {bad.key}={got} no longer satisfies nodepool requirement {bad}"
    for k, v in sorted(pool.labels.items()):
        have = labels.get(k)
        if have is None:
            return f"label {k} of the nodepool template is missing"
        if have != v:
            return f"label {k}={have} differs from the nodepool template's {v}"
    want = _taint_set(pool.taints, ())
    have_t = _taint_set(taints, pool.startup_taints)
    if want != have_t:
        extra = sorted(str(t) for t in have_t - want)
        missing = sorted(str(t) for t in want - have_t)
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing)}")
        if extra:
            parts.append(f"extra {', '.join(extra)}")
        return f"taints differ from the nodepool template ({'; '.join(parts)})"
    return None


class Drift:
    name = "drift"
    chains = False
    waits_for_chain = False

    def __init__(self, run: RunState) -> None:
        self.run = run
        self.failed: dict[str, int] = {}  # node -> epoch its move failed at
        # node -> why it drifted: a node's labels, taints and pool do not change during a run, so found once
        self._drifted: dict[str, str] | None = None
        self._static: dict[str, PlannedNodeClaim | None] = {}  # per static pool, its replacement NodeClaim

    def _find_drifted(self) -> dict[str, str]:
        run = self.run
        out = {}
        for n in run.candidates():
            pool = run.pools.get(run.info[n].nodepool or "")
            if pool is None:
                continue
            spec = run.info[n].spec
            r = drift_reason(spec.labels, spec.taints, pool, run.catalog)
            if r is not None:
                out[n] = r
        return out

    def act(self) -> bool:
        run = self.run
        if self._drifted is None:
            self._drifted = self._find_drifted()
        drifted: list[tuple[bool, datetime, str, str]] = []
        for n, r in self._drifted.items():
            if n in run.disrupted or n not in run.sim.specs or run.forceful_reason(n):
                continue
            created = run.info[n].created or datetime.min.replace(tzinfo=UTC)
            drifted.append((bool(run.pods(n)), created, n, r))
        drifted.sort()  # empty drifted nodes first, then the oldest
        for _, _, n, r in drifted:
            room, text = run.budget_room(run.info[n].nodepool or "", "drifted")
            if room is not None and room <= 0:
                run.spared.found_but(n, Refusal(f"drifted ({r}), but {text}", NotDisruptedCategory.BUDGET))
                continue
            add, why = static_replacement(run, self._static, run.info[n].nodepool or "")
            if why:
                run.spared.found_but(n, Refusal(f"drifted ({r}), but {why}", NotDisruptedCategory.NO_LAUNCHABLE_TYPE))
                continue
            if replace_or_delete(run, self.failed, n, "drifted", self.name, f"drifted: {r}", add=add):
                return True
        return False
