"""Independent feasibility check of a plan, used by the benchmark (before a cost counts) and the tests.

It re-derives every constraint from the raw pods and nodes rather than reusing the scheduler's state, so a bug
in the scheduler's bookkeeping shows up here instead of being agreed with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from packing.nodepool import CAPACITY_TYPE_LABEL, HOSTNAME_LABEL, NODEPOOL_LABEL, ZONE_LABEL, DaemonSet
from packing.pods import HostPort, Pod, PodAffinityTerm
from packing.requirements import Requirement, Requirements
from packing.resources import CPU, MEMORY, PODS, Resources
from packing.scheduling.reservations import Ledger
from packing.scheduling.results import Results
from packing.scheduling.scheduler import Scheduler
from packing.taints import Taint, first_untolerated, is_ephemeral

__all__ = ["check_plan"]


@dataclass
class _Node:
    name: str
    labels: dict[str, str]
    allocatable: Resources
    taints: tuple[Taint, ...]
    pool: str | None
    capacity: Resources
    new: bool
    running: list[Pod] = field(default_factory=list)
    placed: list[Pod] = field(default_factory=list)
    daemons: list[DaemonSet] = field(default_factory=list)  # DaemonSets that run there but are not listed


def _term_selects(term: PodAffinityTerm, owner: Pod, other: Pod) -> bool:
    return term.selects(owner.namespace, other)


def check_plan(sched: Scheduler, pending: Sequence[Pod], res: Results) -> list[str]:
    """Violations of hard constraints in `res` (empty list = feasible)."""
    errors: list[str] = []
    pools = {p.name: p for p in sched.nodepools}
    nodes: list[_Node] = []
    by_name = {n.name: n for n in sched.existing_nodes}
    for e in res.existing:
        spec = by_name[e.name]
        pool = pools.get(spec.nodepool or "")
        taints = spec.taints
        if not spec.initialized:
            startup = set(pool.startup_taints) if pool else set()
            taints = tuple(t for t in taints if t not in startup and not is_ephemeral(t))
        labels = dict(spec.labels)
        labels.setdefault(HOSTNAME_LABEL, spec.name)
        n = _Node(
            spec.name,
            labels,
            spec.allocatable,
            taints,
            spec.nodepool,
            spec.capacity or spec.allocatable,
            False,
        )
        n.running = [p for p in sched.running_pods if p.node_name == spec.name]
        n.placed = list(e.pods)
        here = {f"{p.namespace}/{p.owner_name}" for p in n.running if p.owner_kind == "DaemonSet"}
        # the DaemonSets whose pod will come there but is not running yet: their host ports and requests count
        n.daemons = [ds for ds in sched.daemonsets if ds.key not in here and ds.runs_on(taints, labels)]
        nodes.append(n)
    catalog = {it.name: it for it in sched.instance_types}
    on_reservation: dict[str, int] = {}
    for c in res.nodeclaims:
        it = catalog[c.instance_type]
        labels = dict(c.labels)
        labels[HOSTNAME_LABEL] = c.name
        n = _Node(
            c.name, labels, it.allocatable, tuple(pools[c.nodepool].taints), c.nodepool, it.capacity, True
        )
        n.placed = list(c.pods)
        # the DaemonSets that run on a node of this pool, type, zone and capacity type
        pool = pools[c.nodepool]
        base = pool.requirements.intersect(Requirements.from_labels(pool.labels)).intersect(
            Requirements([Requirement.new(NODEPOOL_LABEL, "In", [pool.name])])
        )
        type_labels = {k: v for k, v in labels.items() if k not in (ZONE_LABEL, CAPACITY_TYPE_LABEL)}
        n.daemons = [
            ds
            for ds in sched.daemonsets
            if ds.tolerates(pool.taints) and ds.lands_on(base, type_labels, [(c.zone, c.capacity_type)])
        ]
        nodes.append(n)
        off = [
            o
            for o in it.offerings
            if o.zone == c.zone
            and o.capacity_type == c.capacity_type
            and (o.reservation.id if o.reservation is not None else None) == c.reservation_id
            and o.coverage is None
        ]
        listed = None if not off else (off[0].list_price if off[0].list_price is not None else off[0].price)
        if not off or not off[0].available or listed is None:
            errors.append(
                f"{c.name}: offering {c.instance_type}/{c.zone}/{c.capacity_type} is not launchable"
            )
        elif abs(listed - c.price_per_hour) > 1e-9:
            errors.append(f"{c.name}: price {c.price_per_hour} differs from the offering's {listed}")
        if c.reservation_id is not None:
            on_reservation[c.reservation_id] = on_reservation.get(c.reservation_id, 0) + 1
        pool = pools[c.nodepool]
        if not pool.requirements.matches(labels):
            errors.append(f"{c.name}: labels violate nodepool {pool.name} requirements")
    # no reservation holds more of the plan's NodeClaims than it has free (less its in-flight NodeClaims)
    left = Ledger(sched.instance_types, sched.existing_nodes, sched.input_nodes).left
    for rid, count in sorted(on_reservation.items()):
        free = left.get("reservation/" + rid, 0.0)
        if count > free + 1e-9:
            errors.append(f"reservation {rid}: {count} nodeclaims on it, {free:g} free")
    seen: dict[str, str] = {}
    for n in nodes:
        for p in n.placed:
            if p.key in seen:
                errors.append(f"{p.key} placed twice ({seen[p.key]}, {n.name})")
            seen[p.key] = n.name
    for p in pending:
        if p.key not in seen and p.key not in res.unschedulable_reasons:
            errors.append(f"{p.key} neither placed nor reported unschedulable")
    if len(res.unschedulable_reasons) + len(seen) != len({p.key for p in pending}):
        errors.append("placed + unschedulable does not add up to the pending pods")

    all_pods: list[tuple[Pod, _Node]] = [(p, n) for n in nodes for p in n.running + n.placed]
    for n in nodes:
        used = Resources()
        for p in n.running + n.placed:
            used = used + p.requests
        for ds in n.daemons:
            used = used + ds.pod.requests
        over = used.exceeded(n.allocatable)
        # a node may already be overcommitted by what runs on it; the plan is only at fault if it added pods
        if over and (n.new or n.placed):
            errors.append(f"{n.name}: over allocatable in {', '.join(over)}")
        ports: list[HostPort] = []
        for p in n.running + n.placed:
            for hp in p.host_ports:
                if any(hp.conflicts(q) for q in ports):
                    errors.append(f"{n.name}: host port {hp.port} used twice")
                ports.append(hp)
        for p in n.placed:
            for hp in p.host_ports:
                holder = next((d for d in n.daemons if any(hp.conflicts(q) for q in d.pod.host_ports)), None)
                if holder is not None:
                    errors.append(f"{p.key} on {n.name}: host port {hp.port} held by DaemonSet {holder.key}")
        for p in n.placed:
            t = first_untolerated(n.taints, p.tolerations)
            if t is not None:
                errors.append(f"{p.key} on {n.name}: taint {t} not tolerated")
            if not any(term.matches(n.labels) for term in p.node_requirement_terms()):
                errors.append(f"{p.key} on {n.name}: node affinity not satisfied")

    def domain(n: _Node, key: str) -> str | None:
        return n.labels.get(key)

    # pods per (topology key, domain), so that each affinity check looks only at its own domain
    keys = {t.topology_key for p, _ in all_pods for t in (*p.affinity, *p.anti_affinity)}
    in_domain: dict[tuple[str, str], list[Pod]] = {}
    for key in keys:
        for q, m in all_pods:
            d = domain(m, key)
            if d is not None:
                in_domain.setdefault((key, d), []).append(q)
    anti_owners = [(q, m, t) for q, m in all_pods for t in q.anti_affinity]
    lonely: dict[tuple[PodAffinityTerm, str], list[str]] = {}
    for p, n in all_pods:
        if p.node_name:
            continue
        for term in p.anti_affinity:
            d = domain(n, term.topology_key)
            if d is None:
                continue
            for q in in_domain.get((term.topology_key, d), ()):
                if q is not p and _term_selects(term, p, q):
                    errors.append(f"{p.key}: anti-affinity on {term.topology_key} violated by {q.key}")
                    break
        for q, m, term in anti_owners:
            if q is p:
                continue
            d = domain(m, term.topology_key)
            if d is not None and d == domain(n, term.topology_key) and _term_selects(term, q, p):
                errors.append(f"{p.key}: violates anti-affinity of {q.key} on {term.topology_key}")
        for term in p.affinity:
            d = domain(n, term.topology_key)
            near = [
                q
                for q in in_domain.get((term.topology_key, d or ""), ())
                if q is not p and _term_selects(term, p, q)
            ]
            if near:
                continue
            # only the first pod of a self-selecting group may be placed with nobody to be near (every later
            # owner must join a domain that already has a match), so at most one owner per term is alone
            if not _term_selects(term, p, p):
                errors.append(f"{p.key}: affinity on {term.topology_key} not satisfied")
                continue
            lonely.setdefault((term, p.namespace), []).append(p.key)

    for (term, _ns), keys_alone in lonely.items():
        if len(keys_alone) > 1:
            errors.append(f"{', '.join(sorted(keys_alone))}: affinity on {term.topology_key} not satisfied")
    checked: set[tuple[object, ...]] = set()
    for p, _node in all_pods:
        for sc in p.spread:
            if sc.when_unsatisfiable != "DoNotSchedule" or p.node_name:
                continue
            ident = (sc, p.namespace)
            if ident in checked:
                continue
            checked.add(ident)
            members = [
                (q, m) for q, m in all_pods if q.namespace == p.namespace and sc.selector.matches(q.labels)
            ]
            # the skew is enforced when an owner is scheduled; pods that match without owning the constraint
            # may land anywhere, so the final state is only checkable when every matching pod owns it
            if any(sc not in q.spread or q.node_name for q, _ in members):
                continue
            counts: dict[str, int] = {}
            for _q, m in members:
                d = domain(m, sc.topology_key)
                if d is not None:
                    counts[d] = counts.get(d, 0) + 1
            if sc.topology_key == HOSTNAME_LABEL:
                for d, cnt in counts.items():
                    if cnt > sc.max_skew and not any(q.node_name for q, m in all_pods if m.name == d):
                        errors.append(f"spread on hostname: {d} holds {cnt} > maxSkew {sc.max_skew}")
            elif sc.topology_key == ZONE_LABEL and not any(
                q.node_name for q, _ in all_pods if sc.selector.matches(q.labels)
            ):
                # the zones a new node of some pool could be in, as the solve counts domains: its launchable
                # options' offerings (a type too small for the pool's DaemonSets is no option, so a zone only such
                # types offer is no domain: kube-scheduler, counting the nodes' zones, never sees it either)
                zones: set[str] = set()
                for tpl in sched.templates(tuple(sorted({CPU, MEMORY, PODS, *p.requests}))):
                    zones.update(tpl.domains(ZONE_LABEL))
                eligible = [
                    z
                    for z in zones
                    if any(
                        t.get(ZONE_LABEL) is None or t[ZONE_LABEL].has(z) for t in p.node_requirement_terms()
                    )
                ]
                if eligible:
                    lo = min(counts.get(z, 0) for z in eligible)
                    if len(eligible) < sc.min_domains:
                        lo = 0
                    hi = max(counts.values(), default=0)
                    if hi - lo > sc.max_skew:
                        errors.append(
                            f"spread on zone for {p.key}: counts {sorted(counts.items())} exceed maxSkew {sc.max_skew}"
                        )

    for pool in sched.nodepools:
        if not pool.limits:
            continue
        total: dict[str, int] = {}
        for n in nodes:
            if n.pool == pool.name or n.labels.get(NODEPOOL_LABEL) == pool.name:
                for k, v in n.capacity.items():
                    total[k] = total.get(k, 0) + v
                total["nodes"] = total.get("nodes", 0) + 1000
        for k, lim in pool.limits.items():
            if total.get(k, 0) > lim:
                # existing nodes may already exceed a limit; only new capacity must respect it
                existing_only = sum(
                    (n.capacity.get(k, 0) if k != "nodes" else 1000)
                    for n in nodes
                    if not n.new and n.pool == pool.name
                )
                if any(n.new and n.pool == pool.name for n in nodes) and total[k] > max(lim, existing_only):
                    errors.append(f"nodepool {pool.name}: limit {k} exceeded ({total[k]} > {lim})")
    return errors
