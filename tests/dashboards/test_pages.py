"""The pages render for a viewer with every window and pool, draw the selectors' figures, serve
plotly.js from the installed package, and stay behind the login."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from tests.dashboards.conftest import build_fleet

PAGES = ["/dashboards/", "/dashboards/binpacking/", "/dashboards/spot/", "/dashboards/unschedulable/",
         "/dashboards/cost/", "/dashboards/commitments/"]
CHARTS = {"/dashboards/": ["chart-efficiency", "chart-cost", "chart-optimality", "chart-nodes"],
          "/dashboards/binpacking/": ["chart-nodes", "chart-pool-efficiency"],
          "/dashboards/spot/": ["chart-spot-cost", "chart-spot-pools"],
          "/dashboards/unschedulable/": ["chart-reasons", "chart-reasons-pools"],
          "/dashboards/cost/": ["chart-cost-families", "chart-cost-pools", "chart-timeline"],
          "/dashboards/commitments/": ["chart-commitment-cost", "chart-commitment-coverage",
                                       "chart-commitment-utilization", "chart-commitment-unused"]}


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
    from tests.dashboards.test_metrics import catalog_price

    stranded = 0.028 + 0.03825 + 0.875 * catalog_price("m5.large", "us-east-1a", "on-demand")
    assert f'id="stranded">${stranded:.2f}/h' in html
    # The fixture's samples carry no lower bound: unknown, not $0.
    assert 'id="gap">unknown' in html


def test_binpacking_lists_worst_packed_first(viewer_client: Client, fleet: None) -> None:
    html = viewer_client.get("/dashboards/binpacking/").content.decode()
    # Live nodes, worst-packed first: node-u2 (empty), node-u1 (12.5%), node-n1 (30%), node-n2 (77.5%).
    order = [html.index(f'<td>node-{n}</td>') if n.startswith("u") else html.index(f">node-{n}</a>")
             for n in ("u2", "u1", "n1", "n2")]
    assert order == sorted(order)
    assert "node-n3" not in html
    row_u2 = html[html.index("<td>node-u2</td>"):].split("</tr>", 1)[0]
    assert "unmanaged" in row_u2 and "unknown" in row_u2
    only_b = viewer_client.get("/dashboards/binpacking/?nodepool=b").content.decode()
    assert "node-n1" not in only_b and "node-n2" in only_b


def test_binpacking_shows_the_worst_packed_first_up_to_the_limit(viewer_client: Client, fleet: None,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from console.dashboards import views

    monkeypatch.setattr(views, "NODE_LIMIT", 2)
    html = viewer_client.get("/dashboards/binpacking/").content.decode()
    assert "The 2 worst-packed of 4 nodes" in html
    assert "node-u2" in html and "node-u1" in html and "node-n2" not in html


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


def test_pages_survive_an_unreachable_cluster(viewer_client: Client, fleet: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from console.dashboards import metrics, views

    class Down:
        def list_pods(self) -> Any:
            raise ConnectionError("api server unreachable")

        list_nodes = list_pods

    monkeypatch.setattr(views, "cluster_backend", Down)
    monkeypatch.setattr(metrics, "cluster_backend", Down)
    for url in ("/dashboards/", "/dashboards/binpacking/"):
        html = viewer_client.get(url).content.decode()
        assert "The live cluster could not be read: api server unreachable" in html
    assert 'id="stranded">unknown' in viewer_client.get("/dashboards/").content.decode()
    scraped = viewer_client.get("/metrics")
    assert scraped.status_code == 200 and b"loadmaster_cost_per_hour_dollars{" in scraped.content
    assert b"karpenter_nodes_allocatable{" not in scraped.content
