"""LOADMASTER_MAX_UPLOAD_BYTES holds for page uploads, raw API bodies and multipart API files."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.authtoken.models import Token

from console.fleet.models import NodePool
from tests.console_pages import operator, operator_client  # noqa: F401

pytestmark = pytest.mark.django_db
LIMIT = 4096
POOL = ("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: big\nspec:\n  template:\n    spec:\n"
        "      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n      requirements: []\n")


@pytest.fixture(autouse=True)
def small_limit(settings: Any) -> None:
    settings.LOADMASTER_MAX_UPLOAD_BYTES = LIMIT


def big_yaml() -> bytes:
    return (POOL + "# " + "x" * (2 * LIMIT) + "\n").encode()


def token_client(operator: Any) -> Client:  # noqa: F811
    return Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=operator).key}")


def test_page_upload_over_the_limit(operator_client: Client) -> None:  # noqa: F811
    response = operator_client.post("/import/", {"files": SimpleUploadedFile("big.yaml", big_yaml())})
    assert response.status_code == 413
    assert b"LOADMASTER_MAX_UPLOAD_BYTES=4096" in response.content and b"4 KiB" in response.content
    assert not NodePool.objects.filter(name="big").exists()


def test_api_raw_body_over_the_limit(operator: Any) -> None:  # noqa: F811
    response = token_client(operator).post("/api/import/", big_yaml(), content_type="text/yaml")
    assert response.status_code == 413 and response.json()["limit_bytes"] == LIMIT
    assert "LOADMASTER_MAX_UPLOAD_BYTES" in response.json()["detail"]


def test_api_multipart_files_over_the_limit(operator: Any) -> None:  # noqa: F811
    # Two files, each under the limit, together over it.
    half = (POOL + "# " + "y" * (LIMIT // 2 + 100) + "\n").encode()
    response = token_client(operator).post("/api/import/", {"file": [SimpleUploadedFile("a.yaml", half),
                                                                      SimpleUploadedFile("b.yaml", half)]})
    assert response.status_code == 413 and "4 KiB" in response.json()["detail"]


def test_small_bodies_still_get_through(operator: Any) -> None:  # noqa: F811
    response = token_client(operator).post("/api/import/?dry_run=1", POOL.encode(), content_type="text/yaml")
    assert response.status_code in (200, 400)      # judged on its content, not its size
    assert response.status_code != 413
