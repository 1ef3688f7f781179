"""Fixtures for page tests: signed-in clients in each role and a small fleet."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from console.access import OPERATOR, VIEWER
from console.fleet import services
from console.fleet.models import EC2NodeClass, NodePool
from tests.users import make_user

NODECLASS = {
    "name": "default", "ami_family": "AL2023", "ami_selector_terms": [{"alias": "al2023@latest"}],
    "subnet_selector_terms": [{"tags": {"karpenter.sh/discovery": "test"}}],
    "security_group_selector_terms": [{"tags": {"karpenter.sh/discovery": "test"}}],
    "role": "KarpenterNodeRole-test",
}


@pytest.fixture
def operator(db: Any) -> User:
    return make_user("olga", OPERATOR)


@pytest.fixture
def viewer(db: Any) -> User:
    return make_user("victor", VIEWER)


@pytest.fixture
def operator_client(operator: User) -> Client:
    client = Client(enforce_csrf_checks=False)
    client.force_login(operator)
    return client


@pytest.fixture
def viewer_client(viewer: User) -> Client:
    client = Client()
    client.force_login(viewer)
    return client


@pytest.fixture
def nodeclass(operator: User) -> EC2NodeClass:
    return services.nodeclass_create(values=NODECLASS, user=operator)


@pytest.fixture
def pool(nodeclass: EC2NodeClass, operator: User) -> NodePool:
    return services.nodepool_create(values={
        "name": "general", "node_class_name": "default", "weight": 10,
        "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}],
        "taints": [{"key": "team", "value": "a", "effect": "NoSchedule"}],
        "budgets": [{"nodes": "10%"}], "limits": {"cpu": "100"},
    }, user=operator)
