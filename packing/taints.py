"""Taints and tolerations with Kubernetes' matching rules."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["EFFECTS", "EPHEMERAL_TAINT_KEYS", "Taint", "Toleration", "first_untolerated"]

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# Taints a node carries only while it boots; Karpenter ignores them when simulating an uninitialized node.
EPHEMERAL_TAINT_KEYS = frozenset(
    {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.cloudprovider.kubernetes.io/uninitialized",
    }
)


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"

    def to_dict(self) -> dict[str, str]:
        d = {"key": self.key, "effect": self.effect}
        if self.value:
            d["value"] = self.value
        return d


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.operator == "Exists":
            return not self.key or self.key == taint.key
        return self.key == taint.key and self.value == taint.value


def first_untolerated(
    taints: Iterable[Taint], tolerations: Iterable[Toleration], *, include_prefer: bool = False
) -> Taint | None:
    """The first taint that keeps the pod off the node; PreferNoSchedule only counts when asked to."""
    tols = tuple(tolerations)
    for t in taints:
        if t.effect == "PreferNoSchedule" and not include_prefer:
            continue
        if not any(tol.tolerates(t) for tol in tols):
            return t
    return None
