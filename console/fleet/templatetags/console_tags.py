from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from django import template

from console.fleet import selectors

register = template.Library()


@register.filter
def get_item(mapping: Mapping[str, Any] | None, key: str) -> Any:
    """Label keys contain dots and slashes, which Django's template lookups cannot spell."""
    return (mapping or {}).get(key, "")


def yaml_text(value: Any) -> str:
    """A value as it reads in a Karpenter manifest: `10`, `spot`, `"10"`, a block list of mappings —
    never a Python repr (`['spot']`, `{'key': …}`, `None`, `True`). Keys sorted: PostgreSQL's jsonb keeps
    no key order, and a page must read the same on every database."""
    if value is None:
        return "null"
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list | tuple) else None
    if items is not None and all(not isinstance(v, dict | list | tuple) for v in items):
        # a list of values or a flat mapping reads best on one line: [spot, on-demand], {cpu: '100'}
        flow = yaml.safe_dump(value, sort_keys=True, default_flow_style=True, allow_unicode=True, width=10**6)
        if len(flow) <= 100:
            return flow.strip()
    # block style, with lists of plain values inline: "values: [spot, on-demand]"
    text = yaml.safe_dump(value, sort_keys=True, default_flow_style=None, allow_unicode=True, width=100)
    if items is None:
        text = text.removesuffix("\n").removesuffix("\n...")  # a scalar's document end marker
    return text.rstrip("\n")


@register.filter(name="yaml")
def yaml_filter(value: Any) -> str:
    return yaml_text(value)


@dataclass(frozen=True)
class Change:
    path: str          # a Karpenter YAML path, e.g. spec.template.spec.requirements
    before: str | None  # YAML text; None: the field was not set
    after: str | None

    @property
    def multiline(self) -> bool:
        return "\n" in (self.before or "") or "\n" in (self.after or "")


@register.filter
def history_changes(changes: Mapping[str, Any] | None) -> list[Change]:
    """A ChangeRecord's {path: [before, after]} as rows with YAML values. The record of a creation or
    deletion may carry the empty manifest's root ("" path): nothing an operator set, so it is skipped."""
    rows = []
    for path, pair in sorted((changes or {}).items()):
        if not path or not isinstance(pair, list | tuple) or len(pair) != 2:
            continue
        before, after = pair
        rows.append(Change(path, None if before is None else yaml_text(before),
                           None if after is None else yaml_text(after)))
    return rows


@register.filter
def signed(value: Any, places: int = 4) -> str:
    """A change with its sign: +0.0320, −0.0100 (a real minus), 0.0000; for counts (places 0) +1, −2, 0."""
    if value is None or value == "":
        return "n/a"
    number = float(value)
    text = f"{abs(number):.{int(places)}f}"
    if float(text) == 0:
        return text
    return ("+" if number > 0 else "\u2212") + text


_DECIMAL_CPU = re.compile(r"\b(\d+)\.(\d{1,3}) cpu\b")


@register.filter
def kube_quantities(text: str) -> str:
    """The engine's prose with CPU amounts as Kubernetes quantities, the way a pod spec writes them:
    "382.87 cpu" → "382870m cpu" (whole amounts, "4 cpu", and memory, "7.5Gi", already are)."""
    def millis(m: re.Match[str]) -> str:
        return f"{int(m[1]) * 1000 + int(m[2].ljust(3, '0'))}m cpu"

    return _DECIMAL_CPU.sub(millis, str(text))


@register.simple_tag
def change_history(object_type: str, obj: Any) -> Any:
    """An object's change history, newest first (for the pages of apps that do not import this one: a
    CapacityBuffer's is under its namespace/name)."""
    return selectors.change_history(object_type=object_type, name=str(obj))
