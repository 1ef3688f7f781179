"""Error answers in YAML: a missing object's export is 404, an anonymous one 401, never a 500."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from django.test import Client

from tests.console_pages import nodeclass, operator, operator_client, pool  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("kind", ["nodepools", "nodeclasses"])
@pytest.mark.parametrize("how", [{"path": "?format=yaml"}, {"path": "", "HTTP_ACCEPT": "text/yaml"}])
def test_missing_export_in_yaml(kind: str, how: dict[str, str], operator_client: Client) -> None:  # noqa: F811
    extra = {k: v for k, v in how.items() if k != "path"}
    url = f"/api/{kind}/missing/export/{how['path']}"
    anonymous = Client().get(url, **extra)
    assert anonymous.status_code == 401
    assert "credentials" in yaml.safe_load(anonymous.content)["detail"]
    missing = operator_client.get(url, **extra)
    assert missing.status_code == 404 and yaml.safe_load(missing.content)["detail"]


def test_existing_export_still_yaml(pool: Any, operator_client: Client) -> None:  # noqa: F811
    answer = operator_client.get("/api/nodepools/general/export/?format=yaml")
    assert answer.status_code == 200 and yaml.safe_load(answer.content)["kind"] == "NodePool"
