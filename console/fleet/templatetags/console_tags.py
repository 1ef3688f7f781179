from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template

register = template.Library()


@register.filter
def get_item(mapping: Mapping[str, Any] | None, key: str) -> Any:
    """Label keys contain dots and slashes, which Django's template lookups cannot spell."""
    return (mapping or {}).get(key, "")
