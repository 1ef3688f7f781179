"""Reading a large YAML dump on two cores (packing.parallelread): the same Inputs as reading it on one, in the
same order, and the same error when something is wrong."""

from __future__ import annotations

import random
from typing import Any

import pytest
import yaml

from packing import parallelread, streaming
from packing.bench.dump import NODEPOOL, pod_object
from packing.fields import InputError
from packing.kubeobjects import Inputs, parse_documents


def kubectl_list(objs: list[Any]) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "items": objs, "kind": "List", "metadata": {"resourceVersion": ""}},
                          sort_keys=True)


def dump(n: int, seed: int = 1) -> str:
    rnd = random.Random(seed)
    return yaml.safe_dump(NODEPOOL) + "---\n" + kubectl_list([pod_object(i, rnd) for i in range(n)])


@pytest.fixture
def small_texts_too(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Every text is read on two cores (not only large ones); the list records each attempt's outcome. Threads an
    earlier test of the same process left running (the suite runs in one process in CI) would make the reader
    decline to fork: this process counts as single-threaded here (test_threads_running_keep_it_on_one_core checks
    the refusal itself)."""
    monkeypatch.setattr(parallelread, "PARALLEL_MIN_CHARS", 0)
    monkeypatch.setattr(parallelread.threading, "active_count", lambda: 1)
    outcomes: list[bool] = []
    real = parallelread.read_in_two

    def recorded(*args: Any) -> bool:
        done = False
        try:
            done = real(*args)
        finally:
            outcomes.append(done)
        return done

    monkeypatch.setattr("packing.kubeobjects.read_in_two", recorded)
    return outcomes


def read(text: str, parallel: bool, out: Inputs | None = None) -> Inputs:
    out = out or Inputs()
    parse_documents(text, "dump.yaml", out, parallel=parallel)
    return out


def test_a_dump_read_on_two_cores_gives_the_inputs_one_core_gives(small_texts_too: list[bool]) -> None:
    text = dump(41)
    one = read(text, parallel=False)
    two = read(text, parallel=True)
    assert small_texts_too == [True]  # the worker read the second half
    assert two == one
    assert [p.name for p in two.pending] == [p.name for p in one.pending] and len(two.pending) == 41
    assert two.places == one.places  # where each object was, items[i] numbered through both halves


def test_the_split_halves_are_the_objects_of_the_whole_text() -> None:
    text = dump(9) + "---\n" + yaml.safe_dump(NODEPOOL | {"metadata": {"name": "after"}})
    layout = streaming.yaml_layout(text)
    assert layout is not None and layout.split == (2, 4)
    first = list(streaming.stream_part(text, "f", layout, first=True))
    second = list(streaming.stream_part(text, "f", layout, first=False))
    assert first + second == list(streaming.stream_objects(text, "f"))
    assert [prefix for _, prefix, _ in first] == ["", *(f"items[{i}]." for i in range(4))]
    assert second[-1][2]["metadata"] == {"name": "after"}


@pytest.mark.parametrize("bad_at", [3, 30])
def test_a_bad_item_in_either_half_is_reported_as_on_one_core(small_texts_too: list[bool], bad_at: int) -> None:
    rnd = random.Random(2)
    objs = [pod_object(i, rnd) for i in range(40)]
    objs[bad_at]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    text = kubectl_list(objs)
    with pytest.raises(InputError) as one:
        read(text, parallel=False)
    with pytest.raises(InputError) as two:
        read(text, parallel=True)
    assert str(two.value) == str(one.value) and f"items[{bad_at}]" in str(one.value)
    assert small_texts_too == [False]


def test_an_object_in_both_halves_is_reported_as_on_one_core(small_texts_too: list[bool]) -> None:
    rnd = random.Random(3)
    objs = [pod_object(i, rnd) for i in range(20)]
    objs[15]["metadata"] = dict(objs[2]["metadata"])  # the same pod twice, one in each half
    text = kubectl_list(objs)
    with pytest.raises(InputError, match="is defined more than once") as one:
        read(text, parallel=False)
    with pytest.raises(InputError) as two:
        read(text, parallel=True)
    assert str(two.value) == str(one.value)
    assert small_texts_too == [False]


def test_objects_read_before_the_text_are_kept_and_counted(small_texts_too: list[bool]) -> None:
    earlier = read(kubectl_list([pod_object(0, random.Random(9))]), parallel=False)
    text = dump(30)
    one = read(text, parallel=False, out=read(kubectl_list([pod_object(0, random.Random(9))]), parallel=False))
    two = read(text, parallel=True, out=earlier)
    assert small_texts_too == [True]
    assert two == one and len(two.pending) == 31


def test_a_fork_that_fails_reads_on_one_core(small_texts_too: list[bool], monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork(self: Any) -> None:
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr("multiprocessing.process.BaseProcess.start", no_fork)
    text = dump(12)
    assert read(text, parallel=True) == read(text, parallel=False)
    assert small_texts_too == [False]


def test_threads_running_keep_it_on_one_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forking a process with other threads running can copy a lock one of them holds: the reader stays on one
    core then, and reads the same inputs."""
    monkeypatch.setattr(parallelread, "PARALLEL_MIN_CHARS", 0)
    monkeypatch.setattr(parallelread.threading, "active_count", lambda: 2)
    outcomes: list[bool] = []
    real = parallelread.read_in_two

    def recorded(*args: Any) -> bool:
        done = real(*args)
        outcomes.append(done)
        return done

    monkeypatch.setattr("packing.kubeobjects.read_in_two", recorded)
    text = dump(41)
    assert read(text, parallel=True) == read(text, parallel=False)
    assert outcomes == [False]
