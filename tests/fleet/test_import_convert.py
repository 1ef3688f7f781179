"""Importing legacy Karpenter objects: refused with a pointer at the conversion, converted with ?convert=1 (all
or nothing, the report returned), and the converted objects import as the hand-written v1 ones do."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from console.fleet import services
from console.fleet.models import EC2NodeClass, NodePool
from tests.packing.test_legacy_convert import PROVISIONER, V1_EQUIVALENT, V1BETA1

pytestmark = pytest.mark.django_db


@pytest.fixture
def importer(db: Any) -> User:
    return User.objects.create_user(username="lee-importer", password="pw")


def _stored() -> str:
    """The stored objects as the export writes them (the manifest, without row ids and times)."""
    return services.karpenter_export([*NodePool.objects.order_by("name"), *EC2NodeClass.objects.order_by("name")])


def test_legacy_objects_are_refused_without_convert(importer: User) -> None:
    result = services.karpenter_import(texts=[("old.yaml", PROVISIONER)], user=importer)
    assert not result.ok and NodePool.objects.count() == 0
    first = result.problems[0]
    assert (first.document, first.path) == (1, "apiVersion")
    assert "karpenter.sh/v1alpha5" in first.message and "?convert=1" in first.message


def test_convert_imports_what_the_hand_written_v1_objects_import(importer: User) -> None:
    result = services.karpenter_import(texts=[("old.yaml", PROVISIONER)], user=importer, convert=True)
    assert result.ok, result.problems
    assert sorted(result.created) == ["EC2NodeClass/default", "NodePool/default"]
    assert any(c["field"] == "spec.ttlSecondsAfterEmpty" and c["action"] == "changed" for c in result.conversion)
    converted = _stored()
    assert EC2NodeClass.objects.get(name="default").kubelet == {"maxPods": 8}
    NodePool.objects.all().delete()
    EC2NodeClass.objects.all().delete()
    assert services.karpenter_import(texts=[("new.yaml", V1_EQUIVALENT)], user=importer).ok
    assert _stored() == converted


def test_a_legacy_object_that_cannot_be_converted_saves_nothing(importer: User) -> None:
    bad = V1BETA1.replace("amiFamily: AL2023", "amiFamily: Ubuntu")
    result = services.karpenter_import(texts=[("old.yaml", bad)], user=importer, convert=True)
    assert not result.ok
    assert [(p.source, p.document, p.path) for p in result.problems] == [("old.yaml", 2, "spec.amiFamily")]
    assert NodePool.objects.count() == 0 and EC2NodeClass.objects.count() == 0


def test_api_import_with_convert_returns_the_report(operator_client: APIClient) -> None:
    refused = operator_client.post("/api/import/", V1BETA1, content_type="application/yaml")
    assert refused.status_code == 400 and "?convert=1" in refused.json()["problems"][0]["message"]
    response = operator_client.post("/api/import/?convert=1", V1BETA1, content_type="application/yaml")
    assert response.status_code == 200, response.content
    body = response.json()
    assert sorted(body["created"]) == ["EC2NodeClass/general", "NodePool/general"]
    assert {"object": "NodePool/general", "field": "spec.disruption.expireAfter", "action": "moved",
            "from": "168h", "to": "NodePool/general spec.template.spec.expireAfter", "note": ""} in body["conversion"]
    pool = NodePool.objects.get(name="general")
    assert (pool.consolidation_policy, pool.expire_after) == ("WhenEmptyOrUnderutilized", "168h")
    assert EC2NodeClass.objects.get(name="general").kubelet == {"maxPods": 8}
