"""Typed access to the fields of a Kubernetes object, and the one error type of every input reader.

Each reader takes the raw value and its path ("spec.template.spec.taints[0].effect") and returns a typed value
or raises FieldError naming the path, so that the caller that knows the file and the document
(packing.kubeobjects.parse_documents) can make the one-line message the CLIs print:
`file: document N (Kind name): path: message`. Values quoted in a message go through packing.yamlinput.brief
(cut to 60 characters); integers are read strictly (ASCII digits, each field's range) and quantities up to
packing.quantity.MAX_QUANTITY.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from packing.durations import DurationError, parse_duration
from packing.quantity import MAX_QUANTITY, QuantityError, format_quantity, parse_quantity
from packing.resources import Resources
from packing.yamlinput import brief

__all__ = [
    "INT32_MAX",
    "MAX_PRICE",
    "FieldError",
    "InputError",
    "as_int",
    "as_list",
    "as_object",
    "as_str",
    "bounded",
    "cut",
    "duration",
    "int_or_percent",
    "price",
    "quantities",
    "resources",
    "str_map",
    "string_values",
    "sub_path",
    "timestamp",
]

INT32_MAX = 2**31 - 1
MAX_PRICE = 1_000_000.0  # dollars per hour of one offering
_INT_TEXT = re.compile(r"[+-]?[0-9]{1,18}", re.ASCII)
_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?", re.ASCII)
_BUDGET_TEXT = re.compile(r"[0-9]{1,10}%?", re.ASCII)


class InputError(ValueError):
    """Bad input; str() is the one-line message the CLI prints."""


class FieldError(InputError):
    """A bad field inside one object; the reader of the file adds the file and document index to it.

    It is an InputError (a ValueError) so that callers of a single-object reader can catch the public type.
    """

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


# every character str.splitlines breaks at: a name or key holding one would split a one-line message in two
_LINE_BREAKS = {c: f"\\u{c:04x}" for c in (0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029)}


def cut(text: str, limit: int = 200) -> str:
    """`text` cut to `limit` characters, '…' where it was cut (names and keys quoted in messages), with line
    breaks written as escapes so the message stays one line."""
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return text.translate(_LINE_BREAKS) if not text.isprintable() else text


def sub_path(path: str, key: Any) -> str:
    """path.key for a message, the key cut to 60 characters (keys are input too)."""
    return f"{path}.{cut(str(key), 60)}"


def as_object(d: Any, path: str) -> Mapping[str, Any]:
    if d is None:
        return {}
    if not isinstance(d, Mapping):
        raise FieldError(path, f"must be an object, got {type(d).__name__}")
    return d


def as_list(d: Any, path: str) -> list[Any]:
    if d is None:
        return []
    if not isinstance(d, list):
        raise FieldError(path, f"must be a list, got {type(d).__name__}")
    return d


def as_str(d: Any, path: str, *, required: bool = False, default: str = "") -> str:
    if d is None:
        if required:
            raise FieldError(path, "is required")
        return default
    if isinstance(d, bool) or not isinstance(d, str | int | float):
        raise FieldError(path, f"must be a string, got {type(d).__name__}")
    return str(d)


def as_int(d: Any, path: str, default: int, *, lo: int | None = None, hi: int = INT32_MAX) -> int:
    """An integer field: an int, or a string of ASCII digits ("3"); within [lo, hi] (hi defaults to int32's)."""
    if d is None:
        return default
    if isinstance(d, bool) or not isinstance(d, int):
        if not (isinstance(d, str) and _INT_TEXT.fullmatch(d.strip())):
            raise FieldError(path, f"must be an integer, got {brief(d)}")
        d = d.strip()
    value = int(d)
    if lo is not None and value < lo:
        raise FieldError(path, f"must be at least {lo}, got {brief(value)}")
    if value > hi:
        raise FieldError(path, f"must be at most {hi}, got {brief(value)}")
    return value


def str_map(d: Any, path: str) -> dict[str, str]:
    """A map of strings (labels, a nodeSelector); a null value reads as ""."""
    return {str(k): as_str(v, sub_path(path, k)) for k, v in as_object(d, path).items()}


def string_values(d: Any, path: str) -> dict[str, str]:
    """A map of strings where every value must be given (annotations: a null value is refused)."""
    out = {}
    for k, v in as_object(d, path).items():
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise FieldError(sub_path(path, k), f"must be a string, got {type(v).__name__}")
        out[str(k)] = str(v)
    return out


def quantities(d: Any, path: str) -> dict[str, int]:
    """A map of quantities, each within [0, MAX_QUANTITY], zeros kept (a NodePool limit of 0 allows nothing)."""
    out: dict[str, int] = {}
    for k, v in as_object(d, path).items():
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise FieldError(sub_path(path, k), f"invalid quantity {brief(v)}")
        try:
            milli = parse_quantity(v)
        except QuantityError as e:
            raise FieldError(sub_path(path, k), str(e)) from None
        if milli < 0:
            raise FieldError(sub_path(path, k), f"must not be negative, got {brief(v)}")
        out[str(k)] = milli
    return out


def resources(d: Any, path: str) -> Resources:
    """A map of quantities (requests, capacity...): each within [0, MAX_QUANTITY]; zeros dropped."""
    return Resources(quantities(d, path))


def bounded(r: Resources, path: str) -> Resources:
    """A sum of quantities (a pod's containers) within MAX_QUANTITY per resource, as each quantity is."""
    for k, v in r.items():
        if v > MAX_QUANTITY * 1000:
            raise FieldError(sub_path(path, k), f"adds up to {format_quantity(v, k)}, more than the maximum 1Pi (2^50)")
    return r


def price(v: Any, path: str) -> float | None:
    """An offering's price: a finite number of dollars per hour in [0, MAX_PRICE] (a NaN would make the pod
    look scheduled and placed nowhere, a negative one a plan that earns money)."""
    if v is None:
        return None
    if isinstance(v, str) and len(v) <= 40 and _NUMBER_TEXT.fullmatch(v.strip()):
        v = float(v)
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise FieldError(path, f"must be a number, got {brief(v)}")
    given = v
    if isinstance(v, int) and abs(v) > MAX_PRICE:
        v = math.inf if v > 0 else -math.inf  # float() of a 400-digit integer raises
    value = float(v)
    if math.isnan(value):
        raise FieldError(path, "must be a number, got NaN")
    if value < 0:
        raise FieldError(path, f"must not be negative, got {brief(given)}")
    if value > MAX_PRICE:
        raise FieldError(path, f"must be at most {MAX_PRICE:.0f} dollars per hour, got {brief(given)}")
    return value


def int_or_percent(v: Any, path: str) -> str | None:
    """A PDB's minAvailable / maxUnavailable: a count or a percentage ("50%"), as a string."""
    if v is None:
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        return str(as_int(v, path, 0, lo=0))
    if isinstance(v, str) and _BUDGET_TEXT.fullmatch(v.strip()):
        text = v.strip()
        if text.endswith("%") and int(text[:-1]) > 100:
            raise FieldError(path, f"must be a percentage from 0% to 100%, got {brief(v)}")
        if not text.endswith("%"):
            as_int(text, path, 0, lo=0)
        return text
    raise FieldError(path, f"must be a count or a percentage such as '50%', got {brief(v)}")


def timestamp(v: Any, path: str) -> datetime | None:
    """An RFC 3339 time (metadata.creationTimestamp), in UTC; a naive time is taken as UTC."""
    if v is None:
        return None
    if isinstance(v, datetime):  # a YAML reader other than packing.yamlinput reads an unquoted timestamp as one
        return v.replace(tzinfo=UTC) if v.tzinfo is None else v.astimezone(UTC)
    if isinstance(v, str):
        try:
            t = datetime.fromisoformat(v.strip())
        except ValueError:
            raise FieldError(path, f"invalid timestamp {brief(v)} (expected RFC 3339, e.g. 2026-11-30T05:00:00Z)") from None
        return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
    raise FieldError(path, f"must be a timestamp, got {type(v).__name__}")


def duration(v: Any, path: str, default: timedelta | None) -> timedelta | None:
    """A Go duration ("720h"; "Never" is None), as packing.durations.parse_duration reads it; `default` when
    absent."""
    if v is None:
        return default
    try:
        return parse_duration(str(v) if not isinstance(v, str) else v)
    except DurationError as e:
        raise FieldError(path, str(e)) from None
