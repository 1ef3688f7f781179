"""Karpenter's batching of pending pods: solve once the stream of newly unschedulable pods has been
quiet for 1 s, or at the latest 10 s after the first of them, so a Deployment scaled to 100
replicas is planned once, not 100 times."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PendingBatcher:
    idle: float = 1.0
    max_wait: float = 10.0
    first: float | None = None
    last: float | None = None

    def add(self, now: float) -> None:
        if self.first is None:
            self.first = now
        self.last = now

    def due(self, now: float) -> bool:
        if self.first is None or self.last is None:
            return False
        return now - self.last >= self.idle or now - self.first >= self.max_wait

    def reset(self) -> None:
        self.first = self.last = None


def is_unschedulable(pod: dict[str, object]) -> bool:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    if not isinstance(spec, dict) or not isinstance(status, dict) or spec.get("nodeName"):
        return False
    conditions = status.get("conditions") or []
    return any(isinstance(c, dict) and c.get("type") == "PodScheduled" and c.get("status") == "False"
               and c.get("reason") == "Unschedulable" for c in conditions)
