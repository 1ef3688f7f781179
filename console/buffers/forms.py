"""The CapacityBuffer form: inputs only; the rules are the model's (the engine's CRD rules)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from console.buffers.models import CapacityBuffer


class LimitsField(forms.CharField):
    """spec.limits as lines of `resource: quantity` ("cpu: 8")."""

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, dict):
            return "\n".join(f"{k}: {v}" for k, v in value.items())
        return value

    def to_python(self, value: Any) -> dict[str, str] | None:
        text = super().to_python(value)
        if not text:
            return None
        out: dict[str, str] = {}
        for line in str(text).splitlines():
            if not line.strip():
                continue
            key, sep, qty = line.partition(":")
            if not sep or not key.strip() or not qty.strip():
                raise ValidationError(f"{line.strip()!r}: write one `resource: quantity` per line (cpu: 8)")
            out[key.strip()] = qty.strip()
        return out


class BufferForm(forms.ModelForm):
    limits = LimitsField(required=False, widget=forms.Textarea(attrs={"rows": 3}),
                         help_text="One `resource: quantity` per line; caps the chunks by their total requests.")

    class Meta:
        model = CapacityBuffer
        fields = ("namespace", "name", "provisioning_strategy", "pod_template_ref", "scalable_api_group",
                  "scalable_kind", "scalable_name", "replicas", "percentage", "limits")
        labels = {"pod_template_ref": "podTemplateRef name", "scalable_api_group": "scalableRef apiGroup",
                  "scalable_kind": "scalableRef kind", "scalable_name": "scalableRef name",
                  "provisioning_strategy": "provisioningStrategy"}
