"""TableCache: the tables of one catalog and one set of pools, built once for many Schedulers and consolidate runs
(what the replay does), giving what building them again gives."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from packing.disruption import consolidate
from packing.disruption.model import Report
from packing.instancetype import InstanceType
from packing.scheduling.scheduler import Scheduler
from packing.scheduling.tablecache import TableCache
from tests.engine_builders import (
    bound_pod,
    catalog,
    cluster,
    mixed_capacity_pool,
    node,
    on_demand_pool,
    pod,
    small_catalog,
)

AT = datetime(2026, 12, 1, tzinfo=UTC)
KEYS = ("cpu", "memory", "pods")


def _plan(s: Scheduler) -> list[tuple[str, str, str, list[str]]]:
    r = s.solve([pod(f"p{i}", "3", "5Gi") for i in range(7)])
    return [(c.instance_type, c.zone, c.capacity_type, sorted(p.name for p in c.pods)) for c in r.nodeclaims]


def test_schedulers_over_the_same_pools_and_catalog_share_their_tables_and_plan_alike() -> None:
    pools, cat = [on_demand_pool()], catalog()
    tables = TableCache()
    first = Scheduler(pools, cat, tables=tables)
    second = Scheduler(pools, cat, tables=tables)
    assert first.templates(KEYS)[0] is second.templates(KEYS)[0]
    assert first.instance_types is second.instance_types
    assert _plan(first) == _plan(second) == _plan(Scheduler(pools, cat))


def test_a_changed_catalog_or_pool_builds_its_own_tables() -> None:
    pools, cat = [on_demand_pool()], catalog()
    tables = TableCache()
    old = Scheduler(pools, cat, tables=tables).templates(KEYS)[0]
    # the cheapest type twice as dear: a new object, so new tables with the new price
    cheapest = min(cat, key=lambda it: min(o.price or 0.0 for o in it.offerings))
    dearer = InstanceType(cheapest.name, cheapest.capacity, cheapest.overhead, cheapest.labels,
                          tuple(dataclasses.replace(o, price=(o.price or 0.0) * 2) for o in cheapest.offerings))
    repriced = [dearer if it is cheapest else it for it in cat]
    new = Scheduler(pools, repriced, tables=tables)
    assert new.templates(KEYS)[0] is not old
    assert _plan(new) == _plan(Scheduler(pools, repriced))
    assert new.price_of(dict(dearer.labels) | {"topology.kubernetes.io/zone": dearer.offerings[0].zone,
                                                "karpenter.sh/capacity-type": dearer.offerings[0].capacity_type,
                                                "node.kubernetes.io/instance-type": dearer.name}) == \
        dearer.offerings[0].price
    other_pool = Scheduler([mixed_capacity_pool()], cat, tables=tables).templates(KEYS)[0]
    assert other_pool is not old


def test_consolidate_with_tables_decides_as_without_and_reuses_them_the_next_time() -> None:
    cat = small_catalog()
    big = next(it for it in cat if it.name == "m-8x")
    nodes = [node(f"n{i}", big) for i in range(3)]
    pods = [bound_pod(f"a{i}", f"n{i}", "1", "2Gi") for i in range(3)]
    c = cluster(nodes, pods)
    tables = TableCache()
    plain = consolidate(c, AT, price_blocked=False)
    cached = consolidate(c, AT, price_blocked=False, tables=tables)
    built = tables.misses
    again = consolidate(c, AT, price_blocked=False, tables=tables)

    def decided(r: Report) -> list[tuple[str, list[str], float]]:
        return [(a.reason, sorted(a.nodes), round(a.savings_per_hour, 6)) for a in r.actions]

    assert plain.actions and decided(plain) == decided(cached) == decided(again)
    assert built > 0 and tables.misses == built and tables.hits > 0
