"""The simulation's knobs, read from settings (LOADMASTER_SIM_*) or given directly by tests."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from django.core.exceptions import ImproperlyConfigured

SIM_DAY = 86400.0
SPOT_NOTICE = 120.0     # AWS's two-minute warning, in simulated seconds


@dataclass(frozen=True)
class SimulationConfig:
    cluster_name: str = "demo"
    region: str = "us-east-1"
    seed: int = 0
    # One simulated day lasts this many real seconds (default: an hour is a day, 24x compression).
    day_seconds: float = 3600.0
    # The simulated hour of day at the origin: 6 starts the demo just before the morning burst.
    start_hour: float = 6.0
    demo_workloads: bool = True
    # Replica jitter (fraction of the curve's range), deterministic per seed and 10-minute slot.
    replica_noise: float = 0.1
    # Real seconds, not compressed: these are what a node provisioner actually waits for.
    run_delay: float = 15.0          # EC2 pending -> running
    register_delay: float = 30.0     # running -> kubelet creates the Node
    terminate_delay: float = 10.0    # shutting-down -> terminated (the Node disappears then)
    # Expected spot interruptions per spot instance per simulated hour.
    spot_interruptions_per_hour: float = 0.02
    # Expected out-of-band state changes (an instance stopped under us) per instance per simulated hour.
    state_changes_per_hour: float = 0.0
    # The spot notice in real seconds; None: two minutes scaled by the day's compression.
    spot_notice_seconds: float | None = None
    # Injected capacity errors: a probability per offering tried, and offerings that always fail,
    # as "instance-type:zone:capacity-type" globs ("m5.*:us-east-1a:spot", "*:*:spot").
    ice_rate: float = 0.0
    ice_offerings: tuple[str, ...] = ()
    event_visibility_seconds: float = 30.0
    tombstone_retention: int = 5000
    terminated_retention_seconds: float = 3600.0

    @property
    def compression(self) -> float:
        return SIM_DAY / self.day_seconds

    @property
    def spot_notice(self) -> float:
        if self.spot_notice_seconds is not None:
            return self.spot_notice_seconds
        return SPOT_NOTICE / self.compression

    def with_(self, **changes: Any) -> SimulationConfig:
        return replace(self, **changes)

    def ice_matches(self, instance_type: str, zone: str, capacity_type: str, extra: Sequence[str] = ()) -> bool:
        key = f"{instance_type}:{zone}:{capacity_type}"
        return any(fnmatch.fnmatchcase(key, _full_pattern(p)) for p in (*self.ice_offerings, *extra))

    def __post_init__(self) -> None:
        if self.day_seconds <= 0:
            raise ImproperlyConfigured("LOADMASTER_SIM_DAY_SECONDS must be positive")
        for name in ("spot_interruptions_per_hour", "state_changes_per_hour", "ice_rate", "replica_noise"):
            if getattr(self, name) < 0:
                raise ImproperlyConfigured(f"LOADMASTER_SIM_{name.upper()} must not be negative")
        if self.ice_rate > 1:
            raise ImproperlyConfigured("LOADMASTER_SIM_ICE_RATE is a probability (0..1)")

    @classmethod
    def from_settings(cls, **overrides: Any) -> SimulationConfig:
        """Fields from settings.LOADMASTER_SIM_<FIELD> (cluster and region from the backend settings)."""
        from django.conf import settings

        values: dict[str, Any] = {
            "cluster_name": getattr(settings, "LOADMASTER_CLUSTER_NAME", cls.cluster_name),
            "region": getattr(settings, "LOADMASTER_AWS_REGION", cls.region),
        }
        for f in fields(cls):
            setting = f"LOADMASTER_SIM_{f.name.upper()}"
            if hasattr(settings, setting):
                values[f.name] = _coerce(setting, getattr(settings, setting), f.default)
        values.update(overrides)
        return cls(**values)


def _full_pattern(pattern: str) -> str:
    # "m5.large" alone means every zone and capacity type of it.
    parts = pattern.split(":")
    return ":".join(parts + ["*"] * (3 - len(parts)))


def _coerce(name: str, value: Any, default: Any) -> Any:
    """Settings may hold raw environment strings (env_str); read them as the field's type."""
    if value is None or value == "":
        return default
    try:
        if isinstance(default, bool):
            return value if isinstance(value, bool) else str(value).strip().lower() in ("1", "true", "yes", "on")
        if isinstance(default, tuple):
            items = value.split(",") if isinstance(value, str) else value
            return tuple(str(i).strip() for i in items if str(i).strip())
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float) or default is None:
            return float(value)
        return str(value)
    except (TypeError, ValueError):
        raise ImproperlyConfigured(f"{name}={value!r} is not a valid value") from None
