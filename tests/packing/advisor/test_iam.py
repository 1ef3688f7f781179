"""The IAM preflight against moto (in-process): moto answers DryRun, and with its IAM enforcement on
(set_initial_no_auth_action_count) refuses what the caller's policy does not allow."""

from __future__ import annotations

import json

import boto3
from moto import mock_aws
from moto.core import set_initial_no_auth_action_count

from packing.advisor.iam import EC2_DRY_RUN_CALLS, PermissionStatus, iam_findings, preflight

REGION = "us-east-1"


def _statuses(perms):  # type: ignore[no-untyped-def]
    return {p.action: p.status for p in perms}


@mock_aws
def test_every_ec2_call_is_checked_with_dry_run():
    session = boto3.Session(aws_access_key_id="a", aws_secret_access_key="b", region_name=REGION)
    perms = preflight(session, region=REGION)
    got = _statuses(perms)
    for call in ("CreateFleet", "RunInstances", "CreateLaunchTemplate", "CreateTags", "TerminateInstances"):
        assert got[f"ec2:{call}"] is PermissionStatus.ALLOWED
    assert {f"ec2:{c}" for c in EC2_DRY_RUN_CALLS} <= set(got)
    # moto has no policy simulator: those checks are reported, not failed
    assert got["ssm:GetParameter"] is PermissionStatus.UNKNOWN
    assert {f.code for f in iam_findings(perms)} <= {"LM172"}


@mock_aws
def test_pass_role_through_run_instances_with_the_node_profile():
    iam = boto3.client("iam", region_name=REGION)
    iam.create_role(RoleName="KarpenterNodeRole", AssumeRolePolicyDocument="{}")
    iam.create_instance_profile(InstanceProfileName="KarpenterNodeRole")
    iam.add_role_to_instance_profile(InstanceProfileName="KarpenterNodeRole", RoleName="KarpenterNodeRole")
    session = boto3.Session(aws_access_key_id="a", aws_secret_access_key="b", region_name=REGION)
    got = _statuses(preflight(session, region=REGION, node_role="KarpenterNodeRole"))
    assert got["iam:PassRole (RunInstances with the node role)"] is PermissionStatus.ALLOWED


@set_initial_no_auth_action_count(3)
@mock_aws
def test_denied_calls_become_lm171_findings():
    iam = boto3.client("iam", region_name=REGION)
    iam.create_user(UserName="controller")
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["ec2:Describe*", "ec2:CreateFleet", "ec2:RunInstances", "ec2:CreateTags",
                                       "ec2:CreateLaunchTemplate*", "ec2:DeleteLaunchTemplate"], "Resource": "*"}]}
    iam.put_user_policy(UserName="controller", PolicyName="p", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName="controller")["AccessKey"]
    session = boto3.Session(aws_access_key_id=key["AccessKeyId"], aws_secret_access_key=key["SecretAccessKey"],
                            region_name=REGION)
    perms = preflight(session, region=REGION)
    got = _statuses(perms)
    assert got["ec2:TerminateInstances"] is PermissionStatus.DENIED
    assert got["ec2:CreateFleet"] is PermissionStatus.ALLOWED
    denied = [f for f in iam_findings(perms) if f.code == "LM171"]
    assert [f.objects for f in denied] == [("iam/ec2:TerminateInstances",)]
    assert denied[0].evidence["policy_statement"]["Action"] == ["ec2:TerminateInstances"]
