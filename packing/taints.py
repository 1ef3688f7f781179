"""Taints and tolerations with Kubernetes' matching rules."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "EFFECTS",
    "EPHEMERAL_TAINTS",
    "EPHEMERAL_TAINT_PREFIXES",
    "TOLERATION_OPERATORS",
    "Taint",
    "Toleration",
    "first_untolerated",
    "is_ephemeral",
    "taint_number",
]

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# Gt and Lt compare the taint's value with the toleration's as integers (Kubernetes 1.35, alpha feature
# TaintTolerationComparisonOperators)
TOLERATION_OPERATORS = ("Equal", "Exists", "Gt", "Lt")
_INT64_MAX = 2**63 - 1
# Taints a node carries only while it boots; Karpenter ignores them when simulating an uninitialized node. Matched
# as Kubernetes matches taints, on key and effect (KnownEphemeralTaints in Karpenter's pkg/scheduling/taints.go):
# node.kubernetes.io/unreachable:NoExecute, the node controller's eviction taint, is not one of them.
EPHEMERAL_TAINTS = frozenset(
    {
        ("node.kubernetes.io/not-ready", "NoSchedule"),
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoSchedule"),
        ("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule"),
        ("karpenter.sh/unregistered", "NoExecute"),
    }
)
# taint keys ephemeral with any suffix and effect (the Node Readiness Controller's readiness.k8s.io/<rule>)
EPHEMERAL_TAINT_PREFIXES = ("readiness.k8s.io/",)


def is_ephemeral(taint: Taint) -> bool:
    """Whether an uninitialized node's taint is one Karpenter expects to go away (and so ignores)."""
    return (taint.key, taint.effect) in EPHEMERAL_TAINTS or taint.key.startswith(EPHEMERAL_TAINT_PREFIXES)


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
        if self.operator in ("Gt", "Lt"):
            if self.key != taint.key:
                return False
            have, bound = taint_number(taint.value), taint_number(self.value)
            if have is None or bound is None:
                return False  # a taint whose value is not an integer is tolerated by no Gt/Lt toleration
            return have > bound if self.operator == "Gt" else have < bound
        return self.key == taint.key and self.value == taint.value


def taint_number(value: str) -> int | None:
    """A taint or toleration value as the integer Gt/Lt compare, or None when it is not one: Kubernetes takes a
    positive 64-bit decimal without a sign or leading zeros ("100"; not "0100", "0", "-3" or "+3")."""
    if not value or len(value) > 19 or not value.isascii() or not value.isdigit() or value[0] == "0":
        return None
    n = int(value)
    return n if n <= _INT64_MAX else None


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
