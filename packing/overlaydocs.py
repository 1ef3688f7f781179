"""Reading a `karpenter.sh/v1alpha1 NodeOverlay` document into packing.overlay.NodeOverlay.

The rules are the CRD's (kubernetes-sigs/karpenter pkg/apis/v1alpha1/nodeoverlay.go and its runtime validation),
each refused at its field with a FieldError:
- spec.requirements: at most 100; a qualified label key; an operator of In, NotIn, Exists, DoesNotExist, Gt,
  Lt, Gte, Lte; In and NotIn need values; Gt, Lt, Gte and Lte exactly one non-negative integer.
- spec.price: a plain non-negative decimal ("0.25"); spec.priceAdjustment: a signed amount ("+0.1", "-0.05"),
  an increase in percent ("+15%") or a decrease from "-0%" to "-99.99…%" or "-100%"; never both.
- spec.capacity: extended resources only (not cpu, memory, ephemeral-storage or pods).
- spec.weight: 1 to 10000 (absent: 0).
A requirement on `karpenter.sh/nodepool` is refused: Loadmaster applies overlays to the one catalog all NodePools
share (docs/engine.md). Fields outside the CRD's spec are refused too, so that a misspelt field is not silently
ignored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from packing.fields import FieldError, as_int, as_list, as_object, as_str, resources, sub_path
from packing.nodepool import NODEPOOL_LABEL
from packing.overlay import NodeOverlay
from packing.podspec import requirement
from packing.requirements import Requirements
from packing.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from packing.yamlinput import brief

__all__ = [
    "MAX_OVERLAY_REQUIREMENTS",
    "MAX_OVERLAY_WEIGHT",
    "NODEOVERLAY_API_VERSION",
    "NODEOVERLAY_KIND",
    "RESTRICTED_CAPACITY",
    "check_price",
    "check_price_adjustment",
    "read_overlay",
]

NODEOVERLAY_API_VERSION = "karpenter.sh/v1alpha1"
NODEOVERLAY_KIND = "NodeOverlay"
MAX_OVERLAY_REQUIREMENTS = 100  # the CRD's MaxItems
MAX_OVERLAY_WEIGHT = 10_000  # the CRD's Maximum (Minimum 1)
RESTRICTED_CAPACITY = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)  # the CRD's rule: capacity adds extended resources
SPEC_FIELDS = frozenset({"requirements", "price", "priceAdjustment", "capacity", "weight"})

# the CRD's patterns for spec.price and spec.priceAdjustment
_PRICE = re.compile(r"\d+(\.\d+)?", re.ASCII)
_ADJUSTMENT = re.compile(r"[+-]\d*\.?\d+|\+\d*\.?\d+%|-\d{1,2}(\.\d+)?%|-100%", re.ASCII)
# Kubernetes' qualified name: an optional DNS-subdomain prefix and a name of up to 63 characters
_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]", re.ASCII)
_PREFIX = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", re.ASCII)
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?", re.ASCII)


def _text(v: Any, path: str) -> str:
    """A string field that YAML may have read as a number (price: 0.25)."""
    if isinstance(v, bool) or not isinstance(v, str | int | float):
        raise FieldError(path, f"must be a string, got {brief(v)}")
    return v.strip() if isinstance(v, str) else str(v)


def check_price(v: Any, path: str = "spec.price") -> float:
    """spec.price: dollars per hour as a plain decimal ("0.25")."""
    text = _text(v, path)
    if len(text) > 40 or not _PRICE.fullmatch(text):
        raise FieldError(path, f"must be a price such as '0.25' (digits, an optional decimal part), got {brief(v)}")
    return float(text)


def check_price_adjustment(v: Any, path: str = "spec.priceAdjustment") -> str:
    """spec.priceAdjustment as Karpenter writes it: "+0.1", "-0.05", "+15%", "-10%"."""
    text = _text(v, path)
    if len(text) > 40 or not _ADJUSTMENT.fullmatch(text):
        raise FieldError(
            path,
            f"must be a signed amount such as '+0.1' or '-0.05', or a percentage such as '+15%' or '-10%' "
            f"(a decrease of at most 100%), got {brief(v)}",
        )
    return text


def _key(key: str, path: str) -> None:
    prefix, slash, name = key.rpartition("/")
    ok = bool(_NAME.fullmatch(name)) and (not slash or (len(prefix) <= 253 and bool(_PREFIX.fullmatch(prefix))))
    if not ok:
        raise FieldError(path, f"{brief(key)} is not a qualified label key (an optional DNS prefix/ and a name)")
    if key == NODEPOOL_LABEL:
        raise FieldError(
            path,
            f"{NODEPOOL_LABEL} is not supported: Loadmaster applies overlays to the catalog all NodePools share",
        )


def _requirements(v: Any, path: str) -> Requirements:
    items = as_list(v, path)
    if len(items) > MAX_OVERLAY_REQUIREMENTS:
        raise FieldError(path, f"at most {MAX_OVERLAY_REQUIREMENTS} requirements, got {len(items)}")
    reqs = []
    for i, item in enumerate(items):
        rp = f"{path}[{i}]"
        r = requirement(item, rp)  # unknown operator, missing key, In without values, bad integers
        _key(r.key, f"{rp}.key")
        raw = as_object(item, rp)
        values = [str(x) for x in as_list(raw.get("values"), f"{rp}.values")]
        if r.operator == "NotIn" and not values:
            raise FieldError(f"{rp}.values", "requirements with operator 'NotIn' must have a value defined")
        if r.operator in ("Exists", "DoesNotExist") and values:
            raise FieldError(f"{rp}.values", f"operator {r.operator} takes no values")
        if r.operator in ("Gt", "Lt", "Gte", "Lte") and int(values[0]) < 0:
            raise FieldError(
                f"{rp}.values", f"operator {r.operator} must have a single positive integer value, got {brief(values[0])}"
            )
        for j, value in enumerate(values):
            if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
                raise FieldError(f"{rp}.values[{j}]", f"{brief(value)} is not a valid label value")
        reqs.append(r)
    return Requirements(reqs)


def read_overlay(doc: Mapping[str, Any]) -> NodeOverlay:
    """The NodeOverlay of a document (apiVersion and kind already known); FieldError naming the field."""
    meta = as_object(doc.get("metadata"), "metadata")
    name = as_str(meta.get("name"), "metadata.name", required=True)
    if not name:
        raise FieldError("metadata.name", "is required")
    if doc.get("spec") is None:
        raise FieldError("spec", "is required")
    spec = as_object(doc.get("spec"), "spec")
    for key in sorted(map(str, spec)):
        if key not in SPEC_FIELDS:
            raise FieldError(sub_path("spec", key), "unknown field (not in the NodeOverlay v1alpha1 schema)")
    if spec.get("price") is not None and spec.get("priceAdjustment") is not None:
        raise FieldError("spec.priceAdjustment", "cannot set both 'price' and 'priceAdjustment'")
    price = None if spec.get("price") is None else check_price(spec["price"])
    adjustment = None if spec.get("priceAdjustment") is None else check_price_adjustment(spec["priceAdjustment"])
    capacity = resources(spec.get("capacity"), "spec.capacity")
    for key in as_object(spec.get("capacity"), "spec.capacity"):
        if str(key) in RESTRICTED_CAPACITY:
            raise FieldError(
                sub_path("spec.capacity", key),
                f"invalid resource restricted: capacity adds extended resources only, not {', '.join(RESTRICTED_CAPACITY)}",
            )
    weight = as_int(spec.get("weight"), "spec.weight", 0, lo=1, hi=MAX_OVERLAY_WEIGHT)
    return NodeOverlay(
        name=name,
        requirements=_requirements(spec.get("requirements"), "spec.requirements"),
        price=price,
        price_adjustment=adjustment,
        capacity=capacity,
        weight=weight,
    )
