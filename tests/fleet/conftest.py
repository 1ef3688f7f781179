"""Fixtures for the API tests: users in the two roles, API clients, and a small fleet."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework.test import APIClient

from console.access import OPERATOR, VIEWER
from console.fleet import services
from console.fleet.models import Decision, EC2NodeClass, NodeClaim, NodePool
from tests.users import make_user


def nodeclass_values(**overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "name": "default",
        "ami_family": "AL2023",
        "ami_selector_terms": [{"alias": "al2023@latest"}],
        "subnet_selector_terms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        "security_group_selector_terms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        "role": "KarpenterNodeRole-demo",
        "tags": {"team": "platform"},
    }
    values.update(overrides)
    return values


def nodepool_values(**overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "name": "general",
        "template_labels": {"team": "platform"},
        "requirements": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
            {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]},
        ],
        "node_class_name": "default",
        "expire_after": "720h",
        "consolidation_policy": "WhenEmptyOrUnderutilized",
        "consolidate_after": "1m",
        "budgets": [{"nodes": "10%"}],
        "limits": {"cpu": "1000", "memory": "1000Gi"},
        "weight": 10,
    }
    values.update(overrides)
    return values


def _user(username: str, group: str | None) -> User:
    return make_user(username, group, password="pw-" + username)


@pytest.fixture
def viewer_user(db: Any) -> User:
    return _user("vera-viewer", VIEWER)


@pytest.fixture
def operator_user(db: Any) -> User:
    return _user("otto-operator", OPERATOR)


@pytest.fixture
def groupless_user(db: Any) -> User:
    return _user("nora-nogroup", None)


@pytest.fixture
def anon_client() -> APIClient:
    return APIClient()


def _client(user: User) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


@pytest.fixture
def viewer_client(viewer_user: User) -> APIClient:
    return _client(viewer_user)


@pytest.fixture
def operator_client(operator_user: User) -> APIClient:
    return _client(operator_user)


@pytest.fixture
def groupless_client(groupless_user: User) -> APIClient:
    return _client(groupless_user)


@pytest.fixture
def nodeclass(db: Any) -> EC2NodeClass:
    return services.nodeclass_create(values=nodeclass_values(), user=None, source="demo")


@pytest.fixture
def nodepool(nodeclass: EC2NodeClass) -> NodePool:
    return services.nodepool_create(values=nodepool_values(), user=None, source="demo")


def make_claim(name: str, *, nodepool: NodePool | None = None, nodepool_name: str = "general",
               **fields: Any) -> NodeClaim:
    now = timezone.now()
    defaults: dict[str, Any] = {
        "nodepool": nodepool, "nodepool_name": nodepool.name if nodepool else nodepool_name,
        "instance_type": "m6i.large", "capacity_type": "spot", "zone": "eu-west-1a",
        "price_per_hour": Decimal("0.05"), "allocatable": {"cpu": "2", "memory": "8Gi"},
        "launched_at": now, "registered_at": now, "initialized_at": now,
    }
    defaults.update(fields)
    return NodeClaim.objects.create(name=name, **defaults)


@pytest.fixture
def fleet(nodepool: NodePool) -> dict[str, Any]:
    """Claims in several states, pools, zones and capacity types, and a few decisions."""
    other = services.nodepool_create(values=nodepool_values(name="gpu", weight=50), user=None, source="demo")
    claims = {
        "a": make_claim("general-a", nodepool=nodepool),
        "b": make_claim("general-b", nodepool=nodepool, capacity_type="on-demand", zone="eu-west-1b",
                        price_per_hour=Decimal("0.10")),
        "c": make_claim("general-c", nodepool=nodepool, registered_at=None, initialized_at=None),  # launched
        "d": make_claim("gpu-d", nodepool=other, instance_type="g5.xlarge", zone="eu-west-1b",
                        terminated_at=timezone.now(), termination_reason="consolidated"),
        "e": make_claim("gpu-e", nodepool=other, launched_at=None, registered_at=None, initialized_at=None),
    }
    decisions = {
        "launch": Decision.objects.create(kind=Decision.LAUNCH, nodepool=nodepool, nodepool_name="general",
                                          nodes=["general-a"], why="3 pending pods", cost_after=Decimal("0.05")),
        "disruption": Decision.objects.create(kind=Decision.DISRUPTION, nodepool=other, nodepool_name="gpu",
                                              nodes=["gpu-d"], why="underutilized", cost_before=Decimal("1.0"),
                                              cost_after=Decimal("0.4")),
        "unschedulable": Decision.objects.create(kind=Decision.UNSCHEDULABLE, nodepool_name="general",
                                                 pods=["default/big"], why="no instance type fits"),
    }
    return {"pools": {"general": nodepool, "gpu": other}, "claims": claims, "decisions": decisions}
