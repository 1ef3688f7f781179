"""Writes of Commitments: the form, the API, the Karpenter YAML import (console/fleet/services.py hands this app the
Commitment documents of an import) and the AWS pricing refresh (commitment_upsert, commitment_prune) all save
through here; every write is checked by the model (the engine's rules) and nothing is saved when it is refused."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from console.commitments import manifests
from console.commitments.models import Commitment

# what an absent value is stored as
_EMPTY: dict[str, Any] = {"name": "", "source": manifests.CONSOLE_SOURCE, "external_id": "", "note": "", "type": "",
                          "instance_type": "", "instance_family": "", "zone": "", "region": "", "count": None,
                          "hourly_commitment": None, "rates": {}, "starts": None, "ends": None}
_NOT_NAME = re.compile(r"[^a-z0-9.-]+")


def _given(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _EMPTY[k] if values.get(k) is None else values[k] for k in manifests.FIELDS if k in values}


def _apply(commitment: Commitment, values: Mapping[str, Any]) -> Commitment:
    for key, value in _given(values).items():
        setattr(commitment, key, value)
    commitment.full_clean()
    commitment.save()
    return commitment


def commitment_create(*, values: Mapping[str, Any], user: Any = None) -> Commitment:
    """A new Commitment; ValidationError at the field (nothing saved) when the document's rules refuse it."""
    with transaction.atomic():
        return _apply(Commitment(), values)


def commitment_update(*, commitment: Commitment, values: Mapping[str, Any], user: Any = None) -> Commitment:
    with transaction.atomic():
        return _apply(commitment, values)


def commitment_delete(*, commitment: Commitment, user: Any = None) -> None:
    with transaction.atomic():
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
        return _apply(row, fields), created


def commitment_prune(*, source: str, keep: Collection[str]) -> int:
    """Delete the Commitments of `source` whose external id is not in `keep` (what the source no longer returns:
    an expired or sold RI); how many were deleted. Operator-recorded rows (source "console") are never pruned."""
    if source == manifests.CONSOLE_SOURCE:
        return 0
    with transaction.atomic():
        gone = Commitment.objects.filter(source=source).exclude(external_id__in=list(keep))
        count = gone.count()
        gone.delete()
    return count


def commitment_import_check(*, values: Mapping[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """What importing these values would do ("created", "updated" or "unchanged") and the model's problems as
    (document path, message); nothing is written."""
    existing = Commitment.objects.filter(name=values.get("name")).first()
    candidate = existing or Commitment()
    given = {k: _EMPTY[k] if values.get(k) is None else values[k] for k in manifests.FIELDS}
    unchanged = existing is not None and all(getattr(existing, k) == v for k, v in given.items())
    for key, value in given.items():
        setattr(candidate, key, value)
    try:
        candidate.full_clean(validate_unique=existing is None)
    except ValidationError as exc:
        problems = []
        for field, messages in exc.message_dict.items():
            for message in messages:
                path = manifests.PATHS.get(field, "spec")
                sub, sep, rest = message.partition(": ")
                if sep and sub and " " not in sub:
                    path, message = f"{path}.{sub}", rest
                problems.append((path, message))
        return "", problems
    return ("created" if existing is None else "unchanged" if unchanged else "updated"), []


def commitment_import_apply(*, values: Mapping[str, Any], user: Any = None) -> None:
    """Create or update the Commitment an import names (inside the import's transaction)."""
    existing = Commitment.objects.select_for_update().filter(name=values.get("name")).first()
    _apply(existing or Commitment(), {k: values.get(k) for k in manifests.FIELDS})


def commitments_export(commitments: Sequence[Commitment]) -> list[dict[str, Any]]:
    return [c.manifest() for c in commitments]
