"""The API's NodeOverlay shape: the model's fields; the rules are the model's (400 naming the field)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from console.overlays.models import NodeOverlay


class CapacityField(serializers.DictField):
    child = serializers.CharField()


class RequirementsField(serializers.ListField):
    child = serializers.DictField()


class NodeOverlaySerializer(serializers.ModelSerializer[NodeOverlay]):
    requirements = RequirementsField(required=False, help_text="spec.requirements: [{key, operator, values}]")
    capacity = CapacityField(required=False, help_text='spec.capacity: resource -> quantity ("hugepages-2Mi": "1Gi")')
    manifest = serializers.SerializerMethodField()

    class Meta:
        model = NodeOverlay
        fields = ("name", "requirements", "price", "price_adjustment", "capacity", "weight", "note", "manifest",
                  "created_at", "updated_at")
        read_only_fields = ("created_at", "updated_at")
        validators: list[Any] = []  # uniqueness is the model's, which names the field
        extra_kwargs = {"name": {"validators": []}}

    def get_manifest(self, obj: NodeOverlay) -> dict[str, Any]:
        return obj.manifest()
