"""Reserved Instances and Savings Plans read from AWS (console.backends.aws_commitments), and the pricing refresh's
commitments step (console.catalog.commitment_sync). moto has neither API: botocore's Stubber checks every request
and canned response against the real service models; nothing reaches the network."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from hypothesis import given
from hypothesis import strategies as st

from console.backends import aws_commitments
from console.backends.aws_commitments import (
    AWSCommitmentReader,
    plan_discounts,
    reserved_instances_commitments,
    savings_plans_commitments,
)
from console.catalog.commitment_sync import commitments_refresh, on_demand_prices
from packing.commitments import Commitment, CommitmentKind
from tests.engine_builders import instance_type

REGION = "us-east-1"
START = datetime(2026, 1, 1, tzinfo=UTC)
END = datetime(2027, 1, 1, tzinfo=UTC)
# The on-demand prices the catalog holds (bundled snapshot: m5.large $0.096/h, m5.xlarge $0.192/h in us-east-1).
ON_DEMAND = {"m5.large": 0.096, "m5.xlarge": 0.192}


def _ri(rid: str, **over: Any) -> dict[str, Any]:
    ri = {"ReservedInstancesId": rid, "InstanceType": "m5.large", "InstanceCount": 3, "State": "active",
          "Scope": "Region", "ProductDescription": "Linux/UNIX", "InstanceTenancy": "default",
          "Start": START, "End": END, "OfferingClass": "standard", "OfferingType": "No Upfront",
          "CurrencyCode": "USD", "Duration": 31536000, "FixedPrice": 0.0, "UsagePrice": 0.0}
    ri.update(over)
    return ri


def _plan(pid: str, kind: str = "Compute", **over: Any) -> dict[str, Any]:
    plan = {"savingsPlanId": pid, "savingsPlanArn": f"arn:aws:savingsplans::111122223333:savingsplan/{pid}",
            "savingsPlanType": kind, "state": "active", "commitment": "2.5", "currency": "USD",
            "start": "2026-01-01T00:00:00.000Z", "end": "2029-01-01T00:00:00.000Z", "paymentOption": "No Upfront",
            "productTypes": ["EC2", "Fargate", "Lambda"], "termDurationInSeconds": 94608000}
    plan.update(over)
    return plan


def _rate(itype_: str, rate: str, **props: str) -> dict[str, Any]:
    properties = {"region": REGION, "instanceType": itype_, "instanceFamily": itype_.split(".")[0],
                  "productDescription": "Linux/UNIX", "tenancy": "shared", **props}
    return {"rate": rate, "currency": "USD", "unit": "Hrs", "productType": "EC2", "serviceCode": "AmazonEC2",
            "usageType": f"USE1-BoxUsage:{itype_}", "operation": "RunInstances",
            "properties": [{"name": k, "value": v} for k, v in properties.items()]}


# --- pure parsing --------------------------------------------------------------------------------------

def test_reserved_instances_regional_linux_is_size_flexible_zonal_is_not() -> None:
    got = reserved_instances_commitments([
        _ri("ri-regional"),
        _ri("ri-zonal", Scope="Availability Zone", AvailabilityZone="us-east-1a", InstanceType="c5.xlarge",
            InstanceCount=2),
        _ri("ri-retired", State="retired"),
        _ri("ri-windows", ProductDescription="Windows"),
        _ri("ri-dedicated", InstanceTenancy="dedicated"),
    ], region=REGION)
    assert got == [
        Commitment(name="ri-regional", kind=CommitmentKind.RESERVED_INSTANCES, instance_type="m5.large",
                   instance_family="m5", region=REGION, count=3, starts=START, ends=END,
                   source="aws:DescribeReservedInstances"),
        Commitment(name="ri-zonal", kind=CommitmentKind.RESERVED_INSTANCES, instance_type="c5.xlarge",
                   zone="us-east-1a", count=2, starts=START, ends=END, source="aws:DescribeReservedInstances"),
    ]


def test_plan_discount_is_one_minus_plan_rate_over_on_demand_and_never_invented() -> None:
    rates = [
        _rate("m5.large", "0.0672"),                              # 1 - 0.0672/0.096 = 0.3
        _rate("m5.xlarge", "0.2"),                                 # above on-demand: no discount
        _rate("m5.2xlarge", "0.2"),                                # no on-demand price known: not covered
        _rate("m5.large", "0.01", region="us-west-2"),             # another region
        _rate("m5.large", "0.01", productDescription="Windows"),   # another platform
        _rate("m5.large", "0.01", tenancy="dedicated"),
        {**_rate("m5.large", "0.01"), "productType": "Fargate"},
    ]
    assert plan_discounts(rates, ON_DEMAND, region=REGION) == {"m5.large": 0.3}


def test_savings_plans_compute_and_ec2_instance() -> None:
    plans = [_plan("sp-compute"),
             _plan("sp-ec2", "EC2Instance", ec2InstanceFamily="m5", region=REGION, commitment="1.25"),
             _plan("sp-ec2-west", "EC2Instance", ec2InstanceFamily="m5", region="us-west-2"),
             _plan("sp-sagemaker", "SageMaker"),
             _plan("sp-queued", state="queued")]
    rates = {"sp-compute": [_rate("m5.large", "0.0672")], "sp-ec2": [_rate("m5.xlarge", "0.1152")]}
    got = savings_plans_commitments(plans, rates, ON_DEMAND, region=REGION)
    assert [(c.name, c.kind, c.hourly_commitment, dict(c.rates), c.instance_family, c.region) for c in got] == [
        ("sp-compute", CommitmentKind.COMPUTE_SAVINGS_PLAN, 2.5, {"m5.large": 0.3}, None, None),
        ("sp-ec2", CommitmentKind.EC2_INSTANCE_SAVINGS_PLAN, 1.25, {"m5.xlarge": 0.4}, "m5", REGION),
    ]
    assert got[0].starts == datetime(2026, 1, 1, tzinfo=UTC) and got[0].source == "aws:savingsplans"


# --- the reader, against the real service models -------------------------------------------------------

@pytest.fixture
def clients(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    return (boto3.client("ec2", region_name=REGION), boto3.client("savingsplans", region_name="us-east-1"))


def test_reader_pages_through_plans_and_rates(clients: tuple[Any, Any]) -> None:
    ec2, sp = clients
    reader = AWSCommitmentReader(region=REGION, ec2=ec2, savingsplans=sp)
    rates_filters = [{"name": "region", "values": [REGION]}, {"name": "productType", "values": ["EC2"]},
                     {"name": "productDescription", "values": ["Linux/UNIX"]}, {"name": "tenancy", "values": ["shared"]}]
    with Stubber(ec2) as ec2_stub, Stubber(sp) as sp_stub:
        ec2_stub.add_response("describe_reserved_instances", {"ReservedInstances": [_ri("ri-1")]},
                              {"Filters": [{"Name": "state", "Values": ["active"]}]})
        sp_stub.add_response("describe_savings_plans", {"savingsPlans": [_plan("sp-1")], "nextToken": "t1"},
                             {"states": ["active"]})
        sp_stub.add_response("describe_savings_plans", {"savingsPlans": [_plan("sp-2", "SageMaker")]},
                             {"states": ["active"], "nextToken": "t1"})
        sp_stub.add_response("describe_savings_plan_rates",
                             {"savingsPlanId": "sp-1", "searchResults": [_rate("m5.large", "0.0672")], "nextToken": "r1"},
                             {"savingsPlanId": "sp-1", "filters": rates_filters, "maxResults": 1000})
        sp_stub.add_response("describe_savings_plan_rates",
                             {"savingsPlanId": "sp-1", "searchResults": [_rate("m5.xlarge", "0.1152")]},
                             {"savingsPlanId": "sp-1", "filters": rates_filters, "maxResults": 1000, "nextToken": "r1"})
        got = reader.read(ON_DEMAND)
        ec2_stub.assert_no_pending_responses()
        sp_stub.assert_no_pending_responses()
    assert [c.name for c in got] == ["ri-1", "sp-1"]
    assert dict(got[1].rates) == {"m5.large": 0.3, "m5.xlarge": 0.4}


def test_iam_actions_are_the_calls_the_reader_makes() -> None:
    source = Path(aws_commitments.__file__).read_text()
    calls = set(re.findall(r"self\._(ec2|savingsplans)\.(\w+)\(", source))
    found = {f"{svc}:{''.join(w.title() for w in m.split('_'))}" for svc, m in calls}
    assert found == set(aws_commitments.IAM_ACTIONS)


# --- the refresh step ----------------------------------------------------------------------------------

def test_refresh_hands_what_aws_returned_to_the_sink(clients: tuple[Any, Any]) -> None:
    ec2, sp = clients
    stored: list[list[Commitment]] = []
    types = [instance_type("m5.large", 2, 8, 0.096, zones=["us-east-1a"])]
    with Stubber(ec2) as ec2_stub, Stubber(sp) as sp_stub:
        ec2_stub.add_response("describe_reserved_instances", {"ReservedInstances": [_ri("ri-1")]})
        sp_stub.add_response("describe_savings_plans", {"savingsPlans": [_plan("sp-1")]})
        sp_stub.add_response("describe_savings_plan_rates",
                             {"savingsPlanId": "sp-1", "searchResults": [_rate("m5.large", "0.0672")]})
        line = commitments_refresh(reader=AWSCommitmentReader(region=REGION, ec2=ec2, savingsplans=sp),
                                   types=types, sink=stored.append)
    assert line == "commitments: 1 Reserved Instances, 1 Savings Plans read from AWS"
    assert [c.name for c in stored[0]] == ["ri-1", "sp-1"] and dict(stored[0][1].rates) == {"m5.large": 0.3}


def test_refresh_failure_is_a_summary_line_and_stores_nothing(clients: tuple[Any, Any]) -> None:
    ec2, sp = clients
    stored: list[list[Commitment]] = []

    def denied(**_: Any) -> None:
        raise ClientError({"Error": {"Code": "UnauthorizedOperation", "Message": "not allowed"}},
                          "DescribeReservedInstances")

    ec2.meta.events.register("before-call.ec2.DescribeReservedInstances", denied)
    line = commitments_refresh(reader=AWSCommitmentReader(region=REGION, ec2=ec2, savingsplans=sp),
                               types=[], sink=stored.append)
    assert line.startswith("commitments: not read (ClientError") and "UnauthorizedOperation" in line
    assert stored == []


def test_on_demand_prices_from_the_catalog() -> None:
    m5 = instance_type("m5.large", 2, 8, 0.096, zones=["us-east-1a"])
    dearer = instance_type("m5.large", 2, 8, 0.097, zones=["us-east-1b"])
    both = replace(m5, offerings=m5.offerings + dearer.offerings)
    spot_only = replace(m5, name="x.large", offerings=tuple(o for o in m5.offerings if o.capacity_type == "spot"))
    assert on_demand_prices([both, spot_only]) == {"m5.large": 0.096}


@given(price=st.floats(min_value=1e-4, max_value=100.0), rate=st.floats(min_value=0.0, max_value=200.0))
def test_a_discount_is_always_a_fraction_and_gives_back_the_plan_rate(price: float, rate: float) -> None:
    got = plan_discounts([_rate("m5.large", repr(rate))], {"m5.large": price}, region=REGION)
    exact = 1.0 - rate / price
    assert ("m5.large" in got) == (0.0 < round(exact, 6) < 1.0)
    if "m5.large" in got:
        assert 0.0 < got["m5.large"] < 1.0 and abs(got["m5.large"] - exact) <= 5e-7
