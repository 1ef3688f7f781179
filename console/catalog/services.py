"""Writes of the catalog page: its price overrides (written as NodeOverlays by console/overlays, which validates
them and drops the cached catalog) and the live refresh."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings

from console import adapters
from console.catalog.models import CatalogRefresh
from console.overlays import services as overlay_services
from console.overlays.models import NodeOverlay
from packing import api


def _invalidate() -> None:
    adapters.clear_catalog_cache()


def price_override_create(*, values: Mapping[str, Any], user: Any) -> NodeOverlay:
    """A price override, written as the NodeOverlay it stands for (console/overlays)."""
    return overlay_services.price_override_create(
        selector=values["selector"], capacity_type=values["capacity_type"], price=values.get("price"),
        percent=values.get("percent"), weight=values.get("weight"), note=values.get("note") or "", user=user)


def price_override_delete(*, overlay: NodeOverlay, user: Any) -> None:
    overlay_services.overlay_delete(overlay=overlay, user=user)


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
