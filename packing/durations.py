"""Go-style durations as Karpenter writes them (``30s``, ``5m``, ``720h``, ``1h30m``, ``Never``).

Karpenter's CRDs accept only sequences of ``<integer><unit>`` with units s, m and h (the CRD
patterns reject ``ms``, ``d`` and fractions), so this parser is deliberately as strict: a value the
API server would refuse must be refused here too, or an import would succeed in Loadmaster and
fail on the cluster.
"""

from __future__ import annotations

import re
from datetime import timedelta

NEVER = "Never"

_PART = re.compile(r"([0-9]+)([smh])")
_WHOLE = re.compile(r"(?:[0-9]{1,12}[smh])+")  # ASCII digits; Go's time.Duration tops out near 2562047h
_SECONDS = {"s": 1, "m": 60, "h": 3600}


class DurationError(ValueError):
    """A duration string Karpenter would refuse; the message names the value."""


def parse_duration(value: str, *, allow_never: bool = True) -> timedelta | None:
    """Return the duration, or ``None`` for ``Never`` (meaning: the event never happens)."""
    if not isinstance(value, str):
        raise DurationError(f"duration {_quote(value)} must be a string such as '30s', '5m' or '720h'")
    text = value.strip()
    if text == NEVER:
        if allow_never:
            return None
        raise DurationError("'Never' is not allowed here")
    if len(text) > 40 or not _WHOLE.fullmatch(text):
        hint = "'30s', '5m', '720h', '1h30m'" + (" or 'Never'" if allow_never else "")
        raise DurationError(f"invalid duration {_quote(value)}: use whole numbers with s, m or h, e.g. {hint}")
    seconds = sum(int(n) * _SECONDS[unit] for n, unit in _PART.findall(text))
    if seconds > _MAX_SECONDS:
        raise DurationError(f"invalid duration {_quote(value)}: longer than Go's maximum (2562047h)")
    return timedelta(seconds=seconds)


_MAX_SECONDS = 2562047 * 3600  # time.Duration is int64 nanoseconds: about 292 years


def _quote(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def format_duration(delta: timedelta | None) -> str:
    """Shortest Go-style spelling: 2592000s -> '720h', 5400s -> '1h30m', None -> 'Never'."""
    if delta is None:
        return NEVER
    total = int(delta.total_seconds())
    if total == 0:
        return "0s"
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [f"{n}{u}" for n, u in ((hours, "h"), (minutes, "m"), (seconds, "s")) if n]
    return "".join(parts)
