"""Loadmaster's provisioning engine: pure Python, no Django, shared by the console, the loops and the CLI.

Its public API is packing.api (parse Kubernetes objects, plan, consolidate, lower bounds, explanations). It is
not re-exported here: importing it loads the whole engine (the scheduler, the LP, the disruption engine), and
`import packing.quantity` should stay cheap. This package exports the leaf value types only.
"""

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
