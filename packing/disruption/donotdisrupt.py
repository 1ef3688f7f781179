"""Whether a `karpenter.sh/do-not-disrupt` annotation protects its pod or node at a given time.

Karpenter v1.14 takes "true" (for ever) or a Go duration ("30m": protected for that long after the object
started). Loadmaster reads both the same way on pods and on nodes, counting from the object's creation
timestamp; a value that is neither is taken as "true" (Karpenter ignores it and emits an event: refusing
to guess keeps the operator's evident intent, and the reason says so). "false" and no annotation protect
nothing. The engine, the disrupt loop's re-validation and the drain all ask this one function.
"""

from __future__ import annotations

from datetime import datetime

from packing.disruption.formatting import format_time
from packing.durations import DurationError, parse_duration

__all__ = ["DO_NOT_DISRUPT", "do_not_disrupt_reason"]

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


def do_not_disrupt_reason(what: str, value: str | None, created: datetime | None, at: datetime) -> str | None:
    """Why `what` ("pod ns/name", "node name") may not be disrupted at `at`, or None when it may."""
    if value is None or value.strip() == "false":
        return None
    v = value.strip()
    if v == "true":
        return f"{what} has do-not-disrupt"
    try:
        d = parse_duration(v, allow_never=False)
    except DurationError:
        return f"{what} has do-not-disrupt {value!r}, which is neither true nor a duration (treated as true)"
    if created is None or d is None:
        return f"{what} has do-not-disrupt {v}"
    end = created + d
    if at < end:
        return f"{what} has do-not-disrupt until {format_time(end)}"
    return None
