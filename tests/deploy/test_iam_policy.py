"""deploy/iam-policy.json grants exactly the AWS actions the code calls: the cloud backend's (with those IAM checks
implicitly), the catalog refresh's and the commitment reader's."""

from __future__ import annotations

import json
from pathlib import Path

from console.backends import aws, aws_commitments

POLICY = Path(__file__).resolve().parents[2] / "deploy" / "iam-policy.json"
# packing/catalog/live.py: DescribeInstanceTypes and -Offerings, DescribeSpotPriceHistory, the Pricing API
CATALOG_ACTIONS = {"ec2:DescribeInstanceTypes", "ec2:DescribeInstanceTypeOfferings", "ec2:DescribeSpotPriceHistory",
                   "pricing:GetProducts"}


def test_policy_grants_exactly_what_the_code_calls() -> None:
    policy = json.loads(POLICY.read_text())
    granted = {a for statement in policy["Statement"] for a in statement["Action"]}
    assert granted == set(aws.IAM_POLICY_ACTIONS) | set(aws_commitments.IAM_ACTIONS) | CATALOG_ACTIONS


def test_docs_list_every_action() -> None:
    docs = (POLICY.parents[1] / "docs" / "loops.md").read_text()
    policy = json.loads(POLICY.read_text())
    missing = [a for s in policy["Statement"] for a in s["Action"] if f"`{a}`" not in docs]
    assert missing == []
