"""The type mix of the cost packer: which instance type each pod should go to, from one LP.

Pods are grouped into cells of similar shape (within a factor of each other in every resource); an LP over the
cells and the instance types picks how many nodes of each type cover the cells' demand most cheaply while
keeping each pod's resources together, and the pods of each cell are dealt out to the types in the LP's
proportions. packer.pack then packs each type's pods.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from packing.lp import solve_columns

__all__ = ["LP_CELLS", "LP_CELLS_SMALL", "LP_FIRST_TYPES", "LP_MAX_CELLS", "assign_by_lp"]

IntArray = npt.NDArray[np.int64]

# pod cells of assign_by_lp: pods within these factors of each other in every resource, finest first; the
# finest only pays off on large sets (where the LP-guided plan is the only one computed), and the LP over few
# types keeps it affordable there
LP_CELLS = (1.3, 1.5, 1.7, 2.5)
LP_CELLS_SMALL = (1.7, 2.5)
# types each cell brings into the type-mix LP at first (the cheapest for its pods alone)
LP_FIRST_TYPES = 3
# beyond this many cells the LP and the dealing out of pods cost more than the finer mix saves
LP_MAX_CELLS = 1500


def assign_by_lp(
    pods: IntArray,
    allocs: IntArray,
    price: npt.NDArray[np.float64],
    cell_sizes: Sequence[float] = LP_CELLS,
    *,
    first_types: int = LP_FIRST_TYPES,
) -> IntArray | None:
    """Which option each pod should go to, from the LP over pod cells (pods of similar shape) and node types.

    The LP chooses the mix of types that covers the pods' combined cpu, memory and slots most cheaply while
    keeping each pod's resources together (cells use their mean shape); pods of a cell are then dealt out to
    the types in the LP's proportions, largest pods to the largest types.

    The LP is solved over few types: for each cell the `first_types` types where its pods alone cost least
    (share of a node x price). The full LP would take every type for every cell; the restricted LP reaches
    the same optimum (a cheap mix is made of types that are each the cheapest home of some cell; a test
    checks it on random catalogs) at a fraction of the columns.
    """
    n, n_r = pods.shape
    n_o = allocs.shape[0]
    scale = np.maximum(allocs.max(axis=0), 1).astype(np.float64)
    q = pods / scale
    # fine cells make the cell means close to their pods (the LP's type mix then packs well); coarser
    # ones when the LP would grow too large
    for cell in cell_sizes:
        logs = np.floor(np.log(np.maximum(q, 1e-12)) / np.log(cell)).astype(np.int64)
        logs[q <= 0] = -(10**6)
        _, first_at, inverse = _unique_rows(logs)
        if first_at.size <= LP_MAX_CELLS:
            break
    else:
        return None
    # cells numbered in the order their first pod comes (the LP's columns, so its choice among equal
    # optima, do not depend on how the keys sort)
    rank = np.empty(first_at.size, dtype=np.int64)
    rank[np.argsort(first_at, kind="stable")] = np.arange(first_at.size)
    cell_of = rank[inverse.reshape(-1)]
    n_c = first_at.size
    counts = np.bincount(cell_of, minlength=n_c)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    # summed one pod at a time in index order (np.add.at), as a mean over each cell's pods would
    sums = np.zeros((n_c, n_r))
    np.add.at(sums, cell_of, q)
    means = sums / counts[:, None]
    biggest = np.full((n_c, n_r), -np.inf)
    np.maximum.at(biggest, cell_of, q)
    # and largest first (by the sum of their shares) for dealing them out to types
    by_cell = np.lexsort((np.arange(n), -q.sum(axis=1), cell_of))
    a = allocs / scale
    fits = (a[None, :, :] >= biggest[:, None, :] - 1e-12).all(axis=2)
    # nodes of each type one mean pod of each cell takes up on its own (its largest share of the node)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(means[:, None, :] > 0, means[:, None, :] / np.where(a > 0, a, 1)[None, :, :], 0.0)
    per_node = np.where(fits, frac.max(axis=2), np.inf)
    first = np.argsort(per_node * price[None, :], axis=1, kind="stable")[:, :first_types]
    chosen = np.zeros(n_o, dtype=bool)
    chosen[first[np.isfinite(np.take_along_axis(per_node, first, axis=1))]] = True
    solved = _solve_mix(means, fits, a, price, np.flatnonzero(chosen), counts.astype(np.float64).tolist())
    if solved is None:
        return None
    y_cells, y_opts, y_sol, _ = solved
    assign = np.full(n, -1, dtype=np.int64)
    alloc_size = allocs.sum(axis=1).tolist()
    per_cell: dict[int, list[tuple[float, int]]] = {}
    for j in np.flatnonzero(y_sol > 1e-9).tolist():
        per_cell.setdefault(int(y_cells[j]), []).append((float(y_sol[j]), int(y_opts[j])))
    # each cell's pods are dealt out to its types in the LP's proportions, largest pods to largest types
    for c, (c0, size) in enumerate(zip(starts.tolist(), counts.tolist(), strict=True)):
        shares = sorted(per_cell.get(c, []), key=lambda t: (-alloc_size[t[1]], t[1]))
        if not shares:
            return None
        total = sum(y for y, _ in shares)
        pos = 0
        acc = 0.0
        for k, (y, o) in enumerate(shares):
            acc += y
            end = size if k == len(shares) - 1 else int(round(acc / total * size))
            assign[by_cell[c0 + pos : c0 + end]] = o
            pos = end
    return assign


def _unique_rows(rows: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """np.unique(rows, axis=0, return_index=True, return_inverse=True), through one integer key per row
    when the rows' ranges allow it (sorting a 1-D key is several times faster than sorting rows)."""
    lo = rows.min(axis=0)
    span = (rows.max(axis=0) - lo + 1).tolist()
    if math.prod(span) >= 2**62:
        u, first_at, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
        return u, first_at, inverse.reshape(-1)
    mult = np.array([math.prod(span[r + 1 :]) for r in range(len(span))], dtype=np.int64)
    key = (rows - lo) @ mult
    u, first_at, inverse = np.unique(key, return_index=True, return_inverse=True)
    return rows[first_at], first_at, inverse.reshape(-1)


