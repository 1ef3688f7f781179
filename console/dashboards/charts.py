"""Plotly figures built on the server from selector output; the page loads our own plotly.js."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

from console.control.live_cluster import NodeRow
from console.dashboards.selectors import Point

_LAYOUT = dict(template="plotly_white", height=340, autosize=True, margin=dict(l=60, r=20, t=50, b=90),
               hovermode="x unified", legend=dict(orientation="h", y=-0.35, x=0))


def _html(fig: go.Figure, div_id: str) -> str:
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                       config={"displaylogo": False, "responsive": True})


@lru_cache(maxsize=1)
def _template() -> dict[str, Any]:
    return pio.templates["plotly_white"].to_plotly_json()  # type: ignore[no-any-return]


# A chart with a single sample in time is drawn as a marker on an hour centred on it: plotly's own range
# for one point is a few milliseconds wide (ticks like 05:18:59.9995) and a lone point of a line is invisible.
SINGLE_POINT_SPAN = timedelta(minutes=30)
_TIME = "%Y-%m-%d %H:%M:%S"


def _parse_time(value: str) -> datetime:
    return datetime.strptime(value, _TIME if value.count(":") == 2 else "%Y-%m-%d %H:%M")


def _isolated(ys: Sequence[Any]) -> bool:
    """Whether some value has no neighbour to draw a line to (a gap on both sides, or it is alone)."""
    for i, y in enumerate(ys):
        if y is None:
            continue
        if (i == 0 or ys[i - 1] is None) and (i == len(ys) - 1 or ys[i + 1] is None):
            return True
    return False


def _ranged(data: list[dict[str, Any]], layout: dict[str, Any], *, time_axis: bool, numeric_y: bool,
            x_range: tuple[datetime, datetime] | None, empty_text: str) -> None:
    """Make sparse figures readable: markers for points a line cannot show, an x range around a single
    instant (or the window when there is none), y from zero, and a note on an empty chart."""
    xs = {x for trace in data for x, y in zip(trace.get("x") or [], trace.get("y") or [], strict=False)
          if y is not None}
    for trace in data:
        if trace.get("type") == "scatter" and trace.get("mode") == "lines" and _isolated(trace.get("y") or []):
            trace["mode"] = "lines+markers"
            trace.setdefault("marker", {"size": 7})
    xaxis = layout.setdefault("xaxis", {})
    if time_axis:
        xaxis["type"] = "date"
        if len(xs) == 1:
            (only,) = xs
            at = _parse_time(only)
            xaxis["range"] = [(at - SINGLE_POINT_SPAN).strftime(_TIME), (at + SINGLE_POINT_SPAN).strftime(_TIME)]
        elif not xs and x_range is not None:
            xaxis["range"] = [x_range[0].strftime(_TIME), x_range[1].strftime(_TIME)]
    if numeric_y:
        yaxis = layout.setdefault("yaxis", {})
        yaxis.setdefault("rangemode", "tozero")
        values = [y for trace in data if trace.get("yaxis") in (None, "y") for y in trace.get("y") or []
                  if isinstance(y, int | float)]
        if not any(values):  # nothing, or only zeros: plotly would centre 0 in −1…1
            yaxis["range"] = [0, 1]
    if not xs:
        layout["annotations"] = [{"text": empty_text, "showarrow": False, "xref": "paper", "yref": "paper",
                                  "x": 0.5, "y": 0.5, "font": {"size": 14, "color": "#888"}}]


def _dict_html(div_id: str, data: list[dict[str, Any]], title: str, yaxis: str, *, time_axis: bool = True,
               numeric_y: bool = True, x_range: tuple[datetime, datetime] | None = None,
               empty_text: str = "no samples in this window", **layout: Any) -> str:
    """A figure written as plain dicts and serialised without plotly's validators, which cost more per
    trace of a day of minutes than the rest of the page; the traces are built here from known-good values."""
    full = {"template": _template(), "height": _LAYOUT["height"], "autosize": True, "margin": _LAYOUT["margin"],
            "hovermode": "x unified", "legend": _LAYOUT["legend"], "title": {"text": title},
            "xaxis": {"title": {"text": "time (UTC)"}}, "yaxis": {"title": {"text": yaxis}}, **layout}
    if time_axis:
        full.setdefault("showlegend", True)  # plotly hides the legend of a single trace: say what it is
    _ranged(data, full, time_axis=time_axis, numeric_y=numeric_y, x_range=x_range, empty_text=empty_text)
    fig = {"data": data, "layout": full}
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
          series: Mapping[str, Sequence[float | None]], *, stacked: bool = False, hover: str = "%{y:.4f}",
          x_range: tuple[datetime, datetime] | None = None) -> str:
    times = _times(x)
    data = [_line(name, times, ys, hover, **({"stackgroup": "one"} if stacked else {})) for name, ys in series.items()]
    return _dict_html(div_id, data, title, yaxis, x_range=x_range)


def bars(div_id: str, title: str, yaxis: str, labels: Sequence[str], values: Sequence[float],
         *, hover: str = "$%{y:.2f}") -> str:
    data = [{"type": "bar", "x": list(labels), "y": [float(v) for v in values], "name": yaxis,
             "hovertemplate": f"%{{x}}: {hover}<extra></extra>"}]
    return _dict_html(div_id, data, title, yaxis, time_axis=False, empty_text="nothing in this window",
                      xaxis={"title": {"text": ""}}, hovermode="closest")


def efficiency(div_id: str, title: str, points: Sequence[Point],
               x_range: tuple[datetime, datetime] | None = None) -> str:
    x = [p.at for p in points]
    return lines(div_id, title, "requested ÷ allocatable (%)", x, {
        "CPU": [None if p.cpu_efficiency is None else 100 * p.cpu_efficiency for p in points],
        "memory": [None if p.memory_efficiency is None else 100 * p.memory_efficiency for p in points],
    }, hover="%{y:.1f}%", x_range=x_range)


def optimality(div_id: str, points: Sequence[Point], x_range: tuple[datetime, datetime] | None = None) -> str:
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
                      margin={"l": 60, "r": 60, "t": 50, "b": 90}, x_range=x_range)


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


def timeline_scatter(div_id: str, entries: Sequence[Any], x_range: tuple[datetime, datetime] | None = None) -> str:
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
    return _dict_html(div_id, data, "Decision timeline", "decision kind", hovermode="closest", numeric_y=False,
                      x_range=x_range, empty_text="no decisions in this window")


def _seconds(x: Sequence[datetime]) -> list[str]:
    return [t.strftime("%Y-%m-%d %H:%M:%S") for t in x]


def aligned_lines(div_id: str, title: str, yaxis: str,
                  series: Mapping[str, tuple[Sequence[datetime], Sequence[float | None]]], *, hover: str = "%{y:.4f}",
                  x_range: tuple[datetime, datetime] | None = None) -> str:
    """lines() for series with times of their own (a commitment recorded only from some minute on): each is put on
    the union of the times, None where it has no value (a gap, never a zero)."""
    times = sorted({t for xs, _ in series.values() for t in xs})
    values = {}
    for name, (xs, ys) in series.items():
        by_at = dict(zip(xs, ys, strict=True))
        values[name] = [by_at.get(t) for t in times]
    return lines(div_id, title, yaxis, times, values, hover=hover, x_range=x_range)
