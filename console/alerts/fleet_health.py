"""The drift and NodeClaim launch failure rules: their observations and their evaluators.

Drift: the disrupt loop records which nodes have drifted from their NodePool and why (`drifted_nodes_record`,
the engine's drift rules: requirements, template labels, taints, an instance type gone from the catalog) in
DriftedNode; a node counts once it has been drifted for longer than the rule's window, and the rule fires when
the counted share of the scope's nodes is above the threshold (percent, default 5).

Launch failures: the ledger's failure entries (a launch CreateFleet refused, a node that did not register in
time) of the last hour; the rule fires when there are more than the threshold, naming the cloud's error codes
with what each points at, and the pods still pending in the pools that failed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import transaction

from console.alerts import units
from console.alerts.models import DriftedNode
from console.alerts.selectors import Evaluation, pod_in_pool
from console.fleet.models import Decision, NodeClaim
from packing import api

# an error code as AWS writes it (UnauthorizedOperation, InsufficientInstanceCapacity, InvalidSubnetID.NotFound)
_CODE = re.compile(r"\b((?:[A-Z][a-z]+){2,}(?:\.[A-Za-z]+)?)\b")
REGISTRATION_TIMEOUT = "RegistrationTimeout"  # a node that never joined: not a cloud error, named like one
# what an operator should look at first, by error code (prefix match)
HINTS: tuple[tuple[str, str], ...] = (
    ("UnauthorizedOperation", "IAM: the controller's role lacks a permission (see the README's IAM list)"),
    ("AccessDenied", "IAM: the controller's role lacks a permission (see the README's IAM list)"),
    ("InsufficientInstanceCapacity", "diversity: allow more instance types, families or zones in the NodePool"),
    ("InsufficientFreeAddressesInSubnet", "subnets: the selected subnets are out of addresses"),
    ("MaxSpotInstanceCountExceeded", "quota: the account's spot instance limit"),
    ("VcpuLimitExceeded", "quota: the account's vCPU limit for the instance family"),
    ("InvalidLaunchTemplate", "the EC2NodeClass: its launch template, AMI, subnet or security group is gone"),
    (REGISTRATION_TIMEOUT, "bootstrap: the node role, userData or security groups keep the node from joining"),
)
_NOT_CODES = frozenset({"NodeClaim", "NodeClass", "NodePool", "CreateFleet", "RunInstances", "CreateLaunchTemplate"})


# --- drift ---------------------------------------------------------------------------------------

def drift_reasons(cluster: Any) -> dict[str, tuple[str, str]]:
    """node -> (NodePool, why it drifted) for the nodes of a disruption engine Cluster that have drifted."""
    pools = {p.name: p for p in cluster.nodepools}
    catalog = {t.name: t for t in cluster.catalog}
    out: dict[str, tuple[str, str]] = {}
    for info in cluster.nodes:
        pool = pools.get(info.nodepool or "")
        if pool is None or info.deleting:
            continue
        why = api.drift_reason(info.spec.labels, info.spec.taints, pool, catalog)
        if why is not None:
            out[info.name] = (pool.name, why)
    return out


@transaction.atomic
def drifted_nodes_record(*, cluster: Any, now: datetime) -> None:
    """Keep DriftedNode in step with one disrupt loop run: a newly drifted node starts its clock, one still
    drifted keeps it (its reason refreshed), one no longer drifted (replaced, or matching again) goes. The
    NodeClaim's Drifted condition (drifted_at) follows, as Karpenter sets it."""
    drifted = drift_reasons(cluster)
    DriftedNode.objects.exclude(node__in=list(drifted)).delete()
    known = {d.node: d for d in DriftedNode.objects.all()}
    for node, (pool, why) in drifted.items():
        row = known.get(node)
        if row is None:
            DriftedNode.objects.create(node=node, nodepool=pool, reason=why, first_seen=now, last_seen=now)
        else:
            DriftedNode.objects.filter(pk=row.pk).update(nodepool=pool, reason=why, last_seen=now)
    NodeClaim.objects.active().filter(node_name__in=list(drifted), drifted_at__isnull=True).update(drifted_at=now)
    NodeClaim.objects.active().exclude(node_name__in=list(drifted)).filter(drifted_at__isnull=False).update(
        drifted_at=None)


