"""Reading a `loadmaster.dev/v1alpha1 Commitment` document into packing.commitments.Commitment.

    apiVersion: loadmaster.dev/v1alpha1
    kind: Commitment
    metadata: {name: ri-m5-2026}
    spec:
      type: ReservedInstances | ComputeSavingsPlan | EC2InstanceSavingsPlan
      instanceType: m5.large        # Reserved Instances: the type, or
      instanceFamily: m5            # the family (a regional Linux RI, with AWS's size normalization)
      zone: us-east-1a              # a zonal RI; else `region` (a regional RI or a Savings Plan)
      region: us-east-1
      count: 4                      # Reserved Instances: how many (at least 1)
      hourlyCommitment: "12.5"      # Savings Plans: the commitment in $ per hour (more than 0)
      rates: {m5: "0.28"}           # Savings Plans: the discount off on-demand per family or type, 0 <= r < 1
      starts: 2026-01-01T00:00:00Z
      ends: 2027-01-01T00:00:00Z    # after starts

Every rule is refused at its field with a FieldError (docs/commitments.md, "Commitment document"). Fields
outside the spec are refused too, so that a misspelt field is not silently ignored.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from packing.commitments import Commitment, CommitmentKind
from packing.fields import MAX_PRICE, FieldError, as_int, as_object, as_str, sub_path, timestamp
from packing.yamlinput import brief

__all__ = [
    "COMMITMENT_API_VERSION",
    "COMMITMENT_KIND",
    "SAVINGS_PLAN_KINDS",
    "commitment_document",
    "read_commitment",
]

COMMITMENT_API_VERSION = "loadmaster.dev/v1alpha1"
COMMITMENT_KIND = "Commitment"
SAVINGS_PLAN_KINDS = frozenset({CommitmentKind.COMPUTE_SAVINGS_PLAN, CommitmentKind.EC2_INSTANCE_SAVINGS_PLAN})
SPEC_FIELDS = (
    "type", "instanceType", "instanceFamily", "zone", "region", "count", "hourlyCommitment", "rates", "starts", "ends",
)
_NUMBER = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)", re.ASCII)


def _number(v: Any, path: str) -> float:
    """A non-negative decimal given as a string ("0.28") or a number (YAML reads 0.28 as one)."""
    if isinstance(v, str) and len(v) <= 40 and _NUMBER.fullmatch(v.strip()):
        return float(v)
    if isinstance(v, bool) or not isinstance(v, int | float) or (isinstance(v, float) and not math.isfinite(v)):
        raise FieldError(path, f"must be a decimal number such as '0.28', got {brief(v)}")
    if v < 0:
        raise FieldError(path, f"must not be negative, got {brief(v)}")
    return float(v)


def _rates(v: Any, path: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, raw in as_object(v, path).items():
        kp = sub_path(path, key)
        if not str(key).strip():
            raise FieldError(kp, "a rate needs an instance family or type as its key")
        rate = _number(raw, kp)
        if rate >= 1:
            raise FieldError(kp, f"a rate is the discount off on-demand, from 0 up to (not including) 1, got {brief(raw)}")
        out[str(key)] = rate
    return out


def read_commitment(doc: Mapping[str, Any], *, source: str = "") -> Commitment:
    """The Commitment of a document (apiVersion and kind already known); FieldError naming the field."""
    meta = as_object(doc.get("metadata"), "metadata")
    name = as_str(meta.get("name"), "metadata.name", required=True)
    if not name:
        raise FieldError("metadata.name", "is required")
    if doc.get("spec") is None:
        raise FieldError("spec", "is required")
    spec = as_object(doc.get("spec"), "spec")
    for key in sorted(map(str, spec)):
        if key not in SPEC_FIELDS:
            raise FieldError(sub_path("spec", key), "unknown field (not in the Commitment v1alpha1 schema)")
    kind_text = as_str(spec.get("type"), "spec.type", required=True)
    try:
        kind = CommitmentKind(kind_text)
    except ValueError:
        raise FieldError(
            "spec.type", f"unknown type {brief(kind_text)} (expected one of {', '.join(k.value for k in CommitmentKind)})"
        ) from None
    instance_type = as_str(spec.get("instanceType"), "spec.instanceType") or None
    family = as_str(spec.get("instanceFamily"), "spec.instanceFamily") or None
    count = as_int(spec.get("count"), "spec.count", 0, lo=0)
    hourly = None
    if spec.get("hourlyCommitment") is not None:
        hourly = _number(spec["hourlyCommitment"], "spec.hourlyCommitment")
        if hourly <= 0 or hourly > MAX_PRICE:
            raise FieldError(
                "spec.hourlyCommitment", f"must be more than 0 and at most {MAX_PRICE:.0f} dollars per hour, got {brief(spec['hourlyCommitment'])}"
            )
    rates = _rates(spec.get("rates"), "spec.rates")
    if kind is CommitmentKind.RESERVED_INSTANCES:
        if instance_type is None and family is None:
            raise FieldError("spec.instanceType", "Reserved Instances need an instanceType or an instanceFamily")
        if count < 1:
            raise FieldError("spec.count", f"Reserved Instances need a count of at least 1, got {count}")
        for field_name in ("hourlyCommitment", "rates"):
            if spec.get(field_name) is not None:
                raise FieldError(f"spec.{field_name}", "applies to Savings Plans only, not to Reserved Instances")
    else:
        if hourly is None:
            raise FieldError("spec.hourlyCommitment", f"a {kind.value} needs its hourlyCommitment ($ per hour)")
        if spec.get("count") is not None:
            raise FieldError("spec.count", "applies to Reserved Instances only, not to Savings Plans")
    starts = timestamp(spec.get("starts"), "spec.starts")
    ends = timestamp(spec.get("ends"), "spec.ends")
    if starts is not None and ends is not None and ends <= starts:
        raise FieldError("spec.ends", f"must be after spec.starts ({starts.isoformat()}), got {ends.isoformat()}")
    return Commitment(
        name=name,
        kind=kind,
        instance_type=instance_type,
        instance_family=family,
        zone=as_str(spec.get("zone"), "spec.zone") or None,
        region=as_str(spec.get("region"), "spec.region") or None,
        count=count,
        hourly_commitment=hourly,
        rates=rates,
        starts=starts,
        ends=ends,
        source=source,
    )


def _decimal(x: float) -> str:
    return f"{x:.10f}".rstrip("0").rstrip(".") or "0"


def commitment_document(c: Commitment) -> dict[str, Any]:
    """The document of a Commitment (what read_commitment reads back to an equal one, its source aside)."""
    spec: dict[str, Any] = {"type": c.kind.value}
    for key, value in (
        ("instanceType", c.instance_type),
        ("instanceFamily", c.instance_family),
        ("zone", c.zone),
        ("region", c.region),
    ):
        if value:
            spec[key] = value
    if c.kind is CommitmentKind.RESERVED_INSTANCES:
        spec["count"] = c.count
    if c.hourly_commitment is not None:
        spec["hourlyCommitment"] = _decimal(c.hourly_commitment)
    if c.rates:
        spec["rates"] = {k: _decimal(v) for k, v in sorted(c.rates.items())}
    for key, t in (("starts", c.starts), ("ends", c.ends)):
        if t is not None:
            spec[key] = t.isoformat().replace("+00:00", "Z")
    return {
        "apiVersion": COMMITMENT_API_VERSION,
        "kind": COMMITMENT_KIND,
        "metadata": {"name": c.name},
        "spec": spec,
    }
