"""Commitment: what the bill already pays for, Reserved Instances and Savings Plans (docs/commitments.md).

Recorded by an operator (form, API, import) or read from AWS by the pricing refresh (console/backends), which keys
its rows by `source` and `external_id` (services.commitment_upsert). The engine gets them through
console/adapters.py (commitments) as packing.commitments.Commitment."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.urls import reverse
from django.utils import timezone

from console.commitments import manifests
from packing import api

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
TYPE_CHOICES = [(k.value, k.value) for k in api.CommitmentKind]


class Commitment(models.Model):
    name = models.CharField(max_length=253, unique=True)
    type = models.CharField(max_length=32, choices=TYPE_CHOICES)
    instance_type = models.CharField(max_length=64, blank=True, default="",
                                     help_text='Reserved Instances: the type ("m5.large"), or give the family.')
    instance_family = models.CharField(max_length=64, blank=True, default="",
                                       help_text='Reserved Instances (regional Linux) or an EC2 Instance Savings Plan: "m5".')
    zone = models.CharField(max_length=64, blank=True, default="", help_text="A zonal RI's zone.")
    region = models.CharField(max_length=64, blank=True, default="", help_text="A regional RI's or a plan's region.")
    count = models.IntegerField(null=True, blank=True, help_text="Reserved Instances: how many.")
    hourly_commitment = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True,
                                            help_text="Savings Plans: the commitment in $ per hour.")
    rates = models.JSONField(default=dict, blank=True,
                             help_text="Savings Plans: the discount off on-demand per family or type (0.28 = 28 %).")
    starts = models.DateTimeField(null=True, blank=True)
    ends = models.DateTimeField(null=True, blank=True)
    source = models.CharField(max_length=64, default=manifests.CONSOLE_SOURCE,
                              help_text='"console" for what an operator recorded; "aws:…" for what the refresh read.')
    external_id = models.CharField(max_length=200, blank=True, default="",
                                   help_text="The id at the source (a Reserved Instances or Savings Plan id).")
    note = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("name",)
        constraints = [
            models.UniqueConstraint(fields=("source", "external_id"), condition=~models.Q(external_id=""),
                                    name="commitment_source_external_id"),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("commitments:commitment-edit", args=[self.name])

    def field_values(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in manifests.FIELDS}

    def manifest(self) -> dict[str, Any]:
        return manifests.to_manifest(self.field_values())

    def to_packing(self) -> api.Commitment:
        return api.read_commitment(self.manifest(), source=self.source)

    @property
    def is_savings_plan(self) -> bool:
        return self.type != api.CommitmentKind.RESERVED_INSTANCES.value

    @property
    def active_now(self) -> bool:
        now: datetime = timezone.now()
        return (self.starts is None or self.starts <= now) and (self.ends is None or now < self.ends)

    def clean(self) -> None:
        """The document's rules, as the engine reads it (packing.api.read_commitment), at the field they name."""
        errors: dict[str, list[str]] = {}
        if not _DNS_SUBDOMAIN.fullmatch(self.name or ""):
            errors["name"] = ["must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-' and '.')"]
        if not isinstance(self.rates, dict):
            errors["rates"] = ["must be a mapping of instance family or type to a rate"]
        if not errors:
            try:
                api.read_commitment(self.manifest())
            except api.FieldError as exc:
                field = manifests.field_for_path(exc.path)
                base = manifests.PATHS.get(field, "")
                sub = exc.path[len(base) + 1:] if base and exc.path.startswith(base + ".") else ""
                errors[field] = [f"{sub}: {exc.message}" if sub else exc.message]
        if errors:
            raise ValidationError(errors)
