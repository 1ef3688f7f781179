"""IAM preflight: whether the controller's credentials may make the AWS calls docs/loops.md lists for its
policy, without changing anything. EC2 calls are made with DryRun (AWS answers DryRunOperation when the call
would be allowed, UnauthorizedOperation when not); the other services' calls and iam:PassRole on the node role
are asked of IAM's policy simulator (SimulatePrincipalPolicy on the caller's role). RunInstances is also tried
with the node role's instance profile, which needs iam:PassRole, so PassRole is checked even where the
simulator may not be called. Takes a boto3 session; never imports Django.

The results become findings LM171 (a permission is denied) and LM172 (one could not be checked)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from packing.advisor.finding import Finding, Severity

__all__ = ["EC2_DRY_RUN_CALLS", "SIMULATED_ACTIONS", "Permission", "PermissionStatus", "iam_findings", "preflight"]

ALLOWED_CODES = frozenset({"DryRunOperation"})
DENIED_CODES = frozenset({"UnauthorizedOperation", "AccessDenied", "AccessDeniedException", "UnauthorizedException"})
PREFLIGHT_NAME = "loadmaster-preflight"
# ids of the right shape that name nothing: a DryRun checks the permission before it looks the resource up
PLACEHOLDER_INSTANCE = "i-0000000000000000f"
PLACEHOLDER_IMAGE = "ami-0000000000000000f"

# The EC2 calls of docs/loops.md's policy, with the least parameters each needs to reach the permission check.
EC2_DRY_RUN_CALLS: dict[str, dict[str, Any]] = {
    "CreateFleet": {
        "Type": "instant",
        "LaunchTemplateConfigs": [
            {"LaunchTemplateSpecification": {"LaunchTemplateName": PREFLIGHT_NAME, "Version": "$Latest"}}
        ],
        "TargetCapacitySpecification": {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": "on-demand"},
    },
    "RunInstances": {"ImageId": PLACEHOLDER_IMAGE, "InstanceType": "m5.large", "MinCount": 1, "MaxCount": 1},
    "CreateLaunchTemplate": {"LaunchTemplateName": PREFLIGHT_NAME, "LaunchTemplateData": {"InstanceType": "m5.large"}},
    "CreateLaunchTemplateVersion": {"LaunchTemplateName": PREFLIGHT_NAME, "LaunchTemplateData": {"InstanceType": "m5.large"}},
    "DeleteLaunchTemplate": {"LaunchTemplateName": PREFLIGHT_NAME},
    "DescribeLaunchTemplateVersions": {"LaunchTemplateName": PREFLIGHT_NAME},
    "CreateTags": {"Resources": [PLACEHOLDER_INSTANCE], "Tags": [{"Key": "loadmaster.dev/preflight", "Value": "true"}]},
    "TerminateInstances": {"InstanceIds": [PLACEHOLDER_INSTANCE]},
    "DescribeImages": {"Owners": ["amazon"]},
    "DescribeSubnets": {},
    "DescribeSecurityGroups": {},
    "DescribeInstances": {},
    "DescribePlacementGroups": {},
    "DescribeInstanceTypes": {},
    "DescribeInstanceTypeOfferings": {},
    "DescribeSpotPriceHistory": {"MaxResults": 5},
}
# The calls of other services (no DryRun there), asked of the policy simulator
SIMULATED_ACTIONS = ("ssm:GetParameter", "sqs:ReceiveMessage", "sqs:DeleteMessage", "pricing:GetProducts")


class PermissionStatus(StrEnum):
    ALLOWED = "allowed"
    DENIED = "denied"
    UNKNOWN = "unknown"  # the check itself could not say (an error other than the permission's)


@dataclass(frozen=True)
class Permission:
    action: str  # ec2:CreateFleet, iam:PassRole, ...
    status: PermissionStatus
    how: str  # "DryRun", "SimulatePrincipalPolicy"
    detail: str = ""


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _error_code(exc: Exception) -> tuple[str, str]:
    response = getattr(exc, "response", None)
    if isinstance(response, Mapping):
        err = response.get("Error") or {}
        return str(err.get("Code", "")), str(err.get("Message", ""))[:300]
    return type(exc).__name__, str(exc)[:300]


def _dry_run(client: Any, call: str, params: Mapping[str, Any], action: str | None = None) -> Permission:
    action = action or f"ec2:{call}"
    try:
        getattr(client, _snake(call))(DryRun=True, **params)
    except Exception as exc:  # noqa: BLE001 - every answer is a result: botocore's ClientError and the rest
        code, message = _error_code(exc)
        if code in ALLOWED_CODES:
            return Permission(action, PermissionStatus.ALLOWED, "DryRun")
        if code in DENIED_CODES:
            return Permission(action, PermissionStatus.DENIED, "DryRun", f"{code}: {message}")
        return Permission(action, PermissionStatus.UNKNOWN, "DryRun", f"{code}: {message}")
    # an emulator may answer a read call instead of refusing it as a dry run: the call was allowed
    return Permission(action, PermissionStatus.ALLOWED, "DryRun", "answered (the DryRun flag was not honoured)")


def _role_arn(sts_arn: str) -> str:
    """The IAM role behind an assumed-role session ARN (the simulator takes users and roles, not sessions)."""
    m = re.fullmatch(r"arn:(aws[a-z-]*):sts::(\d+):assumed-role/([^/]+)/.+", sts_arn)
    return f"arn:{m.group(1)}:iam::{m.group(2)}:role/{m.group(3)}" if m else sts_arn


def _simulate(session: Any, actions: Sequence[tuple[str, str]]) -> list[Permission]:
    """(action, resource ARN) pairs through SimulatePrincipalPolicy; UNKNOWN for each when it cannot run."""
    try:
        principal = _role_arn(str(session.client("sts").get_caller_identity()["Arn"]))
        iam = session.client("iam")
        out = []
        for action, resource in actions:
            res = iam.simulate_principal_policy(
                PolicySourceArn=principal, ActionNames=[action], ResourceArns=[resource]
            )
            decision = str((res.get("EvaluationResults") or [{}])[0].get("EvalDecision", ""))
            status = PermissionStatus.ALLOWED if decision == "allowed" else PermissionStatus.DENIED
            out.append(Permission(action, status, "SimulatePrincipalPolicy", decision))
        return out
    except Exception as exc:  # noqa: BLE001 - the simulator is optional: say so instead of failing the run
        code, message = _error_code(exc)
        return [
            Permission(a, PermissionStatus.UNKNOWN, "SimulatePrincipalPolicy", f"{code}: {message}")
            for a, _ in actions
        ]


def preflight(session: Any, *, region: str, node_role: str = "", instance_profile: str = "") -> list[Permission]:
    """Every permission of the controller's policy, as the credentials of `session` hold it in `region`.
    `node_role`: the nodes' IAM role (name or ARN) that iam:PassRole must allow; `instance_profile`: its
    instance profile (default: the role's name, as the IAM console creates it)."""
    ec2 = session.client("ec2", region_name=region)
    out = [_dry_run(ec2, call, params) for call, params in EC2_DRY_RUN_CALLS.items()]
    simulated = [(a, "*") for a in SIMULATED_ACTIONS]
    if node_role:
        role_name = node_role.rsplit("/", 1)[-1]
        profile = instance_profile or role_name
        launch = {**EC2_DRY_RUN_CALLS["RunInstances"], "IamInstanceProfile": {"Name": profile}}
        out.append(_dry_run(ec2, "RunInstances", launch, action="iam:PassRole (RunInstances with the node role)"))
        arn = node_role if node_role.startswith("arn:") else f"arn:aws:iam::*:role/{role_name}"
        simulated.append(("iam:PassRole", arn))
    out.extend(_simulate(session, simulated))
    return out


def iam_findings(permissions: Sequence[Permission]) -> list[Finding]:
    out = []
    for p in permissions:
        if p.status is PermissionStatus.ALLOWED:
            continue
        action = p.action.split(" ", 1)[0]
        denied = p.status is PermissionStatus.DENIED
        out.append(
            Finding(
                "LM171" if denied else "LM172",
                Severity.ERROR if denied else Severity.INFO,
                f"IAM: {p.action} is {'denied' if denied else 'not checked'} ({p.how})",
                (f"iam/{p.action}",),
                {
                    "action": action,
                    "checked_with": p.how,
                    "detail": p.detail,
                    "policy_statement": {"Effect": "Allow", "Action": [action], "Resource": "*"},
                },
            )
        )
    return out
