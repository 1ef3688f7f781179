"""The API's CapacityBuffer shape: the model's fields; the rules are the model's (400 naming the field)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from console.buffers.models import CapacityBuffer


class LimitsField(serializers.DictField):
    child = serializers.CharField()


class CapacityBufferSerializer(serializers.ModelSerializer[CapacityBuffer]):
    limits = LimitsField(required=False, allow_null=True,
                         help_text="spec.limits: resource name -> quantity (\"cpu\": \"8\")")
    manifest = serializers.SerializerMethodField()

    class Meta:
        model = CapacityBuffer
        fields = ("namespace", "name", "provisioning_strategy", "pod_template_ref", "scalable_api_group",
                  "scalable_kind", "scalable_name", "replicas", "percentage", "limits", "manifest",
                  "created_at", "updated_at")
        read_only_fields = ("created_at", "updated_at")
        # the (namespace, name) pair is checked by the model, which names the field
        validators: list[Any] = []

    def get_manifest(self, obj: CapacityBuffer) -> dict[str, Any]:
        return obj.manifest()
