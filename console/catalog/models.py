"""Price overrides: the operator's own prices (Savings Plans, Reserved Instances, enterprise
discounts) applied to the catalog before packing, in order, and always shown as overrides."""

from __future__ import annotations

import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from packing.api import PriceOverride, PricingError

CAPACITY_TYPES = [("on-demand", "on-demand"), ("spot", "spot"), ("*", "both")]
# What PriceOverride.matches compares with: "*", an instance family ("m5", "u-6tb1") or a whole
# instance type name ("m5.large", "mac2-m2pro.metal") — the values of the karpenter.k8s.aws/instance-family
# and node.kubernetes.io/instance-type labels. No other pattern or wildcard would ever match.
SELECTOR_RE = re.compile(r"\*|[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)?")
SELECTOR_HELP = ('"*", an instance family such as "m5", or an instance type such as "m5.large" '
                 "(lower case, as in the karpenter.k8s.aws/instance-family and node.kubernetes.io/instance-type labels)")


class PriceOverrideRule(models.Model):
    selector = models.CharField(max_length=64, help_text='An instance type ("m5.large"), a family ("m5") or "*" for all.')
    capacity_type = models.CharField(max_length=16, choices=CAPACITY_TYPES, default="on-demand")
    price = models.DecimalField("fixed $/hour", max_digits=12, decimal_places=6, null=True, blank=True)
    percent = models.DecimalField("adjustment %", max_digits=7, decimal_places=3, null=True, blank=True,
                                  help_text="-20 means 20% cheaper than the list price.")
    note = models.CharField(max_length=200, blank=True, default="", help_text='e.g. "Compute Savings Plan, 3 years"')
    position = models.PositiveIntegerField(default=0, help_text="Rules apply in this order; later rules see earlier results.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["position", "id"]

    def __str__(self) -> str:
        return self.to_packing().describe()

    def to_packing(self) -> PriceOverride:
        return PriceOverride(self.selector, price=float(self.price) if self.price is not None else None,
                             percent=float(self.percent) if self.percent is not None else None,
                             capacity_type=self.capacity_type)

    def clean(self) -> None:
        self.selector = (self.selector or "").strip()
        if not SELECTOR_RE.fullmatch(self.selector):
            raise ValidationError({"selector": f"Not a selector: give {SELECTOR_HELP}."})
        if (self.price is None) == (self.percent is None):
            raise ValidationError({"price": "Give exactly one of a fixed price or a percentage."})
        try:
            self.to_packing()
        except PricingError as exc:
            field = "price" if self.price is not None else "percent"
            if "selector" in str(exc):
                field = "selector"
            raise ValidationError({field: str(exc)}) from None


class CatalogRefresh(models.Model):
    """One run of the live catalog refresh: what it changed, or why it failed (the last good data stays)."""

    KIND_CHOICES = [("full", "types, offerings and prices"), ("spot", "spot prices")]

    at = models.DateTimeField(default=timezone.now, db_index=True)
    region = models.CharField(max_length=32)
    kind = models.CharField(max_length=8, choices=KIND_CHOICES)
    ok = models.BooleanField()
    skipped = models.BooleanField(default=False)
    summary = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-at", "-id"]
