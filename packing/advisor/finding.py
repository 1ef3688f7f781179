"""What the advisor reports: a Finding (a stable code, a severity, the objects it is about, the numbers that
show it, the dollars at stake per month when the engine can work them out, and a fix), and its JSON form."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["HOURS_PER_MONTH", "Finding", "Fix", "Severity", "finding_json"]

# Dollars per month from dollars per hour: AWS bills a month as 730 hours (365 x 24 / 12).
HOURS_PER_MONTH = 730


class Severity(StrEnum):
    """error: pods are (or will be) left pending or nodes can never be disrupted; warning: a known pitfall that
    costs money or availability; info: a saving or a habit worth a look."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


SEVERITY_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


@dataclass(frozen=True)
class Fix:
    """A change to one object: `patch` an RFC 7386 JSON merge patch (applied to the object's manifest),
    `patch_yaml` its YAML text and `diff` the unified diff of the object's YAML before and after."""

    kind: str
    name: str  # a NodePool's name, or namespace/name for a namespaced object
    patch: Mapping[str, Any]
    patch_yaml: str
    diff: str


@dataclass(frozen=True)
class Finding:
    code: str  # LM1xx, stable: documented in docs/advisor.md and the README
    severity: Severity
    title: str
    objects: tuple[str, ...]  # "nodepool/default", "poddisruptionbudget/ns/name", "pod/ns/name", "deployment/ns/name"
    evidence: Mapping[str, Any] = field(default_factory=dict)
    monthly_savings: float | None = None  # dollars per month the fix saves, None when it cannot be computed
    fix: Fix | None = None

    @property
    def key(self) -> str:
        """What identifies the finding from one run to the next: its code and its objects."""
        return f"{self.code} {','.join(self.objects)}"


def finding_json(f: Finding) -> dict[str, Any]:
    fix = None
    if f.fix is not None:
        fix = {"kind": f.fix.kind, "name": f.fix.name, "patch": f.fix.patch_yaml, "diff": f.fix.diff}
    return {
        "code": f.code,
        "severity": str(f.severity),
        "title": f.title,
        "objects": list(f.objects),
        "evidence": dict(f.evidence),
        "monthly_savings": None if f.monthly_savings is None else round(f.monthly_savings, 2),
        "fix": fix,
    }
