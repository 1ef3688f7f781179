"""packing.yamlinput, the one YAML/JSON reader: kubectl's dialect, and every limit at its boundary."""

from __future__ import annotations

import pytest
import yaml

from packing import yamlinput
from packing.yamlinput import (
    MAX_ALIAS_NODES,
    MAX_DEPTH,
    NotJson,
    YamlInputError,
    brief,
    load_all,
    load_json,
    load_one,
)


def problem(text: str) -> tuple[str, int | None, int | None]:
    with pytest.raises(YamlInputError) as err:
        list(load_all(text))
    mark = err.value.problem_mark
    return str(err.value.problem), mark and mark.line + 1, mark and mark.column + 1


def test_kubectl_dialect() -> None:
    assert load_one("a: 2024-02-02T19:54:34Z\n1: x\ntrue: y\n~: z\nb: !!timestamp 2024-02-02T19:54:34Z\n") == {
        "a": "2024-02-02T19:54:34Z", "1": "x", "true": "y", "null": "z", "b": "2024-02-02T19:54:34Z"}
    assert load_one("a: !!str 1\nb: !!int '7'\nc: !!float 1\nd: !!bool yes\n") == {"a": "1", "b": 7, "c": 1.0, "d": True}
    assert list(load_all("a: 1\n---\n---\nb: 2\n")) == [{"a": 1}, None, {"b": 2}]


@pytest.mark.parametrize(("text", "expected"), [
    ("a: !!int x", ("invalid integer 'x'", 1, 4)),
    ("a: !!timestamp x", ("invalid timestamp 'x'", 1, 4)),
    ("a: !!float x", ("invalid number 'x'", 1, 4)),
    ("a: !!bool x", ("invalid boolean 'x'", 1, 4)),
    ("a:\n  b: !!int " + "9" * 5000, ("invalid integer '" + "9" * 58 + "…", 2, 6)),
    ("a: !!binary aGk=", ("tag !!binary is not supported (only JSON values)", 1, 4)),
    ("a: !!set {x}", ("tag !!set is not supported (only JSON values)", 1, 4)),
    ("a: !!python/object:os.system x", ("tag !!python/object:os.system is not supported (only JSON values)", 1, 4)),
    ("a: !secret x", ("tag !secret is not supported (only JSON values)", 1, 4)),
    ("a: 1\nb: 2\na: 3", ("key 'a' is given twice", 3, 1)),
    ("1: a\n'1': b", ("key '1' is given twice", 2, 1)),
    ("? [a]\n: b", ("mapping keys must be strings or numbers, not collections", 1, 3)),
    ("a: &a [x, *a]", ("recursive alias: a node contains itself", 1, 4)),
    ("a: !!map [1]", ("expected a mapping, found a sequence", 1, 4)),
])
def test_refused(text: str, expected: tuple[str, int, int]) -> None:
    assert problem(text) == expected


def test_the_errors_are_yaml_errors_with_a_mark() -> None:
    # console/fleet/services.py and forms read problem and problem_mark of any yaml.YAMLError
    with pytest.raises(yaml.YAMLError) as err:
        load_one("a: !!int x")
    assert isinstance(err.value, yaml.MarkedYAMLError) and err.value.problem_mark is not None


def aliased(copies: int) -> str:
    """A 100-item list, then `copies` aliases of it: aliases add copies * 101 nodes."""
    return "a: &a [" + ", ".join(["x"] * 100) + "]\nb: [" + ", ".join(["*a"] * copies) + "]\n"


def test_alias_expansion_is_bounded_at_max_alias_nodes() -> None:
    fits = MAX_ALIAS_NODES // 101
    assert len(load_one(aliased(fits))["b"]) == fits
    assert problem(aliased(fits + 1))[0] == f"aliases expand the document by more than {MAX_ALIAS_NODES} nodes (an alias bomb?)"


def test_a_long_string_aliased_weighs_its_length() -> None:
    text = "a: &a '" + "x" * 6400 + "'\nb: [" + ", ".join(["*a"] * 120) + "]\n"
    assert "aliases expand" in problem(text)[0]


