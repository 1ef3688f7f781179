"""Node repair policies: which node condition, in which status, for how long, makes a node unhealthy.

Karpenter's NodeRepair asks the cloud provider for its RepairPolicies; the AWS provider (v1.14.1,
pkg/cloudprovider/cloudprovider.go) lists the kubelet's Ready condition (False or Unknown, 30 minutes)
and the EKS Node Monitoring Agent's conditions. Those are Loadmaster's defaults too. An operator adds
conditions (or changes a default's toleration) with LOADMASTER_NODE_REPAIR_POLICIES, read here.

Pure Python, no Django: console/settings.py reads the variable through ``policies_parse`` at start-up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


@dataclass(frozen=True)
class RepairPolicy:
    condition_type: str
    condition_status: ConditionStatus
    toleration: timedelta

    @property
    def key(self) -> tuple[str, ConditionStatus]:
        return self.condition_type, self.condition_status

    def text(self) -> str:
        return f"{self.condition_type}={self.condition_status.value}"


# The AWS provider's RepairPolicies (karpenter-provider-aws v1.14.1), in its order.
DEFAULT_POLICIES: tuple[RepairPolicy, ...] = (
    RepairPolicy("Ready", ConditionStatus.FALSE, timedelta(minutes=30)),
    RepairPolicy("Ready", ConditionStatus.UNKNOWN, timedelta(minutes=30)),
    RepairPolicy("AcceleratedHardwareReady", ConditionStatus.FALSE, timedelta(minutes=10)),
    RepairPolicy("StorageReady", ConditionStatus.FALSE, timedelta(minutes=30)),
    RepairPolicy("NetworkingReady", ConditionStatus.FALSE, timedelta(minutes=30)),
    RepairPolicy("KernelReady", ConditionStatus.FALSE, timedelta(minutes=30)),
    RepairPolicy("ContainerRuntimeReady", ConditionStatus.FALSE, timedelta(minutes=30)),
)

# A condition type as Kubernetes and the Node Problem Detector write them: a name, optionally
# prefixed by a DNS subdomain (example.com/GPUHealthy).
_TYPE = re.compile(r"^(?:[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?/)?[A-Za-z][A-Za-z0-9_.-]{0,62}$")
# A Go-style duration without fractions: 90s, 10m, 1h30m (Karpenter's tolerations are whole minutes).
_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def duration_parse(text: str) -> timedelta:
    """``1h30m`` -> 90 minutes. ValueError for anything else, zero included."""
    match = _DURATION.match(text)
    if not text or match is None:
        raise ValueError(f"duration {text!r} is not like 30m, 90s or 1h30m")
    hours, minutes, seconds = (int(g or 0) for g in match.groups())
    value = timedelta(hours=hours, minutes=minutes, seconds=seconds)
    if value <= timedelta(0):
        raise ValueError(f"duration {text!r} must be more than zero")
    return value


def duration_text(value: timedelta) -> str:
    """90 minutes -> ``1h30m``: the form the setting is written in."""
    total = int(value.total_seconds())
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    out = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "") + (f"{seconds}s" if seconds else "")
    return out or "0s"


def condition_parse(text: str) -> tuple[str, ConditionStatus]:
    """``Ready=False`` -> ("Ready", FALSE). ValueError saying what is wrong."""
    ctype, equals, status = text.strip().partition("=")
    if not equals:
        raise ValueError(f"{text!r} is not Type=Status, e.g. Ready=False")
    if not _TYPE.match(ctype):
        raise ValueError(f"condition type {ctype!r} is not a condition name like Ready or DiskPressure")
    try:
        return ctype, ConditionStatus(status)
    except ValueError:
        raise ValueError(f"status {status!r} must be True, False or Unknown") from None


def policies_parse(text: str, *, defaults: tuple[RepairPolicy, ...] = DEFAULT_POLICIES) -> tuple[RepairPolicy, ...]:
    """``Type=Status:duration,...`` on top of the defaults. An entry for a default's type and status replaces
    its toleration; any other entry is added. ValueError naming the entry for anything it cannot read,
    and for the same type and status given twice."""
    out = list(defaults)
    seen: set[tuple[str, ConditionStatus]] = set()
    entries = [e.strip() for e in text.split(",")]
    if not any(entries):
        raise ValueError("is set but empty; give Type=Status:duration entries, e.g. DiskPressure=True:10m")
    for entry in entries:
        if not entry:
            raise ValueError("has an empty entry (two commas, or a trailing one)")
        head, colon, duration = entry.rpartition(":")
        if not colon or "=" not in head:
            raise ValueError(f"entry {entry!r} is not Type=Status:duration, e.g. DiskPressure=True:10m")
        try:
            ctype, cstatus = condition_parse(head)
        except ValueError as e:
            raise ValueError(f"entry {entry!r}: {e}") from None
        try:
            toleration = duration_parse(duration)
        except ValueError as e:
            raise ValueError(f"entry {entry!r}: {e}") from None
        policy = RepairPolicy(ctype, cstatus, toleration)
        if policy.key in seen:
            raise ValueError(f"entry {entry!r}: {policy.text()} is given twice")
        seen.add(policy.key)
        replaced = [i for i, p in enumerate(out) if p.key == policy.key]
        if replaced:
            out[replaced[0]] = policy
        else:
            out.append(policy)
    return tuple(out)
