"""Reading a List one item at a time (packing.streaming, packing.kubectlyaml) against the whole-text reader:
the same objects, or the streaming reader declines and the whole-text reader decides."""

from __future__ import annotations

import io
import json
import random
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from packing import kubectlyaml, streaming, yamlinput
from packing.bench.dump import NODEPOOL, pod_object
from packing.documents import kubernetes_objects
from packing.fields import InputError
from packing.kubeobjects import Inputs, load_files, parse_documents
from packing.plan_cli import main as plan_main
from packing.streaming import Declined, stream_objects


def full_item(chunk: str) -> Any:
    """What the full reader makes of one item's text, at its depth in a List."""
    return yamlinput.load_one("x:\n" + chunk)["x"][0]


def agree(chunk: str) -> Any:
    """The fast reader's value for `chunk`, checked against the full reader's."""
    fast = kubectlyaml.read_item(chunk)
    if fast is kubectlyaml.UNSURE:
        return fast
    assert fast == full_item(chunk), chunk  # an error here is a disagreement too: the fast reader accepted it
    return fast


def dump_items(objs: list[Any], width: int = 80) -> list[str]:
    text = yaml.safe_dump(objs, sort_keys=True, width=width)
    starts = [m.start() for m in re.finditer(r"^- ", text, re.M)] + [len(text)]
    return [text[a:b] for a, b in zip(starts, starts[1:], strict=False)]


# ---------------------------------------------------------------- the fast reader, item by item
def test_the_fast_reader_reads_every_pod_of_the_dump() -> None:
    rnd = random.Random(3)
    chunks = dump_items([pod_object(i, rnd) for i in range(30)])
    reader = kubectlyaml.ItemReader()
    for chunk in chunks:
        value = reader.read(chunk)
        assert value is not kubectlyaml.UNSURE
        assert value == full_item(chunk)


@pytest.mark.parametrize("chunk", [
    "- a: 1\n  b: yes\n  c: ~\n  d: '007'\n  e: \"x\"\n  f: 0x1F\n  g: 1.5\n  h: {}\n  i: []\n",
    "- a:\n  - 1\n  - b: 2\n    c: 3\n  -\n  - - x\n",
    "- 1: x\n  true: y\n  null: z\n  1.0: w\n",
    "- message: 'a long message that kubectl folds\n    over two lines'\n  other: plain folded\n    too\n",
    "- a: 'it''s'\n  b: 'x''\n    ''y'\n",
    "- k:{\"type\":\"PodScheduled\"}: {}\n  f:metadata:\n    .: {}\n",
])
def test_the_fast_reader_agrees_or_declines(chunk: str) -> None:
    agree(chunk)


@pytest.mark.parametrize("chunk", [
    "- a: &x 1\n  b: *x\n",  # anchors, aliases
    "- a: !!int 1\n",  # tags
    "- a: [1, 2]\n",  # flow collections
    "- a: |\n    text\n",  # block scalars
    "- a: 1 # comment\n",
    "- a: 1\n\n  b: 2\n",  # blank lines
    "- a: \"x\\ty\"\n",  # escapes
    "- 'a': 1\n",  # quoted keys
    "- a: 1\n  a: 2\n",  # a key given twice (the full reader words the error)
    "- a: 1\n   b: 2\n",  # odd indentation
    "- a: 99999999999999999999" + "9" * 5000 + "\n",  # an integer the full reader refuses
    "- a: 'unclosed\n",
    "- <<: {a: 1}\n",
])
def test_the_fast_reader_declines_what_it_does_not_read(chunk: str) -> None:
    assert kubectlyaml.read_item(chunk) is kubectlyaml.UNSURE


