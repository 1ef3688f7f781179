"""The result page's two Plotly charts: cost per hour and pending pods over time, every run on one chart."""

from __future__ import annotations

from typing import Any

from console.dashboards import charts
from console.replay import selectors

_NAMES = {"actual": "actual (recorded)", "current": "replayed: current", "changed": "replayed: with the change"}


def _chart(doc: dict[str, Any], key: str, div_id: str, title: str, yaxis: str, hover: str) -> str:
    x, series = selectors.result_series(doc, key)
    return charts.lines(div_id, title, yaxis, x, {_NAMES[r]: ys for r, ys in series.items()}, hover=hover)


def cost_chart(doc: dict[str, Any]) -> str:
    return _chart(doc, "cost_per_hour", "replay-cost", "Cost per hour", "$ per hour", "$%{y:.4f}/h")


def pending_chart(doc: dict[str, Any]) -> str:
    return _chart(doc, "pending_pods", "replay-pending", "Pending pods", "pods", "%{y}")
