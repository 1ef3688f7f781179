"""A fast reader for the part of YAML that kubectl prints, one `kind: List` item at a time (packing.streaming).

`kubectl get -o yaml` writes block mappings and (indentless) block sequences, plain scalars, single- and
double-quoted scalars (long ones folded over several lines), `{}` and `[]`. :func:`read_item` reads exactly
that and gives what packing.yamlinput's full reader gives for the same text; for anything else — anchors,
aliases, tags, flow collections, block scalars, comments, blank lines, escapes, quoted keys, duplicate keys,
a value the resolver would refuse, odd indentation, nesting near the depth limit — it returns UNSURE and the
full reader decides (the tests check the two readers agree, property-based).
"""

from __future__ import annotations

import operator
from itertools import compress, count
from typing import Any

import yaml
from yaml.nodes import ScalarNode

from packing.yamlinput import MAX_DEPTH, go_key_text

__all__ = ["UNSURE", "ItemReader", "read_item"]

UNSURE: Any = object()


class _Unsure(Exception):
    pass


_FIRST_DEPTH = 3  # an item of a List: the document's mapping, its items, the item
_DEPTH_LIMIT = MAX_DEPTH - 10  # well inside the full reader's limit: nearer, it decides
_KEY_LIMIT = 1000  # libyaml refuses implicit keys longer than 1024 characters
_NOT_PLAIN_START = frozenset("-?:,[]{}#&*!|>'\"%@`")

