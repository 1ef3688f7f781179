"""Reads of NodeOverlays, and what each one does to the catalog (the types it prices or sizes, its conflicts)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from console import adapters
from console.overlays.models import NodeOverlay


def overlay_list() -> QuerySet[NodeOverlay]:
    return NodeOverlay.objects.all()


def overlay_get(*, name: str) -> NodeOverlay | None:
    return NodeOverlay.objects.filter(name=name).first()


@dataclass(frozen=True)
class OverlayRow:
    overlay: NodeOverlay
    offerings: int  # offerings of the catalog it prices
    types: int  # instance types it gives capacity to
    conflict: str  # why it is not applied ("" when it is)


def overlay_rows(*, region: str) -> list[OverlayRow]:
    """Every NodeOverlay with what it does to the region's catalog, as the engine applies them all at once."""
    rows = list(overlay_list())
    result = adapters.overlay_result(region)
    conflicts = {c.overlay: str(c) for c in result.conflicts}
    out = []
    for row in rows:
        priced, sized = result.applied.get(row.name, (0, 0))
        out.append(OverlayRow(row, priced, sized, conflicts.get(row.name, "")))
    return out
