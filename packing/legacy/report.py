"""The conversion report: one entry per field of a legacy object that moved, changed meaning, was given a value
the legacy API did not need, or has no Karpenter v1 equivalent."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

__all__ = ["Action", "Change"]


class Action(enum.StrEnum):
    MOVED = "moved"  # the same value at another path (or in another object)
    CHANGED = "changed"  # a new name or shape, or a value whose meaning differs in v1
    DROPPED = "dropped"  # no v1 equivalent: left out of the output
    DEFAULTED = "defaulted"  # absent in the legacy object; written explicitly so v1 behaves as the legacy API did


@dataclass(frozen=True)
class Change:
    object: str  # "Provisioner/default": the legacy object the entry is about
    field: str  # its path in the legacy object
    action: Action
    from_: Any  # the legacy value (None when absent)
    to: Any  # "NodePool/default spec.disruption.consolidateAfter = 30s"-like: where and what it became (None: nowhere)
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"object": self.object, "field": self.field, "action": self.action.value, "from": self.from_,
                "to": self.to, "note": self.note}

    def to_text(self) -> str:
        where = f" -> {self.to}" if self.to is not None else ""
        note = f" ({self.note})" if self.note else ""
        return f"{self.object}: {self.field}: {self.action.value}{where}{note}"
