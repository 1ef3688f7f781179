"""Property tests over random clusters, budgets and clock times.

Every report must: never violate a PDB, honour do-not-disrupt, stay within every active budget (counting earlier
actions), replace only with something strictly cheaper, never touch an unmanaged node, and land every evicted pod
under all its constraints. The last is checked by replaying the actions on a plain copy of the cluster (every
running pod listed, nothing folded) and handing each action's placements to the provisioning engine's own
feasibility check, packing.scheduling.verify.check_plan. Half the clusters may also launch two burstable types that
price a CPU far below the rest, which is where Loadmaster's repack move (several new nodes for a group) acts: its
actions are held to the same rules, plus its own margin and the limits counted with the group still present.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from packing.disruption import Budget, Cluster, DisruptionSettings, PodMeta, Report, consolidate
from packing.disruption.budgets import budget_limit
from packing.disruption.engine import REPACK_MIN_DOLLARS, REPACK_MIN_FRACTION
from packing.disruption.model import BLOCKED_BY, BUDGET_REASONS, DO_NOT_DISRUPT
from packing.nodepool import HOSTNAME_LABEL, ExistingNodeSpec, NodePool, PodDisruptionBudget
from packing.ondemandshare import OnDemandShare
from packing.pods import HostPort, Pod, PodAffinityTerm
from packing.requirements import Requirement, Requirements
from packing.resources import Resources
from packing.scheduling.results import ExistingPlacement, PlannedNodeClaim, Results
from packing.scheduling.scheduler import Scheduler
from packing.scheduling.verify import check_plan
from packing.taints import Taint, Toleration
from tests.engine_builders import (
    AT,
    CT,
    TWO_ZONES,
    ZONE,
    node,
    pdb,
    pod,
    small_catalog,
    small_catalog_type,
    spread,
    term,
    with_on_demand_shares,
)
from tests.engine_builders import sel as sel_app

CAT = small_catalog()
BURSTABLE = [small_catalog_type("t-1x", 1, 2, 0.008), small_catalog_type("t-2x", 2, 4, 0.02)]  # a CPU at a quarter of the others' price
NODE_TYPES = sorted(it.name for it in CAT)
BY = {it.name: it for it in (*CAT, *BURSTABLE)}
TAINT = Taint("dedicated", "batch", "NoSchedule")
TOL = Toleration("dedicated", "Equal", "batch", "NoSchedule")

budget_st = st.one_of(
    st.builds(lambda n: Budget(nodes=str(n)), st.integers(0, 4)),
    st.builds(lambda n: Budget(nodes=f"{n}%"), st.sampled_from([0, 10, 34, 50, 100])),
    st.builds(
        lambda n, h, d, r: Budget(nodes=str(n), schedule=f"0 {h} * * *", duration=f"{d}h", reasons=r),
        st.integers(0, 2),
        st.integers(0, 23),
        st.integers(1, 12),
        st.sampled_from([None, ("Empty",), ("Underutilized",), ("Drifted",), ("Empty", "Underutilized")]),
    ),
    st.just(Budget(nodes="lots")),
)


@st.composite
def clusters(draw: Any, heavy: bool = False, plain: bool = False) -> tuple[Cluster, Any]:
    """heavy: fewer obstacles (no drift or expiry, no consolidateAfter), so consolidation gets exercised; plain
    (with heavy): no inter-pod rule, burstable types to launch and fuller nodes, so repack gets exercised."""
    limit = draw(st.sampled_from([None, None, "8", "24", "1000"]))  # cpu; small ones bind, 1000 never does
    pools = [NodePool(
        "default",
        Requirements([Requirement.new(CT, "In", draw(st.sampled_from(
            [["on-demand"], ["on-demand"], ["on-demand", "spot"]] if plain else [["on-demand"], ["on-demand", "spot"]]
        )))]),
        limits=Resources.parse({"cpu": limit}) if limit else None,
    )]
    if draw(st.booleans()):
        pools.append(NodePool("batch", Requirements([Requirement.new(CT, "In", ["on-demand", "spot"])]), taints=(TAINT,)))
    if not heavy and draw(st.booleans()):  # drift: the default pool now wants family m only
        pools[0] = dataclasses.replace(
            pools[0], requirements=pools[0].requirements.intersect(Requirements([Requirement.new("karpenter.k8s.aws/instance-family", "In", ["m"])]))
        )
    pool_names = [p.name for p in pools]
    n_nodes = draw(st.integers(2, 7) if heavy else st.integers(1, 6))
    nodes = []
    pods: list[Pod] = []
    meta: dict[str, PodMeta] = {}
    for i in range(n_nodes):
        # plain clusters run on mid-size nodes that their pods fill: no room elsewhere, so Karpenter's moves stall
        it = BY[draw(st.sampled_from([t for t in NODE_TYPES if t.endswith(("-4x", "-8x"))] if plain else NODE_TYPES))]
        others = [pool_names[0]] * 4 + [None] if plain else [pool_names[0], pool_names[0], None, "ghost"]
        pool_name = draw(st.sampled_from([*pool_names, *others]))
        created = AT - timedelta(hours=draw(st.integers(0, 24 * 40)))
        # plain clusters keep their obstacles on pods (PDBs, do-not-disrupt) rather than on whole nodes
        ann = {DO_NOT_DISRUPT: "true"} if not plain and draw(st.integers(0, 9)) == 0 else {}
        nd = node(
            f"n{i}",
            it,
            pool_name=pool_name,
            zone=draw(st.sampled_from(TWO_ZONES)),
            ct=draw(st.sampled_from(["on-demand", "on-demand", "spot"] if plain else ["on-demand", "spot"])),
            initialized=plain or draw(st.integers(0, 9)) > 0,
            taints=(TAINT,) if pool_name == "batch" else (),
            created=created,
            annotations=ann,
            deleting=not plain and draw(st.integers(0, 12)) == 0,
            ready=plain or draw(st.integers(0, 12)) > 0,
        )
        nodes.append(nd)
        cpu_left = it.allocatable.get("cpu", 0)
        mem_left = it.allocatable.get("memory", 0)
        for j in range(draw(st.integers(2, 6) if plain else st.integers(0, 4))):
            cpu = draw(st.sampled_from([1000, 2000, 500, 250] if plain else [250, 500, 1000, 2000]))
            mem = draw(st.sampled_from([256, 512, 1024, 4096])) * 2**20 * 1000
            if cpu > cpu_left or mem > mem_left:
                continue
            cpu_left -= cpu
            mem_left -= mem
            app = draw(st.sampled_from(["web", "api", "db"]))
            kw: dict[str, Any] = {"labels": {"app": app}}
            shape = draw(st.integers(0, 7))
            if plain and shape in (1, 2, 5):
                shape = 0
            if shape == 1:
                kw["spread"] = (spread(ZONE, app=app),)
            elif shape == 2:
                kw["anti_affinity"] = (term(HOSTNAME_LABEL, app=app),)
            elif shape == 3:
                kw["node_selector"] = {ZONE: nd.spec.labels[ZONE]}
            elif shape == 4 and not any(q.host_ports for q in pods if q.node_name == nd.name):
                kw["host_ports"] = (HostPort(8080),)  # one per node: the kubelet would refuse a second
            elif shape == 5:
                kw["affinity"] = (PodAffinityTerm(sel_app(app=app), ZONE, frozenset({"default"})),)
            if pool_name == "batch" or draw(st.booleans()):
                kw["tolerations"] = (TOL,)
            p = Pod(f"{app}-{i}-{j}", requests=Resources({"cpu": cpu, "memory": mem, "pods": 1000}), node_name=nd.name, **kw)
            pods.append(p)
            k = draw(st.integers(0, 11))
            if k == 0:
                meta[p.key] = PodMeta({DO_NOT_DISRUPT: "true"})
            elif k == 1:
                meta[p.key] = PodMeta({DO_NOT_DISRUPT: "3h"}, created=AT - timedelta(hours=draw(st.integers(0, 6))))
    for j in range(draw(st.integers(0, 2))):
        pods.append(pod(f"pending-{j}", draw(st.sampled_from(["250m", "1", "3"]))))
    pdbs: list[PodDisruptionBudget] = []
    for app in draw(st.lists(st.sampled_from(["web", "api", "db"]), unique=True, max_size=3)):
        if draw(st.booleans()):
            pdbs.append(pdb(app, max_unavailable=str(draw(st.integers(0, 2))), app=app))
        else:
            pdbs.append(pdb(app, min_available=str(draw(st.integers(0, 3))), app=app))
    if draw(st.integers(0, 4)) == 0:
        pdbs.append(PodDisruptionBudget("default", "everything", {}, None, "5"))
    budgets = {name: DisruptionSettings(
        policy=draw(st.sampled_from(["WhenEmptyOrUnderutilized", "WhenEmptyOrUnderutilized", "WhenEmpty", "Balanced"])),
        consolidate_after=timedelta(0) if heavy else draw(st.sampled_from([timedelta(0), timedelta(minutes=30), None])),
        expire_after=None if heavy else draw(st.sampled_from([timedelta(hours=720), timedelta(days=10), None])),
        budgets=tuple(dataclasses.replace(b, index=i) for i, b in enumerate(draw(st.lists(budget_st, min_size=0, max_size=3)))),
    ) for name in pool_names}
    for p in pods:
        if p.key not in meta and p.node_name:
            meta[p.key] = PodMeta(created=AT - timedelta(minutes=draw(st.integers(0, 120))))
    c = Cluster(
        nodepools=pools,
        catalog=[*CAT, *BURSTABLE] if plain or draw(st.booleans()) else CAT,
        nodes=nodes,
        running=[p for p in pods if p.node_name],
        pending=[p for p in pods if not p.node_name],
        pdbs=pdbs,
        settings=budgets,
        pod_meta=meta,
    )
    at = AT + timedelta(minutes=draw(st.integers(0, 60 * 24 * 3)))
    return c, at


def _allowed(c: Cluster) -> dict[str, int]:
    """disruptionsAllowed, computed independently of the engine (integer values only, as generated)."""
    out = {}
    for b in c.pdbs:
        sel = b.selector.get("matchLabels", {})
        members = [p for p in [*c.running, *c.pending] if all(p.labels.get(k) == v for k, v in sel.items())]
        healthy = sum(1 for p in members if p.node_name)
        desired = len(members) - int(b.max_unavailable) if b.max_unavailable is not None else int(b.min_available or 1)
        out[f"{b.namespace}/{b.name}"] = max(0, healthy - desired)
    return out


def _covering(c: Cluster, p: Pod) -> list[str]:
    return [
        f"{b.namespace}/{b.name}"
        for b in c.pdbs
        if all(p.labels.get(k) == v for k, v in b.selector.get("matchLabels", {}).items())
    ]


def _dnd(c: Cluster, p: Pod, at: Any) -> bool:
    m = c.pod_meta.get(p.key)
    if m is None:
        return False
    v = m.annotations.get(DO_NOT_DISRUPT)
    if v == "true":
        return True
    return v == "3h" and m.created is not None and at < m.created + timedelta(hours=3)


def _replay_and_verify(c: Cluster, report: Report) -> None:
    nodes = {n.name: n.spec for n in c.nodes}
    running = {p.key: p for p in c.running}
    pods_by_key = dict(running)
    pools = {p.name: p for p in c.nodepools}
    deleting = {n.name for n in c.nodes if n.deleting}
    for a in report.actions:
        gone = set(a.nodes)
        evicted = [dataclasses.replace(p, node_name="") for p in running.values() if p.node_name in gone]
        assert {p.key for p in evicted} == set(a.moves), (a.moves, [p.key for p in evicted])
        stay = [s for n, s in nodes.items() if n not in gone and n not in deleting]
        sched = Scheduler(c.nodepools, c.catalog, stay, [p for p in running.values() if p.node_name not in gone], c.daemonsets)
        placed: dict[str, list[Pod]] = {}
        for p in evicted:
            placed.setdefault(a.moves[p.key], []).append(p)
        claims = []
        for r in a.replacements:
            claims.append(
                PlannedNodeClaim(
                    name=r["name"], nodepool=r["nodepool"], instance_type=r["instance_type"],
                    instance_type_options=r["instance_type_options"], capacity_type=r["capacity_type"],
                    zone=r["zone"], price_per_hour=r["price_per_hour"], labels=r["labels"],
                    taints=[Taint(t["key"], t.get("value", ""), t["effect"]) for t in r["taints"]],
                    startup_taints=[], pods=placed.get(r["name"], []) + [],
                    requests=Resources.parse(r["requests"]), allocatable=Resources.parse(r["allocatable"]),
                )
            )
            assert r["instance_type"] in r["instance_type_options"]
            assert pools[r["nodepool"]].requirements.matches(r["labels"])
        res = Results(
            nodeclaims=claims,
            existing=[ExistingPlacement(s.name, s.kind, placed.get(s.name, []), None) for s in stay],
            pending=len(evicted),
        )
        # pending pods of the input that the engine placed on a replacement are not evicted pods: drop them
        for cl in claims:
            cl.pods = [p for p in cl.pods if p.key in a.moves]
        problems = check_plan(sched, evicted, res)
        assert problems == [], (a, problems)
        for n in gone:
            nodes.pop(n)
        for r in a.replacements:
            labels = dict(r["labels"])
            labels[HOSTNAME_LABEL] = r["name"]
            it = next(i for i in c.catalog if i.name == r["instance_type"])
            nodes[r["name"]] = ExistingNodeSpec(r["name"], labels, it.allocatable, tuple(pools[r["nodepool"]].taints), False, capacity=it.capacity)
        for p in evicted:
            running[p.key] = dataclasses.replace(pods_by_key[p.key], node_name=a.moves[p.key])


@settings(max_examples=120, deadline=None)
@given(clusters())
def test_reports_are_safe(case: tuple[Cluster, Any]) -> None:
    _check(*case)


@settings(max_examples=120, deadline=None)
@given(clusters(heavy=True))
def test_consolidation_reports_are_safe(case: tuple[Cluster, Any]) -> None:
    _check(*case)


@settings(max_examples=200, deadline=None)
@given(clusters(heavy=True, plain=True))
def test_repack_reports_are_safe(case: tuple[Cluster, Any]) -> None:
    _check(*case)


def _check(c: Cluster, at: Any, *, events: bool = True) -> Report:
    report = consolidate(c, at)
    managed = {n.name for n in c.nodes if n.nodepool in {p.name for p in c.nodepools}}
    info = {n.name: n for n in c.nodes}
    price = {n.name: Scheduler(c.nodepools, c.catalog).price_of(n.spec.labels) or 0.0 for n in c.nodes}
    allowed = _allowed(c)
    busy: dict[str, set[str]] = {}
    for n in c.nodes:
        if n.deleting or not n.ready:
            busy.setdefault(n.nodepool or "", set()).add(n.name)
    total: dict[str, int] = {}
    for n in c.nodes:
        total[n.nodepool or ""] = total.get(n.nodepool or "", 0) + 1
    on_node: dict[str, list[Pod]] = {}
    for p in c.running:
        on_node.setdefault(p.node_name, []).append(p)
    seen: set[str] = set()
    for a in report.actions:
        # unmanaged, uninitialized and already-deleting nodes are never touched, and no node is taken twice
        for n in a.nodes:
            assert n in managed and info[n].spec.initialized and not info[n].deleting
            assert n not in seen
            seen.add(n)
            # do-not-disrupt honoured (pods never move onto a node with such pods: they stay where they are)
            assert info[n].annotations.get(DO_NOT_DISRUPT) != "true"
            assert not any(_dnd(c, p, at) for p in on_node.get(n, []))
        # PDBs: no pod covered by several, and no budget evicted past its allowance within one action
        used: dict[str, int] = {}
        for key in a.moves:
            p = next(q for q in c.running if q.key == key)
            cov = _covering(c, p)
            assert len(cov) <= 1
            for k in cov:
                used[k] = used.get(k, 0) + 1
                assert used[k] <= allowed[k], (k, used, allowed)
        # budgets, counting every node disrupted earlier in the list
        reason = BUDGET_REASONS.get(a.reason)
        for n in a.nodes:
            busy.setdefault(info[n].nodepool or "", set()).add(n)
        if reason is not None:
            for pool in {info[n].nodepool or "" for n in a.nodes}:
                lim = budget_limit(pool, c.settings_for(pool), reason, at, total[pool])
                if lim.nodes is not None:
                    assert len(busy[pool]) <= lim.nodes, (a, lim, busy[pool])
        # consolidation only ever saves money, and a replacement is strictly cheaper than what it replaces
        if a.reason == "underutilized":
            cost = sum(price[n] for n in a.nodes)
            assert len(a.replacements) <= 1 or a.method == "repack"
            assert sum(r["price_per_hour"] for r in a.replacements) < cost
            assert a.savings_per_hour > 0
            # Balanced pools take a move only when its score reaches 1/k; other pools' moves are not scored
            balanced = any(c.settings_for(info[n].nodepool or "").policy == "Balanced" for n in a.nodes)
            assert (a.score is not None) == balanced, a
            assert a.score is None or a.score >= 0.5, a
        if a.method == "repack":
            # only repack launches several nodes; it must clear its margin whatever option each claim launches
            assert a.type == "replace" and a.replacements and a.reason == "underutilized"
            need = max(REPACK_MIN_FRACTION * cost, REPACK_MIN_DOLLARS)
            assert a.savings_per_hour >= need - 1e-9
            assert a.savings_per_hour == pytest.approx(cost - sum(r["price_per_hour"] for r in a.replacements))
            worst = 0.0
            for r in a.replacements:
                offers = [
                    o.price for t in r["instance_type_options"] for o in BY[t].offerings
                    if o.zone == r["zone"] and o.capacity_type == r["capacity_type"] and o.price is not None
                ]
                worst += max(offers)
            assert worst <= cost - need + 1e-9
            # no pod of a group has an inter-pod rule, and none is selected by one (the plan did not see the cluster)
            for key in a.moves:
                q = next(x for x in c.running if x.key == key)
                assert not (q.spread or q.affinity or q.anti_affinity or q.preferred_affinity or q.preferred_anti_affinity)
            # spot to spot only for a single node
            if any(info[n].spec.labels.get(CT) == "spot" for n in a.nodes) and any(
                r["capacity_type"] == "spot" for r in a.replacements
            ):
                assert len(a.nodes) == 1
        if a.reason == "empty":
            assert not a.moves and not a.replacements
    # a replacement never takes a pool over its limits, counting the nodes left and every earlier replacement (nodes
    # already being deleted are on their way out: like the provisioning simulation, the engine does not count them)
    cap = {
        n.name: (n.nodepool or "", (n.spec.capacity or n.spec.allocatable).get("cpu", 0)) for n in c.nodes if not n.deleting
    }
    for a in report.actions:
        if a.method == "repack":  # its group still counts toward the limits while the new nodes launch
            for pool in c.nodepools:
                if pool.limits and any(r["nodepool"] == pool.name for r in a.replacements):
                    used = sum(v for p_, v in cap.values() if p_ == pool.name) + sum(
                        BY[r["instance_type"]].capacity.get("cpu", 0) for r in a.replacements if r["nodepool"] == pool.name
                    )
                    assert used <= pool.limits.get("cpu", 0), (a, used, pool.limits)
        for n in a.nodes:
            cap.pop(n)
        for r in a.replacements:
            cap[r["name"]] = (r["nodepool"], BY[r["instance_type"]].capacity.get("cpu", 0))
        for pool in c.nodepools:
            if pool.limits and any(r["nodepool"] == pool.name for r in a.replacements):
                used = sum(v for p_, v in cap.values() if p_ == pool.name)
                assert used <= pool.limits.get("cpu", 0), (a, used, pool.limits)
    for a in report.actions:
        if events:
            event(f"action {a.type}/{a.reason}/{a.method}")
    _replay_and_verify(c, report)
    spared = {n.node for n in report.not_disrupted}
    assert spared | seen == set(info) and not (spared & seen)
    # a blocked node names the kind of rule its reason states, and a blocked move's saving is one node's worth
    for x in report.not_disrupted:
        if x.blocked_by is not None:
            assert x.blocked_by in BLOCKED_BY
            assert x.node in managed and info[x.node].spec.initialized and not info[x.node].deleting
            word = {"pdb": "PDB", "do-not-disrupt": "do-not-disrupt", "budget": "budget"}[x.blocked_by]
            assert word.lower() in x.reason.lower(), x
            if events:
                event(f"blocked by {x.blocked_by}, priced: {x.savings_per_hour is not None}")
        if x.savings_per_hour is not None:
            assert x.blocked_by is not None
            assert 0 < x.savings_per_hour <= price[x.node] + 1e-9, (x, price[x.node])
    return report


def _packed_cluster(seed: int) -> tuple[Cluster, Any]:
    """Big on-demand nodes their pods fill (Karpenter's moves find no room) beside burstable types a quarter the
    price per CPU: the shape where repack, and only repack, saves. Sometimes a PDB or a binding cpu limit."""
    import random

    rnd = random.Random(seed)
    limit = rnd.choice([None, None, "48", "64"])
    pools = [NodePool("default", Requirements([Requirement.new(CT, "In", ["on-demand"])]),
                      limits=Resources.parse({"cpu": limit}) if limit else None)]
    nodes, pods = [], []
    for i in range(rnd.randint(2, 5)):
        it = BY[rnd.choice(["c-8x", "m-8x"])]
        nd = node(f"n{i}", it, zone=rnd.choice(TWO_ZONES), created=AT - timedelta(days=3))
        nodes.append(nd)
        cpu_left, mem_left = it.allocatable.get("cpu", 0), it.allocatable.get("memory", 0)
        for j in range(12):
            cpu, mem = rnd.choice([500, 1000]), rnd.choice([256, 512, 1024]) * 2**20 * 1000
            if cpu > cpu_left or mem > mem_left:
                break
            cpu_left, mem_left = cpu_left - cpu, mem_left - mem
            app = rnd.choice(["web", "api", "db"])
            pods.append(Pod(f"{app}-{i}-{j}", labels={"app": app}, node_name=nd.name,
                            requests=Resources({"cpu": cpu, "memory": mem, "pods": 1000})))
    pdbs = [pdb("web", max_unavailable="1", app="web")] if rnd.random() < 0.3 else []
    c = Cluster(nodepools=pools, catalog=[*CAT, *BURSTABLE], nodes=nodes, running=pods, pdbs=pdbs,
                settings={"default": DisruptionSettings(budgets=(Budget(nodes="100%"),))})
    return c, AT


def test_repack_is_exercised_and_safe_on_packed_clusters() -> None:
    # The random clusters above produce a repack in only a few percent of examples; these do in most, so the
    # move's rules (margin, limits with the group still counted, PDBs, every pod landing) are checked often.
    repacks = 0
    for seed in range(40):
        c, at = _packed_cluster(seed)
        repacks += sum(1 for a in _check(c, at, events=False).actions if a.method == "repack")
    assert repacks >= 20, repacks


@settings(max_examples=80, deadline=None)
@given(st.one_of(clusters(), clusters(heavy=True)), st.data())
def test_static_pools_are_never_consolidated(case: tuple[Cluster, Any], data: st.DataObject) -> None:
    """A static NodePool's nodes (spec.replicas) are never disrupted by consolidation, and only a drifted one's
    action launches from it, one NodeClaim; the report stays as safe as any other."""
    c, at = case
    static = data.draw(st.sets(st.sampled_from([p.name for p in c.nodepools])))
    c = dataclasses.replace(c, nodepools=[dataclasses.replace(p, replicas=1, weight=0, limits=None)
                                          if p.name in static else p for p in c.nodepools])
    report = _check(c, at)
    pool_of = {n.name: n.nodepool for n in c.nodes}
    for a in report.actions:
        from_static = [r for r in a.replacements if r["nodepool"] in static]
        if a.reason == "drifted" and pool_of.get(a.nodes[0]) in static:
            assert len(from_static) == 1 and from_static[0]["pods"] == []  # one for one, holding no moved pod
        else:
            assert from_static == []
        if a.reason not in ("drifted", "expired"):
            assert not any(pool_of.get(n) in static for n in a.nodes)


@settings(max_examples=100, deadline=None)
@given(st.one_of(clusters(heavy=True), clusters(heavy=True, plain=True)), st.data())
def test_consolidation_never_leaves_a_workload_below_its_on_demand_share(case: tuple[Cluster, Any], data: st.DataObject) -> None:
    """After every action, each workload with an on-demand share has at least its required replicas on on-demand
    nodes, or, if it had fewer before the action, no fewer than before (consolidation never lowers a short one)."""
    c, at = case
    owned = [dataclasses.replace(p, owner_kind="Deployment", owner_name=p.labels["app"]) if "app" in p.labels else p
             for p in (*c.running, *c.pending)]
    c = dataclasses.replace(c, running=[p for p in owned if p.node_name], pending=[p for p in owned if not p.node_name])
    shares = {("Deployment", "default", app): OnDemandShare(data.draw(st.integers(0, 3)), data.draw(st.sampled_from([0, 30, 100])))
              for app in data.draw(st.lists(st.sampled_from(["web", "api", "db"]), unique=True, min_size=1))}
    c = with_on_demand_shares(c, shares)
    report = consolidate(c, at)
    ct = {n.name: n.spec.labels.get(CT, "") for n in c.nodes}
    where = {p.key: p.node_name for p in c.running}

    def on_demand(w: Any) -> int:
        return sum(1 for k, n in where.items() if c.on_demand.of.get(k) == w and ct.get(n) == "on-demand")

    for a in report.actions:
        before = {w: on_demand(w) for w in c.on_demand.contracts}
        for r in a.replacements:
            ct[r["name"]] = r["capacity_type"]
        where.update(a.moves)
        for w, contract in c.on_demand.contracts.items():
            assert on_demand(w) >= min(contract.required, before[w]), (a, w, contract)
