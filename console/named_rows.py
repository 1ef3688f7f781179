"""What the services of the objects kept by name share (NodeOverlays, Commitments): saving a row with its change
history (a rename is the old name deleted and the new one created), and an import's dry check of a row. No app is
imported here; each service passes its model, fields and history recorder."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from django.core.exceptions import ValidationError
from django.db.models import Model

Row = TypeVar("Row", bound=Model)
# (row, action, before): tells the change history; after is the row's manifest unless deleted
Recorder = Callable[[Any, str, Mapping[str, Any] | None], None]


def save_recorded(row: Row, saved: Row | None, before: Mapping[str, Any] | None, *, record: Recorder) -> Row:
    """Validate and save `row` (`saved`: the stored row it was, None when new) and record the change."""
    row.full_clean()
    creating = saved is None
    if saved is not None and saved.name != row.name:  # type: ignore[attr-defined]
        record(saved, "deleted", before)
        creating, before = True, None
    row.save()
    record(row, "created" if creating else "updated", before)
    return row


def import_check(model: type[Model], values: Mapping[str, Any], *, fields: Sequence[str], empty: Mapping[str, Any],
                 paths: Mapping[str, str]) -> tuple[str, list[tuple[str, str]]]:
    """What importing these values would do ("created", "updated" or "unchanged") and the model's problems as
    (document path, message); nothing is written. A message "sub: text" names a place inside its field."""
    existing = model._default_manager.filter(name=values.get("name")).first()
    candidate = existing or model()
    given = {k: empty[k] if values.get(k) is None else values[k] for k in fields}
    unchanged = existing is not None and all(getattr(existing, k) == v for k, v in given.items())
    for key, value in given.items():
        setattr(candidate, key, value)
    try:
        candidate.full_clean(validate_unique=existing is None)
    except ValidationError as exc:
        problems = []
        for field, messages in exc.message_dict.items():
            for message in messages:
                path = paths.get(field, "spec")
                sub, sep, rest = message.partition(": ")
                if sep and sub and " " not in sub:
                    path, message = f"{path}{'' if sub.startswith('[') else '.'}{sub}", rest
                problems.append((path, message))
        return "", problems
    return ("created" if existing is None else "unchanged" if unchanged else "updated"), []
