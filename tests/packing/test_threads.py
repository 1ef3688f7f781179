"""Solves on several threads at once: plan (with the lower bound), consolidate and the bound give exactly the
serial results, and the GC pause is counted across threads.

Before packing/lp.py, one module-global HiGHS instance served the bound and the packer on every thread: a
few threads solving at once ended in a segmentation fault (or in a wrong optimum read off another thread's
model), and gc_paused() switched the collector back on under solves still running on other threads.
"""

from __future__ import annotations

import dataclasses
import gc
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from packing.bench.catalogs import bench_catalog
from packing.bench.consolidate import AT, build
from packing.bench.workloads import karpenter_mix, resource_only
from packing.bound import lower_bound
from packing.disruption import consolidate
from packing.disruption.model import Report
from packing.gcpause import gc_paused
from packing.scheduling.results import Results
from packing.scheduling.scheduler import Scheduler

THREADS = 6
ROUNDS = 3


def plan_fingerprint(res: Results) -> tuple[Any, ...]:
    claims = tuple(
        (c.name, c.nodepool, c.instance_type, c.zone, c.capacity_type, c.price_per_hour,
         tuple(sorted(p.key for p in c.pods)), tuple(c.instance_type_options))
        for c in res.nodeclaims
    )
    existing = tuple((e.name, tuple(sorted(p.key for p in e.pods))) for e in res.existing)
    unsched = tuple(sorted((k, tuple(v)) for k, v in res.unschedulable.items()))
    return claims, existing, unsched, res.lower_bound


def report_fingerprint(r: Report) -> tuple[Any, ...]:
    actions = tuple(
        (a.type, a.reason, tuple(a.nodes), a.savings_per_hour, tuple(sorted(a.moves.items())), a.why,
         tuple(c["instance_type"] for c in a.replacements))
        for a in r.actions
    )
    spared = tuple((n.node, n.reason, n.blocked_by, n.savings_per_hour) for n in r.not_disrupted)
    return actions, spared, r.cost_before, r.cost_after


@pytest.fixture(scope="module")
def workloads() -> dict[str, Callable[[], Any]]:
    catalog, _ = bench_catalog()
    mix = karpenter_mix(200)
    bulk = resource_only(600)
    cluster = build(catalog, 400, 5, protected=False, pool_kind="full").cluster
    sched = Scheduler(mix.pools + [dataclasses.replace(bulk.pools[0], name="bulk", weight=-1)], catalog)
    pods = mix.pods + bulk.pods
    planned = sched.solve(pods)

    def plan() -> Any:
        # every thread shares one Scheduler (and its per-pool caches), as the console's callers may
        return plan_fingerprint(sched.solve(pods, lower_bound=True))

    def cons() -> Any:
        return report_fingerprint(consolidate(cluster, AT, price_blocked=False))

    def bound() -> Any:
        return lower_bound(sched, planned, pods)

    return {"plan": plan, "consolidate": cons, "bound": bound}


def _run_threads(tasks: list[Callable[[], Any]]) -> list[Any]:
    out: list[Any] = [None] * len(tasks)
    errors: list[BaseException] = []
    start = threading.Barrier(len(tasks))

    def work(i: int) -> None:
        try:
            start.wait()
            out[i] = tasks[i]()
        except BaseException as e:  # noqa: BLE001 - reported by the test below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(tasks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out


def test_plan_consolidate_and_bound_on_threads_equal_serial(workloads: dict[str, Callable[[], Any]]) -> None:
    serial = {name: fn() for name, fn in workloads.items()}
    assert serial["plan"][0] and serial["bound"] > 0 and serial["consolidate"][0]  # the LPs really ran
    names = list(workloads)
    for rnd in range(ROUNDS):
        picks = [names[(i + rnd) % len(names)] for i in range(THREADS)]
        got = _run_threads([workloads[n] for n in picks])
        for name, value in zip(picks, got, strict=True):
            assert value == serial[name], f"{name} on {THREADS} threads differs from its serial result"
    assert gc.isenabled()


@pytest.fixture
def gc_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_gc_pause_is_counted_across_threads(gc_on: None) -> None:
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def a() -> None:
        with gc_paused():
            a_in.set()
            b_in.wait(5)
        a_out.set()

    def b() -> None:
        a_in.wait(5)
        with gc_paused():
            b_in.set()
            a_out.wait(5)
            seen["inside b after a left"] = gc.isenabled()
        seen["after both"] = gc.isenabled()

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"inside b after a left": False, "after both": True}


def test_gc_pause_nests_and_keeps_a_disabled_collector_off(gc_on: None) -> None:
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()
    gc.enable()
