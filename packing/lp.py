"""Linear programs solved with HiGHS, for the lower bound (packing.bound) and the packer's type mix
(packing.scheduling.typemix), and small integer programs for the exact packing of small pod sets
(packing.scheduling.exact).

Every call builds its own HiGHS instance and nothing else is kept between calls, so solves on several threads
at once never touch the same solver (one module-global instance shared by the bound and the packer crashed
the process with a segmentation fault when threads solved at once). An instance costs far less to build than
the LPs cost to solve, so no per-thread cache is needed (figures: .notes/diaries-sched.md).

HiGHS prints its banner to file descriptor 1 once per process, on the first construction. That one
construction runs with descriptor 1 pointed at /dev/null under a lock, so the banner never corrupts JSON
written to stdout and two threads never swap descriptors under each other; later constructions print
nothing (output_flag is switched off before any solve). The once-flag is the module's only state.

highspy is imported where a solver is built, not when this module is: most processes that import the engine
(the console's web workers) never solve an LP, and importing highspy adds to their start-up time.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["INF", "LpSolution", "MipSolution", "new_solver", "solve_columns", "solve_integer"]

INF = float("inf")  # highspy.kHighsInf: a row or column bound that is no bound

_banner_lock = threading.Lock()
_banner_printed = False


@contextlib.contextmanager
def _stdout_silenced() -> Iterator[None]:
    sys.stdout.flush()
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):
        fd = 1
    saved = os.dup(fd)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), fd)
            yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


def new_solver() -> Any:
    """A fresh HiGHS instance with its log switched off, owned by the caller alone."""
    global _banner_printed
    import highspy

    if not _banner_printed:
        with _banner_lock:
            if not _banner_printed:
                with _stdout_silenced():
                    h = highspy.Highs()  # type: ignore[no-untyped-call]
                h.setOptionValue("output_flag", False)
                _banner_printed = True
                return h
    h = highspy.Highs()  # type: ignore[no-untyped-call]
    h.setOptionValue("output_flag", False)
    return h


def _load_columns(
    h: Any,
    row_lower: npt.NDArray[np.float64],
    row_upper: npt.NDArray[np.float64],
    col_cost: npt.NDArray[np.float64],
    col_upper: npt.NDArray[np.float64],
    starts: npt.NDArray[np.int32],
    index: npt.NDArray[np.int32],
    value: npt.NDArray[np.float64],
) -> None:
    """The rows (bounds only) and then the columns (cost, bounds 0..col_upper, column-wise entries) into `h`."""
    n_cols = int(col_cost.size)
    h.addRows(
        int(row_lower.size), row_lower, row_upper, 0, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32),
        np.zeros(0),
    )
    h.addCols(n_cols, col_cost, np.zeros(n_cols), col_upper, int(index.size), starts, index, value)


@dataclass(frozen=True)
class LpSolution:
    col_value: npt.NDArray[np.float64]
    objective: float


def solve_columns(
    row_lower: npt.NDArray[np.float64],
    row_upper: npt.NDArray[np.float64],
    col_cost: npt.NDArray[np.float64],
    col_upper: npt.NDArray[np.float64],
    starts: npt.NDArray[np.int32],
    index: npt.NDArray[np.int32],
    value: npt.NDArray[np.float64],
    *,
    presolve: bool = True,
    values: bool = True,
    solver: str = "choose",
) -> LpSolution | None:
    """Minimise col_cost · x subject to row_lower <= A x <= row_upper and 0 <= x <= col_upper, with A given
    column-wise (column c's entries are index/value[starts[c]:starts[c + 1]]). None unless HiGHS proves an
    optimum. Bounds may be ±INF. values=False: only the optimum is wanted (col_value is left empty, which
    spares copying a large solution out of HiGHS). solver: HiGHS' `solver` option ("choose", "simplex", "ipm")."""
    import highspy

    h = new_solver()
    _load_columns(h, row_lower, row_upper, col_cost, col_upper, starts, index, value)
    if not presolve:
        h.setOptionValue("presolve", "off")
    if solver != "choose":
        h.setOptionValue("solver", solver)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    col_value = np.asarray(h.getSolution().col_value, dtype=np.float64) if values else np.zeros(0)
    return LpSolution(col_value, float(h.getInfo().objective_function_value))


@dataclass(frozen=True)
class MipSolution:
    """An integer solution HiGHS found: `optimal` when it is proven optimal (within HiGHS' default gap), else the
    best one found before the time limit."""

    col_value: npt.NDArray[np.float64]
    objective: float
    optimal: bool


def solve_integer(
    row_lower: npt.NDArray[np.float64],
    row_upper: npt.NDArray[np.float64],
    col_cost: npt.NDArray[np.float64],
    col_upper: npt.NDArray[np.float64],
    starts: npt.NDArray[np.int32],
    index: npt.NDArray[np.int32],
    value: npt.NDArray[np.float64],
    *,
    time_limit: float,
    cutoff: float = INF,
    max_nodes: int = 5000,
) -> MipSolution | None:
    """Minimise col_cost · x subject to row_lower <= A x <= row_upper, 0 <= x <= col_upper, every x integer (A
    column-wise as in solve_columns), in at most `time_limit` seconds and `max_nodes` branch-and-bound nodes.
    cutoff: only solutions of objective at most this are wanted (HiGHS prunes the rest). None when HiGHS found
    no such integer solution, proved there is none, or stopped on the time limit (a solution found by then
    would depend on the machine's speed; the node limit does not)."""
    import highspy

    h = new_solver()
    n_cols = int(col_cost.size)
    h.setOptionValue("time_limit", float(time_limit))
    h.setOptionValue("mip_max_nodes", int(max_nodes))
    if cutoff < INF:
        h.setOptionValue("objective_bound", float(cutoff))
    _load_columns(h, row_lower, row_upper, col_cost, col_upper, starts, index, value)
    kinds = np.full(n_cols, highspy.HighsVarType.kInteger)
    h.changeColsIntegrality(n_cols, np.arange(n_cols, dtype=np.int32), kinds)
    h.run()
    status = h.getModelStatus()
    optimal = status == highspy.HighsModelStatus.kOptimal
    if status == highspy.HighsModelStatus.kTimeLimit:
        return None
    if not optimal and h.getInfo().primal_solution_status != 2:  # 2: a feasible solution is known
        return None
    col_value = np.asarray(h.getSolution().col_value, dtype=np.float64)
    if col_value.size != n_cols:
        return None
    return MipSolution(col_value, float(h.getInfo().objective_function_value), optimal)
