"""Commitments the AWS account already carries, read for the pricing refresh: Reserved Instances
(EC2 DescribeReservedInstances) and Savings Plans (the `savingsplans` API: DescribeSavingsPlans, then
DescribeSavingsPlanRates per plan), as packing.commitments.Commitment.

The parsing is one pure function per API (reserved_instances_commitments, savings_plans_commitments); the reader
only pages through the calls. No Django here.

What is read, and what is left out (and why):
- Reserved Instances: state "active" only. A zonal RI ("Availability Zone" scope) covers its instance type in its
  zone; a regional RI covers its type anywhere in the region, and a regional Linux/UNIX RI on default tenancy is
  size-flexible within its family (AWS's rule), so it also names the family. RIs of other platforms (Windows,
  RHEL, SUSE...) or dedicated tenancy are left out: the catalog prices Linux on shared tenancy, the nodes
  Loadmaster launches.
- Savings Plans: state "active", type Compute or EC2Instance (SageMaker and Database plans never cover EC2 nodes).
  The hourly commitment is the plan's `commitment`. The rate of each instance type is AWS's own plan rate for
  Linux/UNIX on shared tenancy in the region, turned into the discount off the on-demand price the catalog holds:
  1 - plan rate / on-demand price. A type whose rate AWS does not return, or whose on-demand price the catalog does
  not know, is not covered: nothing is invented.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from botocore.config import Config

from packing.api import Commitment, CommitmentKind

log = logging.getLogger(__name__)

# The API operations the reader calls, as IAM actions (tests/backends/test_aws_commitments.py checks them).
IAM_ACTIONS: list[str] = [
    "ec2:DescribeReservedInstances",
    "savingsplans:DescribeSavingsPlanRates",
    "savingsplans:DescribeSavingsPlans",
]
SOURCE_RI = "aws:DescribeReservedInstances"
SOURCE_SP = "aws:savingsplans"
LINUX = ("Linux/UNIX", "Linux/UNIX (Amazon VPC)")
PLAN_KINDS = {"Compute": CommitmentKind.COMPUTE_SAVINGS_PLAN, "EC2Instance": CommitmentKind.EC2_INSTANCE_SAVINGS_PLAN}
# DescribeSavingsPlanRates answers at most this many rates per page.
RATES_PAGE = 1000


def _utc(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def reserved_instances_commitments(reserved: Iterable[Mapping[str, Any]], *, region: str) -> list[Commitment]:
    """DescribeReservedInstances' ReservedInstances → Commitments (module docstring: which ones, and how)."""
    out: list[Commitment] = []
    for ri in reserved:
        rid = str(ri.get("ReservedInstancesId", ""))
        if ri.get("State") != "active":
            continue
        if ri.get("ProductDescription") not in LINUX or (ri.get("InstanceTenancy") or "default") != "default":
            log.info("reserved instances %s (%s, %s tenancy) left out: the catalog prices Linux on shared tenancy",
                     rid, ri.get("ProductDescription"), ri.get("InstanceTenancy"))
            continue
        itype = str(ri["InstanceType"])
        count = int(ri.get("InstanceCount") or 0)
        if count <= 0:
            continue
        zonal = ri.get("Scope") == "Availability Zone"
        out.append(Commitment(
            name=rid, kind=CommitmentKind.RESERVED_INSTANCES, instance_type=itype,
            # regional Linux RIs on default tenancy are size-flexible within their family
            instance_family=None if zonal else itype.split(".", 1)[0],
            zone=str(ri.get("AvailabilityZone") or "") or None if zonal else None,
            region=None if zonal else region, count=count,
            starts=_utc(ri.get("Start")), ends=_utc(ri.get("End")), source=SOURCE_RI))
    return sorted(out, key=lambda c: c.name)


def _properties(rate: Mapping[str, Any]) -> dict[str, str]:
    return {str(p.get("name")): str(p.get("value")) for p in rate.get("properties") or []}


def plan_discounts(rates: Iterable[Mapping[str, Any]], on_demand: Mapping[str, float], *,
                   region: str) -> dict[str, float]:
    """instance type → 1 - plan rate / on-demand price, from one plan's DescribeSavingsPlanRates searchResults:
    EC2 hourly usage, Linux/UNIX, shared tenancy, in `region`. Types without a rate or an on-demand price are absent;
    a rate at or above the on-demand price gives no discount and is absent too (0 <= discount < 1)."""
    out: dict[str, float] = {}
    for rate in rates:
        props = _properties(rate)
        if (rate.get("productType") != "EC2" or rate.get("unit") != "Hrs"
                or props.get("productDescription") not in LINUX or props.get("tenancy", "shared") != "shared"
                or props.get("region") != region or not props.get("instanceType")):
            continue
        itype = props["instanceType"]
        price = on_demand.get(itype)
        try:
            plan_rate = float(rate["rate"])
        except (KeyError, TypeError, ValueError):
            continue
        if not price or price <= 0 or plan_rate < 0:
            continue
        discount = round(1.0 - plan_rate / price, 6)
        if 0.0 < discount < 1.0:
            out[itype] = discount
    return dict(sorted(out.items()))


