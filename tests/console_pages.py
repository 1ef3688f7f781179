"""What the console's page tests share: signed-in clients in each role, a small fleet (one EC2NodeClass and
one NodePool) and formset POST data. Page tests of every app import these fixtures by name; tests/fleet/pages'
conftest brings them into the fleet's page tests over tests/fleet/conftest.py's API clients of the same names."""

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


def rows(prefix: str, items: list[dict[str, Any]], extra: int = 0) -> dict[str, Any]:
    """POST data of a Django formset: the management form, then each item's fields as ``prefix-i-key``."""
    data: dict[str, Any] = {f"{prefix}-TOTAL_FORMS": str(len(items) + extra), f"{prefix}-INITIAL_FORMS": "0",
                            f"{prefix}-MIN_NUM_FORMS": "0", f"{prefix}-MAX_NUM_FORMS": "1000"}
    for i, item in enumerate(items):
        for key, value in item.items():
            data[f"{prefix}-{i}-{key}"] = value
    return data
