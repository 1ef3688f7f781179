"""Charts with one sample draw it (a marker on an hour around it, not a range of milliseconds); empty
charts show the window and say so; y axes start at zero. For every chart builder."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from console.dashboards import charts
from console.dashboards.selectors import Point
from tests.dashboards.conftest import CLUSTER, POOL_A, sample

AT = datetime(2026, 1, 15, 5, 19, tzinfo=UTC)
WINDOW = (AT - timedelta(hours=1), AT)


def figures(html: str) -> list[tuple[list[dict[str, Any]], dict[str, Any]]]:
    """The data and layout plotly.js is given (the JSON arguments after the div id of each newPlot)."""
    out = []
    decoder = json.JSONDecoder()
    for body in html.split("Plotly.newPlot(")[1:]:
        rest = body[body.index(",") + 1:].lstrip()
        data, end = decoder.raw_decode(rest)
        layout, _ = decoder.raw_decode(rest[end:].lstrip(", \n"))
        out.append((data, layout))
    return out


def figure(html: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    return figures(html)[0]


def point(at: datetime) -> Point:
    return Point(at=at, cost=1.0, on_demand=2.0, nodes=1, spot_nodes=0, cpu_allocatable=2000, cpu_requested=500,
                 memory_allocatable=4, memory_requested=1, pods=3, pods_pending=0, estimated=False,
                 lower_bound=0.5, cost_bounded=1.0)


def one_sample_charts() -> list[str]:
    pts = [point(AT)]
    return [charts.lines("c1", "Cost", "$ per hour", [AT], {"actual": [1.0]}, x_range=WINDOW),
            charts.efficiency("c2", "Efficiency", pts, x_range=WINDOW),
            charts.optimality("c3", pts, x_range=WINDOW),
            charts.timeline_scatter("c4", [type("E", (), {"decision": type("D", (), {
                "at": AT, "kind": "launch", "nodepool_name": "a", "why": "x"})(), "savings_per_hour": None})()],
                x_range=WINDOW)]


@pytest.mark.parametrize("index", range(4))
def test_one_sample_is_drawn_on_a_sensible_range(index: int) -> None:
    data, layout = figure(one_sample_charts()[index])
    assert layout["xaxis"]["type"] == "date"
    start, end = (datetime.fromisoformat(v).replace(tzinfo=UTC) for v in layout["xaxis"]["range"])
    assert end - start == timedelta(hours=1) and start < AT < end
    assert all("markers" in t["mode"] for t in data if t["type"] == "scatter")


def test_empty_chart_shows_the_window_and_says_so() -> None:
    data, layout = figure(charts.lines("c", "Cost", "$ per hour", [], {"actual": []}, x_range=WINDOW))
    assert [datetime.fromisoformat(v).replace(tzinfo=UTC) for v in layout["xaxis"]["range"]] == list(WINDOW)
    assert layout["yaxis"]["range"] == [0, 1]
    assert "no samples" in layout["annotations"][0]["text"]
    _, bar_layout = figure(charts.bars("b", "Cost per NodePool", "$", [], []))
    assert "nothing" in bar_layout["annotations"][0]["text"] and bar_layout["yaxis"]["range"] == [0, 1]


def test_all_zero_series_start_at_zero_and_lines_stay_lines() -> None:
    times = [AT - timedelta(minutes=m) for m in (2, 1, 0)]
    data, layout = figure(charts.lines("c", "Pending", "pods", times, {"pending": [0, 0, 0]}, x_range=WINDOW))
    assert layout["yaxis"]["range"] == [0, 1] and data[0]["mode"] == "lines"
    assert "range" not in layout["xaxis"]  # several samples: plotly ranges on them
    data, layout = figure(charts.lines("c", "Cost", "$", times, {"a": [1.0, None, 2.0]}))
    assert data[0]["mode"] == "lines+markers"  # isolated points between gaps are visible
    assert layout["yaxis"]["rangemode"] == "tozero" and "range" not in layout["yaxis"]


@pytest.mark.django_db
def test_pages_with_one_sample(viewer_client: Client) -> None:
    now = timezone.now().replace(second=0, microsecond=0)
    sample(now, "", CLUSTER)
    sample(now, "a", POOL_A)
    for url in ("/dashboards/?window=1h", "/dashboards/spot/?window=1h", "/dashboards/unschedulable/?window=1h",
                "/dashboards/binpacking/?window=1h&nodepool=a"):
        drawn = [layout["xaxis"] for _, layout in figures(viewer_client.get(url).content.decode())
                 if layout["xaxis"].get("type") == "date"]
        assert drawn, url
        for xaxis in drawn:
            a, b = (datetime.fromisoformat(v) for v in xaxis["range"])
            assert b - a == timedelta(hours=1), url
