"""Commitments the bill already carries: Reserved Instances and Savings Plans.

Only the data types live here so far; the engine's marginal pricing over them is issue 19's work.
The document form is `loadmaster.dev/v1alpha1 Commitment` (docs/commitments.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

__all__ = ["Commitment", "CommitmentKind"]


class CommitmentKind(StrEnum):
    RESERVED_INSTANCES = "ReservedInstances"
    COMPUTE_SAVINGS_PLAN = "ComputeSavingsPlan"
    EC2_INSTANCE_SAVINGS_PLAN = "EC2InstanceSavingsPlan"


@dataclass(frozen=True)
class Commitment:
    """One commitment. Reserved Instances: `count` instances of `instance_type`, or for a regional Linux RI
    `instance_family` with AWS's size normalization (count is then in units of `instance_type`'s size when
    given, else normalized units), in `zone` (zonal RI) or the whole `region`.
    Savings Plans: `hourly_commitment` dollars per hour, with `rates` the discount off on-demand (0 <= r < 1)
    per instance family or instance type, as the operator entered it or AWS returned it; a type with no rate
    is not covered (unknown is not guessed)."""

    name: str
    kind: CommitmentKind
    instance_type: str | None = None
    instance_family: str | None = None
    zone: str | None = None
    region: str | None = None
    count: int = 0
    hourly_commitment: float | None = None
    rates: Mapping[str, float] = field(default_factory=dict)
    starts: datetime | None = None
    ends: datetime | None = None
    source: str = ""  # "console", "aws:DescribeReservedInstances", "aws:savingsplans", a file path
