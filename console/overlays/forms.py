"""The NodeOverlay form: inputs only; the rules are the model's (the CRD's, as the engine reads them)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from console.overlays.models import NodeOverlay


class RequirementsField(forms.CharField):
    """spec.requirements as lines of `key Operator value, value` ("karpenter.k8s.aws/instance-family In m5, c5")."""

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return "\n".join(
                " ".join([str(r.get("key", "")), str(r.get("operator", "")), ", ".join(map(str, r.get("values") or []))]).strip()
                for r in value if isinstance(r, dict)
            )
        return value

    def to_python(self, value: Any) -> list[dict[str, Any]]:
        text = super().to_python(value)
        out: list[dict[str, Any]] = []
        for line in str(text or "").splitlines():
            if not line.strip():
                continue
            parts = line.split(None, 2)
            if len(parts) < 2:
                raise ValidationError(f"{line.strip()!r}: write one `key Operator value, value` per line "
                                      "(karpenter.k8s.aws/instance-family In m5, c5)")
            req: dict[str, Any] = {"key": parts[0], "operator": parts[1]}
            if len(parts) == 3:
                req["values"] = [v.strip() for v in parts[2].split(",") if v.strip()]
            out.append(req)
        return out


class CapacityField(forms.CharField):
    """spec.capacity as lines of `resource: quantity` ("hugepages-2Mi: 1Gi")."""

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
            key, sep, qty = line.partition(":")
            if not sep or not key.strip() or not qty.strip():
                raise ValidationError(f"{line.strip()!r}: write one `resource: quantity` per line (hugepages-2Mi: 1Gi)")
            out[key.strip()] = qty.strip()
        return out


class OverlayForm(forms.ModelForm):
    requirements = RequirementsField(
        required=False, widget=forms.Textarea(attrs={"rows": 4}),
        help_text="One `key Operator value, value` per line (In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte) over "
                  "the instance type's labels, its zone and capacity type; none: every offering.")
    capacity = CapacityField(required=False, widget=forms.Textarea(attrs={"rows": 2}),
                             help_text="Extended resources only, one `resource: quantity` per line.")

    class Meta:
        model = NodeOverlay
        fields = ("name", "requirements", "price", "price_adjustment", "capacity", "weight", "note")
        labels = {"price_adjustment": "priceAdjustment"}
