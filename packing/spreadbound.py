"""A lower bound that knows zone spread: each zone must hold its share of every DoNotSchedule zone spread.

packing.bound drops topology, so on pods spread across zones it may put every pod in the cheapest zone, which
no plan honouring the spread can do. This bound is an LP over the zones' own offerings and prices instead.

Why it is a lower bound. Take a spread group: a DoNotSchedule topology spread on the zone with maxSkew s,
whose placed pods all carry that same constraint, are all selected by its selector (and nothing else placed
is), share one set D of domains (the zones the pools offer, restricted by the pods' node affinity, exactly
what the solver counts), with minDomains <= |D|, and no running pod is counted. Each pod was placed with the
count of its zone, plus one, at most s above the least count over D at that time; the least count never
falls, so in the final plan max - min <= s over D. With N pods, if the least count is m then
N <= m + (|D| - 1)(m + s), so every zone of D holds at least m_g = ceil((N - (|D| - 1) s) / |D|) of them,
and none lies outside D. Groups with the same D are merged into one whose minimum per zone is the sum of
theirs: a plan meets the merged minimum whenever it meets each group's, so merging only weakens the LP.

The LP: pods are cells (same scheduling class, same merged group, same requests, or a cell of similar
requests whose vector is the elementwise least of its pods); node options are (type, zone, the classes its
offering admits) at the least price of such an offering, with allocatable net of the least DaemonSet
overhead. Variables: y_o nodes of option o ($/h each), x_ko pods of cell k on option o (allowed when the
option admits the cell's class, its zone is in the cell's group's D, and the cell's vector fits). Rows: every
cell's pods placed (sum_o x_ko >= n_k); capacity (sum_k v_kr x_ko <= A_or y_o, every resource r); and every
merged group's minimum per zone of D (sum over its cells and the zone's options of x_ko >= m_G). A plan that
honours the constraints gives a feasible point (x_ko its pods of cell k on nodes of option o, or of an option
that dominates it in the same zone and class set; y_o those nodes), whose cost is at most the plan's, so the
LP optimum is at most the cost of every such plan. Everything else a plan must respect (whole nodes, whole
pods, hostname topology, limits) is dropped, which only lowers the optimum.

It applies only where nothing else could make it unsound: no existing node or running pod, and no pod with
hostname anti-affinity (packing.bound counts those nodes); packing.bound takes the larger of the two bounds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from packing.lp import INF, solve_columns
from packing.nodepool import HOSTNAME_LABEL, ZONE_LABEL
from packing.pods import Pod, TopologySpread
from packing.scheduling.vectors import undominated

if TYPE_CHECKING:
    from packing.scheduling.templates import PoolTemplate

__all__ = ["ZoneOption", "has_hostname_anti", "spread_minimums", "zone_quotas", "zone_spread_bound"]

# cells of similar pods when exact requests make too many: pods within this factor in every resource
_CELL = 1.15
_MAX_CELLS = 400

# (type name, zone, classes its offering admits) -> (least price, allocatable net of DaemonSet overhead)
ZoneOption = dict[tuple[str, str, frozenset[int]], tuple[float, npt.NDArray[np.float64]]]


def _domains(tpls: Sequence[PoolTemplate], p: Pod) -> frozenset[str]:
    """The zones a zone spread of `p` counts, as the solver computes them (Solve._spread_domains without
    existing nodes: there are none here)."""
    vals: set[str] = set()
    for tpl in tpls:
        vals.update(tpl.domains(ZONE_LABEL))
    terms = p.node_requirement_terms()
    return frozenset(v for v in vals if any(t.get(ZONE_LABEL) is None or t[ZONE_LABEL].has(v) for t in terms))


def spread_minimums(
    tpls: Sequence[PoolTemplate], placed: Sequence[Pod]
) -> tuple[list[int], list[tuple[frozenset[str], int]]]:
    """Per placed pod, its merged spread group (-1 for none), and per merged group its zones D and the least
    number of its pods every zone of D holds in any plan that honours the spreads (see the module docstring)."""
    owners: dict[tuple[object, ...], list[int]] = {}
    sc_of: dict[tuple[object, ...], TopologySpread] = {}
    spoiled: set[tuple[object, ...]] = set()
    for i, p in enumerate(placed):
        if p.preferred_terms:
            continue
        for sc in p.spread:
            if sc.topology_key != ZONE_LABEL or sc.when_unsatisfiable != "DoNotSchedule":
                continue
            k = (sc, p.namespace)
            sc_of[k] = sc
            owners.setdefault(k, []).append(i)
            if len(p.spread) != 1 or not sc.selector.matches(p.labels):
                spoiled.add(k)
    # every placed pod a group's selector selects must be one of its owners (else its counts move without it);
    # pods with the same namespace and labels are selected alike
    live = [(gk, sc_of[gk], placed[idx[0]].namespace, set(idx)) for gk, idx in owners.items() if gk not in spoiled]
    selected_by: dict[tuple[str, frozenset[tuple[str, str]]], list[int]] = {}
    for i, p in enumerate(placed):
        lk = (p.namespace, frozenset(p.labels.items()))
        hit = selected_by.get(lk)
        if hit is None:
            hit = selected_by[lk] = [
                j for j, (_, sc, ns, _) in enumerate(live) if p.namespace == ns and sc.selector.matches(p.labels)
            ]
        for j in hit:
            if i not in live[j][3]:
                spoiled.add(live[j][0])
    merged: dict[frozenset[str], int] = {}
    minimum: list[int] = []
    doms_of: list[frozenset[str]] = []
    group_of = [-1] * len(placed)
    for gk, idx in owners.items():
        if gk in spoiled:
            continue
        sc = sc_of[gk]
        doms = {_domains(tpls, placed[i]) for i in idx}
        if len(doms) != 1:
            continue
        d = doms.pop()
        if not d or sc.min_domains > len(d):
            continue
        m = max(0, math.ceil((len(idx) - (len(d) - 1) * sc.max_skew) / len(d)))
        if m == 0:
            continue
        gi = merged.get(d)
        if gi is None:
            gi = merged[d] = len(minimum)
            minimum.append(0)
            doms_of.append(d)
        minimum[gi] += m
        for i in idx:
            group_of[i] = gi
    return group_of, list(zip(doms_of, minimum, strict=True))


def zone_spread_bound(
    placed: Sequence[Pod],
    reqm: npt.NDArray[np.float64],
    pod_class: Sequence[int],
    group_of: Sequence[int],
    groups: Sequence[tuple[frozenset[str], int]],
    options: ZoneOption,
) -> float:
    """The LP of the module docstring; 0.0 when it cannot be solved. `reqm`: placed pods' requests (rows),
    `pod_class`: each pod's scheduling class, as in packing.bound."""
    solved = _zone_lp(reqm, pod_class, group_of, groups, options, values=False)
    if solved is None:
        return 0.0
    return max(0.0, solved[0] * (1 - 1e-6) - 1e-6)


