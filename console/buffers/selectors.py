"""Reads of CapacityBuffers."""

from __future__ import annotations

from django.db.models import QuerySet

from console.buffers.models import CapacityBuffer
from console.fleet.models import ChangeRecord
from console.fleet.selectors import change_history


def buffer_list() -> QuerySet[CapacityBuffer]:
    return CapacityBuffer.objects.all()


def buffer_get(*, namespace: str, name: str) -> CapacityBuffer | None:
    return CapacityBuffer.objects.filter(namespace=namespace, name=name).first()


def buffer_history(*, buffer: CapacityBuffer | None = None, key: str = "",
                   limit: int | None = 50) -> QuerySet[ChangeRecord]:
    """The buffer's changes, newest first, in the history NodePools have (console.fleet); by `key`
    (namespace/name) it stays readable after the buffer is deleted. `limit` None: all of them."""
    name = str(buffer) if buffer is not None else key
    if limit is not None:
        return change_history(object_type=ChangeRecord.CAPACITYBUFFER, name=name, limit=limit)
    return ChangeRecord.objects.filter(object_type=ChangeRecord.CAPACITYBUFFER, object_name=name).select_related("user")