def savings_plans_commitments(plans: Iterable[Mapping[str, Any]], rates: Mapping[str, Sequence[Mapping[str, Any]]],
                              on_demand: Mapping[str, float], *, region: str) -> list[Commitment]:
    """DescribeSavingsPlans' savingsPlans, with each plan's DescribeSavingsPlanRates searchResults (by plan id),
    → Commitments with the hourly commitment and per-type discounts (plan_discounts)."""
    out: list[Commitment] = []
    for plan in plans:
        kind = PLAN_KINDS.get(str(plan.get("savingsPlanType")))
        if kind is None or plan.get("state") != "active":
            continue
        pid = str(plan["savingsPlanId"])
        try:
            hourly = float(plan["commitment"])
        except (KeyError, TypeError, ValueError):
            log.warning("savings plan %s has no readable commitment; left out", pid)
            continue
        family = str(plan.get("ec2InstanceFamily") or "") or None
        plan_region = str(plan.get("region") or "") or None
        if kind is CommitmentKind.EC2_INSTANCE_SAVINGS_PLAN and plan_region not in (None, region):
            continue                          # an EC2 Instance Savings Plan covers its own region only
        out.append(Commitment(
            name=pid, kind=kind, instance_family=family if kind is CommitmentKind.EC2_INSTANCE_SAVINGS_PLAN else None,
            region=plan_region if kind is CommitmentKind.EC2_INSTANCE_SAVINGS_PLAN else None,
            hourly_commitment=hourly, rates=plan_discounts(rates.get(pid, ()), on_demand, region=region),
            starts=_utc(plan.get("start")), ends=_utc(plan.get("end")), source=SOURCE_SP))
    return sorted(out, key=lambda c: c.name)


class AWSCommitmentReader:
    """Reads the account's Reserved Instances and Savings Plans. Pass a boto3 Session, or ready clients (tests)."""

    def __init__(self, session: Any = None, *, region: str, ec2: Any = None, savingsplans: Any = None,
                 endpoint_url: str | None = None, max_attempts: int = 8) -> None:
        if session is None and (ec2 is None or savingsplans is None):
            import boto3
            session = boto3.Session(region_name=region)
        config = Config(retries={"mode": "standard", "total_max_attempts": max_attempts},
                        connect_timeout=10, read_timeout=60)
        self._ec2 = ec2 or session.client("ec2", region_name=region, config=config, endpoint_url=endpoint_url)
        # Savings Plans is a global service with one endpoint (savingsplans.amazonaws.com, in us-east-1).
        self._savingsplans = savingsplans or session.client("savingsplans", region_name="us-east-1", config=config,
                                                            endpoint_url=endpoint_url)
        self.region = region

    def reserved_instances(self) -> list[Commitment]:
        response = self._ec2.describe_reserved_instances(Filters=[{"Name": "state", "Values": ["active"]}])
        return reserved_instances_commitments(response.get("ReservedInstances") or [], region=self.region)

    def savings_plans(self, on_demand: Mapping[str, float]) -> list[Commitment]:
        plans: list[Mapping[str, Any]] = []
        token: str | None = None
        while True:
            page = self._savingsplans.describe_savings_plans(states=["active"], **({"nextToken": token} if token else {}))
            plans += page.get("savingsPlans") or []
            token = page.get("nextToken")
            if not token:
                break
        rates: dict[str, list[Mapping[str, Any]]] = {}
        for plan in plans:
            if plan.get("savingsPlanType") not in PLAN_KINDS:
                continue
            pid = str(plan["savingsPlanId"])
            rates[pid] = self._rates(pid)
        return savings_plans_commitments(plans, rates, on_demand, region=self.region)

    def _rates(self, plan_id: str) -> list[Mapping[str, Any]]:
        filters = [{"name": "region", "values": [self.region]}, {"name": "productType", "values": ["EC2"]},
                   {"name": "productDescription", "values": ["Linux/UNIX"]},
                   {"name": "tenancy", "values": ["shared"]}]
        out: list[Mapping[str, Any]] = []
        token: str | None = None
        while True:
            page = self._savingsplans.describe_savings_plan_rates(
                savingsPlanId=plan_id, filters=filters, maxResults=RATES_PAGE, **({"nextToken": token} if token else {}))
            out += page.get("searchResults") or []
            token = page.get("nextToken")
            if not token:
                break
        return out

    def read(self, on_demand: Mapping[str, float]) -> list[Commitment]:
        """Every commitment: the Reserved Instances, then the Savings Plans."""
        return [*self.reserved_instances(), *self.savings_plans(on_demand)]

