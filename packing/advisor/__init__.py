"""The advisor: Karpenter's classic mistakes found in a cluster's objects, each a Finding with a stable code,
the numbers that show it, the dollars at stake per month (worked out by re-planning with the fix applied) and
a fix (a merge patch on one object). One module per family of findings, each a Check (packing.advisor.check);
docs/advisor.md lists the codes."""

from __future__ import annotations

from packing.advisor.context import Context
from packing.advisor.disruption import DO_NOT_DISRUPT_SHARE
from packing.advisor.finding import HOURS_PER_MONTH, Finding, Fix, Severity, finding_json
from packing.advisor.patches import make_fix, merge_patch
from packing.advisor.reading import context_from_objects, read_advisor_files
from packing.advisor.run import CHECKS, Advice, advice_json, advise

__all__ = [
    "CHECKS",
    "DO_NOT_DISRUPT_SHARE",
    "HOURS_PER_MONTH",
    "Advice",
    "Context",
    "Finding",
    "Fix",
    "Severity",
    "advice_json",
    "advise",
    "context_from_objects",
    "finding_json",
    "make_fix",
    "merge_patch",
    "read_advisor_files",
]
