"""The one YAML/JSON reader for everything an operator hands Loadmaster: CLI files, snapshots, imports, forms.

YAML as kubectl reads it (sigs.k8s.io/yaml): timestamps stay strings, mapping keys are strings (``1`` and ``true``
as Go spells them), a key given twice in one mapping is an error (a merge key ``<<`` may still be overridden), and
only JSON-shaped values come out (null, bool, int, float, str, list, dict). Every problem is a
:class:`YamlInputError` (a ``yaml.MarkedYAMLError``: ``problem`` and ``problem_mark`` say what and where), never
another exception, whatever the input:

* explicit tags with a bad value (``!!int x``, ``!!timestamp x``, ``!!float x``, ``!!bool x``) and integers too
  long for Python (more than 4300 digits) are input errors;
* tags that have no JSON value (``!!binary``, ``!!set``, ``!!omap``, ``!!pairs``, ``!python/...``) are refused;
* aliases may add at most MAX_ALIAS_NODES nodes to a document (or as many as the document has, if more), so a
  500-byte "billion laughs" cannot become gigabytes in whatever walks the result; recursive aliases are refused;
* nesting deeper than MAX_DEPTH levels is refused (the readers and error messages that walk a document recurse).

:func:`brief` is how every error message quotes a value: at most 60 characters, with an ellipsis.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Iterator
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from packing.gcpause import gc_paused

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "NotJson",
    "YamlInputError",
    "brief",
    "go_key_text",
    "check_json",
    "json_constant",
    "json_pairs",
    "load_all",
    "load_json",
    "load_one",
]

MAX_DEPTH = 100
MAX_ALIAS_NODES = 10_000
BRIEF_LIMIT = 60
_RESOLVE_CACHE_LEN = 64  # scalars longer than this are resolved each time, not remembered
_RESOLVE_CACHE_SIZE = 100_000  # at most this many remembered per stream


class YamlInputError(yaml.MarkedYAMLError):
    """Malformed or refused YAML; ``problem`` is one short line, ``problem_mark`` (may be None) the place."""

    def __init__(self, problem: str, mark: Any = None) -> None:
        super().__init__(None, None, problem, mark)


class NotJson(ValueError):
    """load_json: the text is not plain JSON the fast path takes (read it as YAML for the exact error)."""


# ---------------------------------------------------------------- quoting values in messages
def brief(value: Any, limit: int = BRIEF_LIMIT) -> str:
    """repr() for error messages, bounded: at most `limit` characters, '…' where it was cut."""
    text = _brief(value, 0, limit)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _brief(value: Any, depth: int, limit: int) -> str:
    if isinstance(value, str):
        return repr(value[: limit + 1])
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        if value.bit_length() <= 200:
            return repr(value)
        return f"<an integer of about {int(value.bit_length() * 0.30103) + 1} digits>"
    if isinstance(value, list | tuple):
        if depth >= 2:
            return "[…]" if value else "[]"
        parts = [_brief(v, depth + 1, limit) for v in value[:4]]
        return "[" + ", ".join(parts) + (", …" if len(value) > 4 else "") + "]"
    if isinstance(value, dict):
        if depth >= 2:
            return "{…}" if value else "{}"
        items = list(value.items())[:4]
        parts = [f"{_brief(k, depth + 1, limit)}: {_brief(v, depth + 1, limit)}" for k, v in items]
        return "{" + ", ".join(parts) + (", …" if len(value) > 4 else "") + "}"
    return f"<{type(value).__name__}>"


# ---------------------------------------------------------------- the YAML dialect
_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE = "tag:yaml.org,2002:merge"
_TAG_NAMES = {
    "tag:yaml.org,2002:int": "integer",
    "tag:yaml.org,2002:float": "number",
    "tag:yaml.org,2002:bool": "boolean",
    "tag:yaml.org,2002:timestamp": "timestamp",
    "tag:yaml.org,2002:null": "null",
    "tag:yaml.org,2002:str": "string",
}


def _short_tag(tag: str) -> str:
    return "!!" + tag[len("tag:yaml.org,2002:") :] if tag.startswith("tag:yaml.org,2002:") else tag


class _Dialect:
    """What the dialect adds to a SafeLoader (libyaml's or the pure-Python one); one instance reads one text."""

    check_aliases = True  # False when the text has no '&': no anchor, hence no alias to count

    def __init__(self, stream: str) -> None:
        self._resolved: dict[tuple[str, bool, bool], str] = {}
        super().__init__(stream)  # type: ignore[call-arg]
        self._explicit: dict[int, int] = {}

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        # A scalar's implicit tag depends only on its text and the two implicit flags (a SafeLoader has no path
        # resolvers), and a kubectl dump repeats the same keys and values thousands of times: remember short
        # ones (a third of the time of reading a 50,000-pod dump went to the resolver's regular expressions).
        if kind is not ScalarNode or len(value) > _RESOLVE_CACHE_LEN or not isinstance(implicit, tuple):
            return super().resolve(kind, value, implicit)  # type: ignore[misc]
        key = (value, bool(implicit[0]), bool(implicit[1]))
        tag = self._resolved.get(key)
        if tag is None:
            tag = super().resolve(kind, value, implicit)  # type: ignore[misc]
            if len(self._resolved) < _RESOLVE_CACHE_SIZE:
                self._resolved[key] = tag
        return tag

    def construct_document(self, node: Node) -> Any:
        _check_graph(node, aliases=self.check_aliases)
        self._explicit = {}
        return super().construct_document(node)  # type: ignore[misc]

    def flatten_mapping(self, node: MappingNode) -> None:
        # remember how many pairs the mapping itself spells out before merge keys pull others in
        self._explicit.setdefault(id(node), sum(1 for k, _ in node.value if k.tag != _MERGE))
        try:
            super().flatten_mapping(node)  # type: ignore[misc]
        except yaml.YAMLError:
            raise
        except Exception:  # noqa: BLE001 - e.g. a merge of something unhashable: still bad input
            raise YamlInputError("invalid merge key (<<)", node.start_mark) from None


def _scalar(construct: Callable[[Any, Any], Any]) -> Callable[[Any, Node], Any]:
    def wrapped(loader: Any, node: Node) -> Any:
        try:
            return construct(loader, node)
        except yaml.YAMLError:
            raise
        except Exception:  # noqa: BLE001 - int('x'), {'yes': True}['x'], re.match(...) is None, 5000 digits...
            what = _TAG_NAMES.get(node.tag, _short_tag(node.tag))
            raise YamlInputError(f"invalid {what} {brief(node.value)}", node.start_mark) from None

    return wrapped


def _timestamp(loader: Any, node: ScalarNode) -> str:
    # only an explicit !!timestamp gets here; JSON (and kubectl) would carry it as an RFC 3339 string
    value = yaml.SafeLoader.construct_yaml_timestamp(loader, node)
    if isinstance(value, _dt.datetime):
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    return str(value.isoformat())


def _refuse(loader: Any, node: Node) -> Any:
    raise YamlInputError(f"tag {_short_tag(str(node.tag))} is not supported (only JSON values)", node.start_mark)


def go_key_text(key: Any) -> str | None:
    """A scalar mapping key as sigs.k8s.io/yaml turns it into a JSON key (``1``, ``true``, ``null`` as Go
    spells them); None for a key that has no such spelling."""
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int | float):
        return str(key)
    return None


