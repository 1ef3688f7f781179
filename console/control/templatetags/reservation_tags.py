"""Capacity reservations on the console's pages: an EC2NodeClass's resolved reservations (its status) and the
Capacity Block window of a node. One inclusion tag each, so the pages that show them need one line."""

from __future__ import annotations

from typing import Any

from django import template

from console.control.reservations import node_capacity_block, nodeclass_reservations

register = template.Library()


@register.inclusion_tag("control/_nodeclass_reservations.html")
def nodeclass_reservation_status(nodeclass: Any) -> dict[str, Any]:
    return {"nodeclass": nodeclass, "terms": list(nodeclass.capacity_reservation_selector_terms or []),
            "reservations": nodeclass_reservations(nodeclass_name=nodeclass.name)}


@register.inclusion_tag("control/_node_capacity_block.html")
def node_capacity_block_window(node_name: str) -> dict[str, Any]:
    return {"block": node_capacity_block(node_name=node_name)}
