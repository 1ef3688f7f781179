"""Capacity reservations in the AWS backend (console.backends.aws_reservations): capacityReservationSelectorTerms
resolved with DescribeCapacityReservations (moto has no such API: botocore's Stubber checks requests and responses
against the real EC2 model), and a reserved launch targeting its reservation (CreateFleet and the launch template
request, checked by botocore's own parameter validation on the way to moto)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.stub import Stubber
from moto import mock_aws

from console.backends import aws_reservations
from console.backends.aws_reservations import Query, parse_reservations, queries
from console.backends.base import CapacityReservation, LaunchError, LaunchOption
from tests.backends.test_aws import CLUSTER, REGION, World, request

NOW = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # dummy credentials: nothing may reach real AWS
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)


@pytest.fixture
def world() -> Iterator[World]:
    with mock_aws():
        yield World(boto3.Session(region_name=REGION))
ACTIVE = [{"Name": "state", "Values": ["active"]}]


def _cr(rid: str, **over: Any) -> dict[str, Any]:
    raw = {"CapacityReservationId": rid, "OwnerId": "111122223333", "InstanceType": "m5.xlarge",
           "InstancePlatform": "Linux/UNIX", "AvailabilityZone": "us-east-1a", "Tenancy": "default",
           "TotalInstanceCount": 4, "AvailableInstanceCount": 3, "State": "active", "InstanceMatchCriteria": "targeted",
           "StartDate": NOW - timedelta(days=1), "EndDateType": "unlimited", "ReservationType": "default"}
    raw.update(over)
    return raw


def reserved(rid: str = "cr-0aaa", itype: str = "m5.large", zone: str = "us-east-1a", price: float = 1e-8,
             rtype: str = "default", interruptible: bool = False) -> LaunchOption:
    return LaunchOption(itype, zone, "reserved", price, reservation_id=rid, reservation_type=rtype,
                        reservation_interruptible=interruptible)


# --- queries ---------------------------------------------------------------------------------------------

def test_terms_become_karpenters_queries() -> None:
    terms = [{"id": "cr-0123"}, {"tags": {"team": "ml", "any": "*"}, "ownerID": "111122223333"},
             {"instanceMatchCriteria": "open"}, {"ownerID": "111122223333"}]
    got = queries(terms)
    assert got == [Query(id="cr-0123"), Query(owner_id="111122223333", tags={"team": "ml", "any": "*"}),
                   Query(instance_match_criteria="open")]
    assert got[0].request() == {"CapacityReservationIds": ["cr-0123"], "Filters": ACTIVE}   # no MaxResults by id
    assert got[1].request() == {"Filters": [*ACTIVE, {"Name": "owner-id", "Values": ["111122223333"]},
                                            {"Name": "tag-key", "Values": ["any"]},
                                            {"Name": "tag:team", "Values": ["ml"]}], "MaxResults": 1000}
    assert got[2].request()["Filters"][-1] == {"Name": "instance-match-criteria", "Values": ["open"]}


def test_parse_dedups_drops_ended_and_unknown_and_marks_an_ending_block_expiring() -> None:
    got = parse_reservations([
        _cr("cr-b"), _cr("cr-b"),
        _cr("cr-ended", EndDate=NOW - timedelta(minutes=1), EndDateType="limited"),
        _cr("cr-future-criteria", InstanceMatchCriteria="something-new"),
        _cr("cr-block", ReservationType="capacity-block", EndDate=NOW + timedelta(minutes=39), InstanceType="p5.48xlarge"),
        _cr("cr-block-later", ReservationType="capacity-block", EndDate=NOW + timedelta(minutes=41)),
        _cr("cr-a", Interruptible=True, AvailableInstanceCount=0),
    ], NOW)
    assert [(r.id, r.state) for r in got] == [("cr-a", "active"), ("cr-b", "active"), ("cr-block", "expiring"),
                                              ("cr-block-later", "active")]
    assert got[0] == CapacityReservation(id="cr-a", instance_type="m5.xlarge", zone="us-east-1a", available=0,
                                         total=4, owner_id="111122223333", instance_match_criteria="targeted",
                                         interruptible=True, starts=NOW - timedelta(days=1))
    assert got[2].type == "capacity-block" and got[2].ends == NOW + timedelta(minutes=39)


@pytest.fixture
def ec2(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    return boto3.client("ec2", region_name=REGION)


def test_describe_pages_each_query_against_the_ec2_model(ec2: Any) -> None:
    terms = [{"id": "cr-0gone"}, {"id": "cr-0b"}, {"tags": {"team": "ml"}}]
    with Stubber(ec2) as stub:
        stub.add_client_error("describe_capacity_reservations", "InvalidCapacityReservationId.NotFound",
                              "The capacity reservation ID 'cr-0gone' does not exist",
                              expected_params={"CapacityReservationIds": ["cr-0gone"], "Filters": ACTIVE})
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": [_cr("cr-0b")]},
                          {"CapacityReservationIds": ["cr-0b"], "Filters": ACTIVE})
        tag_query = {"Filters": [*ACTIVE, {"Name": "tag:team", "Values": ["ml"]}], "MaxResults": 1000}
        stub.add_response("describe_capacity_reservations",
                          {"CapacityReservations": [_cr("cr-0b"), _cr("cr-0c")], "NextToken": "p2"}, tag_query)
        stub.add_response("describe_capacity_reservations",
                          {"CapacityReservations": [_cr("cr-0d", ReservationType="capacity-block",
                                                        EndDate=NOW + timedelta(hours=5), EndDateType="limited")]},
                          {**tag_query, "NextToken": "p2"})
        got = aws_reservations.describe(ec2, terms, NOW)
        stub.assert_no_pending_responses()
    assert [(r.id, r.type) for r in got] == [("cr-0b", "default"), ("cr-0c", "default"), ("cr-0d", "capacity-block")]


def test_describe_raises_other_errors(ec2: Any) -> None:
    from botocore.exceptions import ClientError
    with Stubber(ec2) as stub:
        stub.add_client_error("describe_capacity_reservations", "UnauthorizedOperation", "no")
        with pytest.raises(ClientError):
            aws_reservations.describe(ec2, [{"tags": {"a": "b"}}], NOW)


# --- launching into a reservation ------------------------------------------------------------------------

def _template_data(world: World, name: str) -> dict[str, Any]:
    versions = world.ec2.describe_launch_template_versions(LaunchTemplateName=name, Versions=["$Latest"])
    return dict(versions["LaunchTemplateVersions"][0]["LaunchTemplateData"])


def test_reserved_launch_targets_the_reservation(world: World) -> None:
    provider = world.provider()
    options = [reserved("cr-0aaa", "m5.large", "us-east-1a", 9.6e-9), reserved("cr-0bbb", "c5.large", "us-east-1b", 8.5e-9)]
    instance = provider.launch(request(options=options))
    params = world.fleet_calls[-1]
    assert params["TargetCapacitySpecification"] == {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": "on-demand"}
    assert params["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"} and "SpotOptions" not in params
    configs = params["LaunchTemplateConfigs"]
    # one launch template per reservation, cheapest first, each with only the override that fits it
    assert [c["LaunchTemplateSpecification"]["LaunchTemplateName"] for c in configs] == [
        f"loadmaster/{CLUSTER}/default/cr-0bbb", f"loadmaster/{CLUSTER}/default/cr-0aaa"]
    assert [[(o["InstanceType"], o["SubnetId"]) for o in c["Overrides"]] for c in configs] == [
        [("c5.large", world.subnets["us-east-1b"])], [("m5.large", world.subnets["us-east-1a"])]]
    data = _template_data(world, f"loadmaster/{CLUSTER}/default/cr-0bbb")
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {"CapacityReservationId": "cr-0bbb"}}
    assert "InstanceMarketOptions" not in data
    # moto launches the first override: c5.large in us-east-1b, i.e. into cr-0bbb
    assert (instance.capacity_type, instance.reservation_id, instance.instance_type) == ("reserved", "cr-0bbb", "c5.large")
    assert instance.price == 8.5e-9


def test_capacity_block_launch_uses_the_capacity_block_market(world: World) -> None:
    provider = world.provider()
    block = reserved("cr-0blk", "p5.48xlarge", "us-east-1a", 1e-6, rtype="capacity-block")

    def answer(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        # moto cannot launch into a Capacity Block: answer as EC2 does
        return AWSResponse("https://ec2.amazonaws.com/", 200, {}, None), {
            "FleetId": "fleet-00000000-0000-0000-0000-000000000001", "Errors": [], "Instances": [{
                "LaunchTemplateAndOverrides": {
                    "LaunchTemplateSpecification": {"LaunchTemplateName": f"loadmaster/{CLUSTER}/default/cr-0blk",
                                                    "Version": "1"},
                    "Overrides": {"InstanceType": "p5.48xlarge", "SubnetId": world.subnets["us-east-1a"]}},
                "Lifecycle": "on-demand", "InstanceIds": ["i-0123456789abcdef0"], "InstanceType": "p5.48xlarge"}]}

    provider._ec2.meta.events.register("before-call.ec2.CreateFleet", answer)
    instance = provider.launch(request(options=[block]))
    params = world.fleet_calls[-1]
    assert params["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "capacity-block"
    assert "OnDemandOptions" not in params and "SpotOptions" not in params
    data = _template_data(world, f"loadmaster/{CLUSTER}/default/cr-0blk")
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["CapacityReservationSpecification"]["CapacityReservationTarget"] == {"CapacityReservationId": "cr-0blk"}
    assert (instance.capacity_type, instance.reservation_id, instance.zone) == ("reserved", "cr-0blk", "us-east-1a")


def test_interruptible_reservation_launch_options() -> None:
    option = reserved(interruptible=True)
    assert aws_reservations.fleet_capacity_type(option) == "reserved-capacity"
    assert aws_reservations.fleet_options(option) == {
        "ReservedCapacityOptions": {"ReservationTypes": ["interruptible-capacity-reservation"]}}
    assert aws_reservations.template_data(option)["InstanceMarketOptions"] == {
        "MarketType": "interruptible-capacity-reservation"}


def test_a_full_reservation_is_reported_unavailable_not_launched_elsewhere(world: World) -> None:
    provider = world.provider()

    def full(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        over = world.fleet_calls[-1]["LaunchTemplateConfigs"][0]["Overrides"][0]
        return AWSResponse("https://ec2.amazonaws.com/", 200, {}, None), {
            "FleetId": "fleet-00000000-0000-0000-0000-000000000002", "Instances": [], "Errors": [{
                "LaunchTemplateAndOverrides": {"Overrides": {"InstanceType": over["InstanceType"],
                                                             "SubnetId": over["SubnetId"]}},
                "Lifecycle": "on-demand", "ErrorCode": "ReservationCapacityExceeded",
                "ErrorMessage": "The requested reservation does not have sufficient compatible and available capacity"}]}

    provider._ec2.meta.events.register("before-call.ec2.CreateFleet", full)
    option = reserved("cr-0aaa", "m5.large", "us-east-1a")
    with pytest.raises(LaunchError) as caught:
        provider.launch(request(options=[option]))
    assert caught.value.unavailable == [option]
    assert len(world.fleet_calls) == 1 and "OnDemandOptions" in world.fleet_calls[0]


def test_described_instance_in_a_targeted_reservation_is_reserved() -> None:
    from console.backends.aws import _instance
    base = {"InstanceId": "i-0123456789abcdef0", "InstanceType": "m5.large",
            "Placement": {"AvailabilityZone": "us-east-1a"}, "State": {"Name": "running"}}
    targeted = _instance({**base, "CapacityReservationId": "cr-0aaa", "CapacityReservationSpecification": {
        "CapacityReservationPreference": "capacity-reservations-only"}})
    block = _instance({**base, "CapacityReservationId": "cr-0blk", "InstanceLifecycle": "capacity-block"})
    open_match = _instance({**base, "CapacityReservationId": "cr-0open",
                            "CapacityReservationSpecification": {"CapacityReservationPreference": "open"}})
    assert (targeted.capacity_type, targeted.reservation_id) == ("reserved", "cr-0aaa")
    assert (block.capacity_type, block.reservation_id) == ("reserved", "cr-0blk")
    assert (open_match.capacity_type, open_match.reservation_id) == ("on-demand", "")


def test_provider_resolves_terms_through_its_client(world: World) -> None:
    provider = world.provider()
    assert provider.capacity_reservations([]) == []
    with Stubber(provider._ec2) as stub:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": [
            _cr("cr-0b", EndDate=datetime.now(UTC) + timedelta(days=1), EndDateType="limited")]},
            {"CapacityReservationIds": ["cr-0b"], "Filters": ACTIVE})
        got = provider.capacity_reservations([{"id": "cr-0b"}])
    assert [r.id for r in got] == ["cr-0b"]
