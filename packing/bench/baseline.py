"""A Karpenter-style provisioning baseline, implemented in the benchmark and run on the same input as the planner.

What Karpenter's provisioner does (pkg/controllers/provisioning/scheduling, and the AWS provider's launch):

- pods are taken largest first (cpu, then memory, descending);
- each pod goes to the first existing node that takes it, else to the first NodeClaim opened earlier in this
  pass that can still take it, else to a new NodeClaim from the heaviest NodePool that admits it; a preference
  is relaxed one step at a time when nothing takes the pod;
- a NodeClaim keeps every compatible instance type that still holds all its pods (plus DaemonSet overhead), so
  its candidate set narrows as pods are added;
- at launch the NodeClaim gets the cheapest offering (spot first where allowed) among its remaining types,
  after "exotic" types (GPU or other accelerator, metal) are dropped whenever a generic one remains, as
  the AWS provider's filterExoticInstanceTypes does.

One choice goes beyond a literal reading: a pod that requests no accelerator never joins or opens a NodeClaim
that only accelerator types can serve while a generic type could hold it. Real clusters get this from the
GPU pools' taints; without it first-fit piles cpu pods onto the GPU claims until only the largest GPU types
fit, which would make the baseline look far worse than Karpenter really is.

Only the placement loop, type narrowing and launch choice live here; the per-node constraint checks
(resources, taints, node affinity, host ports, topology spread and pod (anti-)affinity, limits) are the
scheduler's, so that both plans obey exactly the same rules. The planner's cost packing, size caps and bulk
path are not used.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from packing.instancetype import CAPACITY_TYPE_SPOT, Offering
from packing.pods import Pod
from packing.scheduling.fit import Refusal
from packing.scheduling.nodeclaim import NodeClaim
from packing.scheduling.preferences import PodContext
from packing.scheduling.queue import largest_first
from packing.scheduling.results import Results
from packing.scheduling.scheduler import Scheduler
from packing.scheduling.solve import Solve
from packing.scheduling.templates import PoolTemplate, TypeOption
from packing.scheduling.vectors import fits

__all__ = ["ACCELERATORS", "karpenter_baseline"]

ACCELERATORS = frozenset(
    {"nvidia.com/gpu", "amd.com/gpu", "aws.amazon.com/neuron", "aws.amazon.com/neuroncore", "habana.ai/gaudi"}
)
SIZE_LABEL = "karpenter.k8s.aws/instance-size"


def _accelerated(o: TypeOption) -> bool:
    return any(o.it.capacity.get(k, 0) > 0 for k in ACCELERATORS)


def _exotic(o: TypeOption) -> bool:
    return _accelerated(o) or "metal" in o.labels.get(SIZE_LABEL, "")


class _Baseline:
    def __init__(self, sched: Scheduler, pods: Sequence[Pod]) -> None:
        # Solve gives the shared setup: resource keys, pool templates, existing nodes, topology groups, limits
        self.sv = Solve(sched, pods, frozenset(), greedy=True)
        self.sv.size_caps = {}
        self.accel_mask: dict[str, npt.NDArray[np.bool_]] = {}
        for tpl in self.sv.tpls:
            self.accel_mask[tpl.name] = np.array([_accelerated(o) for o in tpl.options], dtype=bool)

    def _wants_accelerator(self, ctx: PodContext) -> bool:
        return any(ctx.pod.requests.get(k, 0) > 0 for k in ACCELERATORS)

    def _generic_only(
        self, ctx: PodContext, tpl: PoolTemplate, idx: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64]:
        """For a pod without accelerator requests: the types of `idx` that have no accelerator, if any."""
        if self._wants_accelerator(ctx) or not idx.size:
            return idx
        generic = idx[~self.accel_mask[tpl.name][idx]]
        return generic if generic.size else idx

    def _try_claims(self, ctx: PodContext) -> bool:
        sv = self.sv
        for claim in sv.claims.candidates(ctx.vec):
            res = claim.can_add(ctx, sv.topo)
            if isinstance(res, Refusal):
                continue
            idx = res.types
            assert idx is not None
            if not self._wants_accelerator(ctx) and bool(self.accel_mask[claim.tpl.name][idx].all()):
                # an accelerator-only claim: take it only if no generic type anywhere could hold the pod
                if self._generic_fits_somewhere(ctx):
                    continue
            limited = bool(claim.tpl.pool.limits)
            old = sv.limits.max_capacity(claim) if limited else None
            claim.add(ctx, sv.topo, res)
            sv.claims.update(claim)
            if old is not None:
                sv.limits.reserve(claim.tpl, old, -1)
                sv.limits.reserve(claim.tpl, sv.limits.max_capacity(claim))
            return True
        return False

    def _generic_fits_somewhere(self, ctx: PodContext) -> bool:
        for tpl in self.sv.tpls:
            if not tpl.options:
                continue
            used = np.asarray(ctx.vec, dtype=np.int64)
            ok = (tpl.alloc_matrix >= used).all(axis=1) & ~self.accel_mask[tpl.name]
            if bool(ok.any()):
                return True
        return False

    def _open_claim(self, ctx: PodContext) -> bool:
        sv = self.sv
        for tpl, mask in sv.launchable(ctx):
            idx = self._generic_only(ctx, tpl, np.flatnonzero(mask).astype(np.int64))
            if not idx.size:
                continue
            name = sv.new_claim_name(tpl.name)
            claim = NodeClaim(name, tpl, tpl.base, idx)
            res = claim.can_add(ctx, sv.topo)
            if isinstance(res, Refusal):
                sv.claim_seq[tpl.name] -= 1
                continue
            claim.add(ctx, sv.topo, res)
            sv.limits.reserve(tpl, sv.limits.max_capacity(claim))
            sv.claims.append(claim)
            return True
        return False

    @staticmethod
    def _launch(claim: NodeClaim) -> None:
        """Cheapest offering (spot first) among the claim's types, exotic types only when nothing else fits."""
        cands: list[tuple[tuple[int, float, str], TypeOption, Offering]] = []
        for o in claim.options:
            off = o.offering_for(claim.reqs)
            if off is None or not fits(claim.used, o.alloc):
                continue
            k = (0 if off.capacity_type == CAPACITY_TYPE_SPOT else 1, off.price or 0.0, o.it.name)
            cands.append((k, o, off))
        if not cands:
            raise RuntimeError(f"nodeclaim {claim.name} has no launchable offering")
        generic = [c for c in cands if not _exotic(c[1])]
        _, o, off = min(generic or cands, key=lambda c: c[0])
        claim.fix(o, off)

    def run(self) -> Results:
        sv = self.sv
        order = largest_first(sv.ctxs)
        failed: list[PodContext] = []
        for ctx in order:
            while True:
                if sv.try_existing(ctx) or self._try_claims(ctx) or self._open_claim(ctx):
                    break
                if not ctx.relax():
                    failed.append(ctx)
                    break
                sv.register(ctx)
        for claim in sv.claims:
            old = sv.limits.max_capacity(claim)
            self._launch(claim)
            sv.limits.reserve(claim.tpl, old, -1)
            assert claim.chosen is not None
            sv.limits.reserve(claim.tpl, claim.chosen.it.capacity)
        for ctx in failed:
            sv.errors[ctx.pod.key] = sv.explain(ctx)
        return sv.results(False)


def karpenter_baseline(sched: Scheduler, pods: Sequence[Pod]) -> Results:
    """Plan `pods` the way Karpenter's provisioner would (see the module docstring)."""
    return _Baseline(sched, pods).run()
