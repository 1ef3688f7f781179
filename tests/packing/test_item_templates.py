"""The kubectl YAML reader's templates (packing.kubectlyaml.ItemReader): an item read from an earlier one with
other one-line scalars gives what the full reader gives, or the reader declines (UNSURE)."""

from __future__ import annotations

import copy
import random
import re
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from packing import kubectlyaml, yamlinput
from packing.bench.dump import pod_object


def full_item(chunk: str) -> Any:
    return yamlinput.load_one("x:\n" + chunk)["x"][0]


def items_of(objs: list[Any], width: int = 80) -> list[str]:
    text = yaml.safe_dump(objs, sort_keys=True, width=width, allow_unicode=True)
    starts = [m.start() for m in re.finditer(r"^- ", text, re.M)] + [len(text)]
    return [text[a:b] for a, b in zip(starts, starts[1:], strict=False)]


def read_all(chunks: list[str]) -> list[Any]:
    reader = kubectlyaml.ItemReader()
    return [reader.read(chunk) for chunk in chunks]


def test_pods_of_one_shape_are_made_from_a_template_and_read_as_the_full_reader_reads_them() -> None:
    rnd = random.Random(7)
    chunks = items_of([pod_object(i, rnd) for i in range(60)])
    reader = kubectlyaml.ItemReader()
    for chunk in chunks:
        assert reader.read(chunk) == full_item(chunk)
    # all 60 pods have one shape: one template read line by line, the others made from it
    assert [len(kept) for kept in reader._templates.values()] == [1]


def test_a_template_is_never_changed_by_the_items_made_from_it() -> None:
    rnd = random.Random(8)
    objs = [pod_object(i, rnd) for i in range(3)]
    first = copy.deepcopy(objs[0])
    chunks = items_of(objs)
    values = read_all(chunks)
    assert values[0] == first and values[1] == objs[1] and values[2] == objs[2]


def test_a_key_an_item_renames_to_one_its_mapping_has_is_left_to_the_full_reader() -> None:
    # the same lines but one: `b: 2` became `a: 2`, a key given twice (the full reader refuses it)
    template = "- a: 1\n  b: 2\n  c:\n    d: x\n"
    twice = "- a: 1\n  a: 2\n  c:\n    d: x\n"
    assert read_all([template, twice]) == [{"a": 1, "b": 2, "c": {"d": "x"}}, kubectlyaml.UNSURE]
    renamed = "- a: 1\n  e: 2\n  c:\n    d: y\n"
    assert read_all([template, renamed]) == [full_item(template), full_item(renamed)]


def test_a_changed_line_that_is_not_a_new_one_line_scalar_is_read_anew() -> None:
    template = "- a: 1\n  b: 'x'\n  c:\n    d: x\n"
    for other in (
        "- a: 1\n  b:\n  c:\n    d: x\n",  # a key without its scalar
        "- a: 1\n  b: 'open\n  c:\n    d: x\n",  # a quote its line does not close
        "- a: 1\n  b: &x 1\n  c:\n    d: x\n",  # an anchor
        "- a: 1\n  b: [1]\n  c:\n    d: x\n",  # a flow sequence
        "- a: 1\n   b: 2\n  c:\n    d: x\n",  # another indentation
        "- a: 1\n  b: x # y\n  c:\n    d: x\n",  # a comment
        "- a: 1\n  b: 2\n  c:\n  - d\n",  # a block where the template has a mapping
    ):
        (_, got) = read_all([template, other])
        if got is not kubectlyaml.UNSURE:
            assert got == full_item(other), other


# mostly what kubectl prints (plain words, numbers), some of what it quotes or the reader declines
_scalars = st.one_of(
    st.from_regex(r"[a-z0-9][a-z0-9./-]{0,12}", fullmatch=True), st.integers(-10**6, 10**20), st.booleans(),
    st.none(), st.floats(allow_nan=False, allow_infinity=False),
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
    st.sampled_from(["yes", "~", "null", "1e3", "0x1F", "- a", "a: b", "#x", "'", "''", '"', "<<", "{}", "[]"]),
)
_keys = st.one_of(st.from_regex(r"[a-z][a-zA-Z0-9./-]{0,10}", fullmatch=True),
                  st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=12),
                  st.sampled_from(["a", "b", "true", "1", "null", "k:{\"a\":1}"]))


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The paths of the scalars held by mappings in `value`."""
    out = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        if isinstance(v, dict | list) and v:
            out.extend(_paths(v, (*path, k)))
        elif isinstance(value, dict):
            out.append((*path, k))
    return out


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_items_made_from_templates_agree_with_the_full_reader(data: st.DataObject) -> None:
    base = data.draw(st.fixed_dictionaries({
        "apiVersion": st.just("v1"),
        "kind": st.just("Pod"),
        "metadata": st.dictionaries(_keys, _scalars, min_size=1, max_size=4),
        "spec": st.fixed_dictionaries({"containers": st.lists(st.dictionaries(_keys, _scalars, min_size=1,
                                                                              max_size=3), min_size=1, max_size=2),
                                       "x": st.dictionaries(_keys, _scalars, max_size=3)}),
    }))
    objs = [base]
    for _ in range(data.draw(st.integers(1, 4))):
        obj = copy.deepcopy(base)
        paths = _paths(obj)
        for path in data.draw(st.lists(st.sampled_from(paths), max_size=4)) if paths else []:
            holder = obj
            for k in path[:-1]:
                holder = holder[k]
            if data.draw(st.booleans()):
                holder[path[-1]] = data.draw(_scalars)
            else:  # a new key where the old one was
                old, new = path[-1], data.draw(_keys)
                renamed = [(new if k == old else k, v) for k, v in holder.items() if k != new or k == old]
                holder.clear()
                holder.update(renamed)
        objs.append(obj)
    width = data.draw(st.sampled_from([40, 80, 10_000]))
    chunks = items_of(objs, width)
    for chunk, got in zip(chunks, read_all(chunks), strict=True):
        if got is not kubectlyaml.UNSURE:
            assert got == full_item(chunk), chunk
