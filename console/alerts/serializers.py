"""API representations of channels and rules. Serializers check the shape of the input (types, lengths,
choices); the services validate and save, with the same rules and words as the pages."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers
from rest_framework.settings import api_settings

from console.alerts import services
from console.alerts.models import AlertRule, Channel

T = TypeVar("T")


@contextmanager
def service_errors() -> Iterator[None]:
    """A service's ValidationError as the API's 400, keyed by field."""
    try:
        yield
    except DjangoValidationError as exc:
        if not hasattr(exc, "error_dict"):
            raise serializers.ValidationError({api_settings.NON_FIELD_ERRORS_KEY: exc.messages}) from exc
        raise serializers.ValidationError(
            {api_settings.NON_FIELD_ERRORS_KEY if field == "__all__" else field: texts
             for field, texts in exc.message_dict.items()}) from exc


def _save(write: Callable[[], T]) -> T:
    with service_errors():
        return write()


class ChannelSerializer(serializers.ModelSerializer):
    secret = serializers.CharField(write_only=True, required=False, allow_blank=True)
    masked_secret = serializers.CharField(read_only=True)

    class Meta:
        model = Channel
        fields = ["id", "name", "kind", "secret", "secret_env", "masked_secret", "slack_channel", "api_base_url",
                  "disabled", "disabled_reason"]
        read_only_fields = ["disabled", "disabled_reason"]

    def create(self, validated_data: dict[str, Any]) -> Channel:
        return _save(lambda: services.channel_create(values=validated_data))

    def update(self, instance: Channel, validated_data: dict[str, Any]) -> Channel:
        return _save(lambda: services.channel_update(channel=instance, values=validated_data))


class RuleSerializer(serializers.ModelSerializer):
    class Meta:
        model = AlertRule
        fields = ["id", "name", "kind", "nodepool", "metric", "threshold", "window_minutes", "cooldown_minutes",
                  "channel", "enabled"]

    def create(self, validated_data: dict[str, Any]) -> AlertRule:
        return _save(lambda: services.rule_create(values=validated_data))

    def update(self, instance: AlertRule, validated_data: dict[str, Any]) -> AlertRule:
        return _save(lambda: services.rule_update(rule=instance, values=validated_data))
