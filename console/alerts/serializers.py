from __future__ import annotations

from typing import Any

from rest_framework import serializers

from console.alerts.forms import ChannelForm, RuleForm
from console.alerts.models import AlertRule, Channel


def _current(model: Any, fields: list[str], instance: Any) -> dict[str, Any]:
    """The values a partial API write starts from: the row's (update) or the model defaults (create),
    so the form sees a complete submission just like the page would send."""
    out: dict[str, Any] = {}
    for name in fields:
        if name == "secret":
            continue
        value = getattr(instance, name) if instance is not None else model._meta.get_field(name).get_default()
        out[name] = value.pk if hasattr(value, "pk") else value
    return out


def _form_errors(form: Any) -> None:
    # One set of rules for pages and API: the form validates, the serializer reports.
    if not form.is_valid():
        raise serializers.ValidationError({k: list(v) for k, v in form.errors.items()})


class ChannelSerializer(serializers.ModelSerializer):
    secret = serializers.CharField(write_only=True, required=False, allow_blank=True)
    masked_secret = serializers.CharField(read_only=True)

    class Meta:
        model = Channel
        fields = ["id", "name", "kind", "secret", "secret_env", "masked_secret", "slack_channel", "api_base_url",
                  "disabled", "disabled_reason"]
        read_only_fields = ["disabled", "disabled_reason"]

    def _save(self, instance: Channel | None, data: dict[str, Any]) -> Channel:
        form = ChannelForm(data={**_current(Channel, ChannelForm.Meta.fields, instance), **data}, instance=instance)
        _form_errors(form)
        return form.save()

    def create(self, validated_data: dict[str, Any]) -> Channel:
        return self._save(None, validated_data)

    def update(self, instance: Channel, validated_data: dict[str, Any]) -> Channel:
        return self._save(instance, validated_data)


class RuleSerializer(serializers.ModelSerializer):
    class Meta:
        model = AlertRule
        fields = ["id", "name", "kind", "nodepool", "metric", "threshold", "window_minutes", "cooldown_minutes",
                  "channel", "enabled"]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        merged = {**_current(AlertRule, RuleForm.Meta.fields, self.instance), **attrs}
        if hasattr(merged.get("channel"), "pk"):
            merged["channel"] = merged["channel"].pk
        _form_errors(RuleForm(data=merged, instance=self.instance))
        return attrs
