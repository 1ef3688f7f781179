"""NodeOverlay: Karpenter's karpenter.sh/v1alpha1 price and capacity adjustments, applied by the console's catalog
(console/adapters.py) wherever it prices or sizes a node. The catalog page's price overrides are a front end that
writes these rows."""

from __future__ import annotations

import re
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.urls import reverse

from console.overlays import manifests
from packing import api

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


class NodeOverlay(models.Model):
    name = models.CharField(max_length=253, unique=True)
    note = models.CharField(max_length=200, blank=True, default="",
                            help_text='Your own words, e.g. "Compute Savings Plan, 3 years" (exported as an annotation).')
    requirements = models.JSONField(default=list, blank=True,
                                    help_text="Which offerings it applies to; none: every offering.")
    price = models.CharField(max_length=40, blank=True, default="",
                             help_text='A fixed $/hour for the offerings it selects, e.g. "0.085".')
    price_adjustment = models.CharField(max_length=40, blank=True, default="",
                                        help_text='"+0.1" or "-0.05" ($/hour), "+5%" or "-10%".')
    capacity = models.JSONField(default=dict, blank=True,
                                help_text="Extended resources the selected types have, e.g. hugepages-2Mi: 1Gi.")
    weight = models.IntegerField(null=True, blank=True,
                                 help_text="1 to 10000; the higher weight wins where overlays overlap (none: 0).")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("name",)

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("overlays:overlay-edit", args=[self.name])

    def field_values(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in manifests.FIELDS}

    def manifest(self) -> dict[str, Any]:
        return manifests.to_manifest(self.field_values())

    def to_packing(self) -> api.NodeOverlay:
        return api.read_overlay(self.manifest())

    def price_change(self) -> str:
        """What it does to a price, as a person reads it: "$0.085/h", "-10%", "" (no price change)."""
        if self.price:
            return f"${self.price}/h"
        return self.price_adjustment

    def clean(self) -> None:
        """The CRD's rules, as the engine reads the object (packing.api.read_overlay), at the field they name."""
        errors: dict[str, list[str]] = {}
        if not _DNS_SUBDOMAIN.fullmatch(self.name or "") or len(self.name or "") > 253:
            errors["name"] = ["must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-' and '.')"]
        if self.weight is not None and not 1 <= self.weight <= 10_000:
            errors["weight"] = ["must be from 1 to 10000 (leave it empty for 0)"]
        if self.price and self.price_adjustment:
            errors["price_adjustment"] = ["cannot set both 'price' and 'priceAdjustment'"]
        if not errors:
            try:
                api.read_overlay(self.manifest())
            except api.FieldError as exc:
                field = manifests.field_for_path(exc.path)
                base = manifests.PATHS.get(field, "")
                # a place inside the field (spec.requirements[0].operator) stays in the message
                sub = exc.path[len(base):].lstrip(".") if base and exc.path != base else ""
                errors[field] = [f"{sub}: {exc.message}" if sub else exc.message]
        if errors:
            raise ValidationError(errors)
