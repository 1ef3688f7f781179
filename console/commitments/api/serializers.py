"""The API's Commitment shape: the model's fields; the rules are the model's (400 naming the field)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from console.commitments.models import Commitment


class RatesField(serializers.DictField):
    child = serializers.CharField()


class CommitmentSerializer(serializers.ModelSerializer[Commitment]):
    rates = RatesField(required=False, help_text='spec.rates: family or type -> discount ("m5": "0.28")')
    manifest = serializers.SerializerMethodField()

    class Meta:
        model = Commitment
        fields = ("name", "type", "instance_type", "instance_family", "zone", "region", "count",
                  "hourly_commitment", "rates", "starts", "ends", "note", "source", "external_id", "manifest",
                  "created_at", "updated_at")
        read_only_fields = ("source", "external_id", "created_at", "updated_at")
        validators: list[Any] = []  # uniqueness is the model's, which names the field
        extra_kwargs = {"name": {"validators": []}}

    def get_manifest(self, obj: Commitment) -> dict[str, Any]:
        return obj.manifest()
