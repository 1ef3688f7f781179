"""API representations of the fleet.

NodePools and EC2NodeClasses are shown with the model's field names (snake_case) and the
Karpenter-shaped values the model stores (requirements, taints, budgets… exactly as in the
YAML). Serializers only check the shape of the input (types, unknown fields); the Karpenter rules
run in the services (through the model's clean()), so the API refuses exactly what the forms and
the importer refuse, with the same words.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from console.fleet import fieldtable, selectors
from console.fleet.models import ChangeRecord, Decision, EC2NodeClass, NodeClaim, NodePool

# Fields a client may send back unchanged from a GET (they are ignored on write).
_OUTPUT_ONLY = ("created_at", "updated_at", "usage")


def _has_null_character(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any(_has_null_character(k) or _has_null_character(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_null_character(v) for v in value)
    return False


def _no_null_characters(value: Any) -> None:
    # PostgreSQL cannot store U+0000 in jsonb; refuse it here rather than fail on save.
    if _has_null_character(value):
        raise serializers.ValidationError("Null characters are not allowed.")


def _json_field(name: str, schema: dict[str, Any]) -> type[serializers.JSONField]:
    """A JSONField whose OpenAPI schema tells the Karpenter shape (the service checks the rules)."""
    field_class = type(name, (serializers.JSONField,), {})
    return extend_schema_field(schema)(field_class)


_STRING_MAP: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}
_QUANTITY: dict[str, Any] = {"oneOf": [{"type": "string"}, {"type": "number"}], "example": "100"}
_TAINT = {"type": "object", "required": ["key", "effect"], "properties": {
    "key": {"type": "string"}, "value": {"type": "string"},
    "effect": {"type": "string", "enum": ["NoSchedule", "PreferNoSchedule", "NoExecute"]}}}
_REQUIREMENT = {"type": "object", "required": ["key", "operator"], "properties": {
    "key": {"type": "string", "example": "karpenter.sh/capacity-type"},
    "operator": {"type": "string", "enum": ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]},
    "values": {"type": "array", "items": {"type": "string"}},
    "minValues": {"type": "integer", "minimum": 1, "maximum": 50}}}
_BUDGET = {"type": "object", "properties": {
    "nodes": {"type": "string", "example": "10%"},
    "schedule": {"type": "string", "example": "0 9 * * mon-fri"},
    "duration": {"type": "string", "example": "8h"},
    "reasons": {"type": "array", "items": {"type": "string", "enum": ["Empty", "Underutilized", "Drifted"]}}}}
_SELECTOR_TERMS = {"type": "array", "items": {"type": "object", "additionalProperties": True}}

StringMapField = _json_field("StringMapField", _STRING_MAP)
TaintListField = _json_field("TaintListField", {"type": "array", "items": _TAINT})
RequirementListField = _json_field("RequirementListField", {"type": "array", "items": _REQUIREMENT})
BudgetListField = _json_field("BudgetListField", {"type": "array", "items": _BUDGET})
QuantityMapField = _json_field("QuantityMapField", {"type": "object", "additionalProperties": _QUANTITY,
                                                     "example": {"cpu": "1000", "memory": "1000Gi"}})
SelectorTermsField = _json_field("SelectorTermsField", _SELECTOR_TERMS)
ObjectListField = _json_field("ObjectListField", {"type": "array", "items": {"type": "object",
                                                                              "additionalProperties": True}})
ObjectField = _json_field("ObjectField", {"type": "object", "additionalProperties": True})


# The API field of each JSON kind: its OpenAPI schema tells the Karpenter shape.
_JSON_FIELDS: dict[fieldtable.Kind, type[serializers.JSONField]] = {
    fieldtable.Kind.STRING_MAP: StringMapField, fieldtable.Kind.QUANTITY_MAP: QuantityMapField,
    fieldtable.Kind.TAINTS: TaintListField, fieldtable.Kind.REQUIREMENTS: RequirementListField,
    fieldtable.Kind.BUDGETS: BudgetListField, fieldtable.Kind.SELECTOR_TERMS: SelectorTermsField,
    fieldtable.Kind.OBJECT_LIST: ObjectListField, fieldtable.Kind.OBJECT: ObjectField,
}


def table_field(spec: fieldtable.FieldSpec) -> serializers.Field | None:
    """The API field of a table field; None: the one ModelSerializer builds from the column (strings, enums)."""
    help_text = spec.api_help or spec.yaml_path
    if spec.kind in _JSON_FIELDS:
        return _JSON_FIELDS[spec.kind](required=False, help_text=help_text)
    if spec.kind is fieldtable.Kind.INT:
        return serializers.IntegerField(required=False, allow_null=True, help_text=help_text)
    return None


def api_field_names(fields: tuple[fieldtable.FieldSpec, ...]) -> list[str]:
    return [spec.name for spec in fields if spec.in_api]


class FleetObjectSerializer(serializers.ModelSerializer):
    """Shared by NodePool and EC2NodeClass: fields from the field table, strict input, revision check,
    immutable name."""

    revision = serializers.IntegerField(
        required=False, min_value=1,
        help_text="Bumped on every change. Send the revision you read with PUT/PATCH to refuse a "
                  "stale overwrite (409 if someone else changed the object since).")

    field_table: tuple[fieldtable.FieldSpec, ...] = ()

    def get_fields(self) -> dict[str, serializers.Field]:
        fields: dict[str, serializers.Field] = super().get_fields()
        for spec in self.field_table:
            field = table_field(spec) if spec.name in fields else None
            if field is not None:
                fields[spec.name] = field
        return fields

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance is not None and "name" in self.fields:
            # The name is in the URL; repeating it in a PUT body is allowed, changing it is not.
            self.fields["name"].required = False
        for field in self.fields.values():
            if isinstance(field, serializers.JSONField):
                field.validators.append(_no_null_characters)

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            unknown = sorted(str(k) for k in data if k not in self.fields and k not in _OUTPUT_ONLY)
            if unknown:
                raise serializers.ValidationError({key: ["Unknown field."] for key in unknown})
        return super().to_internal_value(data)

    def validate_name(self, value: str) -> str:
        if self.instance is not None and value != self.instance.name:
            raise serializers.ValidationError(
                "The name of an existing object cannot be changed (Karpenter names are immutable); "
                "create a new one instead.")
        return value

    def service_values(self, *, replace: bool) -> tuple[dict[str, Any], int | None]:
        """(field values for the service, expected revision). With replace, absent fields get defaults."""
        data = dict(self.validated_data)
        expected_revision = data.pop("revision", None)
        if not replace:
            return data, expected_revision
        # Karpenter's own defaults (what the API server would apply) over the model's, so a minimal POST
        # gives the same object as importing a minimal manifest.
        karpenter_defaults = fieldtable.defaults(self.field_table)
        values: dict[str, Any] = {}
        for model_field in self.Meta.model._meta.concrete_fields:
            name = model_field.name
            if name not in self.fields or self.fields[name].read_only or name == "revision":
                continue
            if name in data:
                values[name] = data[name]
            elif name in karpenter_defaults:
                values[name] = _fresh(karpenter_defaults[name])
            elif model_field.has_default():
                values[name] = model_field.get_default()
            elif self.instance is not None:
                values[name] = getattr(self.instance, name)
        return values, expected_revision


def _fresh(value: Any) -> Any:
    return copy.deepcopy(value)


class ResourceUsageSerializer(serializers.Serializer):
    resource = serializers.CharField()
    used = serializers.CharField()
    limit = serializers.CharField(help_text="Empty when the NodePool sets no limit for this resource.")
    percent = serializers.IntegerField(allow_null=True)


class PoolUsageSerializer(serializers.Serializer):
    nodes = serializers.IntegerField(help_text="Active NodeClaims of this NodePool.")
    cost_per_hour = serializers.DecimalField(max_digits=14, decimal_places=6)
    resources = ResourceUsageSerializer(many=True, help_text="Allocatable capacity launched against the limits.")


class NodePoolSerializer(FleetObjectSerializer):
    """A karpenter.sh/v1 NodePool. JSON fields hold the values exactly as in the Karpenter YAML."""

    usage = serializers.SerializerMethodField()
    field_table = fieldtable.NODEPOOL_FIELDS

    class Meta:
        model = NodePool
        fields = [*api_field_names(fieldtable.NODEPOOL_FIELDS), "revision", "created_at", "updated_at", "usage"]
        read_only_fields = ["created_at", "updated_at", "usage"]

    @extend_schema_field(PoolUsageSerializer)
    def get_usage(self, obj: NodePool) -> dict[str, Any]:
        usage = (self.context.get("usage") or {}).get(obj.pk)
        if usage is None:
            usage = selectors.nodepool_usage(nodepool=obj)
        return PoolUsageSerializer({"nodes": usage.nodes, "cost_per_hour": usage.cost_per_hour,
                                    "resources": usage.rows()}).data


class EC2NodeClassSerializer(FleetObjectSerializer):
    """A karpenter.k8s.aws/v1 EC2NodeClass. JSON fields hold the values exactly as in the Karpenter YAML."""

    field_table = fieldtable.NODECLASS_FIELDS

    class Meta:
        model = EC2NodeClass
        fields = [*api_field_names(fieldtable.NODECLASS_FIELDS), "revision", "created_at", "updated_at"]
        read_only_fields = ["created_at", "updated_at"]


class NodeClaimSerializer(serializers.ModelSerializer):
    nodepool = serializers.CharField(source="nodepool_name", read_only=True,
                                     help_text="Name of the NodePool (kept after the NodePool is deleted).")
    state = serializers.ChoiceField(choices=[(s, s) for s in NodeClaim.STATES], read_only=True)

    class Meta:
        model = NodeClaim
        fields = [
            "name", "nodepool", "state", "instance_type", "instance_type_options", "capacity_type", "zone",
            "price_per_hour", "instance_id", "provider_id", "node_name", "requests", "allocatable", "labels",
            "taints", "created_at", "launched_at", "registered_at", "initialized_at", "drifted_at",
            "consolidatable_at", "disrupting_at", "terminated_at", "termination_reason",
            "deletion_requested_at", "deletion_reason", "deletion_status", "termination_deadline",
        ]
        read_only_fields = fields


class DecisionSerializer(serializers.ModelSerializer):
    nodepool = serializers.CharField(source="nodepool_name", read_only=True)
    savings_per_hour = serializers.SerializerMethodField()

    class Meta:
        model = Decision
        fields = ["id", "at", "kind", "nodepool", "nodes", "pods", "cost_before", "cost_after",
                  "savings_per_hour", "why", "details"]
        read_only_fields = fields

    @extend_schema_field(serializers.DecimalField(max_digits=13, decimal_places=6, allow_null=True))
    def get_savings_per_hour(self, obj: Decision) -> str | None:
        savings = obj.savings_per_hour
        return None if savings is None else f"{savings:.6f}"


class ChangeRecordSerializer(serializers.ModelSerializer):
    user = serializers.CharField(source="username", read_only=True,
                                 help_text="Who made the change (empty for the system).")
    changes = serializers.JSONField(
        read_only=True, help_text='{"spec.weight": [old, new], ...} in Karpenter YAML paths.')

    class Meta:
        model = ChangeRecord
        fields = ["id", "at", "object_type", "object_name", "action", "source", "user", "changes"]
        read_only_fields = fields


class ImportRequestSerializer(serializers.Serializer):
    yaml = serializers.CharField(allow_blank=True, trim_whitespace=False,
                                 help_text="One or more karpenter.sh/v1 NodePool and karpenter.k8s.aws/v1 "
                                           "EC2NodeClass documents.")
    dry_run = serializers.BooleanField(required=False, default=False)


class ImportProblemSerializer(serializers.Serializer):
    document = serializers.IntegerField(help_text="1-based index of the YAML document.")
    path = serializers.CharField(help_text="Karpenter YAML path, e.g. spec.template.spec.requirements[0].operator.")
    message = serializers.CharField()
    source = serializers.CharField(help_text="File name, when the YAML came as an upload.")


class ImportResultSerializer(serializers.Serializer):
    dry_run = serializers.BooleanField()
    created = serializers.ListField(child=serializers.CharField(), help_text="Kind/name of each object created.")
    updated = serializers.ListField(child=serializers.CharField())
    unchanged = serializers.ListField(child=serializers.CharField())
    conversion = serializers.ListField(
        child=serializers.DictField(), required=False,
        help_text="Only with ?convert=1: one entry per legacy field, {object, field, action: moved|changed|dropped|"
                  "defaulted, from, to, note}.")


class ImportErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()
    problems = ImportProblemSerializer(many=True)
