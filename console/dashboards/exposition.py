"""A small writer of Prometheus' text exposition format (0.0.4), fast enough for tens of thousands of
series per scrape: label sets are rendered once and reused (a node's labels for each of its
resources), and every series is checked against the ones already written, so no scrape ever holds
the same name and label set twice (Prometheus would drop the scrape's duplicates).

Empty label values are left out, as Prometheus stores them: {nodepool=""} and {} are one series."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping

log = logging.getLogger(__name__)


def escape(value: str) -> str:
    if "\\" not in value and "\n" not in value and '"' not in value:
        return value  # nearly always: a check is cheaper than three replaces
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def labels(pairs: Mapping[str, str] | Iterable[tuple[str, str]]) -> str:
    """The inside of a label set, `a="x",b="y"`, in the given order, without empty values."""
    # Tuples and lists first: they are nearly every call, and the Mapping check is an ABC's.
    items = pairs if isinstance(pairs, tuple | list) else pairs.items() if isinstance(pairs, Mapping) else pairs
    return ",".join([f'{k}="{escape(v if isinstance(v, str) else str(v))}"' for k, v in items if v != "" and v is not None])


def join(*parts: str) -> str:
    return ",".join(p for p in parts if p)


def number(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


class Exposition:
    def __init__(self) -> None:
        self._lines: list[str] = []
        self._seen: set[str] = set()
        self._families: set[str] = set()
        self.duplicates = 0

    def family(self, name: str, kind: str, help_text: str) -> None:
        """Start a metric family (HELP and TYPE). A family is declared once per scrape."""
        if name in self._families:
            raise ValueError(f"metric family {name} declared twice")
        self._families.add(name)
        help_text = help_text.replace("\\", "\\\\").replace("\n", "\\n")
        self._lines.append(f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n")

    def sample(self, name: str, label_text: str, value: float) -> None:
        """One series; `label_text` is what labels()/join() return ("" for none)."""
        key = f"{name}{{{label_text}}}" if label_text else name
        if key in self._seen:
            self.duplicates += 1
            log.error("/metrics: duplicate series %s left out", key)
            return
        self._seen.add(key)
        self._lines.append(f"{key} {number(value)}\n")

    def raw(self, text: str, keys: Iterable[str]) -> None:
        """Append text rendered earlier (a cached block), with the series keys it holds."""
        for key in keys:
            if key in self._seen:
                raise ValueError(f"cached block repeats series {key}")
            self._seen.add(key)
        self._lines.append(text)

    def series_keys(self) -> list[str]:
        """The series written so far (name and label set), for raw() to check a cached block with."""
        return list(self._seen)

    def text(self) -> str:
        return "".join(self._lines)


def histogram(out: Exposition, name: str, label_text: str, buckets: Iterable[tuple[float, int]],
              count: int, total: float) -> None:
    """A histogram's series (the family declared by the caller): cumulative buckets, +Inf, sum, count."""
    for le, n in buckets:
        out.sample(f"{name}_bucket", join(label_text, f'le="{number(float(le))}"'), n)
    out.sample(f"{name}_bucket", join(label_text, 'le="+Inf"'), count)
    out.sample(f"{name}_sum", label_text, total)
    out.sample(f"{name}_count", label_text, count)


def summary(out: Exposition, name: str, label_text: str, quantiles: Mapping[float, float],
            count: int, total: float, objectives: Iterable[float]) -> None:
    """A summary's series: one per objective quantile (NaN without observations, as client_golang),
    then sum and count."""
    for q in objectives:
        out.sample(name, join(label_text, f'quantile="{_quantile_label(q)}"'), quantiles.get(q, math.nan))
    out.sample(f"{name}_sum", label_text, total)
    out.sample(f"{name}_count", label_text, count)


def _quantile_label(q: float) -> str:
    # client_golang writes 0 and 1 as "0" and "1" (the performance dashboard filters quantile="0" and "1").
    return str(int(q)) if q == int(q) else repr(q)
