"""The field table (console/fleet/fieldtable.py) and what derives from it agree: the model's columns, the
manifests' import and export, the forms and their pages, the API serializers, the detail page and the
engine's defaults. A field added to one and not the others fails here, with the place to fix named."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest
from django.db import models
from django.test import Client
from rest_framework import serializers

from console.access import OPERATOR
from console.fleet import fieldtable, forms, manifests, services
from console.fleet.api.serializers import EC2NodeClassSerializer, NodePoolSerializer
from console.fleet.fieldtable import Kind, Widget
from console.fleet.models import EC2NodeClass, NodePool
from packing import nodepool as engine_nodepool
from packing.disruption.model import DEFAULT_EXPIRE_AFTER, DEFAULT_POLICY, Budget, DisruptionSettings
from packing.durations import parse_duration
from tests.users import make_user

TABLES: list[tuple[type[models.Model], tuple[fieldtable.FieldSpec, ...]]] = [
    (NodePool, fieldtable.NODEPOOL_FIELDS), (EC2NodeClass, fieldtable.NODECLASS_FIELDS)]
# Columns that are not Karpenter fields: bookkeeping of the console.
NOT_IN_TABLE = {"id", "created_at", "updated_at", "revision"}
# Where the model's "not set" differs from the CRD default on purpose.
MODEL_DEFAULT_DIFFERS = {
    # A row saved without budgets has none (disruption not limited); an absent spec.disruption.budgets
    # is the CRD's one 10% budget, which import, a PUT and the new-pool form apply.
    (NodePool, "budgets"),
    # The CRD has no default (nodeClassRef is required); the model's "default" serves the API's POST.
    (NodePool, "node_class_name"),
}
KIND_COLUMNS: dict[Kind, tuple[type[models.Field], ...]] = {
    **{kind: (models.CharField, models.TextField) for kind in fieldtable.STRING_KINDS},
    **{kind: (models.JSONField,) for kind in fieldtable.JSON_KINDS},
    Kind.INT: (models.IntegerField, models.PositiveSmallIntegerField, models.PositiveIntegerField),
    Kind.BOOL: (models.BooleanField,),
}
# A value of each kind that import and export must carry unchanged (not necessarily one validation accepts).
SAMPLES: dict[Kind, Any] = {
    Kind.NAME: "rt-name", Kind.REFERENCE: "rt-class", Kind.STRING: "some-string",
    Kind.TEXT: "#!/bin/sh\necho 'hi: there'\n", Kind.DURATION: "1h30m", Kind.INT: 7, Kind.BOOL: False,
    Kind.STRING_MAP: {"team": "a", "y": "n"}, Kind.QUANTITY_MAP: {"cpu": "10", "memory": "1e3"},
    Kind.REQUIREMENTS: [{"values": ["v"], "key": "k", "minValues": 1, "operator": "In"}],
    Kind.TAINTS: [{"effect": "NoSchedule", "key": "k", "value": "v"}],
    Kind.BUDGETS: [{"reasons": ["Empty"], "nodes": "5", "schedule": "@daily", "duration": "1h"}],
    Kind.SELECTOR_TERMS: [{"tags": {"a": "b"}}, {"id": "x-1"}],
    Kind.OBJECT_LIST: [{"ebs": {"volumeSize": "20Gi"}, "deviceName": "/dev/xvda"}],
    Kind.OBJECT: {"maxPods": 10, "systemReserved": {"cpu": "100m"}},
}


def sample(spec: fieldtable.FieldSpec) -> Any:
    if spec.kind is Kind.ENUM:
        return spec.choices[-1][0]
    return copy.deepcopy(SAMPLES[spec.kind])


def base_values(specs: tuple[fieldtable.FieldSpec, ...]) -> dict[str, Any]:
    values = {spec.name: spec.fresh_default() for spec in specs if spec.has_default}
    values.update({spec.name: sample(spec) for spec in specs if not spec.has_default})
    return values


def to_manifest(model: type[models.Model], values: dict[str, Any]) -> dict[str, Any]:
    return (manifests.nodepool_to_manifest if model is NodePool else manifests.nodeclass_to_manifest)(values)


# --- the table and the model -------------------------------------------------------------------------

@pytest.mark.parametrize(("model", "specs"), TABLES)
def test_every_column_is_in_the_table_or_excluded(model: type[models.Model], specs: Any) -> None:
    columns = {f.name for f in model._meta.concrete_fields}
    names = [spec.name for spec in specs]
    assert len(names) == len(set(names)), "a field is in the table twice"
    assert columns - NOT_IN_TABLE - set(names) == set(), "columns missing from fieldtable.py (or NOT_IN_TABLE)"
    assert set(names) - columns == set(), "table fields without a column in models.py"


@pytest.mark.parametrize(("model", "specs"), TABLES)
def test_column_types_and_defaults_match_the_table(model: type[models.Model], specs: Any) -> None:
    for spec in specs:
        column = model._meta.get_field(spec.name)
        assert isinstance(column, KIND_COLUMNS[spec.kind]), (spec.name, spec.kind, type(column))
        if spec.kind is Kind.NAME:
            assert column.max_length == fieldtable.NAME_MAX_LENGTH and column.unique
        if (model, spec.name) in MODEL_DEFAULT_DIFFERS or not spec.has_default:
            continue
        model_default = column.get_default() if column.has_default() else None
        assert model_default == spec.default, f"{model.__name__}.{spec.name}: models.py and fieldtable.py disagree"
        if column.choices:
            assert [value for value, _ in column.choices] == [value for value, _ in spec.choices if value]


def test_every_kind_is_classified_and_every_spec_is_complete() -> None:
    assert set(Kind) == fieldtable.STRING_KINDS | fieldtable.JSON_KINDS | {Kind.INT, Kind.BOOL}
    assert set(Kind) <= set(SAMPLES) | {Kind.ENUM}
    for _, specs in TABLES:
        for spec in specs:
            assert spec.path[0] in ("metadata", "spec"), spec.name
            assert bool(spec.parts) == (spec.widget is Widget.PARTS), spec.name
            assert bool(spec.rows_prefix) == (spec.widget is Widget.ROWS), spec.name
            assert (spec.int_range is not None) == (spec.kind is Kind.INT), spec.name
            if spec.widget in (Widget.SELECT, Widget.NULL_BOOLEAN) or spec.kind is Kind.ENUM:
                assert spec.choices, spec.name
            if spec.crd_required:
                assert spec.export_empty, f"{spec.name}: a required field is exported even when empty"


def test_engine_defaults_come_from_packing() -> None:
    pool = fieldtable.NODEPOOL
    assert pool["expire_after"].default == engine_nodepool.EXPIRE_AFTER_DEFAULT
    assert pool["consolidation_policy"].default == engine_nodepool.CONSOLIDATION_POLICY_DEFAULT
    assert pool["consolidate_after"].default == engine_nodepool.CONSOLIDATE_AFTER_DEFAULT
    assert pool["budgets"].default == [{"nodes": engine_nodepool.BUDGET_NODES_DEFAULT}]
    # The disruption engine reads a manifest without these fields the same way.
    assert parse_duration(engine_nodepool.EXPIRE_AFTER_DEFAULT) == DEFAULT_EXPIRE_AFTER == timedelta(hours=720)
    assert DEFAULT_POLICY == engine_nodepool.CONSOLIDATION_POLICY_DEFAULT
    settings = DisruptionSettings()
    assert settings.consolidate_after == parse_duration(engine_nodepool.CONSOLIDATE_AFTER_DEFAULT)
    assert settings.budgets == (Budget(nodes=engine_nodepool.BUDGET_NODES_DEFAULT),)


# --- manifests: every field round-trips through export and import ------------------------------------

@pytest.mark.parametrize(("model", "specs"), TABLES)
def test_every_field_round_trips_through_export_and_import(model: type[models.Model], specs: Any) -> None:
    for spec in specs:
        for value in (sample(spec), spec.fresh_default() if spec.has_default else sample(spec)):
            values = {**base_values(specs), spec.name: value}
            text = manifests.dump_yaml([to_manifest(model, values)])
            (doc,) = manifests.load_yaml_documents(text)
            imported, problems = manifests.fields_from_manifest(doc)
            assert problems == [], (spec.name, value, problems)
            assert imported[spec.name] == value, spec.name
            assert imported == values, spec.name
            assert manifests.dump_yaml([to_manifest(model, imported)]) == text, f"{spec.name}: export not byte-identical"


def doc_path(doc: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


@pytest.mark.parametrize(("model", "specs"), TABLES)
def test_absent_fields_import_as_the_table_defaults(model: type[models.Model], specs: Any) -> None:
    for spec in specs:
        if not spec.has_default or spec.crd_required:
            continue
        values = {**base_values(specs), spec.name: sample(spec)}
        doc = to_manifest(model, values)
        if spec.name == "consolidate_after":
            del doc["spec"]["disruption"]  # the block's default applies only when the whole block is absent
        else:
            del doc_path(doc, spec.path[:-1])[spec.path[-1]]
        imported, problems = manifests.fields_from_manifest(doc)
        assert problems == [], spec.name
        assert imported == {**values, spec.name: spec.default}, spec.name


def test_paths_and_defaults_of_manifests_are_the_tables() -> None:
    assert manifests.NODEPOOL_PATHS == {spec.name: spec.path for spec in fieldtable.NODEPOOL_FIELDS}
    assert manifests.NODECLASS_PATHS == {spec.name: spec.path for spec in fieldtable.NODECLASS_FIELDS}
    assert set(manifests.NODEPOOL_DEFAULTS) == {s.name for s in fieldtable.NODEPOOL_FIELDS if s.has_default}
    assert set(manifests.NODECLASS_DEFAULTS) == {s.name for s in fieldtable.NODECLASS_FIELDS if s.has_default}


@pytest.mark.django_db
def test_a_full_object_saves_exports_and_imports_unchanged() -> None:
    user = make_user("tina-table", OPERATOR)
    nodeclass_values: dict[str, Any] = {
        "name": "default", "ami_family": "AL2023", "ami_selector_terms": [{"alias": "al2023@latest"}],
        "subnet_selector_terms": [{"tags": {"karpenter.sh/discovery": "t"}}],
        "security_group_selector_terms": [{"id": "sg-123"}], "role": "NodeRole", "tags": {"team": "a"},
        "block_device_mappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi", "volumeType": "gp3"}}],
        "kubelet": {"maxPods": 20}, "metadata_options": {"httpTokens": "required"}, "user_data": "echo hi\n",
        "instance_store_policy": "RAID0", "detailed_monitoring": True, "associate_public_ip_address": False,
        "metadata_labels": {"team": "a"}, "metadata_annotations": {"kubernetes.io/description": "general"},
        "capacity_reservation_selector_terms": [{"tags": {"team": "ml"}, "instanceMatchCriteria": "open"}],
        "ip_prefix_count": 2, "context": "c-0123",
        "connection_tracking": {"tcpEstablishedTimeout": 3600, "udpTimeout": 45},
        "cpu_options": {"nestedVirtualization": "enabled"},
        "network_interfaces": [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
                               {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"}],
        "placement_group_selector": {"name": "training"},
    }
    nodeclass = services.nodeclass_create(values=nodeclass_values, user=user)
    # role and instanceProfile exclude each other
    profiled = services.nodeclass_create(values={**nodeclass_values, "name": "profiled", "role": "",
                                                 "instance_profile": "NodeProfile"}, user=user)
    pool = services.nodepool_create(values={
        "name": "general", "template_labels": {"team": "a"}, "template_annotations": {"note": "x"},
        "metadata_labels": {"example.com/tier": "gold"}, "metadata_annotations": {"kubernetes.io/description": "x y"},
            "on_demand_base": "2", "on_demand_percentage": "20",
        "schedules": "- {name: nights, schedule: '0 20 * * *', duration: 8h, consolidationPolicy: WhenEmpty}",
        "node_class_name": "default", "taints": [{"key": "t", "value": "v", "effect": "NoSchedule"}],
        "startup_taints": [{"key": "s", "effect": "NoExecute"}],
        "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}],
        "expire_after": "24h", "termination_grace_period": "1h", "consolidation_policy": "WhenEmpty",
        "consolidate_after": "5m", "budgets": [{"nodes": "1"}], "limits": {"cpu": "100"}, "weight": 5,
    }, user=user)
    # a static pool: replicas exclude weight and limits other than nodes
    static = services.nodepool_create(values={"name": "static", "node_class_name": "default", "replicas": 3,
                                              "limits": {"nodes": "5"}}, user=user)
    for objects, specs in (([nodeclass, profiled], fieldtable.NODECLASS_FIELDS),
                           ([pool, static], fieldtable.NODEPOOL_FIELDS)):
        for spec in specs:
            if spec.has_default:
                assert any(getattr(o, spec.name) != spec.default for o in objects), f"set {spec.name} in this test"
    text = services.karpenter_export([nodeclass, profiled, pool, static])
    result = services.karpenter_import(texts=[("", text)], user=user)
    assert result.problems == []
    assert result.unchanged == ["EC2NodeClass/default", "EC2NodeClass/profiled", "NodePool/general",
                                "NodePool/static"]
    again = [*EC2NodeClass.objects.order_by("name"), NodePool.objects.get(name="general"),
             NodePool.objects.get(name="static")]
    assert services.karpenter_export(again) == text


# --- forms and their pages ---------------------------------------------------------------------------

def expected_inputs(specs: tuple[fieldtable.FieldSpec, ...]) -> list[str]:
    names: list[str] = []
    for spec in specs:
        if spec.widget is Widget.PARTS:
            names += [part.name for part in spec.parts]
        elif spec.widget is not Widget.ROWS:
            names.append(spec.name)
    return names


def test_forms_have_one_input_per_table_field() -> None:
    assert list(forms.NodePoolForm.base_fields) == [*expected_inputs(fieldtable.NODEPOOL_FIELDS), "revision"]
    assert list(forms.NodeClassForm.base_fields) == [*expected_inputs(fieldtable.NODECLASS_FIELDS), "revision"]
    rows = {spec.name: spec.rows_prefix for spec in fieldtable.NODEPOOL_FIELDS if spec.widget is Widget.ROWS}
    assert {name: prefix for name, (_, prefix) in forms.NODEPOOL_ROWS.items()} == rows
    for spec in fieldtable.NODEPOOL_FIELDS:
        if spec.name in forms.NodePoolForm.base_fields:
            field = forms.NodePoolForm.base_fields[spec.name]
            assert (field.label, field.help_text, field.required) == (spec.label, spec.help, spec.required)


@pytest.mark.django_db
@pytest.mark.parametrize(("path", "specs"), [("/nodepools/new/", fieldtable.NODEPOOL_FIELDS),
                                             ("/nodeclasses/new/", fieldtable.NODECLASS_FIELDS)])
def test_form_pages_show_every_input(path: str, specs: tuple[fieldtable.FieldSpec, ...]) -> None:
    client = Client()
    client.force_login(make_user("tom-table", OPERATOR))
    html = client.get(path).content.decode()
    for name in expected_inputs(specs):
        assert f'id="field-{name}"' in html, f"{name} has no input on {path}: place it in the form template"
    for spec in specs:
        if spec.widget is Widget.ROWS:
            assert f'id="rows-{spec.rows_prefix}"' in html, f"{spec.name} has no rows on {path}"


@pytest.mark.django_db
def test_the_detail_page_shows_every_field() -> None:
    user = make_user("dana-detail", OPERATOR)
    services.nodepool_create(values={"name": "shown", "node_class_name": "none-yet", "requirements": []}, user=user)
    client = Client()
    client.force_login(user)
    html = client.get("/nodepools/shown/").content.decode()
    for spec in fieldtable.NODEPOOL_FIELDS:
        if spec.kind is not Kind.NAME:
            assert f"<th>{spec.label}</th>" in html, spec.name


# --- the API -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("serializer_class", "specs"), [(NodePoolSerializer, fieldtable.NODEPOOL_FIELDS),
                                                         (EC2NodeClassSerializer, fieldtable.NODECLASS_FIELDS)])
def test_serializers_carry_the_table_fields(serializer_class: type[serializers.ModelSerializer],
                                            specs: tuple[fieldtable.FieldSpec, ...]) -> None:
    fields = serializer_class().fields
    api = [spec for spec in specs if spec.in_api]
    assert [name for name in fields if name in {s.name for s in specs}] == [spec.name for spec in api]
    assert not {spec.name for spec in specs if not spec.in_api} & set(fields)
    for spec in api:
        field = fields[spec.name]
        if spec.kind in fieldtable.JSON_KINDS:
            assert isinstance(field, serializers.JSONField), spec.name
        if spec.kind in fieldtable.JSON_KINDS or spec.kind is Kind.INT:
            assert field.help_text == (spec.api_help or spec.yaml_path), spec.name
            assert not field.required, spec.name
