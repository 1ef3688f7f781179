"""PodDisruptionBudgets: which pods they cover and how many of those may be evicted at once.

disruptionsAllowed is computed as the disruption controller does (healthy pods minus the desired healthy count),
with every pod bound to a node counted healthy and every matching pod expected; when the input carries the
cluster's own status.disruptionsAllowed the smaller of the two is used. The eviction API refuses to evict a pod
covered by more than one PDB, so such a pod blocks its node outright.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from packing.nodepool import PodDisruptionBudget
from packing.pods import LabelSelector, Pod
from packing.requirements import Requirement, RequirementError, Requirements

__all__ = ["PdbIndex"]

_PERCENT = re.compile(r"^([0-9]+)%$")


def _selector(raw: Mapping[str, Any]) -> LabelSelector | None:
    """None when the selector cannot be read (then it is treated as covering everything: fail safe)."""
    try:
        reqs = [Requirement.new(str(k), "In", [str(v)]) for k, v in (raw.get("matchLabels") or {}).items()]
        for e in raw.get("matchExpressions") or []:
            reqs.append(Requirement.new(str(e["key"]), str(e["operator"]), [str(v) for v in e.get("values") or []]))
    except (RequirementError, KeyError, TypeError, AttributeError):
        return None
    return LabelSelector(Requirements(reqs))


def _scaled(value: str, expected: int) -> int | None:
    m = _PERCENT.match(value.strip())
    if m:
        return math.ceil(int(m.group(1)) * expected / 100)
    if value.strip().isdigit():
        return int(value.strip())
    return None


class PdbIndex:
    """Coverage and allowances for the PDBs of one cluster state."""

    def __init__(
        self,
        pdbs: Sequence[PodDisruptionBudget],
        pods: Iterable[Pod],
        status: Mapping[str, int] | None = None,
        null_selector: Iterable[str] = (),
    ) -> None:
        self.pdbs = list(pdbs)
        nulls = set(null_selector)
        self._sel: dict[str, LabelSelector | None] = {}
        for b in self.pdbs:
            key = f"{b.namespace}/{b.name}"
            if key in nulls:
                # a null selector selects nothing: model it as one no pod can match
                self._sel[key] = LabelSelector(Requirements([Requirement.new("loadmaster.dev/never", "In", ["\x00"])]))
            else:
                self._sel[key] = _selector(b.selector)
        self.cover: dict[str, list[str]] = {}
        self._match_cache: dict[tuple[str, frozenset[tuple[str, str]]], list[str]] = {}
        expected: dict[str, int] = {}
        healthy: dict[str, int] = {}
        for p in pods:
            keys = self._keys_for(p)
            if keys:
                self.cover[p.key] = keys
            for k in keys:
                expected[k] = expected.get(k, 0) + 1
                if p.node_name:
                    healthy[k] = healthy.get(k, 0) + 1
        self.allowed: dict[str, int] = {}
        for b in self.pdbs:
            key = f"{b.namespace}/{b.name}"
            exp, ok = expected.get(key, 0), healthy.get(key, 0)
            desired: int | None
            if b.max_unavailable is not None:
                mu = _scaled(b.max_unavailable, exp)
                desired = None if mu is None else exp - mu
            elif b.min_available is not None:
                desired = _scaled(b.min_available, exp)
            else:
                desired = 1  # policy/v1beta1's default minAvailable
            allowed = 0 if desired is None or self._sel[key] is None else max(0, ok - desired)
            if status and key in status:
                allowed = min(allowed, max(0, status[key]))
            self.allowed[key] = allowed

    def _keys_for(self, p: Pod) -> list[str]:
        # pods of one workload share their namespace and labels: each such set is matched once
        ck = (p.namespace, frozenset(p.labels.items()))
        hit = self._match_cache.get(ck)
        if hit is None:
            hit = []
            for b in self.pdbs:
                if b.namespace != p.namespace:
                    continue
                key = f"{b.namespace}/{b.name}"
                sel = self._sel[key]
                if sel is None or sel.matches(p.labels):
                    hit.append(key)
            self._match_cache[ck] = hit
        return list(hit)

    def blocking(self, pods: Iterable[Pod], used: Mapping[str, int] | None = None) -> str | None:
        """Why evicting all of `pods` at once would violate a PDB (given `used` evictions already counted)."""
        need: dict[str, int] = dict(used or {})
        for p in sorted(pods, key=lambda q: q.key):
            keys = self.cover.get(p.key)
            if not keys:
                continue
            if len(keys) > 1:
                return f"pod {p.key} is covered by several PDBs ({', '.join(sorted(keys))}), so it cannot be evicted"
            k = keys[0]
            need[k] = need.get(k, 0) + 1
            if need[k] > self.allowed.get(k, 0):
                return f"pdb {k} blocks eviction of {p.key}"
        return None

    def usage(self, pods: Iterable[Pod]) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in pods:
            for k in self.cover.get(p.key, ()):
                out[k] = out.get(k, 0) + 1
        return out
