"""The catalog's price overrides become NodeOverlays (the catalog page's override form now writes overlays).

Each rule becomes one overlay selecting what the rule matched (its selector as an instance-type or
instance-family requirement, its capacity type unless "*"), with the rule's fixed price or its percentage as a
priceAdjustment, and its note. Rules applied in order, each later one seeing the earlier results; overlays do
not stack (Karpenter: the highest weight wins per offering), so each rule's weight is its place in that order
(the last rule the heaviest): a later fixed price still wins as it did, while two percentages on one type no
longer multiply — the later one applies alone. docs/console.md says so."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import migrations

FAMILY_LABEL = "karpenter.k8s.aws/instance-family"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
MAX_WEIGHT = 10_000


def _plain(d: Decimal) -> str:
    return format(Decimal(d).normalize(), "f")


def forwards(apps: Any, schema_editor: Any) -> None:
    Rule = apps.get_model("catalog", "PriceOverrideRule")
    NodeOverlay = apps.get_model("overlays", "NodeOverlay")
    used = set(NodeOverlay.objects.values_list("name", flat=True))
    for rank, rule in enumerate(Rule.objects.order_by("position", "id"), start=1):
        requirements: list[dict[str, Any]] = []
        selector = (rule.selector or "").strip()
        if selector and selector != "*":
            key = INSTANCE_TYPE_LABEL if "." in selector else FAMILY_LABEL
            requirements.append({"key": key, "operator": "In", "values": [selector]})
        if rule.capacity_type and rule.capacity_type != "*":
            requirements.append({"key": CAPACITY_TYPE_LABEL, "operator": "In", "values": [rule.capacity_type]})
        stem = "all" if selector in ("", "*") else selector.replace(".", "-")
        kind = "any" if rule.capacity_type in ("", "*") else rule.capacity_type
        base = name = f"price-override-{stem}-{kind}"
        n = 2
        while name in used:
            name, n = f"{base}-{n}", n + 1
        used.add(name)
        percent = rule.percent
        NodeOverlay.objects.create(
            name=name,
            note=rule.note or "",
            requirements=requirements,
            price="" if rule.price is None else _plain(rule.price),
            price_adjustment="" if percent is None else f"{'+' if percent >= 0 else ''}{_plain(percent)}%",
            capacity={},
            weight=min(rank, MAX_WEIGHT),
        )


class Migration(migrations.Migration):
    dependencies = [
        ("overlays", "0001_s7_h19overlay_initial"),
        ("catalog", "0001_initial"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
