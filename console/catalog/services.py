"""Writes to the price overrides. Changing a rule changes what the engine will pay for a node, so
every change is validated here and the cached catalog is dropped at once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from console import adapters
from console.catalog.models import PriceOverrideRule


def _invalidate() -> None:
    adapters._catalog.cache_clear()


@transaction.atomic
def price_override_create(*, values: Mapping[str, Any], user: Any) -> PriceOverrideRule:
    rule = PriceOverrideRule(**values, created_by=user if getattr(user, "pk", None) else None)
    rule.full_clean()
    rule.save()
    transaction.on_commit(_invalidate)
    return rule


@transaction.atomic
def price_override_delete(*, rule: PriceOverrideRule, user: Any) -> None:
    rule.delete()
    transaction.on_commit(_invalidate)
