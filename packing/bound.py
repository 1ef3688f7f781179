"""A lower bound on the $/h of any plan that places the same pods under the same constraints.

Linear-programming relaxation solved with HiGHS. Pods are grouped into classes by the constraints that decide
where they may run (tolerations and node-affinity terms); each class must have every resource it requests
covered by capacity of node options it is compatible with, or by free room on existing nodes. Everything a real
plan must also respect but that only makes it costlier is dropped: integrality of nodes, pods being
indivisible, resources of one pod landing on one node, topology, limits. Dropping constraints can only lower the
optimum, so the result never exceeds the cost of a feasible plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from packing.lp import INF, solve_columns
from packing.nodepool import CAPACITY_TYPE_LABEL, HOSTNAME_LABEL, ZONE_LABEL
from packing.pods import Pod
from packing.requirements import Requirements
from packing.resources import CPU, MEMORY, PODS
from packing.scheduling.vectors import undominated
from packing.spreadbound import ZoneOption, has_hostname_anti, spread_minimums, zone_spread_bound
from packing.taints import Toleration, first_untolerated

if TYPE_CHECKING:
    from packing.scheduling.results import Results
    from packing.scheduling.scheduler import Scheduler
    from packing.scheduling.templates import PoolTemplate

__all__ = ["lower_bound"]


def _class_key(p: Pod) -> tuple[tuple[Toleration, ...], tuple[Requirements, ...]]:
    return (p.tolerations, p.node_requirement_terms())


def _anti_affinity_nodes(placed: Sequence[Pod]) -> int:
    """Nodes any plan needs for self-selecting hostname anti-affinity: one per pod of the largest such set."""
    groups: dict[tuple[object, ...], int] = {}
    for p in placed:
        for t in p.anti_affinity:
            if t.topology_key != HOSTNAME_LABEL:
                continue
            # pods of one namespace and label set whose term selects themselves exclude each other pairwise
            if t.selects(p.namespace, p):
                k = (t.selector, t.scope(p.namespace), p.namespace, frozenset(p.labels.items()))
                groups[k] = groups.get(k, 0) + 1
    return max(groups.values(), default=0)


_CELLS = (1.6, 2.0, 2.5, 3.2, 4.5, 8.0, 1e9)
_MAX_COLUMNS = 80_000


def lower_bound(sched: Scheduler, results: Results, pending: Sequence[Pod]) -> float:
    placed = [p for c in results.nodeclaims for p in c.pods] + [p for e in results.existing for p in e.pods]
    if not any(c.pods for c in results.nodeclaims):
        return 0.0
    keyset = {CPU, MEMORY, PODS}
    for p in placed:
        keyset.update(p.requests)
    keys = tuple(sorted(keyset))
    n_r = len(keys)
    tpls: list[PoolTemplate] = sched.templates(keys)
    class_index: dict[tuple[tuple[Toleration, ...], tuple[Requirements, ...]], int] = {}
    pod_class: list[int] = []
    req_rows: list[list[int]] = []
    for p in placed:
        k = _class_key(p)
        if k not in class_index:
            class_index[k] = len(class_index)
        pod_class.append(class_index[k])
        req_rows.append([p.requests.get(r, 0) for r in keys])
    class_keys = list(class_index)
    reqm = np.array(req_rows, dtype=np.float64).reshape(len(placed), n_r)

    # free room on existing nodes and in-flight claims, pooled: any class may use any of it (a relaxation)
    free = np.zeros(n_r)
    running: dict[str, np.ndarray[Any, Any]] = {}
    for p in sched.running_pods:
        if p.node_name:
            running[p.node_name] = running.get(p.node_name, np.zeros(n_r)) + np.array(
                [p.requests.get(r, 0) for r in keys], dtype=np.float64
            )
    existing_names = {e.name for e in results.existing}
    for n in sched.existing_nodes:
        if n.name in existing_names:
            alloc = np.array([n.allocatable.get(r, 0) for r in keys], dtype=np.float64)
            free += np.maximum(alloc - running.get(n.name, 0.0), 0.0)

    # DaemonSet overhead a node of any pool carries at least: the least over each pool's types (a pool with no
    # type left counts with the overhead of every DaemonSet that lands on one of its types)
    least = [
        [min((o.ds_vec[i] for o in t.options), default=t.ds_overhead.get(r, 0)) for i, r in enumerate(keys)]
        for t in tpls
    ]
    ds_min = np.array([min((row[i] for row in least), default=0) for i in range(n_r)], dtype=np.float64)
    # options: (type, set of compatible classes) -> cheapest price among its offerings with that signature
    options: dict[tuple[str, frozenset[int]], tuple[float, np.ndarray[Any, Any]]] = {}
    # the same per zone, for the zone-spread bound (packing.spreadbound)
    zone_options: ZoneOption = {}
    for tpl in tpls:
        per_class_terms: list[list[Requirements]] = []
        for tols, terms in class_keys:
            if first_untolerated(tpl.pool.taints, tols) is not None:
                per_class_terms.append([])
                continue
            ok_terms = []
            for t in terms:
                if tpl.base.conflict(t) is not None:
                    continue
                reqs = tpl.base.intersect(t)
                if tpl.pool_key_failure(reqs) is not None:
                    continue
                ok_terms.append(reqs.restricted(tpl.type_keys))
            per_class_terms.append(ok_terms)
        if not any(per_class_terms):
            continue
        for o in tpl.options:
            label_ok: list[list[Requirements]] = []
            for cterms in per_class_terms:
                label_ok.append(
                    [
                        t
                        for t in cterms
                        if all(
                            r.has(o.labels.get(k))
                            for k, r in t.items()
                            if k not in (ZONE_LABEL, CAPACITY_TYPE_LABEL)
                        )
                    ]
                )
            if not any(label_ok):
                continue
            alloc = np.array([o.it.allocatable.get(r, 0) for r in keys], dtype=np.float64) - ds_min
            for off in o.offerings:
                sig = frozenset(
                    gi
                    for gi, terms in enumerate(label_ok)
                    if any(
                        (t.get(ZONE_LABEL) is None or t[ZONE_LABEL].has(off.zone))
                        and (
                            t.get(CAPACITY_TYPE_LABEL) is None
                            or t[CAPACITY_TYPE_LABEL].has(off.capacity_type)
                        )
                        for t in terms
                    )
                )
                if not sig:
                    continue
                key = (o.it.name, sig)
                price = float(off.price or 0.0)
                prev = options.get(key)
                if prev is None or price < prev[0]:
                    options[key] = (price, alloc)
                zkey = (o.it.name, off.zone, sig)
                zprev = zone_options.get(zkey)
                if zprev is None or price < zprev[0]:
                    zone_options[zkey] = (price, alloc)
    if not options:
        return 0.0
    # within one compatibility signature a type that is smaller and no cheaper than another can be dropped
    by_sig: dict[frozenset[int], list[tuple[str, float, np.ndarray[Any, Any]]]] = {}
    for (name, sig), (price, alloc) in sorted(options.items(), key=lambda kv: (kv[0][0], sorted(kv[0][1]))):
        by_sig.setdefault(sig, []).append((name, price, alloc))
    opt_list: list[tuple[frozenset[int], float, np.ndarray[Any, Any]]] = []
    for sig in sorted(by_sig, key=sorted):
        rows = by_sig[sig]
        am = np.maximum(np.array([a for _, _, a in rows]), 0.0).astype(np.int64)
        for j in undominated(am, [p for _, p, _ in rows]):
            opt_list.append((sig, rows[j][1], np.maximum(rows[j][2], 0.0)))
    # across signatures too: an option is useless if another serves a superset of classes, is at least as
    # big everywhere and no dearer (any plan using it can use the other instead at no extra cost)
    keep_opts: list[tuple[frozenset[int], float, np.ndarray[Any, Any]]] = []
    for i, (sig, price, alloc) in enumerate(opt_list):
        dominated = False
        for j, (sig2, price2, alloc2) in enumerate(opt_list):
            if j != i and sig2 >= sig and price2 <= price and bool((alloc2 >= alloc).all()):
                if price2 < price or sig2 != sig or bool((alloc2 > alloc).any()) or j < i:
                    dominated = True
                    break
        if not dominated:
            keep_opts.append((sig, price, alloc))
    opt_list = keep_opts
    n_o = len(opt_list)
    allocs = np.array([a for _, _, a in opt_list]).reshape(n_o, n_r)
    prices = np.array([p for _, p, _ in opt_list])
    scale = np.maximum(np.maximum(allocs.max(axis=0), reqm.max(axis=0)), 1.0)
    A = allocs / scale
    F = free / scale
    Q = reqm / scale

    # Each pod's request is split into a part along its bucket's direction, which must stay together on one
    # node type, and a remainder that the relaxation may spread across types resource by resource.
    cpu_i, mem_i = keys.index(CPU), keys.index(MEMORY)
    nz_pattern = [tuple(bool(x > 0) for x in q) for q in Q.tolist()]
    logc = np.log(np.maximum(Q[:, cpu_i], 1e-9))
    logm = np.log(np.maximum(Q[:, mem_i], 1e-9))
    # log-spaced cells in cpu x memory (pods of one cell are within a factor `cell` of each other); the cells
    # get coarser when the LP would otherwise grow past what solves in about a second
    # Pods that fit different sets of options never share a bucket, so a bucket may use an option only if
    # every one of its pods fits it (the size signature is over all options, whatever their compatibility).
    # Each pod of a real plan sits on a node whose option (or the option dominating it) it fits, so this
    # keeps the bound valid while stopping small, cheap types from absorbing pods they cannot hold.
    # If that makes too many buckets even with the coarsest cells, buckets ignore it and may use an option
    # that fits their elementwise smallest pod (weaker, equally valid).
    fit_rows = np.zeros((len(Q), n_o), dtype=bool)
    for s0 in range(0, len(Q), 2048):
        fit_rows[s0 : s0 + 2048] = (Q[s0 : s0 + 2048, None, :] <= A[None, :, :] * (1 + 1e-9)).all(axis=2)
    by_size = [row.tobytes() for row in np.packbits(fit_rows, axis=1)]
    split = True
    for fit_sig in (by_size, [b""] * len(Q)):
        for cell in _CELLS:
            cb = np.floor(logc / np.log(cell)).astype(np.int64)
            mb = np.floor(logm / np.log(cell)).astype(np.int64)
            keys_b = list(zip(pod_class, nz_pattern, cb.tolist(), mb.tolist(), fit_sig, strict=True))
            if len(set(keys_b)) * n_o * (1 + n_r) <= _MAX_COLUMNS:
                break
        else:
            split = False
            continue
        break
    bucket_of: dict[tuple[int, tuple[bool, ...], int, int, bytes], int] = {}
    pod_bucket = np.zeros(len(placed), dtype=np.int64)
    for i, bk in enumerate(keys_b):
        if bk not in bucket_of:
            bucket_of[bk] = len(bucket_of)
        pod_bucket[i] = bucket_of[bk]
    n_b = len(bucket_of)
    bucket_class = [0] * n_b
    for bk, bi in bucket_of.items():
        bucket_class[bi] = bk[0]
    norms = Q.sum(axis=1, keepdims=True)
    unit = np.divide(Q, np.where(norms > 0, norms, 1.0))
    direction = np.zeros((n_b, n_r))
    np.add.at(direction, pod_bucket, unit)
    counts = np.bincount(pod_bucket, minlength=n_b).astype(np.float64)
    direction /= np.maximum(counts, 1.0)[:, None]
    dpod = direction[pod_bucket]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(dpod > 0, Q / np.where(dpod > 0, dpod, 1.0), np.inf)
    lam = ratios.min(axis=1)
    lam = np.where(np.isfinite(lam), lam, 0.0) * (1 - 1e-9)
    mass = np.bincount(pod_bucket, weights=lam, minlength=n_b)
    remainder = np.maximum(Q - lam[:, None] * dpod, 0.0)
    rem = np.zeros((n_b, n_r))
    np.add.at(rem, pod_bucket, remainder)
    if split:
        # an option can take part of a bucket only if it fits the bucket's pods (all of them, by the signature)
        fits_bucket = np.zeros((n_b, n_o), dtype=bool)
        fits_bucket[pod_bucket] = fit_rows
    else:
        # a node type can only take part of a bucket if it fits the bucket's smallest pod (elementwise minimum)
        min_req = np.full((n_b, n_r), np.inf)
        np.minimum.at(min_req, pod_bucket, Q)
        fits_bucket = (A[None, :, :] >= min_req[:, None, :] * (1 - 1e-9)).all(axis=2)

    cols_cost: list[float] = list(prices)
    col_entries: list[list[tuple[int, float]]] = [[] for _ in range(n_o)]
    row_lo: list[float] = []
    row_hi: list[float] = []

    def new_row(lo: float, hi: float) -> int:
        row_lo.append(lo)
        row_hi.append(hi)
        return len(row_lo) - 1

    cap_rows = np.zeros((n_o, n_r), dtype=np.int64)
    for oi in range(n_o):
        for r in range(n_r):
            cap_rows[oi, r] = new_row(-np.inf, 0.0)
            if A[oi, r] > 0:
                col_entries[oi].append((int(cap_rows[oi, r]), -float(A[oi, r])))
    exist_rows = [new_row(-np.inf, float(F[r])) for r in range(n_r)]
    eps = 1e-12
    for bi in range(n_b):
        if mass[bi] <= eps:
            continue
        row = new_row(float(mass[bi]), np.inf)
        g = bucket_class[bi]
        d = direction[bi]
        nz = [r for r in range(n_r) if d[r] > 0]
        for oi, (sig, _, _) in enumerate(opt_list):
            if g in sig and fits_bucket[bi, oi] and all(A[oi, r] > 0 for r in nz):
                cols_cost.append(0.0)
                col_entries.append([(row, 1.0)] + [(int(cap_rows[oi, r]), float(d[r])) for r in nz])
        if all(F[r] > 0 for r in nz):
            cols_cost.append(0.0)
            col_entries.append([(row, 1.0)] + [(exist_rows[r], float(d[r])) for r in nz])
    for bi in range(n_b):
        g = bucket_class[bi]
        for r in range(n_r):
            if rem[bi, r] <= eps:
                continue
            row = new_row(float(rem[bi, r]), np.inf)
            for oi, (sig, _, _) in enumerate(opt_list):
                if g in sig and fits_bucket[bi, oi] and A[oi, r] > 0:
                    cols_cost.append(0.0)
                    col_entries.append([(row, 1.0), (int(cap_rows[oi, r]), 1.0)])
            if F[r] > 0:
                cols_cost.append(0.0)
                col_entries.append([(row, 1.0), (exist_rows[r], 1.0)])
    need_nodes = _anti_affinity_nodes(placed) - len(existing_names)
    if need_nodes > 0:
        row = new_row(float(need_nodes), np.inf)
        for oi in range(n_o):
            col_entries[oi].append((row, 1.0))

    n_cols = len(cols_cost)
    starts = np.zeros(n_cols, dtype=np.int32)
    index: list[int] = []
    value: list[float] = []
    for c, entries in enumerate(col_entries):
        starts[c] = len(index)
        for row, val in entries:
            index.append(row)
            value.append(val)
    lo = np.array([(-INF if v == -np.inf else v) for v in row_lo], dtype=np.float64)
    hi = np.array([(INF if v == np.inf else v) for v in row_hi], dtype=np.float64)
    sol = solve_columns(
        lo,
        hi,
        np.array(cols_cost, dtype=np.float64),
        np.full(n_cols, INF),
        starts,
        np.array(index, dtype=np.int32),
        np.array(value, dtype=np.float64),
        values=False,
    )
    # solver tolerances may leave the optimum a hair high; shave so it stays a bound
    classic = 0.0 if sol is None else max(0.0, sol.objective * (1 - 1e-6) - 1e-6)
    # zone spreads: each zone must hold its share, at its own prices (packing.spreadbound; both are bounds,
    # so the larger is one too)
    if sched.existing_nodes or sched.running_pods or has_hostname_anti(placed):
        return classic
    group_of, groups = spread_minimums(tpls, placed)
    if not groups:
        return classic
    return max(classic, zone_spread_bound(placed, reqm, pod_class, group_of, groups, zone_options))