def _solve_mix(
    means: npt.NDArray[np.float64],
    fits: npt.NDArray[np.bool_],
    a: npt.NDArray[np.float64],
    price: npt.NDArray[np.float64],
    opts: IntArray,
    counts_per_cell: list[float],
) -> tuple[IntArray, IntArray, npt.NDArray[np.float64], float] | None:
    """The type-mix LP over the options `opts`: per placement column its cell, its option and its value, and
    the LP's optimum ($/h)."""
    n_c, n_r = means.shape
    m = opts.size
    inf = 1e30
    # rows: one demand row per cell (== count), then capacity rows per (option, resource)
    lo = counts_per_cell + [-inf] * (m * n_r)
    hi = counts_per_cell + [0.0] * (m * n_r)
    ao = a[opts]
    # option columns (one per option, its node count): -allocatable in its capacity rows
    res_idx = np.arange(n_r)
    o_mask = ao > 0
    o_rows = n_c + np.arange(m)[:, None] * n_r + res_idx[None, :]
    o_counts = o_mask.sum(axis=1)
    # cell x option columns (pods of the cell placed on the option): 1 in the cell's row, the cell's mean
    # shape in the option's capacity rows
    c_idx, o_loc = np.nonzero(fits[:, opts])
    y_rows = np.concatenate([c_idx[:, None], n_c + o_loc[:, None] * n_r + res_idx[None, :]], axis=1)
    y_vals = np.concatenate([np.ones((c_idx.size, 1)), means[c_idx]], axis=1)
    y_mask = np.concatenate([np.ones((c_idx.size, 1), dtype=bool), means[c_idx] > 0], axis=1)
    counts = np.concatenate([o_counts, y_mask.sum(axis=1)])
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int32)
    index = np.concatenate([o_rows[o_mask], y_rows[y_mask]]).astype(np.int32)
    value = np.concatenate([-ao[o_mask], y_vals[y_mask]])
    costs = np.concatenate([price[opts], np.zeros(c_idx.size)])
    n_cols = costs.size
    # presolve does not pay for itself on this LP (the bound's LP keeps HiGHS's default)
    sol = solve_columns(
        np.array(lo), np.array(hi), costs, np.full(n_cols, inf), starts, index, value, presolve=False
    )
    if sol is None:
        return None
    y_sol = sol.col_value[m:]
    return (
        c_idx.astype(np.int64),
        opts[o_loc].astype(np.int64),
        y_sol,
        sol.objective,
    )
