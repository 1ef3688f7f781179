"""Commitment edits go to the change history NodePools and CapacityBuffers have (console.fleet ChangeRecord):
created, updated, deleted, who and from where (form, API, import, the AWS refresh as system), the document's paths
that changed; shown on the commitment's page."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from rest_framework.test import APIClient

from console.commitments import services
from console.fleet.models import ChangeRecord


def records() -> list[tuple[str, str, str, str, dict[str, Any]]]:
    return [(r.object_name, r.action, r.source, r.username, r.changes)
            for r in ChangeRecord.objects.filter(object_type=ChangeRecord.COMMITMENT).order_by("id")]


def test_api_and_the_aws_refresh_record_who_and_the_diff(operator_client: APIClient, operator_user: User) -> None:
    body = {"name": "ri-m5", "type": "ReservedInstances", "instance_type": "m5.large", "zone": "us-east-1a",
            "count": 4}
    assert operator_client.post("/api/commitments/", body, format="json").status_code == 201
    assert operator_client.patch("/api/commitments/ri-m5/", {"count": 6}, format="json").status_code == 200
    assert operator_client.patch("/api/commitments/ri-m5/", {"count": 6}, format="json").status_code == 200  # same
    page = operator_client.get("/commitments/ri-m5/").content.decode()
    assert "<h2>History</h2>" in page and "spec.count" in page
    values = {"type": "ReservedInstances", "instance_type": "c5.large", "region": "us-east-1", "count": 2}
    row, _ = services.commitment_upsert(source="aws:DescribeReservedInstances", external_id="ri-1", values=values)
    services.commitment_upsert(source="aws:DescribeReservedInstances", external_id="ri-1", values={**values, "count": 3})
    assert services.commitment_prune(source="aws:DescribeReservedInstances", keep=[]) == 1
    who = operator_user.username
    created, updated, aws_created, aws_updated, pruned = records()
    assert created[:4] == ("ri-m5", "created", "api", who) and created[4]["spec.count"] == [None, 4]
    assert updated == ("ri-m5", "updated", "api", who, {"spec.count": [4, 6]})
    assert aws_created[:4] == (row.name, "created", "system", "")
    assert aws_updated == (row.name, "updated", "system", "", {"spec.count": [2, 3]})
    assert pruned[:4] == (row.name, "deleted", "system", "")
