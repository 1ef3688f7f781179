"""The checks on a JSON value read from a file's bytes (packing.yamlinput.check_json): the depth-only check
for values that cannot hold a lone surrogate agrees with the full one."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packing import streaming, yamlinput
from packing.streaming import Declined

_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=3)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3),
    max_leaves=30,
)


def verdict(value: Any, depth: int, strings: bool) -> bool:
    try:
        yamlinput.check_json(value, depth, strings=strings)
    except yamlinput.NotJson:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(_values, st.integers(1, 4), st.integers(1, 6))
def test_the_depth_check_agrees_with_the_full_check(value: Any, depth: int, limit: int) -> None:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(yamlinput, "MAX_DEPTH", limit)
        if all(not isinstance(s, str) or s.isascii() for s in _strings(value)):
            assert verdict(value, depth, strings=False) == verdict(value, depth, strings=True)


def _strings(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [*value, *(s for v in value.values() for s in _strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value]


def test_a_lone_surrogate_escaped_in_a_streamed_json_item_is_declined() -> None:
    data = b'{"apiVersion": "v1", "items": [{"apiVersion": "v1", "kind": "Pod", "x": "\\ud800"}], "kind": "List"}'
    with pytest.raises(Declined):
        list(streaming.json_bytes_objects(data, "f.json"))
    ok = data.replace(b"\\ud800", b"\\ud83d\\ude00")
    assert [item["x"] for _, _, item in streaming.json_bytes_objects(ok, "f.json")] == ["\U0001f600"]