def _key(loader: Any, node: Node) -> str:
    if not isinstance(node, ScalarNode):
        raise YamlInputError("mapping keys must be strings or numbers, not collections", node.start_mark)
    key = loader.construct_object(node, deep=True)
    text = go_key_text(key)
    if text is not None:
        return text
    raise YamlInputError(f"unsupported mapping key {brief(key)}", node.start_mark)


def _mapping(loader: Any, node: Node) -> Iterator[dict[str, Any]]:
    data: dict[str, Any] = {}
    yield data
    if not isinstance(node, MappingNode):
        raise YamlInputError(f"expected a mapping, found a {getattr(node, 'id', 'node')}", node.start_mark)
    loader.flatten_mapping(node)
    pairs = node.value
    merged = len(pairs) - loader._explicit.get(id(node), len(pairs))
    own: set[str] = set()
    for i, (key_node, value_node) in enumerate(pairs):
        key = _key(loader, key_node)
        if i >= merged:
            if key in own:
                raise YamlInputError(f"key {brief(key)} is given twice", key_node.start_mark)
            own.add(key)
        data[key] = loader.construct_object(value_node, deep=False)


def loader_class(base: Any) -> Any:
    """The dialect on a SafeLoader class: `_Loader` is it on libyaml's CSafeLoader (the pure-Python SafeLoader
    when libyaml is missing; the tests check both)."""
    cls: Any = type(f"Kubectl{base.__name__}", (_Dialect, base), {})
    cls.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    for tag, fn in (
        ("tag:yaml.org,2002:null", yaml.SafeLoader.construct_yaml_null),
        ("tag:yaml.org,2002:bool", yaml.SafeLoader.construct_yaml_bool),
        ("tag:yaml.org,2002:int", yaml.SafeLoader.construct_yaml_int),
        ("tag:yaml.org,2002:float", yaml.SafeLoader.construct_yaml_float),
        ("tag:yaml.org,2002:str", yaml.SafeLoader.construct_yaml_str),
        ("tag:yaml.org,2002:timestamp", _timestamp),
    ):
        cls.add_constructor(tag, _scalar(fn))
    for tag in ("tag:yaml.org,2002:binary", "tag:yaml.org,2002:set", "tag:yaml.org,2002:omap",
                "tag:yaml.org,2002:pairs"):
        cls.add_constructor(tag, _refuse)
    cls.add_constructor("tag:yaml.org,2002:map", _mapping)
    cls.add_constructor(None, _refuse)  # any other tag: !foo, !python/object, ...
    return cls


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _check_graph(root: Node, *, aliases: bool) -> None:
    """Refuse documents nested deeper than MAX_DEPTH, and (when anchors may exist) aliases that expand the
    document by more than MAX_ALIAS_NODES nodes or refer to themselves. Iterative: never recurses."""
    if not aliases:
        stack: list[tuple[Node, int]] = [(root, 1)]
        while stack:
            node, depth = stack.pop()
            if depth > MAX_DEPTH:
                raise YamlInputError(f"nested deeper than {MAX_DEPTH} levels", node.start_mark)
            if isinstance(node, ScalarNode):
                continue
            stack.extend((c, depth + 1) for c in _children(node))
        return
    # a DAG walk: expanded size and height of each distinct node, each computed once
    done: dict[int, tuple[int, int]] = {}
    own = 0  # what the distinct nodes weigh: the document as written
    on_path: set[int] = set()
    todo: list[tuple[Node, bool]] = [(root, False)]
    while todo:
        node, finish = todo.pop()
        key = id(node)
        if finish:
            on_path.discard(key)
            size, height = 1, 0
            for c in _children(node):
                s, h = done[id(c)]
                size += s
                height = max(height, h)
            done[key] = (size, height + 1)
            own += 1
            if height + 1 > MAX_DEPTH:
                raise YamlInputError(f"nested deeper than {MAX_DEPTH} levels", node.start_mark)
            continue
        if key in done:
            continue
        if key in on_path:
            raise YamlInputError("recursive alias: a node contains itself", node.start_mark)
        if isinstance(node, ScalarNode):
            # a long string aliased many times weighs what it would cost to copy
            weight = 1 + len(node.value) // 64
            done[key] = (weight, 1)
            own += weight
            continue
        on_path.add(key)
        todo.append((node, True))
        todo.extend((c, False) for c in _children(node) if id(c) not in done)
    added = done[id(root)][0] - own
    if added > max(MAX_ALIAS_NODES, own):
        raise YamlInputError(
            f"aliases expand the document by more than {MAX_ALIAS_NODES} nodes (an alias bomb?)", root.start_mark
        )


