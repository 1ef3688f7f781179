"""Fixtures for the catalog tests: dummy AWS credentials, moto, per-session caches of slow moto calls, and
the console's signed-in page clients for the catalog page tests.

moto's DescribeInstanceTypes takes ~3-4 s and DescribeSpotPriceHistory ~1.5 s in-process, so each is
run through moto once per session and replayed afterwards with a botocore `before-call` hook, which
returns the recorded parsed response instead of calling moto again.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.console_pages import operator, operator_client, viewer, viewer_client  # noqa: F401 - fixtures

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

NOW = dt.datetime(2026, 11, 30, 10, 0, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def _aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    # never let a developer's real profile or credentials leak into a test
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)


@pytest.fixture(scope="session")
def moto_recordings() -> dict[str, Any]:
    """The parsed DescribeInstanceTypes and DescribeSpotPriceHistory responses of moto, recorded once."""
    import boto3
    from moto import mock_aws

    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        types = ec2.describe_instance_types()
        spot = ec2.describe_spot_price_history(
            ProductDescriptions=["Linux/UNIX", "Linux/UNIX (Amazon VPC)"], StartTime=NOW
        )
    for r in (types, spot):
        r.pop("ResponseMetadata", None)
        r.pop("NextToken", None)
    return {"DescribeInstanceTypes": types, "DescribeSpotPriceHistory": spot}


def replay(client: Any, recordings: dict[str, Any], *operations: str) -> None:
    """Make `client` answer `operations` from the recordings instead of calling moto again."""
    from botocore.awsrequest import AWSResponse

    for op in operations:
        body = recordings[op]

        def handler(*, _body: dict[str, Any] = body, **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
            return AWSResponse("stub", 200, {}, None), {**_body, "ResponseMetadata": {"HTTPStatusCode": 200}}

        client.meta.events.register(f"before-call.ec2.{op}", handler)


@pytest.fixture
def moto_ec2(moto_recordings: dict[str, Any]) -> Iterator[Any]:
    """An in-process moto EC2 client for us-east-1 whose slow calls replay the session recordings."""
    import boto3
    from moto import mock_aws

    with mock_aws():
        client = boto3.client("ec2", region_name="us-east-1")
        replay(client, moto_recordings, "DescribeInstanceTypes", "DescribeSpotPriceHistory")
        yield client
