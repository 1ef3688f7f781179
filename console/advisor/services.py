"""Writes and actions of the advisor: the IAM preflight (calls AWS, saves nothing) and the "new advisor
finding" alert rule's evaluation, which records the findings it has told about."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction

from console.advisor import selectors
from console.advisor.models import AlertedFinding
from console.alerts import units
from console.alerts.models import AlertRule
from console.alerts.selectors import Evaluation
from console.fleet.models import EC2NodeClass
from packing import api

# The advisor run a rule evaluates: the live cluster's (tests hand in their own)
AdviceSource = Callable[[], api.Advice]


@dataclass
class Preflight:
    permissions: list[api.Permission] = field(default_factory=list)
    findings: list[api.Finding] = field(default_factory=list)
    region: str = ""
    node_role: str = ""
    error: str = ""


def iam_preflight_run(*, session: Any = None, region: str | None = None) -> Preflight:
    """The IAM preflight with the console's AWS credentials (or `session`), iam:PassRole on the role of the
    first EC2NodeClass that names one. An error reaching AWS is reported, never raised."""
    region = region or settings.LOADMASTER_AWS_REGION
    role = next((c.role for c in EC2NodeClass.objects.order_by("name") if c.role), "")
    try:
        if session is None:
            import boto3

            session = boto3.Session()
        permissions = api.iam_preflight(session, region=region, node_role=role)
    except Exception as exc:  # noqa: BLE001 - no credentials, no network: say so on the page
        return Preflight(region=region, node_role=role, error=f"{type(exc).__name__}: {exc}"[:500])
    return Preflight(permissions, api.iam_findings(permissions), region, role)


def _in_scope(f: api.Finding, nodepool: str) -> bool:
    return not nodepool or f"nodepool/{nodepool}" in f.objects


@transaction.atomic
def alert_evaluate(*, rule: AlertRule, now: datetime, source: AdviceSource | None = None) -> Evaluation:
    """A "new advisor finding" rule: firing while at least `threshold` (at least 1) findings concern its scope;
    `fresh` when one of them was not told about before, so it is sent at once whatever the cooldown. A finding
    that is gone is forgotten: should it come back, it is new again."""
    advice = (source or selectors.current_advice)()
    found = {f.key: f for f in advice.findings if _in_scope(f, rule.nodepool)}
    told = selectors.alerted_keys(rule_id=rule.pk)
    new = sorted(set(found) - told)
    AlertedFinding.objects.filter(rule=rule).exclude(key__in=list(found)).delete()
    AlertedFinding.objects.bulk_create([AlertedFinding(rule=rule, key=k[:600], first_seen=now) for k in new],
                                       ignore_conflicts=True)
    needed = max(Decimal(rule.threshold), Decimal(1))
    details = [f"new: {found[k].code} {found[k].title}" for k in new[:10]]
    details += [f"{f.code} {f.title}" for k, f in sorted(found.items()) if k not in new][:10 - len(details)]
    savings = sum(f.monthly_savings or 0.0 for f in found.values() if (f.monthly_savings or 0) > 0)
    return Evaluation(scope=rule.scope, firing=len(found) >= needed, title=f"Advisor findings on {rule.scope}",
                      value=units.count(len(found), "finding"), threshold=f"≥ {units.count(needed, 'finding')}",
                      change=(f"{len(new)} new: " + ", ".join(k for k in new[:5])) if new else "—",
                      window=f"{units.money(savings)}/month at stake" if savings else "—",
                      details=details, fresh=bool(new))
