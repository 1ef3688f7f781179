"""CapacityBuffer: headroom kept in the cluster (autoscaling.x-k8s.io/v1beta1), as the engine's virtual pods."""

from __future__ import annotations

import re
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.urls import reverse

from console.buffers import manifests
from packing import api
from packing.api import ACTIVE_CAPACITY

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


class CapacityBuffer(models.Model):
    namespace = models.CharField(max_length=63, default="default")
    name = models.CharField(max_length=253)
    provisioning_strategy = models.CharField(max_length=253, default=ACTIVE_CAPACITY)
    pod_template_ref = models.CharField(max_length=253, blank=True, default="",
                                        help_text="A PodTemplate of the buffer's namespace: the shape of one chunk.")
    scalable_api_group = models.CharField(max_length=253, blank=True, default="")
    scalable_kind = models.CharField(max_length=63, blank=True, default="")
    scalable_name = models.CharField(max_length=253, blank=True, default="")
    replicas = models.IntegerField(null=True, blank=True)
    percentage = models.IntegerField(null=True, blank=True)
    limits = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("namespace", "name")
        constraints = [models.UniqueConstraint(fields=("namespace", "name"), name="buffer_namespace_name")]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    def get_absolute_url(self) -> str:
        return reverse("buffers:buffer-edit", args=[self.namespace, self.name])

    def field_values(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in manifests.FIELDS}

    def manifest(self) -> dict[str, Any]:
        return manifests.to_manifest(self.field_values())

    def clean(self) -> None:
        """The CRD's rules, as the engine reads the object (packing.api.check_buffer), at the field they name."""
        errors: dict[str, list[str]] = {}
        if not _DNS_SUBDOMAIN.fullmatch(self.name or ""):
            errors["name"] = ["must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-' and '.')"]
        if not _DNS_LABEL.fullmatch(self.namespace or ""):
            errors["namespace"] = ["must be a lowercase RFC 1123 label (a-z, 0-9 and '-', at most 63)"]
        for key in ("replicas", "percentage"):
            value = getattr(self, key)
            if value is not None and value < 0:
                errors[key] = ["must be greater than or equal to 0"]
        if not errors:
            try:
                api.check_buffer(self.manifest())
            except api.FieldError as exc:
                field = manifests.field_for_path(exc.path)
                base = manifests.PATHS.get(field, "")
                # a key inside the field (spec.limits.cpu) stays in the message, as the form shows the field whole
                sub = exc.path[len(base) + 1 :] if base and exc.path.startswith(base + ".") else ""
                errors[field] = [f"{sub}: {exc.message}" if sub else exc.message]
        if errors:
            raise ValidationError(errors)
