"""Plotly figures built on the server from selector output; the page loads our own plotly.js."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

from console.dashboards.selectors import NodeRow, Point

_LAYOUT = dict(template="plotly_white", height=340, autosize=True, margin=dict(l=60, r=20, t=50, b=90),
               hovermode="x unified", legend=dict(orientation="h", y=-0.35, x=0))


def _html(fig: go.Figure, div_id: str) -> str:
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                       config={"displaylogo": False, "responsive": True})


@lru_cache(maxsize=1)
def _template() -> dict[str, Any]:
    return pio.templates["plotly_white"].to_plotly_json()  # type: ignore[no-any-return]


def _dict_html(div_id: str, data: list[dict[str, Any]], title: str, yaxis: str, **layout: Any) -> str:
    """A time-series figure written as plain dicts and serialised without plotly's validators, which
    cost ~40 ms per trace of a day of minutes; the traces are built here from known-good values."""
    fig = {"data": data, "layout": {
        "template": _template(), "height": _LAYOUT["height"], "autosize": True, "margin": _LAYOUT["margin"],
        "hovermode": "x unified", "legend": _LAYOUT["legend"], "title": {"text": title},
        "xaxis": {"title": {"text": "time (UTC)"}}, "yaxis": {"title": {"text": yaxis}}, **layout}}
    return pio.to_html(fig, validate=False, full_html=False, include_plotlyjs=False, div_id=div_id,
                       config={"displaylogo": False, "responsive": True})


def _times(x: Sequence[datetime]) -> list[str]:
    """UTC wall-clock strings: plotly.js reads them as dates, and serialising strings is several times
    faster than datetime objects for a day of minutes."""
    return [t.strftime("%Y-%m-%d %H:%M") for t in x]


def _line(name: str, times: list[str], ys: Sequence[float | None], hover: str, **extra: Any) -> dict[str, Any]:
    return {"type": "scatter", "x": times, "y": list(ys), "name": name, "mode": "lines",
            "hovertemplate": f"{name}: {hover}<extra></extra>", **extra}


def lines(div_id: str, title: str, yaxis: str, x: Sequence[datetime],
          series: Mapping[str, Sequence[float | None]], *, stacked: bool = False, hover: str = "%{y:.4f}") -> str:
    times = _times(x)
    data = [_line(name, times, ys, hover, **({"stackgroup": "one"} if stacked else {})) for name, ys in series.items()]
    return _dict_html(div_id, data, title, yaxis)


def bars(div_id: str, title: str, yaxis: str, labels: Sequence[str], values: Sequence[float],
         *, hover: str = "$%{y:.2f}") -> str:
    data = [{"type": "bar", "x": list(labels), "y": [float(v) for v in values], "name": yaxis,
             "hovertemplate": f"%{{x}}: {hover}<extra></extra>"}]
    return _dict_html(div_id, data, title, yaxis, xaxis={"title": {"text": ""}}, hovermode="closest")


def efficiency(div_id: str, title: str, points: Sequence[Point]) -> str:
    x = [p.at for p in points]
    return lines(div_id, title, "requested ÷ allocatable (%)", x, {
        "CPU": [None if p.cpu_efficiency is None else 100 * p.cpu_efficiency for p in points],
        "memory": [None if p.memory_efficiency is None else 100 * p.memory_efficiency for p in points],
    }, hover="%{y:.1f}%")


def optimality(div_id: str, points: Sequence[Point]) -> str:
    """Cost against the engine's lower bound for the running pods, and the gap in $/h (left axis) and
    as cost ÷ bound (right axis). Minutes without a bound are gaps in the lines (null), never zeros."""
    times = _times([p.at for p in points])
    data = [_line("cost (same minutes)", times, [p.cost_bounded for p in points], "$%{y:.4f}/h"),
            _line("lower bound", times, [p.lower_bound for p in points], "$%{y:.4f}/h"),
            _line("gap", times, [p.gap for p in points], "$%{y:.4f}/h"),
            _line("cost ÷ bound", times, [p.gap_ratio for p in points], "%{y:.3f}", yaxis="y2",
                  line={"dash": "dot"})]
    return _dict_html(div_id, data, "Cost vs lower bound", "$ per hour",
                      yaxis2={"title": {"text": "cost ÷ bound"}, "overlaying": "y", "side": "right",
                              "rangemode": "tozero"},
                      margin={"l": 60, "r": 60, "t": 50, "b": 90})


def node_bars(div_id: str, rows: Sequence[NodeRow]) -> str:
    """eks-node-viewer as a chart: per node, the share of CPU, memory and pods requested."""
    names = [f"{r.name} ({r.instance_type or 'unknown type'}{'' if r.managed else ', unmanaged'})" for r in rows]
    fig = go.Figure()
    for label, attr, req, alloc in (("CPU", "cpu_fraction", "cpu_requested", "cpu_allocatable"),
                                    ("memory", "memory_fraction", "memory_requested", "memory_allocatable"),
                                    ("pods", "pods_fraction", "pods_requested", "pods_allocatable")):
        custom: list[Any] = [[getattr(r, req), getattr(r, alloc)] for r in rows]
        fig.add_trace(go.Bar(y=names, x=[100 * getattr(r, attr) for r in rows], name=label, orientation="h",
                             customdata=custom,
                             hovertemplate=f"{label}: %{{x:.1f}}% (%{{customdata[0]}} of %{{customdata[1]}})<extra></extra>"))
    fig.update_layout(title="Requested ÷ allocatable per node (worst-packed first)", barmode="group",
                      xaxis_title="requested (%)", xaxis_range=[0, 100], yaxis_autorange="reversed",
                      **{**_LAYOUT, "height": max(320, 28 * len(rows) + 120), "hovermode": "closest"})
    return _html(fig, div_id)


def timeline_scatter(div_id: str, entries: Sequence[Any]) -> str:
    by_kind: dict[str, list[Any]] = {}
    for e in entries:
        by_kind.setdefault(e.decision.kind, []).append(e)
    data = []
    for kind, items in sorted(by_kind.items()):
        data.append({
            "type": "scatter", "x": _seconds([e.decision.at for e in items]), "y": [kind] * len(items),
            "mode": "markers", "name": kind,
            "text": [f"{e.decision.nodepool_name} — {e.decision.why[:120]}"
                     + (f" (saves ${e.savings_per_hour:.4f}/h)" if e.savings_per_hour is not None else "") for e in items],
            "hovertemplate": "%{x}<br>%{text}<extra></extra>"})
    return _dict_html(div_id, data, "Decision timeline", "decision kind", hovermode="closest")


def _seconds(x: Sequence[datetime]) -> list[str]:
    return [t.strftime("%Y-%m-%d %H:%M:%S") for t in x]
