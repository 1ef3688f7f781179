"""/advisor/ and /api/advisor/ over the simulated cluster, with Django's test client."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from django.test import Client
from moto import mock_aws

from console.fleet.models import ChangeRecord, NodePool
from tests.console_pages import rows as form_rows

pytestmark = pytest.mark.django_db


def test_page_lists_findings_with_severity_evidence_dollars_and_diff(world: Any, viewer_client: Client) -> None:
    page = viewer_client.get("/advisor/")
    assert page.status_code == 200
    html = page.content.decode()
    # general forbids spot; the four web pods could use it (LM131, with a saving); nothing tolerates gpu's taint
    assert "LM131" in html and "LM163" in html
    assert "+        - spot" in html  # the fix's diff
    assert "/month" in html
    assert "Open the fix" not in html and "Run IAM preflight" not in html  # viewers read only


def test_login_required(world: Any) -> None:
    assert Client().get("/advisor/").status_code == 302
    assert Client().get("/api/advisor/").status_code in (401, 403)


def test_api_answers_the_cli_json(world: Any, viewer_client: Client) -> None:
    doc = viewer_client.get("/api/advisor/").json()
    assert set(doc) == {"findings", "summary"}
    codes = {f["code"] for f in doc["findings"]}
    assert {"LM131", "LM163"} <= codes
    spot = next(f for f in doc["findings"] if f["code"] == "LM131")
    assert spot["objects"] == ["nodepool/general"] and spot["monthly_savings"] > 0
    assert spot["fix"]["kind"] == "NodePool" and "spot" in spot["fix"]["patch"]


def test_fix_button_opens_the_form_filled_in_and_saves_nothing(world: Any, operator_client: Client) -> None:
    html = operator_client.get("/advisor/").content.decode()
    assert "/advisor/fix/nodepool/general/LM131/" in html
    before = NodePool.objects.get(name="general")
    records = ChangeRecord.objects.count()
    form = operator_client.get("/advisor/fix/nodepool/general/LM131/")
    assert form.status_code == 200
    editor = form.context["editor"]
    rows = editor.formsets["requirements"].initial
    ct = next(r for r in rows if r["key"] == "karpenter.sh/capacity-type")
    assert "spot" in ct["values"]
    assert "whatif-preview-button" in form.content.decode()  # previewable like any edit
    after = NodePool.objects.get(name="general")
    assert after.requirements == before.requirements and after.revision == before.revision
    assert ChangeRecord.objects.count() == records


def test_fix_form_for_a_finding_that_is_not_there(world: Any, operator_client: Client) -> None:
    assert operator_client.get("/advisor/fix/nodepool/general/LM999/").status_code == 404
    assert operator_client.get("/advisor/fix/nodepool/nope/LM131/").status_code == 404


def test_fix_form_needs_an_operator(world: Any, viewer_client: Client) -> None:
    assert viewer_client.get("/advisor/fix/nodepool/general/LM131/").status_code == 403


@mock_aws
def test_iam_preflight_from_the_page(world: Any, operator_client: Client, viewer_client: Client,
                                     monkeypatch: Any) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "a")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "b")
    boto3.setup_default_session()
    assert viewer_client.post("/advisor/iam-preflight/").status_code == 403
    page = operator_client.post("/advisor/iam-preflight/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "ec2:CreateFleet" in html and "ec2:TerminateInstances" in html and "iam-results" in html


def test_saving_the_fix_form_is_the_ordinary_edit(world: Any, operator_client: Client) -> None:
    form = operator_client.get("/advisor/fix/nodepool/general/LM131/")
    editor = form.context["editor"]
    data: dict[str, Any] = {}
    for name in editor.form.fields:
        value = editor.form[name].value()  # the initial value as the page renders it
        if value is not None and value is not False:
            data[name] = value
    for formset in editor.formsets.values():
        rows = [{k: "" if v is None else v for k, v in row.items()} for row in formset.initial or []]
        data.update(form_rows(formset.prefix, rows))
    saved = operator_client.post("/advisor/fix/nodepool/general/LM131/", data)
    assert saved.status_code == 302, saved.content.decode()[:2000]
    pool = NodePool.objects.get(name="general")
    ct = next(r for r in pool.requirements if r["key"] == "karpenter.sh/capacity-type")
    assert sorted(ct["values"]) == ["on-demand", "spot"]


@pytest.mark.django_db
def test_advisor_migrations_match_models() -> None:
    from django.core.management import call_command

    call_command("makemigrations", "advisor", "alerts", "--check", "--dry-run", verbosity=0)


def test_a_fix_that_removes_a_field_empties_it_in_the_form(world: Any, operator_client: Client) -> None:
    # gpu's taint is tolerated by no pod (LM163): its fix deletes the taints (merge patch null)
    form = operator_client.get("/advisor/fix/nodepool/gpu/LM163/")
    assert form.status_code == 200
    assert form.context["editor"].formsets["taints"].initial == []
    assert NodePool.objects.get(name="gpu").taints  # still saved as it was