def test_nesting_near_the_depth_limit_is_left_to_the_full_reader() -> None:
    deep: Any = "x"
    for _ in range(yamlinput.MAX_DEPTH):
        deep = {"k": deep}
    (chunk,) = dump_items([deep], width=10_000)
    assert kubectlyaml.read_item(chunk) is kubectlyaml.UNSURE


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10**6, 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=120),
    st.sampled_from(["yes", "on", "~", "null", "1e3", "0o17", "017", "1:20", ".inf", "0x1F", "-", "- a", "a: b",
                     "#x", "a #b", "'", "''", '"', "k:{\"a\":1}", "1_000", "+1", ".5", "<<", "="]),
)
_keys = st.one_of(st.text(st.characters(min_codepoint=32, max_codepoint=0x17F), min_size=1, max_size=20),
                  st.sampled_from(["true", "1", "null", "yes", "f:spec", ".", "k:{\"type\":\"Ready\"}"]))
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_keys, _values, min_size=1, max_size=5), st.sampled_from([20, 80, 10_000]))
def test_the_fast_reader_agrees_with_the_full_reader_on_what_pyyaml_prints(item: dict[str, Any], width: int) -> None:
    for chunk in dump_items([item], width=width):
        agree(chunk)


_fragments = st.sampled_from([
    "a:", "a: 1", "b: x y", "- ", "-", "  ", "    ", "c: 'q", "r'", "'s''t'", "d: \"e\"", "f: {}", "g: []",
    "h: yes", "1: 2", "k: - x", "a:b", "#c", " #d", ": x", "x: y: z", "--- a", "'k': v", "e: 'x'  ",
])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.lists(_fragments, min_size=1, max_size=3)), min_size=1, max_size=8))
@example([(0, ["c: 'q"]), (1, ["r'"]), (1, ["a:"])])  # a key indented under a folded quoted scalar: not YAML
def test_the_fast_reader_never_accepts_what_the_full_reader_reads_otherwise(lines: list[tuple[int, list[str]]]) -> None:
    chunk = "- " + "\n".join(" " * (2 + ind) + "".join(parts) for ind, parts in lines).lstrip(" ") + "\n"
    fast = kubectlyaml.read_item(chunk)
    if fast is not kubectlyaml.UNSURE:
        assert fast == full_item(chunk), chunk


# ---------------------------------------------------------------- whole texts
def whole(text: str, filename: str = "f.yaml") -> list[tuple[str, str, Mapping[str, Any]]]:
    return list(kubernetes_objects(text, filename))


def streamed(text: str, filename: str = "f.yaml") -> list[tuple[str, str, Mapping[str, Any]]] | None:
    try:
        return list(stream_objects(text, filename))
    except Declined:
        return None


def kubectl_list(objs: list[Any]) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "items": objs, "kind": "List", "metadata": {"resourceVersion": ""}},
                          sort_keys=True)


def test_a_kubectl_yaml_dump_is_streamed_with_the_same_objects() -> None:
    rnd = random.Random(1)
    text = yaml.safe_dump(NODEPOOL) + "---\n" + kubectl_list([pod_object(i, rnd) for i in range(20)])
    assert streamed(text) == whole(text)
    assert len(whole(text)) == 21


def test_a_kubectl_json_dump_is_streamed_with_the_same_objects() -> None:
    rnd = random.Random(1)
    text = json.dumps({"apiVersion": "v1", "items": [NODEPOOL, *(pod_object(i, rnd) for i in range(20))],
                       "kind": "List", "metadata": {}}, indent=4, sort_keys=True)
    assert streamed(text) == whole(text)


