"""The one place where Django rows become `packing` objects (the engine never imports Django)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from packing.catalog import PriceOverride, load_builtin
from packing.instancetype import InstanceType


def price_overrides() -> list[PriceOverride]:
    from console.catalog.models import PriceOverrideRule

    return [rule.to_packing() for rule in PriceOverrideRule.objects.all()]


@lru_cache(maxsize=8)
def _catalog(region: str, overrides: tuple[PriceOverride, ...], kubelet_json: str) -> tuple[InstanceType, ...]:
    from django.conf import settings

    # Live data refreshed by the catalog tasks wins over the bundled snapshot when present.
    return tuple(load_builtin(region, overrides=overrides, kubelet=json.loads(kubelet_json) or None,
                              cache_dir=settings.LOADMASTER_CATALOG_CACHE))


def instance_types(region: str = "us-east-1", *, kubelet: Mapping[str, Any] | None = None,
                   overrides: Sequence[PriceOverride] | None = None) -> tuple[InstanceType, ...]:
    """The region's catalog with the operator's price overrides applied (cached per inputs)."""
    rules = tuple(price_overrides() if overrides is None else overrides)
    return _catalog(region, rules, json.dumps(dict(kubelet or {}), sort_keys=True))
