"""Reads of Commitments."""

from __future__ import annotations

from django.db.models import QuerySet

from console.commitments.models import Commitment


def commitment_list() -> QuerySet[Commitment]:
    return Commitment.objects.all()


def commitment_get(*, name: str) -> Commitment | None:
    return Commitment.objects.filter(name=name).first()
