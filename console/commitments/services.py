"""Writes of Commitments: the form, the API, the Karpenter YAML import (console/fleet/services.py hands this app the
Commitment documents of an import) and the AWS pricing refresh (commitment_upsert, commitment_prune) all save
through here; every write is checked by the model (the engine's rules) and nothing is saved when it is refused."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from console import named_rows
from console.commitments import manifests, signals
from console.commitments.models import Commitment

# what an absent value is stored as
_EMPTY: dict[str, Any] = {"name": "", "source": manifests.CONSOLE_SOURCE, "external_id": "", "note": "", "type": "",
                          "instance_type": "", "instance_family": "", "zone": "", "region": "", "count": None,
                          "hourly_commitment": None, "rates": {}, "starts": None, "ends": None}
_NOT_NAME = re.compile(r"[^a-z0-9.-]+")


def _given(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _EMPTY[k] if values.get(k) is None else values[k] for k in manifests.FIELDS if k in values}


def _record(commitment: Commitment, *, action: str, before: Mapping[str, Any] | None, user: Any,
            source: str) -> None:
    """Tell the change history (console.fleet listens to signals.commitment_changed) who changed what, from where."""
    after = None if action == "deleted" else commitment.manifest()
    signals.commitment_changed.send(sender=Commitment, key=commitment.name, action=action, before=before, after=after,
                                    user=user, source=source)


def _apply(commitment: Commitment, values: Mapping[str, Any], *, user: Any = None, source: str = "form") -> Commitment:
    saved = None if commitment.pk is None else Commitment.objects.get(pk=commitment.pk)
    before: dict[str, Any] | None = None if saved is None else saved.manifest()
    for key, value in _given(values).items():
        setattr(commitment, key, value)
    named_rows.save_recorded(commitment, saved, before, record=lambda row, action, was: _record(
        row, action=action, before=was, user=user, source=source))
    return commitment


def commitment_create(*, values: Mapping[str, Any], user: Any = None, source: str = "form") -> Commitment:
    """A new Commitment; ValidationError at the field (nothing saved) when the document's rules refuse it."""
    with transaction.atomic():
        return _apply(Commitment(), values, user=user, source=source)


def commitment_update(*, commitment: Commitment, values: Mapping[str, Any], user: Any = None,
                      source: str = "form") -> Commitment:
    with transaction.atomic():
        return _apply(commitment, values, user=user, source=source)


def commitment_delete(*, commitment: Commitment, user: Any = None, source: str = "form") -> None:
    with transaction.atomic():
        _record(commitment, action="deleted", before=commitment.manifest(), user=user, source=source)
        commitment.delete()


def _name_for(source: str, external_id: str) -> str:
    stem = _NOT_NAME.sub("-", f"{source.split(':')[0]}-{external_id}".lower()).strip("-.") or "commitment"
    name, n = stem[:240], 2
    while Commitment.objects.filter(name=name).exists():
        name = f"{stem[:240]}-{n}"
        n += 1
    return name


def commitment_upsert(*, source: str, external_id: str, values: Mapping[str, Any]) -> tuple[Commitment, bool]:
    """Create or update the Commitment that `source` (e.g. "aws:DescribeReservedInstances", "aws:savingsplans")
    knows by `external_id` (its Reserved Instances or Savings Plan id); (row, created).

    `values` are model fields: type (a CommitmentKind value), instance_type, instance_family, zone, region, count,
    hourly_commitment (Decimal or str, $/h), rates ({family or type: rate as str or Decimal, 0 <= r < 1}), starts,
    ends (aware datetimes), note, and optionally name (else one is made from source and id, e.g.
    "aws-ri-0123abcd"). A field left out keeps its stored value on an update. ValidationError at the field, and
    nothing saved, when the engine's rules refuse the result (a rate of 1 or more, an RI without type or family,
    a Savings Plan without hourly commitment...)."""
    if not source or not external_id:
        raise ValidationError({"external_id": ["a source and an external id are required"]})
    with transaction.atomic():
        row = Commitment.objects.select_for_update().filter(source=source, external_id=external_id).first()
        created = row is None
        if row is None:
            row = Commitment(source=source, external_id=external_id)
            row.name = str(values.get("name") or _name_for(source, external_id))
        fields = {k: v for k, v in values.items() if k not in ("source", "external_id")}
        if "rates" in fields and fields["rates"] is not None:
            fields["rates"] = {str(k): str(v) for k, v in dict(fields["rates"]).items()}
        return _apply(row, fields, source="system"), created


def commitment_prune(*, source: str, keep: Collection[str]) -> int:
    """Delete the Commitments of `source` whose external id is not in `keep` (what the source no longer returns:
    an expired or sold RI); how many were deleted. Operator-recorded rows (source "console") are never pruned."""
    if source == manifests.CONSOLE_SOURCE:
        return 0
    with transaction.atomic():
        gone = list(Commitment.objects.filter(source=source).exclude(external_id__in=list(keep)))
        for row in gone:
            _record(row, action="deleted", before=row.manifest(), user=None, source="system")
        count = len(gone)
        Commitment.objects.filter(pk__in=[row.pk for row in gone]).delete()
    return count


def commitment_import_check(*, values: Mapping[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """What importing these values would do ("created", "updated" or "unchanged") and the model's problems as
    (document path, message); nothing is written."""
    return named_rows.import_check(Commitment, values, fields=manifests.FIELDS, empty=_EMPTY, paths=manifests.PATHS)


def commitment_import_apply(*, values: Mapping[str, Any], user: Any = None) -> None:
    """Create or update the Commitment an import names (inside the import's transaction)."""
    existing = Commitment.objects.select_for_update().filter(name=values.get("name")).first()
    _apply(existing or Commitment(), {k: values.get(k) for k in manifests.FIELDS}, user=user, source="import")


def commitments_export(commitments: Sequence[Commitment]) -> list[dict[str, Any]]:
    return [c.manifest() for c in commitments]