@pytest.mark.parametrize("text", [
    "a: 1\n---\n---\nkind: Pod\napiVersion: v1\n",  # empty documents count
    "---\napiVersion: v1\nkind: Pod\n---\n",
    "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Pod\nkind: NotAList\n",  # items, not a List: one object
    "apiVersion: v1\nitems:\n- 1\nkind: List\n",
    "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Pod\nkind: List\nitems: []\n",  # items twice
    "apiVersion: v1\nkind: List\nmetadata:\n  a: \"x\nitems:\n- apiVersion: v1\n  kind: Pod\ny\"\n",  # split inside a quote
    "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Pod\n  x: &a 1\n- apiVersion: v1\n  kind: Pod\n  y: *a\nkind: List\n",
    "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Pod\n\tkind: List\n",
    "{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [{\"apiVersion\": \"v1\", \"kind\": \"Pod\"}], \"kind\": \"List\"}",
    "{\"apiVersion\": \"v1\", \"items\": [{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"a\": NaN}], \"kind\": \"List\"}",
    "{\"apiVersion\": \"v1\", \"items\": [], \"kind\": \"List\"} x",
    "[{\"apiVersion\": \"v1\", \"kind\": \"Pod\"}]",
])
def test_texts_are_streamed_alike_or_declined(text: str) -> None:
    try:
        expected: Any = whole(text)
    except InputError as e:
        expected = e
    got = streamed(text)
    if isinstance(expected, InputError):
        assert got is None
    elif got is not None:
        assert got == expected


_docs = st.lists(
    st.one_of(
        st.none(),
        st.fixed_dictionaries({"apiVersion": st.just("v1"), "kind": st.sampled_from(["Pod", "Node", "List"]),
                               "items": st.lists(st.fixed_dictionaries({"apiVersion": st.just("v1"),
                                                                         "kind": st.just("Pod"),
                                                                         "x": _values}), max_size=3)}),
        st.dictionaries(_keys, _values, max_size=3),
    ),
    min_size=1, max_size=3,
)


@settings(max_examples=200, deadline=None)
@given(_docs, st.booleans())
def test_streaming_agrees_with_the_whole_reader(docs: list[Any], as_json: bool) -> None:
    text = json.dumps(docs[0]) if as_json else yaml.safe_dump_all(docs, sort_keys=True)
    try:
        expected: Any = whole(text)
    except InputError:
        expected = None
    got = streamed(text)
    if expected is None:
        assert got is None
    elif got is not None:
        assert got == expected


# ---------------------------------------------------------------- parse_documents and the CLI
def pod(name: str, cpu: Any = "1") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": "Pending"}}


def run_plan(tmp_path: Any, text: str) -> tuple[int, str]:
    path = tmp_path / "dump.yaml"
    path.write_text(text)
    err = io.StringIO()
    code = plan_main([str(path)], stdout=io.StringIO(), stderr=err)
    return code, err.getvalue()


def test_a_bad_item_deep_in_a_list_exits_2_naming_it(tmp_path: Any) -> None:
    text = kubectl_list([pod("a"), pod("b"), pod("c", cpu="lots")])
    code, err = run_plan(tmp_path, text)
    assert code == 2
    assert err.startswith(f"error: {tmp_path / 'dump.yaml'}: document 1 (Pod c): items[2].spec.containers[0]")
    assert err.count("\n") == 1


def test_a_yaml_error_after_a_bad_item_is_the_one_reported(tmp_path: Any) -> None:
    # the whole-text reader reads the whole document before its objects: a YAML error anywhere in it comes first
    text = kubectl_list([pod("a", cpu="lots"), pod("b")]).replace("name: b", "name: b\n    name: again")
    code, err = run_plan(tmp_path, text)
    assert code == 2
    assert "document 1: invalid YAML (line" in err and "given twice" in err


def test_a_failed_stream_leaves_the_inputs_as_they_were_before_the_text() -> None:
    inp = Inputs()
    parse_documents(kubectl_list([pod("a")]), "one.yaml", inp)
    with pytest.raises(InputError, match=r"two.yaml: document 1 \(Pod a\): items\[1\]\.metadata\.name: Pod default/a "
                                         r"is defined more than once \(also one.yaml: document 1 \(Pod a\): items\[0\]\)"):
        parse_documents(kubectl_list([pod("b"), pod("a")]), "two.yaml", inp)
    inp2 = Inputs()
    parse_documents(kubectl_list([pod("a")]), "one.yaml", inp2)
    parse_documents(kubectl_list([pod("b"), pod("c")]), "two.yaml", inp2)
    assert [p.name for p in inp2.pending] == ["a", "b", "c"]


