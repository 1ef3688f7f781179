"""NodePool limits during one solve: each pool's usage (its nodes, in-flight claims and the claims this solve
opens), and which instance types still fit under its limits.

Usage is in milli-units per resource, as limits are; "nodes" counts 1000 per node. An open NodeClaim reserves
the largest capacity among the types still open to it, so limits hold whichever type it finalizes on; its
reservation shrinks to the chosen type's capacity once it is finalized.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from packing.nodepool import NodePool
from packing.resources import Resources

if TYPE_CHECKING:
    from packing.scheduling.nodeclaim import NodeClaim
    from packing.scheduling.templates import PoolTemplate

__all__ = ["LimitUsage"]

_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)


class LimitUsage:
    def __init__(self, pools: Iterable[NodePool]) -> None:
        self.used: dict[str, dict[str, int]] = {p.name: {} for p in pools}

    def count_node(self, pool: str, capacity: Mapping[str, int]) -> None:
        """An existing node (or in-flight claim) of `pool` with this capacity."""
        lu = self.used[pool]
        for k, v in capacity.items():
            lu[k] = lu.get(k, 0) + v
        lu["nodes"] = lu.get("nodes", 0) + 1000

    def ok(self, tpl: PoolTemplate, cap: Resources, extra_nodes: int = 1) -> bool:
        """Whether `extra_nodes` more nodes of capacity `cap` stay within the pool's limits."""
        limits = tpl.pool.limits
        if not limits:
            return True
        used = self.used[tpl.name]
        for k, lim in limits.items():
            add = extra_nodes * 1000 if k == "nodes" else cap.get(k, 0)
            if used.get(k, 0) + add > lim:
                return False
        return True

    def reserve(self, tpl: PoolTemplate, cap: Mapping[str, int], sign: int = 1) -> None:
        """Count one node of capacity `cap` toward the pool's limits (sign=-1: release it)."""
        if not tpl.pool.limits:
            return
        used = self.used[tpl.name]
        for k in tpl.pool.limits:
            add = 1000 if k == "nodes" else cap.get(k, 0)
            used[k] = used.get(k, 0) + sign * add

    def mask(self, tpl: PoolTemplate) -> npt.NDArray[np.bool_]:
        """Options whose capacity still fits under the pool's limits."""
        limits = tpl.pool.limits
        if not limits:
            return np.ones(len(tpl.options), dtype=bool)
        used = self.used[tpl.name]
        lkeys = sorted(limits)
        # a limit beyond int64 (e.g. memory: 8Ei in milli-units) is compared as int64's maximum: exact, since
        # every capacity is at most MAX_AMOUNT
        room = np.array([max(_INT64_MIN, min(_INT64_MAX, limits[k] - used.get(k, 0))) for k in lkeys], dtype=np.int64)
        caps = np.array(
            [[1000 if k == "nodes" else o.it.capacity.get(k, 0) for k in lkeys] for o in tpl.options],
            dtype=np.int64,
        ).reshape(len(tpl.options), len(lkeys))
        return np.asarray((caps <= room).all(axis=1))

    @staticmethod
    def modest(tpl: PoolTemplate, idx: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """A claim in a pool with limits reserves the largest capacity among its options until it is
        finalized (so limits hold whatever type is picked). Keeping every size there would let the
        first claims reserve the whole limit and starve the rest — Karpenter's known behaviour — so
        keep only options up to 4x the smallest option's capacity in each limited resource."""
        keys = [k for k in tpl.pool.limits or {} if k != "nodes"]
        if not keys or idx.size <= 1:
            return idx
        caps = np.array([[tpl.options[i].it.capacity.get(k, 0) for k in keys] for i in idx.tolist()],
                        dtype=np.int64).reshape(idx.size, len(keys))
        ceiling = caps.min(axis=0) * 4
        keep = (caps <= np.maximum(ceiling, 1)).all(axis=1)
        return idx[keep] if keep.any() else idx

    @staticmethod
    def max_capacity(claim: NodeClaim) -> dict[str, int]:
        """What an open claim reserves: the largest capacity per resource among its types ({} without limits)."""
        out: dict[str, int] = {}
        if not claim.tpl.pool.limits:
            return out
        for o in claim.options:
            for k, v in o.it.capacity.items():
                if v > out.get(k, 0):
                    out[k] = v
        return out
