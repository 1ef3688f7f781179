"""The pages render for a viewer with every window and pool, draw the selectors' figures, serve
plotly.js from the installed package, and stay behind the login."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from tests.dashboards.conftest import build_fleet

PAGES = ["/dashboards/", "/dashboards/binpacking/", "/dashboards/spot/", "/dashboards/unschedulable/",
         "/dashboards/cost/"]
CHARTS = {"/dashboards/": ["chart-efficiency", "chart-cost", "chart-nodes"],
          "/dashboards/binpacking/": ["chart-nodes", "chart-pool-efficiency"],
          "/dashboards/spot/": ["chart-spot-cost", "chart-spot-pools"],
          "/dashboards/unschedulable/": ["chart-reasons"],
          "/dashboards/cost/": ["chart-cost-families", "chart-cost-pools", "chart-timeline"]}


@pytest.fixture
def fleet(db: Any) -> None:
    build_fleet(timezone.now().replace(second=0, microsecond=0))


@pytest.mark.parametrize("url", PAGES)
@pytest.mark.parametrize("query", ["", "?window=1h", "?window=7d&nodepool=a", "?window=30d&nodepool=nope"])
def test_page_renders(viewer_client: Client, fleet: None, url: str, query: str) -> None:
    r = viewer_client.get(url + query)
    assert r.status_code == 200
    html = r.content.decode()
    for div in CHARTS[url]:
        assert f'id="{div}"' in html
    # Nothing from a CDN or any other host (a bare "cdn" check would trip on random CSRF tokens).
    assert "cdn.plot.ly" not in html and 'src="http' not in html and "src='http" not in html
    assert "/static-vendor/plotly-" in html


def test_pages_need_login(db: Any) -> None:
    for url in PAGES:
        r = Client().get(url)
        assert r.status_code == 302 and "/accounts/login/" in r["Location"]


def test_overview_shows_figures(viewer_client: Client, fleet: None) -> None:
    html = viewer_client.get("/dashboards/").content.decode()
    assert 'id="cost-now">$3.00/h' in html
    assert 'id="spot-share">67%' in html
    assert 'id="stranded">$0.07/h' in html


def test_binpacking_lists_worst_packed_first(viewer_client: Client, fleet: None) -> None:
    html = viewer_client.get("/dashboards/binpacking/").content.decode()
    assert html.index("node-n1") < html.index("node-n2")
    assert "node-n3" not in html
    only_b = viewer_client.get("/dashboards/binpacking/?nodepool=b").content.decode()
    assert "node-n1" not in only_b and "node-n2" in only_b


def test_cost_page_links_decisions(viewer_client: Client, fleet: None) -> None:
    html = viewer_client.get("/dashboards/cost/").content.decode()
    assert "/decisions/" in html and "0.4000" in html


def test_unschedulable_lists_pending_pods(viewer_client: Client, fleet: None) -> None:
    html = viewer_client.get("/dashboards/unschedulable/").content.decode()
    assert "default/p1" in html and "taint gpu=true:NoSchedule not tolerated" in html


def test_plotly_js_served_with_long_cache(viewer_client: Client) -> None:
    import plotly

    r = viewer_client.get(f"/static-vendor/plotly-{plotly.__version__}.min.js")
    assert r.status_code == 200
    assert "max-age=31536000" in r["Cache-Control"]
    assert b"plotly" in r.content[:2000].lower()
