"""Exact Kubernetes resource quantities.

Quantities are held as integer milli-units so that sums never drift: "100m" cpu is 100,
"2Gi" memory is 2 * 2**30 * 1000. Floats would make "does it fit" answers flip on rounding.
"""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = ["MAX_QUANTITY", "QuantityError", "format_quantity", "parse_quantity"]


class QuantityError(ValueError):
    """A value that is not a valid Kubernetes quantity; the message names the value."""


_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# Same grammar as k8s.io/apimachinery resource.ParseQuantity: a signed decimal number followed by
# a binary suffix, a decimal suffix or a decimal exponent.
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?\d+)|(?P<dec>[numkMGTPE]?))$",
    re.ASCII,  # "\d" is 0-9 only: Kubernetes refuses other scripts' digits
)
# The largest quantity accepted, in units (cores, bytes, pods): 2**50, i.e. "1Pi" -- a pebibyte of memory, a
# quadrillion cores. Far beyond any real node or NodePool limit, yet its milli-units (about 1.1e18) fit the
# engine's int64 arrays with room for sums; "1e30" or "8Ei" are refused at parse time, naming the field.
MAX_QUANTITY = 2**50
_MAX_MILLI = MAX_QUANTITY * 1000
_MAX_TEXT = 100  # characters: a longer number is no quantity anyone means (and int() of 5000 digits raises)


def _quote(value: object) -> str:
    text = repr(value) if not isinstance(value, str) or len(value) <= 40 else repr(value[:40])[:-1] + "…'"
    return text if len(text) <= 60 else text[:59] + "…"


def parse_quantity(value: str | int | float) -> int:
    """Parse a quantity into milli-units, rounding fractions of a milli-unit up (as the API server does)."""
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {_quote(value)}")
    if isinstance(value, int):
        if abs(value) > MAX_QUANTITY:
            raise QuantityError(f"invalid quantity {_quote(value)}: more than the maximum 1Pi (2^50)")
        amount = Fraction(value)
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise QuantityError(f"invalid quantity {_quote(value)}")
        # repr gives the shortest decimal that round-trips, so 0.1 means "0.1", not its binary expansion
        return parse_quantity(repr(value))
    elif isinstance(value, str):
        text = value.strip()
        m = _QUANTITY.match(text) if len(text) <= _MAX_TEXT else None
        if m is None:
            raise QuantityError(f"invalid quantity {_quote(value)}")
        number = Fraction(m.group("num"))
        if m.group("bin"):
            amount = number * _BINARY[m.group("bin")]
        elif m.group("exp"):
            exponent = int(m.group("exp")[1:])
            if abs(exponent) > 40:
                raise QuantityError(f"invalid quantity {_quote(value)}: exponent out of range")
            amount = number * Fraction(10) ** exponent
        else:
            amount = number * _DECIMAL[m.group("dec") or ""]
    else:
        raise QuantityError(f"invalid quantity {_quote(value)}")
    milli = amount * 1000
    result = -((-milli.numerator) // milli.denominator)  # ceiling
    if abs(result) > _MAX_MILLI:
        raise QuantityError(f"invalid quantity {_quote(value)}: more than the maximum 1Pi (2^50)")
    return result


_BYTE_RESOURCES = frozenset({"memory", "ephemeral-storage", "storage"})


def counted_in_bytes(resource: str) -> bool:
    """Whether a resource is an amount of bytes (formatted with binary suffixes) rather than a count."""
    return resource in _BYTE_RESOURCES or resource.startswith("hugepages-")


def format_quantity(milli: int, resource: str) -> str:
    """Canonical string for a milli-unit amount: cpu "1500m"/"2", memory "3Gi"/"7680Mi"/bytes, counts "58"."""
    if counted_in_bytes(resource):
        if milli % 1000:
            return f"{milli}m"
        b = milli // 1000
        if b == 0:
            return "0"
        for suffix, size in (
            ("Ei", 2**60),
            ("Pi", 2**50),
            ("Ti", 2**40),
            ("Gi", 2**30),
            ("Mi", 2**20),
            ("Ki", 2**10),
        ):
            if b % size == 0:
                return f"{b // size}{suffix}"
        return str(b)
    if milli % 1000 == 0:
        return str(milli // 1000)
    return f"{milli}m"
