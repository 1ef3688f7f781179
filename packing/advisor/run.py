"""One advisor run: every check over one Context, the findings in a stable order, and the summary."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from packing.advisor.capacity import CapacityCheck
from packing.advisor.check import Check
from packing.advisor.context import Context
from packing.advisor.disruption import DisruptionCheck
from packing.advisor.diversity import DiversityCheck
from packing.advisor.finding import SEVERITY_ORDER, Finding, Severity, finding_json
from packing.advisor.hygiene import HygieneCheck
from packing.advisor.limits import LimitsCheck
from packing.advisor.pdbs import PdbCheck

__all__ = ["CHECKS", "Advice", "advice_json", "advise"]

CHECKS: tuple[Check, ...] = (
    LimitsCheck(),
    DiversityCheck(),
    PdbCheck(),
    CapacityCheck(),
    DisruptionCheck(),
    HygieneCheck(),
)


@dataclass
class Advice:
    findings: list[Finding] = field(default_factory=list)
    nodepools: int = 0
    pods: int = 0
    extra: dict[str, Any] = field(default_factory=dict)  # what the caller adds to the summary (an IAM preflight)

    def summary(self) -> dict[str, Any]:
        by = {str(s): sum(1 for f in self.findings if f.severity is s) for s in Severity}
        savings = [f.monthly_savings for f in self.findings if f.monthly_savings is not None]
        return {
            "findings": len(self.findings),
            "by_severity": by,
            "monthly_savings": round(sum(s for s in savings if s > 0), 2),
            "nodepools": self.nodepools,
            "pods": self.pods,
            **self.extra,
        }


def advise(ctx: Context, checks: Sequence[Check] = CHECKS) -> Advice:
    found: list[Finding] = []
    for check in checks:
        found.extend(check.findings(ctx))
    found.sort(key=lambda f: (SEVERITY_ORDER[f.severity], f.code, f.objects))
    return Advice(found, len(ctx.inputs.nodepools), len(ctx.pods))


def advice_json(advice: Advice) -> dict[str, Any]:
    return {"findings": [finding_json(f) for f in advice.findings], "summary": advice.summary()}
