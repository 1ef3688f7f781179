"""Loadmaster's provisioning engine: pure Python, no Django, shared by the console, the loops and the CLI."""

from __future__ import annotations

from packing.instancetype import InstanceType, Offering
from packing.quantity import QuantityError, format_quantity, parse_quantity
from packing.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Resources

__all__ = [
    "CPU",
    "EPHEMERAL_STORAGE",
    "MEMORY",
    "PODS",
    "InstanceType",
    "Offering",
    "QuantityError",
    "Resources",
    "format_quantity",
    "parse_quantity",
]
