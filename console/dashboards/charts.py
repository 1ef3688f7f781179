"""Plotly figures built on the server from selector output; the page loads our own plotly.js."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import plotly.graph_objects as go

from console.dashboards.selectors import NodeRow, Point

_LAYOUT = dict(template="plotly_white", height=340, autosize=True, margin=dict(l=60, r=20, t=50, b=90),
               hovermode="x unified", legend=dict(orientation="h", y=-0.35, x=0))


def _html(fig: go.Figure, div_id: str) -> str:
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                       config={"displaylogo": False, "responsive": True})


def _times(x: Sequence[datetime]) -> list[str]:
    """UTC wall-clock strings: plotly.js reads them as dates, and serialising strings is several times
    faster than datetime objects for a day of minutes."""
    return [t.strftime("%Y-%m-%d %H:%M") for t in x]


def lines(div_id: str, title: str, yaxis: str, x: Sequence[datetime],
          series: dict[str, Sequence[float | None]], *, stacked: bool = False, hover: str = "%{y:.4f}") -> str:
    fig = go.Figure()
    times = _times(x)
    for name, ys in series.items():
        fig.add_trace(go.Scatter(x=times, y=list(ys), name=name, mode="lines",
                                 stackgroup="one" if stacked else None, hovertemplate=f"{name}: {hover}<extra></extra>"))
    fig.update_layout(title=title, xaxis_title="time (UTC)", yaxis_title=yaxis, **_LAYOUT)
    return _html(fig, div_id)


def bars(div_id: str, title: str, yaxis: str, labels: Sequence[str], values: Sequence[float],
         *, hover: str = "$%{y:.2f}") -> str:
    fig = go.Figure(go.Bar(x=list(labels), y=list(values), name=yaxis, hovertemplate=f"%{{x}}: {hover}<extra></extra>"))
    fig.update_layout(title=title, xaxis_title="", yaxis_title=yaxis, **{**_LAYOUT, "hovermode": "closest"})
    return _html(fig, div_id)


def efficiency(div_id: str, title: str, points: Sequence[Point]) -> str:
    x = [p.at for p in points]
    return lines(div_id, title, "requested ÷ allocatable (%)", x, {
        "CPU": [None if p.cpu_efficiency is None else 100 * p.cpu_efficiency for p in points],
        "memory": [None if p.memory_efficiency is None else 100 * p.memory_efficiency for p in points],
    }, hover="%{y:.1f}%")


def node_bars(div_id: str, rows: Sequence[NodeRow]) -> str:
    """eks-node-viewer as a chart: per node, the share of CPU, memory and pods requested."""
    names = [f"{r.claim.node_name or r.claim.name} ({r.claim.instance_type})" for r in rows]
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
    fig = go.Figure()
    by_kind: dict[str, list[Any]] = {}
    for e in entries:
        by_kind.setdefault(e.decision.kind, []).append(e)
    for kind, items in sorted(by_kind.items()):
        fig.add_trace(go.Scatter(
            x=[e.decision.at for e in items], y=[kind] * len(items), mode="markers", name=kind,
            text=[f"{e.decision.nodepool_name} — {e.decision.why[:120]}"
                  + (f" (saves ${e.savings_per_hour:.4f}/h)" if e.savings_per_hour is not None else "") for e in items],
            hovertemplate="%{x}<br>%{text}<extra></extra>"))
    fig.update_layout(title="Decision timeline", xaxis_title="time (UTC)", yaxis_title="decision kind",
                      **{**_LAYOUT, "hovermode": "closest"})
    return _html(fig, div_id)
