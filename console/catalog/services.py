"""Writes to the price overrides. Changing a rule changes what the engine will pay for a node, so
every change is validated here and the cached catalog is dropped at once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db import transaction

from console import adapters
from console.catalog.models import CatalogRefresh, PriceOverrideRule
from packing import api


def _invalidate() -> None:
    adapters.clear_catalog_cache()


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


def catalog_refresh(*, kind: str = "full") -> CatalogRefresh:
    """Pull live instance types, offerings and prices (kind "full", every 12 h) or spot prices
    (kind "spot", hourly) into the catalog cache. Only with the AWS backend and credentials: the
    simulated cloud has no AWS to ask, and then the bundled snapshot and the estimate stay in force."""
    region = settings.LOADMASTER_AWS_REGION
    if settings.LOADMASTER_CLOUD != "aws" or not api.have_aws_credentials():
        return CatalogRefresh.objects.create(
            region=region, kind=kind, ok=True, skipped=True,
            summary="skipped: live refresh needs LOADMASTER_CLOUD=aws and AWS credentials; "
                    "the bundled snapshot (and spot estimates) stay in force")
    cache_dir = settings.LOADMASTER_CATALOG_CACHE or str(settings.VAR_DIR / "catalog-cache")
    report = api.refresh_catalog(region, cache_dir, types=kind == "full",
                                 on_demand=kind == "full", spot=True)
    lines = report.lines()
    _invalidate()
    if kind == "full" and report.ok:
        # Reserved Instances and Savings Plans change as rarely as list prices: read with them (issue 19), when
        # AWS answered the catalog's own calls.
        from console.catalog.commitment_sync import aws_commitments_refresh
        lines.append(aws_commitments_refresh(region=region, types=adapters.instance_types(region)))
    return CatalogRefresh.objects.create(region=region, kind=kind, ok=report.ok, summary="\n".join(lines))
