"""Schemathesis against the console's OpenAPI schema, in process (WSGI), as an operator: whatever it
sends, the API never answers 5xx. Not full conformance; a bounded number of examples per operation
keeps the whole run within a couple of minutes."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, settings
from rest_framework.authtoken.models import Token
from schemathesis.config import SchemathesisConfig

from console.access import OPERATOR
from console.fleet import services
from tests.console_pages import NODECLASS
from tests.users import make_user

EXAMPLES = 20
# Examples and fuzzing only: the coverage phase sends a fixed, large set of boundary cases per
# operation (over 600 for a NodePool write) that max_examples does not bound.
CONFIG = SchemathesisConfig.from_dict({"phases": {"coverage": {"enabled": False}}})
# The schema as /api/schema/ serves it (that view needs a signed-in user, so it is generated here).
schema = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True), config=CONFIG)
schema.app = get_wsgi_application()


@pytest.fixture(autouse=True)
def test_connection_kept() -> Any:
    """The WSGI app closes "old" connections at each request's end, as it should in production; inside
    the test's transaction that closes the test's own connection on PostgreSQL (autocommit is off), so
    every later request fails. Django's test client disconnects the same handlers."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def token(db: Any) -> str:
    user = make_user("schemathesis", OPERATOR)
    nodeclass = services.nodeclass_create(values=NODECLASS, user=user)
    services.nodepool_create(values={"name": "general", "node_class_name": nodeclass.name}, user=user)
    return Token.objects.create(user=user).key


@pytest.mark.django_db
@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.function_scoped_fixture, HealthCheck.data_too_large])
def test_api_never_answers_5xx(case: Any, token: str) -> None:
    response = case.call(headers={"Authorization": f"Token {token}"})
    assert response.status_code < 500, f"{response.status_code} for {case.as_curl_command()}"
