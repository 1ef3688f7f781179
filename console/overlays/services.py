"""Writes of NodeOverlays: the form, the API, the catalog page's price overrides and the Karpenter YAML import
(console/fleet/services.py hands this app the NodeOverlay documents of an import) all save through here. A change
changes what the engine pays for a node, so the cached catalog is dropped when the write commits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from console import adapters, named_rows
from console.overlays import manifests, signals
from console.overlays.models import NodeOverlay

FAMILY_LABEL = "karpenter.k8s.aws/instance-family"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"


def _invalidate() -> None:
    adapters.clear_catalog_cache()


# what an absent value is stored as (a null weight is Karpenter's 0)
_EMPTY: dict[str, Any] = {"name": "", "note": "", "requirements": [], "price": "", "price_adjustment": "",
                          "capacity": {}, "weight": None}


def _record(overlay: NodeOverlay, *, action: str, before: Mapping[str, Any] | None, user: Any, source: str) -> None:
    """Tell the change history (console.fleet listens to signals.overlay_changed) who changed what, from where."""
    after = None if action == "deleted" else overlay.manifest()
    signals.overlay_changed.send(sender=NodeOverlay, key=overlay.name, action=action, before=before, after=after,
                                 user=user, source=source)


def _apply(overlay: NodeOverlay, values: Mapping[str, Any], *, user: Any = None, source: str = "form") -> NodeOverlay:
    saved = None if overlay.pk is None else NodeOverlay.objects.get(pk=overlay.pk)
    before: dict[str, Any] | None = None if saved is None else saved.manifest()
    for key in manifests.FIELDS:
        if key in values:
            setattr(overlay, key, _EMPTY[key] if values[key] is None else values[key])
    named_rows.save_recorded(overlay, saved, before, record=lambda row, action, was: _record(
        row, action=action, before=was, user=user, source=source))
    transaction.on_commit(_invalidate)
    return overlay


def overlay_create(*, values: Mapping[str, Any], user: Any = None, source: str = "form") -> NodeOverlay:
    """A new NodeOverlay; ValidationError at the field (nothing saved) when the CRD's rules refuse it."""
    with transaction.atomic():
        return _apply(NodeOverlay(), values, user=user, source=source)


def overlay_update(*, overlay: NodeOverlay, values: Mapping[str, Any], user: Any = None,
                   source: str = "form") -> NodeOverlay:
    with transaction.atomic():
        return _apply(overlay, values, user=user, source=source)


def overlay_delete(*, overlay: NodeOverlay, user: Any = None, source: str = "form") -> None:
    with transaction.atomic():
        _record(overlay, action="deleted", before=overlay.manifest(), user=user, source=source)
        overlay.delete()
        transaction.on_commit(_invalidate)


def overlay_import_check(*, values: Mapping[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """What importing these values would do ("created", "updated" or "unchanged") and the model's problems as
    (manifest path, message); nothing is written."""
    return named_rows.import_check(NodeOverlay, values, fields=manifests.FIELDS, empty=_EMPTY, paths=manifests.PATHS)


def overlay_import_apply(*, values: Mapping[str, Any], user: Any = None) -> None:
    """Create or update the NodeOverlay an import names (inside the import's transaction)."""
    existing = NodeOverlay.objects.select_for_update().filter(name=values.get("name")).first()
    _apply(existing or NodeOverlay(), values, user=user, source="import")


def overlays_export(overlays: Sequence[NodeOverlay]) -> list[dict[str, Any]]:
    return [o.manifest() for o in overlays]


# --- the catalog page's price overrides: a Loadmaster front end that writes NodeOverlays ----------------------

def override_values(*, selector: str, capacity_type: str, price: Decimal | None, percent: Decimal | None,
                    weight: int | None = None, note: str = "", name: str = "") -> dict[str, Any]:
    """The NodeOverlay a price override stands for: `selector` "*", a family ("m5") or a type ("m5.large");
    `capacity_type` "on-demand", "spot" or "*"; a fixed `price` ($/h) or a `percent` (-20: 20 % cheaper)."""
    requirements: list[dict[str, Any]] = []
    if selector and selector != "*":
        key = INSTANCE_TYPE_LABEL if "." in selector else FAMILY_LABEL
        requirements.append({"key": key, "operator": "In", "values": [selector]})
    if capacity_type and capacity_type != "*":
        requirements.append({"key": CAPACITY_TYPE_LABEL, "operator": "In", "values": [capacity_type]})
    stem = "all" if selector in ("", "*") else selector.replace(".", "-")
    kind = "any" if capacity_type in ("", "*") else capacity_type
    return {
        "name": name or f"price-override-{stem}-{kind}",
        "note": note,
        "requirements": requirements,
        "price": "" if price is None else _plain(price),
        "price_adjustment": "" if percent is None else f"{'+' if percent >= 0 else ''}{_plain(percent)}%",
        "capacity": {},
        "weight": weight,
    }


def _plain(d: Decimal | str | float) -> str:
    text = format(Decimal(str(d)).normalize(), "f")
    return text if text not in ("-0",) else "0"


def price_override_create(*, selector: str, capacity_type: str, price: Decimal | None, percent: Decimal | None,
                          weight: int | None = None, note: str = "", user: Any = None) -> NodeOverlay:
    """A price override written as the NodeOverlay it stands for (override_values); its name is made unique."""
    values = override_values(selector=selector, capacity_type=capacity_type, price=price, percent=percent,
                             weight=weight, note=note)
    if price is None and percent is None:
        raise ValidationError({"price": ["Give a fixed price or a percentage."]})
    if price is not None and percent is not None:
        raise ValidationError({"price": ["Give exactly one of a fixed price or a percentage."]})
    base, n = values["name"], 2
    while NodeOverlay.objects.filter(name=values["name"]).exists():
        values["name"] = f"{base}-{n}"
        n += 1
    errors: dict[str, list[str]] = {}
    try:
        return overlay_create(values=values, user=user)
    except ValidationError as exc:
        # the override form has no requirements field: its selector is what they were made from
        for field, messages in exc.message_dict.items():
            target = {"requirements": "selector", "price_adjustment": "percent"}.get(field, field)
            errors.setdefault(target, []).extend(messages)
    raise ValidationError(errors)
