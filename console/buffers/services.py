"""Writes of CapacityBuffers: the form, the API and the Karpenter YAML import (console/fleet/services.py hands
this app the CapacityBuffer documents of an import) all save through here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from console.buffers import manifests, signals
from console.buffers.models import CapacityBuffer


def _record(buffer: CapacityBuffer, *, action: str, before: Mapping[str, Any] | None, user: Any,
            source: str) -> None:
    """Tell the change history (console.fleet listens to signals.buffer_changed) who changed what, from where."""
    after = None if action == "deleted" else buffer.manifest()
    signals.buffer_changed.send(sender=CapacityBuffer, key=str(buffer), action=action, before=before, after=after,
                                user=user, source=source)


def _apply(buffer: CapacityBuffer, values: Mapping[str, Any], *, user: Any, source: str) -> CapacityBuffer:
    saved = None if buffer.pk is None else CapacityBuffer.objects.get(pk=buffer.pk)
    creating = saved is None
    before: dict[str, Any] | None = None if saved is None else saved.manifest()
    for key in manifests.FIELDS:
        if key in values:
            setattr(buffer, key, values[key])
    buffer.full_clean()
    if saved is not None and str(saved) != str(buffer):
        # a rename is the old buffer gone and a new one made, each in the history of its own namespace/name
        _record(saved, action="deleted", before=before, user=user, source=source)
        creating, before = True, None
    buffer.save()
    _record(buffer, action="created" if creating else "updated", before=before, user=user, source=source)
    return buffer


def buffer_create(*, values: Mapping[str, Any], user: Any = None, source: str = "form") -> CapacityBuffer:
    """A new buffer; ValidationError at the field (nothing saved) when the CRD's rules refuse it."""
    with transaction.atomic():
        return _apply(CapacityBuffer(), values, user=user, source=source)


def buffer_update(*, buffer: CapacityBuffer, values: Mapping[str, Any], user: Any = None,
                  source: str = "form") -> CapacityBuffer:
    with transaction.atomic():
        return _apply(buffer, values, user=user, source=source)


def buffer_delete(*, buffer: CapacityBuffer, user: Any = None, source: str = "form") -> None:
    with transaction.atomic():
        _record(buffer, action="deleted", before=buffer.manifest(), user=user, source=source)
        buffer.delete()


def buffer_import_check(*, values: Mapping[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """What importing these values would do ("created", "updated" or "unchanged") and the model's problems as
    (manifest path, message); nothing is written."""
    existing = CapacityBuffer.objects.filter(namespace=values.get("namespace"), name=values.get("name")).first()
    candidate = existing or CapacityBuffer()
    unchanged = existing is not None and all(getattr(existing, k) == values.get(k) for k in manifests.FIELDS)
    for key in manifests.FIELDS:
        setattr(candidate, key, values.get(key))
    try:
        candidate.full_clean(validate_unique=existing is None)
    except ValidationError as exc:
        problems = []
        for field, messages in exc.message_dict.items():
            for message in messages:
                path = manifests.PATHS.get(field, "spec")
                sub, sep, rest = message.partition(": ")
                if sep and sub and " " not in sub:  # a key inside the field, as models.CapacityBuffer.clean puts it
                    path, message = f"{path}.{sub}", rest
                problems.append((path, message))
        return "", problems
    return ("created" if existing is None else "unchanged" if unchanged else "updated"), []


def buffer_import_apply(*, values: Mapping[str, Any], user: Any = None) -> None:
    """Create or update the buffer an import names (inside the import's transaction)."""
    existing = CapacityBuffer.objects.select_for_update().filter(
        namespace=values.get("namespace"), name=values.get("name")).first()
    _apply(existing or CapacityBuffer(), values, user=user, source="import")


def buffers_export(buffers: list[CapacityBuffer]) -> list[dict[str, Any]]:
    return [b.manifest() for b in buffers]
