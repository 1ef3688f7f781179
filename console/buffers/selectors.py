"""Reads of CapacityBuffers."""

from __future__ import annotations

from django.db.models import QuerySet

from console.buffers.models import CapacityBuffer


def buffer_list() -> QuerySet[CapacityBuffer]:
    return CapacityBuffer.objects.all()


def buffer_get(*, namespace: str, name: str) -> CapacityBuffer | None:
    return CapacityBuffer.objects.filter(namespace=namespace, name=name).first()