def zone_quotas(
    reqm: npt.NDArray[np.float64],
    group_of: Sequence[int],
    groups: Sequence[tuple[frozenset[str], int]],
    options: ZoneOption,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], list[str]] | None:
    """The same LP for pods of one class, as a guide: each pod's cell, and per cell and zone how many of the
    cell's pods the LP's optimum puts there (zones in the order returned)."""
    solved = _zone_lp(reqm, [0] * reqm.shape[0], group_of, groups, {k: v for k, v in options.items()}, values=True)
    if solved is None:
        return None
    return solved[1], solved[2], solved[3]


def _zone_lp(
    reqm: npt.NDArray[np.float64],
    pod_class: Sequence[int],
    group_of: Sequence[int],
    groups: Sequence[tuple[frozenset[str], int]],
    options: ZoneOption,
    *,
    values: bool,
) -> tuple[float, npt.NDArray[np.int64], npt.NDArray[np.float64], list[str]] | None:
    n, n_r = reqm.shape
    if not options or not groups or n == 0:
        return None
    # options undominated within (zone, classes)
    by_zs: dict[tuple[str, frozenset[int]], list[tuple[str, float, npt.NDArray[np.float64]]]] = {}
    for (name, zone, sig), (price, alloc) in sorted(options.items(), key=lambda kv: (kv[0][1], kv[0][0], sorted(kv[0][2]))):
        by_zs.setdefault((zone, sig), []).append((name, price, np.maximum(alloc, 0.0)))
    opt_zone: list[str] = []
    opt_sig: list[frozenset[int]] = []
    opt_price: list[float] = []
    opt_alloc: list[npt.NDArray[np.float64]] = []
    for (zone, sig), rows in sorted(by_zs.items(), key=lambda kv: (kv[0][0], sorted(kv[0][1]))):
        am = np.array([a for _, _, a in rows]).astype(np.int64)
        for j in undominated(am, [p for _, p, _ in rows]):
            opt_zone.append(zone)
            opt_sig.append(sig)
            opt_price.append(rows[j][1])
            opt_alloc.append(rows[j][2])
    n_o = len(opt_price)
    A = np.array(opt_alloc).reshape(n_o, n_r)
    scale = np.maximum(np.maximum(A.max(axis=0), reqm.max(axis=0)), 1.0)
    A = A / scale
    Q = reqm / scale
    # cells: exact requests when few enough, else similar requests with the elementwise least as the cell's
    exact_keys = [(pod_class[i], group_of[i], tuple(reqm[i].tolist())) for i in range(n)]
    if len(set(exact_keys)) <= _MAX_CELLS:
        keys: list[tuple[object, ...]] = list(exact_keys)
    else:
        logs = np.floor(np.log(np.maximum(Q, 1e-12)) / np.log(_CELL)).astype(np.int64)
        keys = [(pod_class[i], group_of[i], tuple(logs[i].tolist())) for i in range(n)]
    cell_of: dict[tuple[object, ...], int] = {}
    cell_idx = np.zeros(n, dtype=np.int64)
    for i, k in enumerate(keys):
        cell_idx[i] = cell_of.setdefault(k, len(cell_of))
    n_c = len(cell_of)
    vec = np.full((n_c, n_r), np.inf)
    np.minimum.at(vec, cell_idx, Q)
    count = np.bincount(cell_idx, minlength=n_c).astype(np.float64)
    c_class = [0] * n_c
    c_group = [-1] * n_c
    for k, c in cell_of.items():
        cls, grp = k[0], k[1]
        assert isinstance(cls, int) and isinstance(grp, int)
        c_class[c], c_group[c] = cls, grp
    zones = sorted(set(opt_zone))
    zone_index = {z: i for i, z in enumerate(zones)}
    # rows: cells (>= count), capacity (option, resource) (<= 0), group x zone minimums (>= m)
    n_cap = n_o * n_r
    spread_row: dict[tuple[int, int], int] = {}
    lo = list(count.tolist()) + [-INF] * n_cap
    hi = [INF] * n_c + [0.0] * n_cap
    for gi, (doms, m) in enumerate(groups):
        for z in sorted(doms):
            if z not in zone_index:
                return None  # a zone of the spread that no option serves: leave the bound to packing.bound
            spread_row[(gi, zone_index[z])] = len(lo)
            lo.append(float(m))
            hi.append(INF)
    starts: list[int] = []
    index: list[int] = []
    value: list[float] = []
    cost: list[float] = []
    for o in range(n_o):
        starts.append(len(index))
        for r in range(n_r):
            if A[o, r] > 0:
                index.append(n_c + o * n_r + r)
                value.append(-float(A[o, r]))
        cost.append(opt_price[o])
    fits = (A[None, :, :] >= vec[:, None, :] * (1 - 1e-9)).all(axis=2)
    col_cell: list[int] = []
    col_zone: list[int] = []
    for c in range(n_c):
        g = c_group[c]
        allowed = groups[g][0] if g >= 0 else None
        nz = [r for r in range(n_r) if vec[c, r] > 0]
        for o in np.flatnonzero(fits[c]).tolist():
            if c_class[c] not in opt_sig[o] or (allowed is not None and opt_zone[o] not in allowed):
                continue
            starts.append(len(index))
            index.append(c)
            value.append(1.0)
            for r in nz:
                index.append(n_c + o * n_r + r)
                value.append(float(vec[c, r]))
            if g >= 0:
                index.append(spread_row[(g, zone_index[opt_zone[o]])])
                value.append(1.0)
            cost.append(0.0)
            col_cell.append(c)
            col_zone.append(zone_index[opt_zone[o]])
    sol = solve_columns(
        np.array(lo, dtype=np.float64),
        np.array(hi, dtype=np.float64),
        np.array(cost, dtype=np.float64),
        np.full(len(cost), INF),
        np.array(starts, dtype=np.int32),
        np.array(index, dtype=np.int32),
        np.array(value, dtype=np.float64),
        values=values,
        # interior point: on this LP (many more columns than rows) about twenty times faster than simplex
        solver="ipm",
    )
    if sol is None:
        return None
    quota = np.zeros((n_c, len(zones)))
    if values:
        x = sol.col_value[n_o:]
        np.add.at(quota, (np.array(col_cell, dtype=np.int64), np.array(col_zone, dtype=np.int64)), x)
    return sol.objective, cell_idx, quota, zones


def has_hostname_anti(placed: Sequence[Pod]) -> bool:
    """Whether some placed pod has hostname anti-affinity (packing.bound then counts nodes this LP does not)."""
    return any(t.topology_key == HOSTNAME_LABEL for p in placed for t in p.anti_affinity)
