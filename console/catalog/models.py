"""The catalog's live refreshes. The catalog page's price overrides (the operator's own prices: Savings Plans,
Reserved Instances, enterprise discounts) are stored as NodeOverlays (console/overlays); what an override form
accepts as a selector is defined here."""

from __future__ import annotations

import re

from django.db import models
from django.utils import timezone

CAPACITY_TYPES = [("on-demand", "on-demand"), ("spot", "spot"), ("*", "both")]
# What an override selects: "*", an instance family ("m5", "u-6tb1") or a whole instance type name ("m5.large",
# "mac2-m2pro.metal") — the values of the karpenter.k8s.aws/instance-family and node.kubernetes.io/instance-type
# labels its NodeOverlay's requirement matches. No other pattern or wildcard would ever match.
SELECTOR_RE = re.compile(r"\*|[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)?")
SELECTOR_HELP = ('"*", an instance family such as "m5", or an instance type such as "m5.large" '
                 "(lower case, as in the karpenter.k8s.aws/instance-family and node.kubernetes.io/instance-type labels)")


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