def _items(text: str) -> Iterator[str]:
    yield from (where for where, _, _ in stream_objects(text, "f"))


def test_a_list_that_turns_out_not_to_be_one_is_declined_after_its_items() -> None:
    text = "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Pod\nkind: Thing\n"
    gen = _items(text)
    assert next(gen) == "f: document 1"
    with pytest.raises(Declined):
        next(gen)
    assert [prefix for _, prefix, _ in whole(text)] == [""]


def test_a_line_after_a_closed_quoted_scalar_is_left_to_the_full_reader() -> None:
    # found by the property test above: the fast reader dropped the `a:` line the full reader refuses
    assert kubectlyaml.read_item("- c: 'q\n   r'\n   a:\n") is kubectlyaml.UNSURE
    assert agree("- c: 'q\n   r'\n  a: 1\n") == {"c": "q r", "a": 1}


# ---------------------------------------------------------------- JSON streamed from a file's bytes
def json_dump(objs: list[Any]) -> str:
    return json.dumps({"apiVersion": "v1", "items": objs, "kind": "List", "metadata": {"resourceVersion": ""}},
                      ensure_ascii=False, indent=1)


@pytest.mark.parametrize("window", [1, 7, 64, 1 << 20])
def test_a_json_dump_read_from_bytes_gives_what_its_text_gives(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    rnd = random.Random(5)
    objs = [pod_object(i, rnd) for i in range(6)]
    objs[2]["metadata"]["annotations"] = {"note": "grüße ✓ 𝄞 " * 5, "n": 12345678901234567890}
    text = json_dump([NODEPOOL, *objs])
    path = tmp_path / "dump.json"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(streaming, "_WINDOW", window)  # values cut by windows, inside characters too
    expected = Inputs()
    parse_documents(text, str(path), expected)
    got = load_files([str(path)])
    assert got == expected and len(got.pending) == 6 and got.nodepools
    assert list(streaming.json_bytes_objects(text.encode(), "f.json")) == whole(text, "f.json")


@pytest.mark.parametrize("data", [
    b'{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Pod"}, 1]}',
    b'{"apiVersion": "v1", "kind": "List", "items": [1, 2] ',
    b'{"apiVersion": "v1", "kind": "List", "items": []} x',
    b'{"a": 1, "a": 2}',
    b'{"kind": "List", "apiVersion": "v1", "items": [{"x": NaN}]}',
    b'{"kind": "List", "apiVersion": "v1", "items": [{"x": "\xff"}]}',
    b'{"kind": "List", "apiVersion": "v1", "items": [{"x": 12',
])
def test_json_bytes_the_stream_is_not_sure_of_are_declined(data: bytes) -> None:
    with pytest.raises(Declined):
        list(streaming.json_bytes_objects(data, "f.json"))


def test_a_json_file_that_is_not_utf8_is_refused_naming_the_file(tmp_path: Any) -> None:
    path = tmp_path / "dump.json"
    path.write_bytes(json_dump([pod("a")]).encode().replace(b'"a"', b'"\xff"'))
    with pytest.raises(InputError, match=r"dump.json: cannot read file: 'utf-8' codec can't decode byte 0xff"):
        load_files([str(path)])


def test_a_bad_item_of_a_json_dump_exits_2_naming_it(tmp_path: Any) -> None:
    path = tmp_path / "dump.json"
    path.write_text(json_dump([pod("a"), pod("b", cpu="lots")]))
    err = io.StringIO()
    assert plan_main([str(path)], stdout=io.StringIO(), stderr=err) == 2
    assert err.getvalue().startswith(f"error: {path}: document 1 (Pod b): items[1].spec.containers[0]")