_Loader = loader_class(_Base)


# ---------------------------------------------------------------- entry points
def load_all(text: str) -> Iterator[Any]:
    """The documents of a YAML stream (None for an empty one); YamlInputError on the first bad one."""
    loader = _Loader(text)
    loader.check_aliases = "&" in text
    try:
        while loader.check_data():
            with gc_paused():  # the documents are trees: no cycles to find (gcpause.py)
                document = loader.get_data()
            yield document
    except RecursionError:  # the pure-Python parser (no libyaml) recurses per level
        raise YamlInputError(f"nested deeper than {MAX_DEPTH} levels") from None
    finally:
        loader.dispose()


def load_one(text: str) -> Any:
    """A text holding at most one YAML document (None when empty)."""
    docs = iter(load_all(text))
    first = next(docs, None)
    for _ in docs:
        raise YamlInputError("expected a single YAML document, found several")
    return first


def json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object_pairs_hook for load_json: a key given twice is NotJson."""
    out = dict(pairs)
    if len(out) != len(pairs):
        raise NotJson("duplicate key")
    return out


def json_constant(name: str) -> Any:
    """json's parse_constant for load_json: NaN and Infinity are NotJson."""
    raise NotJson(name)


def load_json(text: str) -> Any:
    """Plain JSON, fast; NotJson for anything the YAML reader must judge (syntax errors, duplicate keys, NaN,
    nesting beyond MAX_DEPTH, lone surrogates): read that text with load_all for the exact message."""
    try:
        data = json.loads(text, object_pairs_hook=json_pairs, parse_constant=json_constant)
    except (ValueError, RecursionError) as e:
        raise NotJson(str(e)[:80]) from None
    check_json(data)
    return data


def check_json(data: Any, depth: int = 1, *, strings: bool = True) -> None:
    """NotJson unless a value json decoded (at `depth` in its document, the root being 1) is what the YAML
    reader would make of the same text: nested at most MAX_DEPTH levels, no lone surrogates. `strings=False`:
    the value cannot hold a lone surrogate (decoded from UTF-8 with no `\\u` escape), only its depth is checked."""
    if not strings:
        _check_depth(data, depth)
        return
    stack: list[tuple[Any, int]] = [(data, depth)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise NotJson("too deep")
        if isinstance(value, dict):
            for k in value:
                if not k.isascii():
                    _encodable(k)
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, dict | list | str))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value if isinstance(v, dict | list | str))
        elif isinstance(value, str) and not value.isascii():
            _encodable(value)


def _check_depth(data: Any, depth: int) -> None:
    """check_json's depth rule (a container or string deeper than MAX_DEPTH is NotJson), a level at a time."""
    if depth > MAX_DEPTH:
        raise NotJson("too deep")
    level = [data] if type(data) is dict or type(data) is list else []
    while level:
        if depth > MAX_DEPTH:
            raise NotJson("too deep")
        deeper = depth + 1 > MAX_DEPTH
        nxt = []
        for value in level:
            for v in value.values() if type(value) is dict else value:
                t = type(v)
                if t is dict or t is list:
                    nxt.append(v)
                elif deeper and t is str:
                    raise NotJson("too deep")
        depth += 1
        level = nxt


def _encodable(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise NotJson("lone surrogate") from None