# the implicit tags of SafeLoader (kubectl's dialect drops timestamps) by first character, as libyaml resolves
_RESOLVERS: dict[str, list[tuple[str, Any]]] = {
    first: [(tag, rx) for tag, rx in rules if tag != "tag:yaml.org,2002:timestamp"]
    for first, rules in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_CONSTRUCT = {
    "tag:yaml.org,2002:null": yaml.SafeLoader.construct_yaml_null,
    "tag:yaml.org,2002:bool": yaml.SafeLoader.construct_yaml_bool,
    "tag:yaml.org,2002:int": yaml.SafeLoader.construct_yaml_int,
    "tag:yaml.org,2002:float": yaml.SafeLoader.construct_yaml_float,
}
_CACHE_LEN = 64
_CACHE_SIZE = 100_000
_resolved: dict[str, Any] = {}


def _plain(text: str) -> Any:
    """The value of a plain scalar, as SafeLoader resolves and constructs it."""
    rules = _RESOLVERS.get(text[0])
    if rules is None:
        return text
    value = _resolved.get(text, _resolved)
    if value is not _resolved:
        return value
    tag = "tag:yaml.org,2002:str"
    for t, rx in rules:
        if rx.match(text):
            tag = t
            break
    if tag == "tag:yaml.org,2002:str":
        value = text
    else:
        construct = _CONSTRUCT.get(tag)
        if construct is None:  # merge key, `=`
            raise _Unsure
        try:
            value = construct(_CONSTRUCTOR, ScalarNode(tag, text))
        except Exception:  # noqa: BLE001 - e.g. an integer too long: the full reader words it
            raise _Unsure from None
    if len(text) <= _CACHE_LEN and len(_resolved) < _CACHE_SIZE:
        _resolved[text] = value
    return value


def _key(text: str) -> str:
    """A plain mapping key as the dialect makes it a string (yamlinput._key)."""
    key = _keys.get(text)
    if key is not None:
        return key
    key = _key_of(text)
    if len(_keys) < _CACHE_SIZE:
        _keys[text] = key
    return key


_keys: dict[str, str] = {}


def _key_of(text: str) -> str:
    if not text or len(text) > _KEY_LIMIT or text[0] in _NOT_PLAIN_START or text[-1] == " " or " #" in text:
        raise _Unsure
    key = go_key_text(_plain(text))
    if key is None:
        raise _Unsure
    return key


def _quoted_end(text: str, start: int) -> int:
    """Where the single quote closing a single-quoted scalar is in `text` from `start` ('' is a quote), or -1."""
    while True:
        j = text.find("'", start)
        if j < 0 or text[j + 1 : j + 2] != "'":
            return j
        start = j + 2


class _Reader:
    def __init__(self, chunk: str, memo: _Memo) -> None:
        self.memo = memo
        lines = chunk.split("\n")
        if lines[-1] == "":
            lines.pop()
        self.lines = lines
        self.texts = texts = [s.lstrip(" ") for s in lines]  # each line from its first non-space
        self.indents = [len(s) - len(t) for s, t in zip(lines, texts, strict=True)]
        # the lines that are a sequence entry (`- ...` or a lone `-`)
        self.dashes = {i for i, t in enumerate(texts) if t[:2] == "- " or t == "-"}
        self.pos = 0
        self.n = len(lines)
        # when recording (a template, ItemReader): (line, mapping, key, column) of every `key: scalar` on one line
        self.slots: list[tuple[int, dict[str, Any], str, int]] | None = None

    def _next_indent(self) -> int:
        return self.indents[self.pos] if self.pos < self.n else -1

    def block(self, ind: int, depth: int) -> Any:
        if depth > _DEPTH_LIMIT:
            raise _Unsure
        if self.pos in self.dashes:
            return self.sequence(ind, depth)
        return self.mapping(ind, self.texts[self.pos], depth)

    def mapping(self, ind: int, text: str, depth: int) -> dict[str, Any]:
        """A block mapping at column `ind`; `text` is its first line from there (after a `- `, perhaps)."""
        out: dict[str, Any] = {}
        texts, indents = self.texts, self.indents
        while True:
            cut = text.find(": ")
            if cut >= 0:
                key, rest = _key(text[:cut]), text[cut + 2 :].lstrip(" ")
            elif text.endswith(":"):
                key, rest = _key(text[:-1]), ""
            else:
                raise _Unsure
            if key in out:
                raise _Unsure
            self.pos += 1
            if rest:
                line = self.pos - 1
                out[key] = self.scalar(rest, ind)
                if self.slots is not None and self.pos == line + 1:
                    self.slots.append((line, out, key, ind))
            else:
                nxt = self._next_indent()
                if nxt > ind or nxt == ind and self.pos in self.dashes:
                    out[key] = self.memo_block(ind, nxt, depth + 1)
                else:
                    out[key] = None
            if self.pos >= self.n:
                return out
            nxt = indents[self.pos]
            if nxt < ind:
                return out
            if nxt > ind or self.pos in self.dashes:
                raise _Unsure
            text = texts[self.pos]

    def memo_block(self, ind: int, nxt: int, depth: int) -> Any:
        """The block value of a key at column `ind` (its first line at column `nxt`), remembered by its text."""
        start = j = self.pos
        indents, n = self.indents, self.n
        dashes = self.dashes
        while j < n and (indents[j] > ind or indents[j] == ind and j in dashes):
            j += 1
        if j - start < 2:
            return self.block(nxt, depth)
        key = (ind, depth, "\n".join(self.lines[start:j]))
        memo = self.memo
        value = memo.values.get(key, memo)
        if value is not memo:
            self.pos = j
            return value
        value = self.block(nxt, depth)
        if self.pos != j:
            raise _Unsure
        memo.remember(key, value)
        return value

    def sequence(self, ind: int, depth: int) -> list[Any]:
        out: list[Any] = []
        lines = self.lines
        while self.pos < self.n and self.indents[self.pos] == ind and self.pos in self.dashes:
            line = lines[self.pos]
            rest = line[ind + 1 :].lstrip(" ")
            if not rest:
                self.pos += 1
                nxt = self._next_indent()
                out.append(self.block(nxt, depth + 1) if nxt > ind else None)
                continue
            if rest[0] == "-" and (len(rest) == 1 or rest[1] == " "):
                raise _Unsure  # a sequence in a sequence on one line
            if (": " in rest or rest.endswith(":")) and rest[0] not in "'\"{[":
                # `- key: value`: a mapping whose column is where its first key starts
                if depth + 1 > _DEPTH_LIMIT:
                    raise _Unsure
                out.append(self.mapping(len(line) - len(rest), rest, depth + 1))
            else:
                self.pos += 1
                out.append(self.scalar(rest, ind))
        if self.pos < self.n and self.indents[self.pos] > ind:
            raise _Unsure
        return out

    def _continuation(self, ind: int) -> list[str]:
        """The lines after a scalar's first one that belong to it (indented more than `ind`), stripped."""
        more: list[str] = []
        while self.pos < self.n and self.indents[self.pos] > ind:
            more.append(self.texts[self.pos].rstrip(" "))
            self.pos += 1
        return more

    def scalar(self, text: str, ind: int) -> Any:
        """The scalar `text` starts (the rest of its line, a line of the node at column `ind` already passed)."""
        first = text[0]
        if first == "'":
            end = _quoted_end(text, 1)
            if end >= 0:
                if end != len(text) - 1:
                    raise _Unsure
                if self._next_indent() > ind:
                    raise _Unsure
                return text[1:end].replace("''", "'")
            parts = [text[1:].rstrip(" ")]
            if not parts[0]:
                raise _Unsure
            after = self._continuation(ind)
            for i, line in enumerate(after):
                end = _quoted_end(line, 0)
                if end >= 0:
                    # the closing quote ends the node: a line after it, indented as a continuation, is an error
                    if end != len(line) - 1 or i != len(after) - 1 or not line[:end]:
                        raise _Unsure
                    parts.append(line[:end])
                    return " ".join(parts).replace("''", "'")
                if not line:
                    raise _Unsure
                parts.append(line)
            raise _Unsure  # not closed within the item
        if first == '"':
            end = text.find('"', 1)
            if end != len(text) - 1 or "\\" in text or self._next_indent() > ind:
                raise _Unsure
            return text[1:end]
        if text == "{}" or text == "[]":
            if self._next_indent() > ind:
                raise _Unsure
            return {} if first == "{" else []
        if first in _NOT_PLAIN_START or " #" in text or ": " in text or text.endswith(":"):
            raise _Unsure
        text = text.rstrip(" ")
        more = self._continuation(ind) if self._next_indent() > ind else None
        if more:
            for line in more:
                if not line or line[0] in _NOT_PLAIN_START or " #" in line or ": " in line or line.endswith(":"):
                    raise _Unsure
            return " ".join([text, *more])
        return _plain(text)


class _Memo:
    """Block values already read from the items of one text, by their text: a dump repeats most of each pod
    (tolerations, probes, status, managedFields) thousands of times. A block is remembered the second time it
    is seen; the values are shared by the items that hold them (the engine's readers never change a value)."""

    def __init__(self) -> None:
        self.values: dict[tuple[int, int, str], Any] = {}
        self.seen: set[int] = set()

    def remember(self, key: tuple[int, int, str], value: Any) -> None:
        h = hash(key)
        if h not in self.seen:
            if len(self.seen) >= _SEEN_SIZE:
                self.seen.clear()
            self.seen.add(h)
        elif len(self.values) < _MEMO_SIZE:
            self.values[key] = value


_SEEN_SIZE = 200_000
_MEMO_SIZE = 20_000


class _NoMemo(_Memo):
    """A memo that remembers nothing: a template's blocks are its own (a shared block has no one place)."""

    def remember(self, key: tuple[int, int, str], value: Any) -> None:
        return


_MAX_CHANGES = 64  # lines an item may differ from its template in; beyond, reading it anew is as quick
_SEEN_PER_LINE = 4096  # texts of one line remembered with their key and value
_TEMPLATES = 4  # kept per number of lines
_TEMPLATE_SHAPES = 256  # numbers of lines templates are kept for


class _Template:
    """An item read in full, line by line, with where each of its one-line `key: scalar` entries is: an item
    with the same lines but for such entries (a pod of the same ReplicaSet, or of another with the same shape)
    is that item with those entries replaced — the same YAML structure around a new scalar gives the same
    value around the scalar's new value, and the new scalar is read as the line reader would read it."""

    __slots__ = ("lines", "plans", "seen", "slots", "value")

    def __init__(self, lines: list[str], value: dict[str, Any], slots: dict[int, tuple[tuple[Any, ...], str, str]]):
        self.lines = lines
        self.value = value
        self.slots = slots  # line -> (path of the mapping from the item, key, the line up to the key's column)
        self.plans: dict[tuple[int, ...], Any] = {}  # by the lines that differ: their slots, the paths to copy
        self.seen: dict[int, dict[str, tuple[str, Any]]] = {}  # line -> its texts so far -> their key and value

    def apply(self, lines: list[str]) -> dict[str, Any] | None:
        """The value of the item whose lines are `lines`, or None when it is not this one with new scalars."""
        diff = tuple(compress(count(), map(operator.ne, lines, self.lines)))
        if len(diff) > _MAX_CHANGES:
            return None
        plan = self.plans.get(diff)
        if plan is None:
            plan = self._plan(diff)
            if len(self.plans) < _CACHE_SIZE:
                self.plans[diff] = plan
        if plan is _NO_PLAN:
            return None
        targets, copied = plan
        # the item's own copies of the mappings and sequences that hold a changed line, and of their parents
        root = dict(self.value)
        copies: list[Any] = [root]
        for parent, k in copied:
            holder = copies[parent]
            orig = holder[k]
            holder[k] = mine = dict(orig) if type(orig) is dict else list(orig)
            copies.append(mine)
        renamed: dict[int, dict[str, tuple[str, Any]]] | None = None
        for i, (at, key, lead, seen) in zip(diff, targets, strict=True):
            line = lines[i]
            change = seen.get(line)
            if change is None:
                change = self._change(line, lead)
                if change is None:
                    return None
                if len(seen) < _SEEN_PER_LINE:
                    seen[line] = change
            new_key, value = change
            if new_key == key:
                copies[at][key] = value
            else:
                if renamed is None:
                    renamed = {}
                renamed.setdefault(at, {})[key] = change
        if renamed is not None:
            for at, renames in renamed.items():
                container = copies[at]
                rebuilt = {}
                for k, v in container.items():
                    if k in renames:
                        k, v = renames[k]
                    rebuilt[k] = v
                if len(rebuilt) != len(container):
                    return None  # a new key that another entry has: the line reader words it
                container.clear()
                container.update(rebuilt)
        return root

    def _plan(self, diff: tuple[int, ...]) -> Any:
        """For the changed lines: each one's (copy holding it, key, lead, the values its texts had), and the
        copies to make, parents first, as (index of the parent's copy, key or index in it); or _NO_PLAN."""
        slots = []
        paths: set[tuple[Any, ...]] = set()
        for i in diff:
            slot = self.slots.get(i)
            if slot is None:
                return _NO_PLAN
            slots.append((i, slot))
            path = slot[0]
            paths.update(path[:n] for n in range(1, len(path) + 1))
        order = sorted(paths, key=len)
        index: dict[tuple[Any, ...], int] = {(): 0}
        copied = []
        for n, path in enumerate(order, 1):
            index[path] = n
            copied.append((index[path[:-1]], path[-1]))
        targets = [
            (index[path], key, lead, self.seen.setdefault(i, {})) for i, (path, key, lead) in slots
        ]
        return targets, copied

    @staticmethod
    def _change(line: str, lead: str) -> tuple[str, Any] | None:
        """(key, value) of a changed line `key: scalar` whose key starts where `lead` ends, or None."""
        if not line.startswith(lead):
            return None
        text = line[len(lead) :]
        cut = text.find(": ")
        if cut <= 0 or text[0] == " ":
            return None
        rest = text[cut + 2 :].lstrip(" ")
        if not rest:
            return None  # a key with a block (or null) where the template has a scalar
        try:
            return _key(text[:cut]), _scalar_line(rest)
        except _Unsure:
            return None


_NO_PLAN: Any = object()


def _read_template(chunk: str, lines: list[str]) -> tuple[Any, _Template | None]:
    """read_item's value for `chunk` (read without a memo) and, when it is a mapping, its template."""
    reader = _Reader(chunk, _NoMemo())
    reader.slots = []
    value = _read(reader)
    if type(value) is not dict:
        return value, None
    paths: dict[int, tuple[Any, ...]] = {}
    shared: set[int] = set()

    def walk(node: Any, path: tuple[Any, ...]) -> None:
        if id(node) in paths:
            shared.add(id(node))
            return
        paths[id(node)] = path
        items = node.items() if type(node) is dict else enumerate(node)
        for k, v in items:
            if type(v) is dict or type(v) is list:
                walk(v, (*path, k))

    walk(value, ())
    slots = {
        line: (paths[id(mapping)], key, reader.lines[line][:column])
        for line, mapping, key, column in reader.slots
        if id(mapping) in paths and id(mapping) not in shared
    }
    return value, _Template(lines, value, slots)


class ItemReader:
    """Reads the items of one text (:meth:`read`): an item that differs from one read before only in one-line
    scalars is made from that one (_Template); others are read line by line, remembering the blocks they
    repeat."""

    def __init__(self) -> None:
        self._memo = _Memo()
        self._templates: dict[int, list[_Template]] = {}

    def read(self, chunk: str) -> Any:
        lines = chunk.split("\n")
        kept = self._templates.get(len(lines))
        if kept:
            for known in kept:
                value = known.apply(lines)
                if value is not None:
                    return value
        try:
            value, template = _read_template(chunk, lines)
        except Exception:  # noqa: BLE001 - a case the reader did not foresee: the full reader decides
            return UNSURE
        if template is not None:
            if len(lines) not in self._templates and len(self._templates) >= _TEMPLATE_SHAPES:
                self._templates.clear()  # items of ever new lengths: templates would only hold memory
            kept = self._templates.setdefault(len(lines), [])
            kept.insert(0, template)
            del kept[_TEMPLATES:]
        return value


def read_item(chunk: str, memo: _Memo | None = None) -> Any:
    """The value of one item of a List's `items` — `chunk` is its text, from its `- ` in column 0 up to the next
    line in column 0 — or UNSURE when the chunk is not what kubectl prints."""
    try:
        return _read(_Reader(chunk, memo or _Memo()))
    except Exception:  # noqa: BLE001 - a case the reader did not foresee: the full reader decides
        return UNSURE


def _read(reader: _Reader) -> Any:
    try:
        if not reader.n or "" in reader.lines:
            return UNSURE
        items = reader.sequence(0, _FIRST_DEPTH - 1)
        if len(items) != 1 or reader.pos != reader.n:
            return UNSURE
        return items[0]
    except _Unsure:
        return UNSURE


def _scalar_line(text: str) -> Any:
    """What _Reader.scalar makes of `text` when no line after it continues it."""
    first = text[0]
    if first == "'":
        end = _quoted_end(text, 1)
        if end != len(text) - 1:
            raise _Unsure  # not closed on its line, or more after the closing quote
        return text[1:end].replace("''", "'")
    if first == '"':
        end = text.find('"', 1)
        if end != len(text) - 1 or "\\" in text:
            raise _Unsure
        return text[1:end]
    if text == "{}" or text == "[]":
        return {} if first == "{" else []
    if first in _NOT_PLAIN_START or " #" in text or ": " in text or text.endswith(":"):
        raise _Unsure
    return _plain(text.rstrip(" "))
