"""How the disruption engine writes money and times in the reasons it gives, and reads the times it is given."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["format_time", "money", "parse_time"]


def parse_time(text: str) -> datetime:
    """ISO-8601 (a trailing Z allowed); a time without an offset is taken as UTC."""
    t = datetime.fromisoformat(text.strip().replace("z", "Z"))
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def format_time(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def money(x: float) -> str:
    """Dollars per hour: three decimals, four below a cent (so a small saving does not read as $0.000/h)."""
    return f"${x:.3f}/h" if abs(x) >= 0.01 or x == 0 else f"${x:.4f}/h"