def test_a_large_document_may_repeat_itself_once() -> None:
    # aliases may add as many nodes as the document has, when that is more than MAX_ALIAS_NODES
    items = ", ".join(f"k{i}: v" for i in range(MAX_ALIAS_NODES))
    assert len(load_one(f"a: &a {{{items}}}\nb: *a\n")["b"]) == MAX_ALIAS_NODES


def test_merge_keys_may_be_overridden_but_not_repeated() -> None:
    assert load_one("b: &b {a: 1, c: 3}\nd: {<<: *b, a: 2}\n")["d"] == {"a": 2, "c": 3}
    # the merged mapping is read (flattened) by its user before its own turn comes: still no false "twice"
    text = "x: {y: &m {<<: &b {a: 1}, a: 2}}\ntop: {<<: *m}\n"
    assert load_one(text)["x"] == {"y": {"a": 2}}
    assert problem("b: &b {a: 1}\nd: {<<: *b, a: 2, a: 3}\n")[0] == "key 'a' is given twice"


def test_nesting_is_bounded_at_max_depth() -> None:
    def nested(levels: int) -> str:
        return "[" * levels + "]" * levels

    load_one(nested(MAX_DEPTH))
    assert problem(nested(MAX_DEPTH + 1))[0] == f"nested deeper than {MAX_DEPTH} levels"
    assert problem("a: &a " + nested(MAX_DEPTH) + "\n")[0] == f"nested deeper than {MAX_DEPTH} levels"  # +1: the map
    with pytest.raises(yaml.YAMLError):
        load_one(nested(100_000))  # libyaml's own limit


def test_json_fast_path_defers_to_yaml_for_anything_doubtful() -> None:
    assert load_json('{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}
    for text in ('{"a": 1, "a": 2}', '{"a": NaN}', '{"a": Infinity}', '{"a": "\\ud800"}',
                 "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), '{"a": ' + "9" * 5000 + "}", '{"a": '):
        with pytest.raises(NotJson):
            load_json(text)
    assert problem('{"a": 1, "a": 2}') == ("key 'a' is given twice", 1, 10)


def test_brief_is_bounded() -> None:
    assert brief("x" * 1000) == "'" + "x" * 58 + "…"
    assert brief(10**400) == "<an integer of about 401 digits>"
    assert brief([["a" * 100] * 100] * 100).startswith("[['aaaa") and len(brief([[1] * 100] * 100)) <= 60
    deep: list[object] = []
    for _ in range(5000):
        deep = [deep]
    assert brief(deep) == "[[[…]]]"
    assert brief({"k": {"a": {"b": 1}}}) == "{'k': {'a': {…}}}"
    assert brief(float("nan")) == "nan" and brief(b"x") == "<bytes>"


def test_load_one_refuses_several_documents() -> None:
    with pytest.raises(YamlInputError, match="expected a single YAML document"):
        load_one("a: 1\n---\nb: 2\n")
    assert load_one("") is None


def test_without_libyaml_the_same_rules_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlinput, "_Loader", yamlinput.loader_class(yaml.SafeLoader))
    assert load_one("a: 2024-02-02\nb: !!int '3'\n") == {"a": "2024-02-02", "b": 3}
    assert problem("a: !!int x")[0] == "invalid integer 'x'"
    assert problem(aliased(MAX_ALIAS_NODES // 101 + 1))[0].startswith("aliases expand")
    assert problem("[" * 5000 + "]" * 5000)[0] == f"nested deeper than {MAX_DEPTH} levels"  # RecursionError caught


def test_collector_is_back_on_after_each_document_and_off_state_kept() -> None:
    import gc

    from packing.yamlinput import load_all

    docs = load_all("a: 1\n---\nb: 2\n")
    assert next(docs) == {"a": 1}
    assert gc.isenabled()  # the caller never runs with the collector off
    gc.disable()
    try:
        assert next(docs) == {"b": 2}
        assert not gc.isenabled()  # a caller that had it off keeps it off
    finally:
        gc.enable()


def test_remembered_scalar_tags_keep_quoted_and_plain_apart() -> None:
    from packing.yamlinput import load_one

    text = "- 1\n- '1'\n- 1\n- '1'\n- true\n- 'true'\n- true\n- null\n- 'null'\n- null\n- x\n- x\n"
    assert load_one(text) == [1, "1", 1, "1", True, "true", True, None, "null", None, "x", "x"]