def evaluate_drift(drifted: Sequence[Any], total: int, *, threshold_pct: Decimal, hold_minutes: int, scope: str,
                   now: datetime) -> Evaluation:
    """``drifted``: DriftedNode rows of the scope; ``total``: the scope's nodes. Fires when the share of nodes
    drifted for longer than ``hold_minutes`` is above ``threshold_pct``, naming why they drifted."""
    hold = timedelta(minutes=hold_minutes)
    counted = sorted((d for d in drifted if now - d.first_seen > hold), key=lambda d: (d.first_seen, d.node))
    share = Decimal(len(counted)) * 100 / total if total else Decimal(0)
    reasons: Counter[str] = Counter(d.reason for d in counted)
    details = [f"{n} × {r[:180]}" for r, n in reasons.most_common(5)]
    details += [f"{d.node[:80]} ({d.nodepool or 'no NodePool'}), drifted {units.minutes(int((now - d.first_seen).total_seconds() // 60))}"
                for d in counted[:8]]
    if len(counted) > 8:
        details.append(f"and {len(counted) - 8} more")
    return Evaluation(scope=scope, firing=bool(counted) and share > threshold_pct, title=f"Drifted nodes on {scope}",
                      value=f"{units.percent(share)} ({len(counted)} of {units.count(total, 'node')})",
                      threshold=f"> {units.percent(threshold_pct)} drifted", change=", ".join(sorted(reasons))[:200] or "—",
                      window=f"drifted > {units.minutes(hold_minutes)}", details=details)


def drifted_nodes(nodepool: str) -> list[DriftedNode]:
    rows = DriftedNode.objects.all()
    return list(rows.filter(nodepool=nodepool) if nodepool else rows)


def node_count(nodepool: str) -> int:
    """The scope's nodes: registered NodeClaims not yet terminated."""
    rows = NodeClaim.objects.active().filter(registered_at__isnull=False)
    return (rows.filter(nodepool_name=nodepool) if nodepool else rows).count()


# --- launch failures -----------------------------------------------------------------------------

def error_codes(why: str) -> list[str]:
    """The cloud's error codes a failure entry names ("CreateFleet … launched nothing: InsufficientInstanceCapacity"),
    RegistrationTimeout for a node that never registered; "" when none is named."""
    if "did not register within" in why:
        return [REGISTRATION_TIMEOUT]
    return [c for c in dict.fromkeys(_CODE.findall(why)) if c not in _NOT_CODES] or ["unknown"]


def hint(code: str) -> str:
    return next((h for prefix, h in HINTS if code.startswith(prefix)), "")


def evaluate_launch_failures(failures: Sequence[Any], pending: Sequence[Any],
                             verdicts: Mapping[str, Sequence[Mapping[str, Any]]], *, threshold: Decimal,
                             scope: str) -> Evaluation:
    """``failures``: the ledger's failure Decisions of the last hour in the scope (nodepool_name, why);
    ``pending``: the pending pod rows (key, pinned_pools), ``verdicts`` their latest reasons. Fires with more
    than ``threshold`` failures, naming each error code (with what it points at) and the pods left pending in
    the pools that failed."""
    codes: Counter[str] = Counter()
    pools: set[str] = set()
    for f in failures:
        codes.update(error_codes(f.why))
        if f.nodepool_name:
            pools.add(f.nodepool_name)
    stuck = sorted(p.key for p in pending
                   if any(pod_in_pool(pool, pinned=p.pinned_pools or [], verdict=verdicts.get(p.key, []))
                          for pool in pools))
    details = [f"{n} × {code}" + (f" — {hint(code)}" if hint(code) else "") for code, n in codes.most_common(6)]
    if stuck:
        details.append(f"{len(stuck)} pod(s) pending in {', '.join(sorted(pools))[:120]}: "
                       + ", ".join(k[:70] for k in stuck[:8]) + (", …" if len(stuck) > 8 else ""))
    return Evaluation(scope=scope, firing=len(failures) > threshold, title=f"NodeClaim launch failures on {scope}",
                      value=f"{len(failures)} in the last hour", threshold=f"> {units.count(threshold, 'failure')} per hour",
                      change=", ".join(c for c, _ in codes.most_common(3)) or "—", window=units.minutes(60),
                      details=details)


def failures_between(nodepool: str, start: datetime, end: datetime) -> list[Decision]:
    qs = Decision.objects.filter(kind=Decision.FAILURE, at__gt=start, at__lte=end)
    return list((qs.filter(nodepool_name=nodepool) if nodepool else qs).order_by("-at"))


# --- /metrics -------------------------------------------------------------------------------------

def cloudprovider_errors() -> dict[tuple[tuple[str, str], ...], float]:
    """karpenter_cloudprovider_errors_total's series: the launches the cloud refused, by error code, counted from
    the terminated NodeClaims (rows never deleted, so the counter only goes up). Labels as Karpenter's: the
    controller that called, the CloudProvider method, the provider and the error."""
    out: Counter[tuple[tuple[str, str], ...]] = Counter()
    for why in NodeClaim.objects.filter(termination_reason__startswith="launch failed").values_list(
            "termination_reason", flat=True):
        for code in error_codes(why):
            out[(("controller", "nodeclaim.lifecycle"), ("method", "Create"), ("provider", "aws"),
                 ("error", code))] += 1
    return dict(out)
