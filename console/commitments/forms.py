"""The Commitment form: inputs only; the rules are the model's (the engine's document rules)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from console.commitments.models import Commitment


class RatesField(forms.CharField):
    """spec.rates as lines of `family or type: rate` ("m5: 0.28")."""

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, dict):
            return "\n".join(f"{k}: {v}" for k, v in value.items())
        return value

    def to_python(self, value: Any) -> dict[str, str]:
        text = super().to_python(value)
        out: dict[str, str] = {}
        for line in str(text or "").splitlines():
            if not line.strip():
                continue
            key, sep, rate = line.partition(":")
            if not sep or not key.strip() or not rate.strip():
                raise ValidationError(f"{line.strip()!r}: write one `family or type: rate` per line (m5: 0.28)")
            out[key.strip()] = rate.strip()
        return out


class CommitmentForm(forms.ModelForm):
    rates = RatesField(required=False, widget=forms.Textarea(attrs={"rows": 3}),
                       help_text="Savings Plans: one `family or type: rate` per line, the discount off on-demand "
                                 "as AWS states it (m5: 0.28 is 28 % off); a type with no rate is not covered.")

    class Meta:
        model = Commitment
        fields = ("name", "type", "instance_type", "instance_family", "zone", "region", "count",
                  "hourly_commitment", "rates", "starts", "ends", "note")
        widgets = {"starts": forms.DateTimeInput(attrs={"placeholder": "2026-01-01 00:00"}),
                   "ends": forms.DateTimeInput(attrs={"placeholder": "2027-01-01 00:00"})}
        labels = {"hourly_commitment": "hourlyCommitment ($/h)", "instance_type": "instanceType",
                  "instance_family": "instanceFamily"}
