"""The AWS cloud backend against moto: in-process (mock_aws) for most tests, ThreadedMotoServer for one.

moto's CreateFleet always launches the first override and never reports errors, so capacity errors and
throttling are injected through botocore event hooks, the way AWS would return them.
"""

from __future__ import annotations

import base64
import copy
import json
import logging
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError
from botocore.retries.standard import ExponentialBackoff
from moto import mock_aws

from console.backends import aws
from console.backends.aws import (
    IAM_ACTIONS,
    IMPLICIT_IAM_ACTIONS,
    MAX_OVERRIDES,
    AWSCloudProvider,
    ClusterInfo,
    launch_with_fallback,
)
from console.backends.base import (
    TAG_CLUSTER,
    TAG_NODECLAIM,
    TAG_NODECLASS,
    TAG_NODEPOOL,
    LaunchError,
    LaunchOption,
    LaunchRequest,
)

REGION = "us-east-1"
CLUSTER = "test"
K8S = "1.31"
# AMIs in moto's bundled list (stable ids), standing in for the EKS-optimized AL2023 images.
X86_AMI = "ami-076f415166b04f5fe"
ARM_AMI = "ami-0e9271c829888680e"
AL2023 = "/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023/{arch}/standard/recommended/image_id"


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Dummy credentials: nothing may ever reach real AWS from the tests.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)


class World:
    """A seeded AWS account: tagged subnets and security group, SSM AMI parameters, the SQS queue."""

    def __init__(self, session: boto3.Session, endpoint_url: str | None = None) -> None:
        self.session = session
        self.endpoint_url = endpoint_url
        self.ec2 = session.client("ec2", endpoint_url=endpoint_url)
        self.ssm = session.client("ssm", endpoint_url=endpoint_url)
        self.sqs = session.client("sqs", endpoint_url=endpoint_url)
        subnets = self.ec2.describe_subnets(Filters=[{"Name": "default-for-az", "Values": ["true"]}])["Subnets"]
        self.subnets = {s["AvailabilityZone"]: s["SubnetId"] for s in subnets}
        self.ec2.create_tags(Resources=list(self.subnets.values()), Tags=[{"Key": "karpenter.sh/discovery", "Value": CLUSTER}])
        vpc = subnets[0]["VpcId"]
        self.sg = self.ec2.create_security_group(
            GroupName="nodes", Description="nodes", VpcId=vpc,
            TagSpecifications=[{"ResourceType": "security-group",
                                "Tags": [{"Key": "karpenter.sh/discovery", "Value": CLUSTER}]}])["GroupId"]
        # AWS's public parameters (/aws/service/...) cannot be written, not even in moto: they are
        # answered by a GetParameter hook on every provider's client instead.
        self.public_parameters = {AL2023.format(k8s=K8S, arch="x86_64"): X86_AMI,
                                  AL2023.format(k8s=K8S, arch="arm64"): ARM_AMI}
        self.queue_url = self.sqs.create_queue(QueueName="loadmaster-interruptions")["QueueUrl"]
        self.calls: set[str] = set()          # "ec2:CreateFleet", ... every operation any provider made
        self.fleet_calls: list[dict[str, Any]] = []

    def provider(self, **kwargs: Any) -> AWSCloudProvider:
        kwargs.setdefault("kubernetes_version", K8S)
        kwargs.setdefault("queue_url", self.queue_url)
        kwargs.setdefault("sqs_wait_seconds", 0)
        kwargs.setdefault("max_attempts", 3)
        p = AWSCloudProvider(self.session, region=REGION, cluster_name=CLUSTER, endpoint_url=self.endpoint_url,
                             **kwargs)
        for client in (p._ec2, p._ssm, p._sqs):
            # provide-client-params fires for every call, paginated ones included, before any
            # before-call hook can answer in AWS's place.
            client.meta.events.register_first("provide-client-params", self._record)
            client.meta.events.register("provide-client-params.ec2.CreateFleet", self._capture)
        p._ssm.meta.events.register("before-call.ssm.GetParameter", self._public_parameter)
        return p

    def _public_parameter(self, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        name = json.loads(params["body"])["Name"]
        if name not in self.public_parameters:
            return None                                  # moto answers (ParameterNotFound for /aws/...)
        return AWSResponse("https://ssm.amazonaws.com/", 200, {}, None), {"Parameter": {
            "Name": name, "Type": "String", "Value": self.public_parameters[name], "Version": 1, "DataType": "text"}}

    def _record(self, model: Any, **_: Any) -> None:
        self.calls.add(f"{model.service_model.signing_name}:{model.name}")

    def _capture(self, params: dict[str, Any], **_: Any) -> None:
        self.fleet_calls.append(copy.deepcopy(params))

    def instances(self, filters: Mapping[str, str]) -> list[dict[str, Any]]:
        f = [{"Name": k, "Values": [v]} for k, v in filters.items()]
        out = []
        for r in self.ec2.describe_instances(Filters=f)["Reservations"]:
            out += r["Instances"]
        return out

    def queue_counts(self) -> tuple[int, int]:
        a = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["All"])["Attributes"]
        return int(a["ApproximateNumberOfMessages"]), int(a["ApproximateNumberOfMessagesNotVisible"])


@pytest.fixture
def world() -> Iterator[World]:
    with mock_aws():
        yield World(boto3.Session(region_name=REGION))


def nodeclass(**overrides: Any) -> dict[str, Any]:
    """An EC2NodeClass as model-field values (console.fleet.models.EC2NodeClass.field_values())."""
    base: dict[str, Any] = {
        "name": "default",
        "ami_family": "",
        "ami_selector_terms": [{"alias": "al2023@latest"}],
        "subnet_selector_terms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
        "security_group_selector_terms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
        "role": "",
        "instance_profile": "KarpenterNodeInstanceProfile-test",
        "tags": {"team": "payments", "env": "test"},
        "block_device_mappings": [],
        "kubelet": {"maxPods": 58},
        "metadata_options": {},
        "user_data": "",
    }
    base.update(overrides)
    return base


def opt(instance_type: str, zone: str = "us-east-1a", price: float = 0.05, capacity: str = "spot") -> LaunchOption:
    return LaunchOption(instance_type=instance_type, zone=zone, capacity_type=capacity, price=price)  # type: ignore[arg-type]


OPTIONS = (opt("m5.large", "us-east-1a", 0.030), opt("m5.large", "us-east-1b", 0.031),
           opt("c5.large", "us-east-1a", 0.033), opt("m6i.large", "us-east-1c", 0.036))


def request(name: str = "default-abc12", options: Any = OPTIONS, **kwargs: Any) -> LaunchRequest:
    kwargs.setdefault("nodeclass", nodeclass())
    return LaunchRequest(nodeclaim=name, nodepool="default", cluster=CLUSTER, options=tuple(options), **kwargs)


# --- fault injection through botocore hooks ------------------------------------------------------

def fleet_errors(world: World, errors_for: Callable[[list[dict[str, Any]]], list[dict[str, Any]] | None]) -> Callable[..., Any]:
    """A before-call hook answering CreateFleet itself with `Errors` (what AWS returns when pools lack
    capacity) whenever errors_for(overrides) returns a list; None lets moto launch as usual."""

    def hook(**_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        overrides = world.fleet_calls[-1]["LaunchTemplateConfigs"][0]["Overrides"]
        errors = errors_for(overrides)
        if errors is None:
            return None
        return AWSResponse("https://ec2.amazonaws.com/", 200, {}, None), {
            "FleetId": "fleet-00000000-0000-0000-0000-000000000000", "Instances": [], "Errors": errors}

    return hook


def ice(override: Mapping[str, Any], code: str = "InsufficientInstanceCapacity", lifecycle: str = "spot") -> dict[str, Any]:
    return {"LaunchTemplateAndOverrides": {
                "LaunchTemplateSpecification": {"LaunchTemplateName": "x", "Version": "1"},
                "Overrides": {"InstanceType": override["InstanceType"], "SubnetId": override["SubnetId"]}},
            "Lifecycle": lifecycle, "ErrorCode": code,
            "ErrorMessage": f"We currently do not have sufficient {override['InstanceType']} capacity in the "
                            "Availability Zone you requested."}


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.body


THROTTLED = (b'<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>RequestLimitExceeded</Code>'
             b"<Message>Request limit exceeded.</Message></Error></Errors><RequestID>r-1</RequestID></Response>")


def throttle(times: int) -> tuple[Callable[..., Any], list[int]]:
    """A before-send hook: the first `times` CreateFleet requests get HTTP 503 RequestLimitExceeded on
    the wire, so botocore's retry handler sees them as AWS throttling."""
    sent: list[int] = []

    def hook(request: Any, **_: Any) -> AWSResponse | None:
        sent.append(1)
        if len(sent) <= times:
            # botocore calls every before-send handler (the first response wins), so moto's in-process
            # stub would still run this request; an address it does not serve makes it step aside.
            request.url = "https://throttled.invalid/"
            return AWSResponse(request.url, 503, {"x-amzn-requestid": "r-1"}, _Raw(THROTTLED))
        return None

    return hook, sent


@pytest.fixture
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Record botocore's computed backoff delays but sleep (almost) nothing, to keep the suite quick."""
    delays: list[float] = []
    original = ExponentialBackoff.delay_amount

    def delay(self: ExponentialBackoff, context: Any) -> float:
        delays.append(original(self, context))
        return 0.001

    monkeypatch.setattr(ExponentialBackoff, "delay_amount", delay)
    return delays


# --- launch ---------------------------------------------------------------------------------------

def test_launch_creates_template_fleet_and_tags(world: World) -> None:
    info = ClusterInfo(name=CLUSTER, endpoint="https://ABC.gr7.us-east-1.eks.amazonaws.com",
                       certificate_authority="Q0EK", service_cidr="172.20.0.0/16")
    provider = world.provider(cluster=info)
    instance = provider.launch(request())

    assert (instance.instance_type, instance.zone, instance.capacity_type) == ("m5.large", "us-east-1a", "spot")
    assert instance.price == 0.030
    assert instance.provider_id == f"aws:///us-east-1a/{instance.instance_id}"
    [raw] = world.instances({"instance-id": instance.instance_id})
    tags = {t["Key"]: t["Value"] for t in raw["Tags"]}
    assert tags[TAG_NODEPOOL] == "default" and tags[TAG_NODECLAIM] == "default-abc12"
    assert tags[TAG_CLUSTER] == CLUSTER and tags[TAG_NODECLASS] == "default"
    assert tags["team"] == "payments" and tags[f"kubernetes.io/cluster/{CLUSTER}"] == "owned"
    assert raw["InstanceLifecycle"] == "spot" and raw["ImageId"] == X86_AMI
    assert raw["SubnetId"] == world.subnets["us-east-1a"]

    [fleet] = world.fleet_calls
    assert fleet["Type"] == "instant"
    assert fleet["TargetCapacitySpecification"] == {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": "spot"}
    assert fleet["SpotOptions"] == {"AllocationStrategy": "price-capacity-optimized"}
    assert re.fullmatch(r"lm-[0-9a-f]{40}", fleet["ClientToken"])
    overrides = fleet["LaunchTemplateConfigs"][0]["Overrides"]
    assert [(o["InstanceType"], o["SubnetId"]) for o in overrides] == [
        ("m5.large", world.subnets["us-east-1a"]), ("m5.large", world.subnets["us-east-1b"]),
        ("c5.large", world.subnets["us-east-1a"]), ("m6i.large", world.subnets["us-east-1c"])]
    assert {s["ResourceType"] for s in fleet["TagSpecifications"]} == {"instance", "volume"}

    # The launch template: one per NodeClass, with everything the NodeClass says.
    lt_name = fleet["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"]["LaunchTemplateName"]
    assert lt_name == "loadmaster/test/default"
    [version] = world.ec2.describe_launch_template_versions(LaunchTemplateName=lt_name)["LaunchTemplateVersions"]
    data = version["LaunchTemplateData"]
    assert data["SecurityGroupIds"] == [world.sg]
    assert data["IamInstanceProfile"] == {"Name": "KarpenterNodeInstanceProfile-test"}
    assert data["MetadataOptions"] == {"HttpEndpoint": "enabled", "HttpProtocolIpv6": "disabled",
                                       "HttpPutResponseHopLimit": 1, "HttpTokens": "required"}
    assert data["BlockDeviceMappings"] == [{"DeviceName": "/dev/xvda", "Ebs": {
        "DeleteOnTermination": True, "VolumeSize": 20, "VolumeType": "gp3", "Encrypted": True}}]
    user_data = base64.b64decode(data["UserData"]).decode()
    assert "application/node.eks.aws" in user_data and '"apiServerEndpoint": "https://ABC' in user_data
    assert "--register-with-taints=karpenter.sh/unregistered=:NoExecute" in user_data
    assert '"maxPods": 58' in user_data and '"cidr": "172.20.0.0/16"' in user_data


def test_overrides_are_the_60_cheapest_one_per_type_and_zone(world: World) -> None:
    families = ["m5", "m5a", "m6i", "c5", "c5a", "c6i", "r5", "r6i", "m7i", "c7i", "t3", "m5n"]
    zones = ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1f"]
    options = [opt(f"{f}.xlarge", z, 0.05 + 0.001 * i + 0.0001 * j) for i, f in enumerate(families) for j, z in enumerate(zones)]
    options += options[:5]                                # duplicates are launched once
    options.append(opt("m5.xlarge", "us-east-1a", 0.2, capacity="on-demand"))  # other capacity type: not mixed in
    world.provider().launch(request(options=reversed(options)))
    overrides = world.fleet_calls[-1]["LaunchTemplateConfigs"][0]["Overrides"]
    assert len(overrides) == MAX_OVERRIDES == len({(o["InstanceType"], o["SubnetId"]) for o in overrides})
    zone_of = {s: z for z, s in world.subnets.items()}
    spot = sorted({o for o in options if o.capacity_type == "spot"}, key=lambda o: o.price)[:60]
    assert [(o["InstanceType"], zone_of[o["SubnetId"]]) for o in overrides] == [(o.instance_type, o.zone) for o in spot]


def test_on_demand_uses_lowest_price_and_arm_types_get_the_arm_ami(world: World) -> None:
    options = [opt("m7g.large", "us-east-1b", 0.08, "on-demand"), opt("m7i.large", "us-east-1b", 0.10, "on-demand")]
    instance = world.provider().launch(request(options=options))
    fleet = world.fleet_calls[-1]
    assert fleet["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"} and "SpotOptions" not in fleet
    assert fleet["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"
    assert [o["ImageId"] for o in fleet["LaunchTemplateConfigs"][0]["Overrides"]] == [ARM_AMI, X86_AMI]
    [raw] = world.instances({"instance-id": instance.instance_id})
    assert "InstanceLifecycle" not in raw and raw["ImageId"] == ARM_AMI
    assert (instance.capacity_type, instance.instance_type, instance.price) == ("on-demand", "m7g.large", 0.08)


def test_launch_template_is_created_once_and_versioned_on_change(world: World) -> None:
    nc = nodeclass()
    world.provider().ensure_launch_template(nc, zones=["us-east-1a"])
    world.provider().ensure_launch_template(nc, zones=["us-east-1a"])   # fresh provider: no cache
    versions = world.ec2.describe_launch_template_versions(LaunchTemplateName="loadmaster/test/default")
    assert len(versions["LaunchTemplateVersions"]) == 1
    assert "ec2:CreateLaunchTemplateVersion" not in world.calls

    changed = nodeclass(metadata_options={"httpPutResponseHopLimit": 2}, tags={"team": "search"})
    t = world.provider().ensure_launch_template(changed, zones=["us-east-1a"])
    assert t.version == "2"
    again = world.provider().ensure_launch_template(changed, zones=["us-east-1a"])
    assert again.version == "2"
    latest = world.ec2.describe_launch_template_versions(LaunchTemplateName="loadmaster/test/default",
                                                         Versions=["2"])["LaunchTemplateVersions"][0]
    assert latest["LaunchTemplateData"]["MetadataOptions"]["HttpPutResponseHopLimit"] == 2
    instance = world.provider().launch(request(nodeclass=changed))
    assert world.fleet_calls[-1]["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"]["Version"] == "2"
    [raw] = world.instances({"instance-id": instance.instance_id})
    assert {t["Key"]: t["Value"] for t in raw["Tags"]}["team"] == "search"

    provider = world.provider()
    assert provider.delete_launch_template("default") is True
    # AWS says InvalidLaunchTemplateName.NotFoundException for a missing template (moto says
    # MissingParameter, so the answer is injected).
    def not_found(**_: Any) -> None:
        raise ClientError({"Error": {"Code": "InvalidLaunchTemplateName.NotFoundException", "Message": "gone"}},
                          "DeleteLaunchTemplate")

    provider._ec2.meta.events.register("before-call.ec2.DeleteLaunchTemplate", not_found)
    assert provider.delete_launch_template("default") is False


def test_subnets_follow_the_options_zones_and_missing_subnets_fail_clearly(world: World) -> None:
    provider = world.provider()
    assert provider.resolve_subnets(nodeclass(), ["us-east-1b", "us-east-1c"]) == {
        "us-east-1b": world.subnets["us-east-1b"], "us-east-1c": world.subnets["us-east-1c"]}
    only_a = nodeclass(subnet_selector_terms=[{"id": world.subnets["us-east-1a"]}])
    with pytest.raises(LaunchError, match="no subnet") as e:
        provider.launch(request(options=[opt("m5.large", "us-east-1b")], nodeclass=only_a))
    assert not e.value.retryable and not world.fleet_calls
    none = nodeclass(security_group_selector_terms=[{"tags": {"nope": "*"}}])
    with pytest.raises(LaunchError, match="security group"):
        provider.launch(request(nodeclass=none))


def test_ami_selector_terms_by_id_name_tags_and_ssm_parameter(world: World) -> None:
    provider = world.provider()
    assert provider.resolve_amis(nodeclass(ami_family="AL2023", ami_selector_terms=[{"id": ARM_AMI}])) == {"arm64": ARM_AMI}
    world.ssm.put_parameter(Name="/my/ami", Value=X86_AMI, Type="String")
    assert provider.resolve_amis(nodeclass(ami_family="Custom", ami_selector_terms=[{"ssmParameter": "/my/ami"}])) == {
        "x86_64": X86_AMI}
    by_name = provider.resolve_amis(nodeclass(ami_family="AL2023", ami_selector_terms=[
        {"name": "al2022-ami-2022.0.20220728.1-kernel-5.15-*", "owner": "amazon"}]))
    assert by_name["arm64"] == ARM_AMI and by_name["x86_64"].startswith("ami-")
    world.ec2.create_tags(Resources=[X86_AMI], Tags=[{"Key": "golden", "Value": "yes"}])
    assert provider.resolve_amis(nodeclass(ami_family="AL2023", ami_selector_terms=[{"tags": {"golden": "yes"}}])) == {
        "x86_64": X86_AMI}
    # Bottlerocket alias: the public parameter path; an architecture without a parameter is skipped.
    world.public_parameters[f"/aws/service/bottlerocket/aws-k8s-{K8S}/arm64/1.20.0/image_id"] = ARM_AMI
    assert provider.resolve_amis(nodeclass(ami_selector_terms=[{"alias": "bottlerocket@v1.20.0"}])) == {"arm64": ARM_AMI}
    # Only an arm64 AMI: x86 options cannot launch and are skipped; nothing at all is a clear error.
    arm_only = nodeclass(ami_family="AL2023", ami_selector_terms=[{"id": ARM_AMI}])
    with pytest.raises(LaunchError, match="no AMI for the architecture of m5.large"):
        provider.launch(request(options=[opt("m5.large")], nodeclass=arm_only))
    with pytest.raises(LaunchError, match="Kubernetes version"):
        world.provider(kubernetes_version=None).launch(request())


def test_falls_back_to_the_other_capacity_type_when_the_cheapest_cannot_launch_here(world: World) -> None:
    x86_only = nodeclass(ami_family="AL2023", ami_selector_terms=[{"id": X86_AMI}])
    options = [opt("m7g.large", "us-east-1a", 0.02, "spot"), opt("m5.large", "us-east-1a", 0.09, "on-demand")]
    instance = world.provider().launch(request(options=options, nodeclass=x86_only))
    assert (instance.instance_type, instance.capacity_type) == ("m5.large", "on-demand")
    assert world.fleet_calls[-1]["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"


# --- capacity errors, throttling, idempotency ------------------------------------------------------

def test_ice_on_the_cheapest_offering_marks_it_and_the_retry_takes_the_next(world: World) -> None:
    provider = world.provider()
    cheapest = OPTIONS[0]
    provider._ec2.meta.events.register("before-call.ec2.CreateFleet", fleet_errors(
        world, lambda ovs: [ice(ovs[0])] if (ovs[0]["InstanceType"], ovs[0]["SubnetId"]) ==
        (cheapest.instance_type, world.subnets[cheapest.zone]) else None))

    with pytest.raises(LaunchError) as e:
        provider.launch(request())
    assert e.value.unavailable == [cheapest] and not e.value.retryable
    assert "InsufficientInstanceCapacity" in str(e.value)

    marked: list[LaunchOption] = []
    instance = launch_with_fallback(provider, request("default-xyz99"), marked.extend)
    assert marked == [cheapest]
    assert (instance.instance_type, instance.zone, instance.price) == ("m5.large", "us-east-1b", 0.031)
    retry = world.fleet_calls[-1]["LaunchTemplateConfigs"][0]["Overrides"]
    assert len(retry) == len(OPTIONS) - 1
    # A new request (fewer overrides) has a new ClientToken: reusing one is IdempotentParameterMismatch.
    assert world.fleet_calls[-1]["ClientToken"] != world.fleet_calls[-2]["ClientToken"]


def test_capacity_errors_everywhere_exhaust_the_options(world: World) -> None:
    provider = world.provider()
    provider._ec2.meta.events.register("before-call.ec2.CreateFleet", fleet_errors(
        world, lambda ovs: [ice(o, code) for o, code in zip(ovs, ["InsufficientInstanceCapacity", "UnfulfillableCapacity",
                                                                  "InsufficientCapacity", "InsufficientInstanceCapacity"],
                                                             strict=False)]))
    marked: list[LaunchOption] = []
    with pytest.raises(LaunchError, match="no offering left") as e:
        launch_with_fallback(provider, request(), marked.extend)
    assert set(marked) == set(OPTIONS) == set(e.value.unavailable)
    assert world.instances({f"tag:{TAG_NODECLAIM}": "default-abc12"}) == []


def test_account_wide_spot_limit_marks_every_spot_option(world: World) -> None:
    provider = world.provider()
    provider._ec2.meta.events.register("before-call.ec2.CreateFleet", fleet_errors(world, lambda ovs: [{
        "Lifecycle": "spot", "ErrorCode": "MaxSpotInstanceCountExceeded", "ErrorMessage": "Max spot instance count exceeded"}]))
    with pytest.raises(LaunchError) as e:
        provider.launch(request())
    assert set(e.value.unavailable) == set(OPTIONS)


def test_other_fleet_errors_are_not_capacity(world: World) -> None:
    provider = world.provider()
    provider._ec2.meta.events.register("before-call.ec2.CreateFleet", fleet_errors(world, lambda ovs: [{
        **ice(ovs[0]), "ErrorCode": "InvalidParameterValue", "ErrorMessage": "bad AMI"}]))
    with pytest.raises(LaunchError, match="InvalidParameterValue.*bad AMI") as e:
        launch_with_fallback(provider, request(), lambda _: pytest.fail("nothing is unavailable"))
    assert e.value.unavailable == [] and not e.value.retryable


def test_throttling_is_retried_with_backoff(world: World, fast_backoff: list[float]) -> None:
    provider = world.provider(max_attempts=4)
    hook, sent = throttle(times=2)
    provider._ec2.meta.events.register_first("before-send.ec2.CreateFleet", hook)
    instance = provider.launch(request())
    assert len(sent) == 3 and len(fast_backoff) == 2          # two 503s, each followed by a backoff
    assert len(world.instances({f"tag:{TAG_NODECLAIM}": "default-abc12"})) == 1
    assert instance.instance_type == "m5.large"


def test_persistent_throttling_is_a_retryable_launch_error(world: World, fast_backoff: list[float]) -> None:
    provider = world.provider(max_attempts=3)
    hook, sent = throttle(times=100)
    provider._ec2.meta.events.register_first("before-send.ec2.CreateFleet", hook)
    with pytest.raises(LaunchError, match="RequestLimitExceeded") as e:
        provider.launch(request())
    assert e.value.retryable and e.value.unavailable == []
    assert len(sent) == 3 and len(fast_backoff) == 2

    # A throttle raised before the request is sent (no botocore retry) surfaces the same way.
    def raise_throttle(**_: Any) -> None:
        raise ClientError({"Error": {"Code": "Throttling", "Message": "Rate exceeded"}}, "DescribeInstances")

    other = world.provider()
    other._ec2.meta.events.register("before-call.ec2.DescribeInstances", raise_throttle)
    with pytest.raises(LaunchError) as e2:
        other.launch(request())
    assert e2.value.retryable


def test_relaunching_the_same_nodeclaim_adopts_the_instance(world: World) -> None:
    first = world.provider().launch(request())
    # A worker that died after CreateFleet: the next one (fresh process) launches the same claim again.
    second = world.provider().launch(request())
    assert second.instance_id == first.instance_id and second.price == 0.030
    assert len(world.fleet_calls) == 1
    assert len(world.instances({f"tag:{TAG_NODECLAIM}": "default-abc12"})) == 1
    # Even with other options now (the catalog changed meanwhile) it is still the same instance.
    third = world.provider().launch(request(options=OPTIONS[2:]))
    assert third.instance_id == first.instance_id and third.price is None
    assert world.provider().find_claimed("default-abc12") == replace(second, price=None)


def test_token_reused_by_another_worker_adopts_or_retries(world: World) -> None:
    provider = world.provider()

    def mismatch(**_: Any) -> None:
        raise ClientError({"Error": {"Code": "IdempotentParameterMismatch", "Message": "token reused"}}, "CreateFleet")

    provider._ec2.meta.events.register("before-call.ec2.CreateFleet", mismatch)
    with pytest.raises(LaunchError) as e:
        provider.launch(request())
    assert e.value.retryable


def test_a_template_deleted_behind_the_cache_is_recreated_on_retry(world: World) -> None:
    provider = world.provider()
    provider.launch(request("c-1"))
    world.ec2.delete_launch_template(LaunchTemplateName="loadmaster/test/default")
    with pytest.raises(LaunchError) as e:          # moto raises; AWS may also report it in Errors
        provider.launch(request("c-2"))
    assert e.value.retryable
    assert provider.launch(request("c-2")).instance_type == "m5.large"


def test_client_token_is_stable_per_nodeclaim_and_request(world: World) -> None:
    provider = world.provider()
    provider.launch(request("a-1"))
    provider.terminate([i["InstanceId"] for i in world.instances({f"tag:{TAG_NODECLAIM}": "a-1"})])
    provider.launch(request("a-1"))                     # terminated, so not adopted: same request again
    provider.launch(request("a-2"))
    tokens = [c["ClientToken"] for c in world.fleet_calls]
    assert tokens[0] == tokens[1] != tokens[2]


# --- terminate, describe, garbage collection -------------------------------------------------------

def test_list_instances_for_gc_is_paginated_and_skips_terminated(world: World) -> None:
    provider = world.provider()
    provider.describe_page_size = 5
    ours = [provider.launch(request(f"claim-{i}")).instance_id for i in range(7)]
    other_cluster = world.ec2.run_instances(ImageId=X86_AMI, MinCount=1, MaxCount=1, TagSpecifications=[
        {"ResourceType": "instance", "Tags": [{"Key": TAG_CLUSTER, "Value": "other"}]}])["Instances"][0]["InstanceId"]
    world.ec2.run_instances(ImageId=X86_AMI, MinCount=1, MaxCount=1)     # untagged: not ours
    provider.terminate([ours[0]])

    pages: list[int] = []
    provider._ec2.meta.events.register("after-call.ec2.DescribeInstances", lambda **kw: pages.append(1))
    listed = provider.list_instances(CLUSTER)
    assert sorted(i.instance_id for i in listed) == sorted(ours[1:])
    assert len(pages) >= 2
    assert all(i.state in ("pending", "running") and i.tags[TAG_CLUSTER] == CLUSTER for i in listed)
    assert {i.tags[TAG_NODECLAIM] for i in listed} == {f"claim-{i}" for i in range(1, 7)}
    assert [i.instance_id for i in provider.list_instances("other")] == [other_cluster]


def test_terminate_ignores_instances_already_gone(world: World) -> None:
    provider = world.provider()
    a = provider.launch(request("t-1")).instance_id
    b = provider.launch(request("t-2")).instance_id
    provider.terminate([a, "i-0123456789abcdef0", b, "i-0fedcba9876543210"])
    states = {i.instance_id: i.state for i in provider.describe([a, b, "i-0123456789abcdef0"])}
    assert states == {a: "terminated", b: "terminated"}
    provider.terminate([a])                              # terminating a terminated instance is fine
    provider.terminate([])
    assert provider.describe([]) == []


def test_describe_converts_instances(world: World) -> None:
    provider = world.provider()
    launched = provider.launch(request())
    [d] = provider.describe([launched.instance_id])
    assert (d.instance_type, d.zone, d.capacity_type) == ("m5.large", "us-east-1a", "spot")
    assert d.state in ("pending", "running") and d.launch_time is not None
    assert d.provider_id == launched.provider_id


# --- the interruption queue -----------------------------------------------------------------------

def eventbridge(detail_type: str, detail: dict[str, Any], source: str = "aws.ec2",
                resources: list[str] | None = None) -> str:
    """An event exactly as EventBridge delivers it to an SQS target."""
    return json.dumps({
        "version": "0", "id": "7bf73129-1428-4cd3-a780-95db273d1602", "detail-type": detail_type,
        "source": source, "account": "123456789012", "time": "2026-11-30T03:00:00Z", "region": REGION,
        "resources": resources if resources is not None else ["arn:aws:ec2:us-east-1:123456789012:instance/i-1234567890abcdef0"],
        "detail": detail})


SPOT = eventbridge("EC2 Spot Instance Interruption Warning",
                   {"instance-id": "i-1234567890abcdef0", "instance-action": "terminate"})
REBALANCE = eventbridge("EC2 Instance Rebalance Recommendation", {"instance-id": "i-0aaaaaaaaaaaaaaa1"})
STOPPING = eventbridge("EC2 Instance State-change Notification", {"instance-id": "i-0bbbbbbbbbbbbbbb2", "state": "stopping"})
RUNNING = eventbridge("EC2 Instance State-change Notification", {"instance-id": "i-0bbbbbbbbbbbbbbb2", "state": "running"})
HEALTH = eventbridge("AWS Health Event", {
    "eventArn": "arn:aws:health:us-east-1::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED_1",
    "service": "EC2", "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED", "eventTypeCategory": "scheduledChange",
    "startTime": "Wed, 09 Dec 2026 07:00:00 GMT", "endTime": "Wed, 09 Dec 2026 07:00:00 GMT",
    "eventDescription": [{"language": "en_US", "latestDescription": "EC2 has detected degradation ..."}],
    "affectedEntities": [{"entityValue": "i-0ccccccccccccccc3"}, {"entityValue": "i-0ddddddddddddddd4"}]},
    source="aws.health", resources=["i-0ccccccccccccccc3", "i-0ddddddddddddddd4"])


def test_poll_parses_each_event_type_and_ack_deletes(world: World) -> None:
    for body in (SPOT, REBALANCE, STOPPING, HEALTH):
        world.sqs.send_message(QueueUrl=world.queue_url, MessageBody=body)
    provider = world.provider()
    events = provider.poll_events(max_events=20)
    got = sorted((e.kind, e.instance_id) for e in events)
    assert got == [("rebalance", "i-0aaaaaaaaaaaaaaa1"), ("scheduled_change", "i-0ccccccccccccccc3"),
                   ("scheduled_change", "i-0ddddddddddddddd4"), ("spot_interruption", "i-1234567890abcdef0"),
                   ("state_change", "i-0bbbbbbbbbbbbbbb2")]
    spot = next(e for e in events if e.kind == "spot_interruption")
    assert spot.time == datetime(2026, 11, 30, 3, 0, tzinfo=UTC)
    assert spot.detail["instance-action"] == "terminate"
    assert spot.detail["deadline"] == datetime(2026, 11, 30, 3, 2, tzinfo=UTC)
    assert next(e for e in events if e.kind == "state_change").detail["state"] == "stopping"
    health = [e for e in events if e.kind == "scheduled_change"]
    assert health[0].detail["eventTypeCode"] == "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"
    assert health[0].receipt == health[1].receipt

    assert world.queue_counts() == (0, 4)
    for e in events:
        if e.kind != "scheduled_change":
            provider.ack(e)
    assert world.queue_counts() == (0, 1)
    provider.ack(health[0])                    # the Health message still names an unhandled instance
    assert world.queue_counts() == (0, 1)
    provider.ack(health[1])
    assert world.queue_counts() == (0, 0)


def test_malformed_and_irrelevant_messages_are_dropped_without_crashing(world: World, caplog: pytest.LogCaptureFixture) -> None:
    junk = ["not json at all", "[1, 2]", json.dumps({"detail-type": "EC2 Spot Instance Interruption Warning"}),
            eventbridge("EC2 Spot Instance Interruption Warning", {"instance-id": "not-an-id"}),
            eventbridge("EC2 Spot Instance Interruption Warning", {"instance-action": "terminate"}),
            json.dumps({**json.loads(SPOT), "time": "yesterday"}),
            json.dumps({"Type": "Notification", "Message": "{broken"})]
    irrelevant = [RUNNING, eventbridge("EC2 AMI State Change", {"ImageId": "ami-1"}),
                  eventbridge("AWS Health Event", {"service": "RDS", "eventTypeCategory": "scheduledChange",
                                                   "affectedEntities": [{"entityValue": "db-1"}]}, source="aws.health")]
    sns_wrapped = json.dumps({"Type": "Notification", "MessageId": "m-1", "TopicArn": "arn:aws:sns:us-east-1:1:t",
                              "Message": REBALANCE})
    for body in [*junk, *irrelevant, SPOT, sns_wrapped]:
        world.sqs.send_message(QueueUrl=world.queue_url, MessageBody=body)
    provider = world.provider()
    with caplog.at_level(logging.WARNING, logger="console.backends.aws"):
        events = provider.poll_events(max_events=50)
    assert sorted(e.kind for e in events) == ["rebalance", "spot_interruption"]
    assert len([r for r in caplog.records if "unparseable" in r.getMessage()]) == len(junk)
    assert world.queue_counts() == (0, 2)             # junk and irrelevant ones are already deleted
    for e in events:
        provider.ack(e)
    assert world.queue_counts() == (0, 0)
    assert provider.poll_events() == []
    assert world.provider(queue_url=None).poll_events() == []


# --- pieces without AWS ---------------------------------------------------------------------------

def test_nodeclass_conversions() -> None:
    assert [aws.volume_size_gib(s) for s in ("100Gi", "100G", "1Ti", "1T")] == [100, 94, 1024, 932]
    with pytest.raises(ValueError):
        aws.volume_size_gib("100Mi")
    bdm = aws.block_device_mappings(nodeclass(block_device_mappings=[{
        "deviceName": "/dev/xvdb", "rootVolume": True,
        "ebs": {"volumeSize": "200Gi", "volumeType": "io2", "iops": 4000, "encrypted": True, "kmsKeyID": "arn:kms",
                "deleteOnTermination": False, "snapshotID": "snap-1"}}]))
    assert bdm == [{"DeviceName": "/dev/xvdb", "Ebs": {"DeleteOnTermination": False, "VolumeSize": 200, "VolumeType": "io2",
                                                       "Iops": 4000, "Encrypted": True, "KmsKeyId": "arn:kms",
                                                       "SnapshotId": "snap-1"}}]
    assert [b["Ebs"]["VolumeSize"] for b in aws.block_device_mappings(nodeclass(ami_selector_terms=[{"alias": "bottlerocket@latest"}]))] == [4, 20]
    assert aws.instance_profile_for(nodeclass(instance_profile="", role="KarpenterNodeRole-test")) == "KarpenterNodeRole-test"
    assert aws.instance_profile_for({"role": "arn:aws:iam::1:role/path/NodeRole"}) == "NodeRole"
    assert aws.instance_profile_for({"instanceProfile": "Camel"}) == "Camel"     # the CRD's spelling works too
    assert aws.metadata_options({"metadata_options": {"httpTokens": "optional"}})["HttpTokens"] == "optional"
    assert aws.launch_template_name("prod east", "gpu_nodes") == "loadmaster/prod-east/gpu_nodes"
    arch = aws.default_architecture(REGION)
    assert [arch(t) for t in ("m7g.large", "c6gn.xlarge", "a1.large", "m5.large", "g5.xlarge", "x9zz.large")] == [
        "arm64", "arm64", "arm64", "x86_64", "x86_64", "x86_64"]
    assert aws.default_architecture("nowhere-1")("r8gd.large") == "arm64"


def test_network_monitoring_and_instance_store_options(world: World) -> None:
    nc = nodeclass(associate_public_ip_address=False, detailed_monitoring=True, instance_store_policy="RAID0")
    info = ClusterInfo(name=CLUSTER, endpoint="https://e", certificate_authority="Q0E=")
    template = world.provider(cluster=info).ensure_launch_template(nc, zones=["us-east-1a"])
    [version] = world.ec2.describe_launch_template_versions(LaunchTemplateName=template.name)["LaunchTemplateVersions"]
    data = version["LaunchTemplateData"]
    assert data["NetworkInterfaces"] == [{"AssociatePublicIpAddress": False, "DeviceIndex": 0, "Groups": [world.sg]}]
    assert "SecurityGroupIds" not in data and data["Monitoring"] == {"Enabled": True}
    assert '"localStorage": {\n        "strategy": "RAID0"' in base64.b64decode(data["UserData"]).decode()
    assert world.provider(cluster=info).launch(request(nodeclass=nc)).instance_type == "m5.large"


def _placement_groups(provider: AWSCloudProvider, groups: Mapping[str, str]) -> AWSCloudProvider:
    """Answer DescribePlacementGroups from `groups` (name -> id): moto 5.2 does not implement placement groups."""
    def answer(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        names = [v for k, v in params["body"].items() if k.startswith("GroupName.")]
        found = [{"GroupName": n, "GroupId": groups[n], "Strategy": "cluster", "State": "available"}
                 for n in names if n in groups]
        return AWSResponse("https://ec2.amazonaws.com/", 200, {}, None), {"PlacementGroups": found}

    provider._ec2.meta.events.register("before-call.ec2.DescribePlacementGroups", answer)
    return provider


def test_launch_fields_go_into_the_launch_template_as_the_provider_sends_them(world: World) -> None:
    info = ClusterInfo(name=CLUSTER, endpoint="https://e", certificate_authority="Q0E=")
    provider = _placement_groups(world.provider(cluster=info), {"training": "pg-0123456789abcdef0"})
    nc = nodeclass(connection_tracking={"tcpEstablishedTimeout": 7200, "udpTimeout": 30},
                   cpu_options={"nestedVirtualization": "enabled"}, associate_public_ip_address=False,
                   network_interfaces=[{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
                                       {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"}],
                   placement_group_selector={"name": "training"})
    template = provider.ensure_launch_template(nc, zones=["us-east-1a"])
    [version] = world.ec2.describe_launch_template_versions(LaunchTemplateName=template.name)["LaunchTemplateVersions"]
    data = version["LaunchTemplateData"]
    tracking = {"TcpEstablishedTimeout": 7200, "UdpTimeout": 30}
    # EC2 refuses a public address and connection tracking on an efa-only interface; the groups go on each.
    assert data["NetworkInterfaces"] == [
        {"NetworkCardIndex": 0, "DeviceIndex": 0, "InterfaceType": "interface", "Groups": [world.sg],
         "AssociatePublicIpAddress": False, "ConnectionTrackingSpecification": tracking},
        {"NetworkCardIndex": 1, "DeviceIndex": 0, "InterfaceType": "efa-only", "Groups": [world.sg]}]
    assert "SecurityGroupIds" not in data
    assert data["CpuOptions"] == {"NestedVirtualization": "enabled"}
    assert data["Placement"] == {"GroupId": "pg-0123456789abcdef0"}
    assert provider.launch(request(nodeclass=nc)).instance_type == "m5.large"


def test_connection_tracking_alone_gives_one_primary_interface_and_a_placement_id_is_used_as_is(world: World) -> None:
    info = ClusterInfo(name=CLUSTER, endpoint="https://e", certificate_authority="Q0E=")
    nc = nodeclass(connection_tracking={"udpStreamTimeout": 120}, placement_group_selector={"id": "pg-0abc"})
    template = world.provider(cluster=info).ensure_launch_template(nc, zones=["us-east-1a"])
    [version] = world.ec2.describe_launch_template_versions(LaunchTemplateName=template.name)["LaunchTemplateVersions"]
    data = version["LaunchTemplateData"]
    assert data["NetworkInterfaces"] == [{"DeviceIndex": 0, "Groups": [world.sg],
                                          "ConnectionTrackingSpecification": {"UdpStreamTimeout": 120}}]
    assert data["Placement"] == {"GroupId": "pg-0abc"} and "CpuOptions" not in data


def test_a_placement_group_name_that_matches_nothing_fails_the_launch_naming_it(world: World) -> None:
    info = ClusterInfo(name=CLUSTER, endpoint="https://e", certificate_authority="Q0E=")
    with pytest.raises(LaunchError, match="placementGroupSelector name 'missing' matches no placement group"):
        _placement_groups(world.provider(cluster=info), {"training": "pg-1"}).ensure_launch_template(
            nodeclass(placement_group_selector={"name": "missing"}), zones=["us-east-1a"])


def test_user_data_per_family() -> None:
    info = ClusterInfo(name="c", endpoint="https://e", certificate_authority="Q0E=")
    assert aws.user_data_for(nodeclass(user_data="#!/bin/bash\necho hi"), None) == "#!/bin/bash\necho hi"
    assert aws.user_data_for(nodeclass(ami_family="Custom", ami_selector_terms=[{"id": X86_AMI}], user_data="x"), info) == "x"
    mime_in = ('MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="BOUNDARY"\n\n--BOUNDARY\n'
               'Content-Type: text/x-shellscript; charset="us-ascii"\n\n#!/bin/bash\necho custom\n--BOUNDARY--\n')
    al2023 = aws.user_data_for(nodeclass(user_data=mime_in), info)
    assert al2023.count("--//\n") == 2 and "echo custom" in al2023 and al2023.endswith("--//--\n")
    assert al2023 == aws.user_data_for(nodeclass(user_data=mime_in), info)      # deterministic: stable template hash
    node_config = json.loads(al2023.split("application/node.eks.aws; charset=\"us-ascii\"\n\n", 1)[1].split("\n--//--")[0])
    assert node_config["spec"]["cluster"] == {"name": "c", "apiServerEndpoint": "https://e", "certificateAuthority": "Q0E=",
                                              "cidr": "10.100.0.0/16"}
    al2 = aws.user_data_for(nodeclass(ami_selector_terms=[{"alias": "al2@latest"}]), info)
    assert '/etc/eks/bootstrap.sh "c"' in al2 and "--max-pods=58" in al2 and "karpenter.sh/unregistered=:NoExecute" in al2
    br = aws.user_data_for(nodeclass(ami_selector_terms=[{"alias": "bottlerocket@latest"}],
                                     user_data='[settings.kubernetes]\nimage-gc-high-threshold-percent = 80\n'
                                               '[settings.host-containers.admin]\nenabled = true\n'), info)
    settings = tomllib.loads(br)["settings"]
    assert settings["kubernetes"]["cluster-name"] == "c" and settings["kubernetes"]["max-pods"] == 58
    assert settings["kubernetes"]["image-gc-high-threshold-percent"] == 80
    assert settings["kubernetes"]["node-taints"] == {"karpenter.sh/unregistered": ["NoExecute"]}
    assert settings["host-containers"]["admin"]["enabled"] is True


# --- IAM actions ----------------------------------------------------------------------------------

def test_iam_actions_list_matches_the_code_statically() -> None:
    """Every client method aws.py calls, mapped to its API operation, is exactly IAM_ACTIONS."""
    source = Path(aws.__file__).read_text()
    # the capacity reservation queries live in their own module, on the provider's EC2 client
    source += Path(aws.__file__).with_name("aws_reservations.py").read_text()
    methods = set(re.findall(r"self\._(ec2|ssm|sqs)\.(\w+)\(", source))
    methods |= {("ec2", m) for m in re.findall(r"get_paginator\(\"(\w+)\"\)", source)}
    methods = {(svc, m) for svc, m in methods if m not in ("get_paginator", "meta")}
    clients = {svc: boto3.client(svc, region_name=REGION) for svc in ("ec2", "ssm", "sqs")}
    found = {f"{svc}:{clients[svc].meta.method_to_api_mapping[m]}" for svc, m in methods}
    assert found == set(IAM_ACTIONS)
    assert not set(IMPLICIT_IAM_ACTIONS) & set(IAM_ACTIONS)
    assert aws.IAM_POLICY_ACTIONS == sorted(set(IAM_ACTIONS) | set(IMPLICIT_IAM_ACTIONS))


def test_iam_actions_list_matches_the_calls_made(world: World) -> None:
    """Every operation a full tour of the backend makes is in IAM_ACTIONS, and every listed one is made."""
    provider = world.provider()
    instance = provider.launch(request())                                           # alias (SSM), LT create, fleet
    provider.launch(request("other", nodeclass=nodeclass(tags={"team": "x"})))      # new template version
    provider.resolve_amis(nodeclass(ami_selector_terms=[{"id": X86_AMI}]))         # DescribeImages
    _placement_groups(provider, {"pg": "pg-1"}).ensure_launch_template(               # DescribePlacementGroups
        nodeclass(name="placed", placement_group_selector={"name": "pg"}))
    provider.describe([instance.instance_id])
    provider.list_instances(CLUSTER)
    provider.terminate([instance.instance_id])
    world.sqs.send_message(QueueUrl=world.queue_url, MessageBody=SPOT)
    world.sqs.send_message(QueueUrl=world.queue_url, MessageBody="junk")
    for e in provider.poll_events():
        provider.ack(e)
    provider.delete_launch_template("default")
    # moto has no DescribeCapacityReservations: answered by a hook (tests/backends/test_aws_reservations.py has
    # the Stubber-checked shapes)
    provider._ec2.meta.events.register("before-call.ec2.DescribeCapacityReservations",
                                       lambda **_: (AWSResponse("https://ec2.amazonaws.com/", 200, {}, None),
                                                    {"CapacityReservations": []}))
    provider.capacity_reservations([{"id": "cr-0123456789abcdef0"}])
    assert world.calls == set(IAM_ACTIONS)


# --- over HTTP ------------------------------------------------------------------------------------

@pytest.fixture
def moto_server() -> Iterator[str]:
    from moto.server import ThreadedMotoServer
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def test_end_to_end_against_threaded_moto_server(moto_server: str) -> None:
    world = World(boto3.Session(region_name=REGION), endpoint_url=moto_server)
    provider = world.provider()
    cheapest = OPTIONS[0]
    provider._ec2.meta.events.register("before-call.ec2.CreateFleet", fleet_errors(
        world, lambda ovs: [ice(ovs[0])] if ovs[0]["InstanceType"] == cheapest.instance_type
        and ovs[0]["SubnetId"] == world.subnets[cheapest.zone] else None))
    marked: list[LaunchOption] = []
    instance = launch_with_fallback(provider, request(), marked.extend)
    assert marked == [cheapest] and instance.zone == "us-east-1b"
    assert provider.launch(request()).instance_id == instance.instance_id       # adopted over HTTP too
    [listed] = provider.list_instances(CLUSTER)
    assert listed.instance_id == instance.instance_id and listed.tags[TAG_NODECLAIM] == "default-abc12"
    world.sqs.send_message(QueueUrl=world.queue_url, MessageBody=SPOT.replace("i-1234567890abcdef0", instance.instance_id))
    [event] = provider.poll_events()
    assert (event.kind, event.instance_id) == ("spot_interruption", instance.instance_id)
    provider.ack(event)
    provider.terminate([instance.instance_id, "i-0123456789abcdef0"])
    assert provider.list_instances(CLUSTER) == []
    assert world.queue_counts() == (0, 0)


def test_windows2025_alias_resolves_through_the_windows_server_2025_core_parameter(world: World) -> None:
    # Karpenter's provider reads Windows_Server-<year>-English-Core-EKS_Optimized-<k8s>; amd64 only.
    world.public_parameters[
        f"/aws/service/ami-windows-latest/Windows_Server-2025-English-Core-EKS_Optimized-{K8S}/image_id"] = X86_AMI
    provider = world.provider()
    assert provider.resolve_amis(nodeclass(ami_selector_terms=[{"alias": "windows2025@latest"}])) == {"x86_64": X86_AMI}
    # the path names the Kubernetes version, so without it the alias cannot resolve (Windows included)
    with pytest.raises(LaunchError, match="Kubernetes version"):
        world.provider(kubernetes_version=None).resolve_amis(nodeclass(ami_selector_terms=[{"alias": "windows2025@latest"}]))
