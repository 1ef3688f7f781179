"""The dashboards in a real headless Chromium: sign in, open each page, wait until every chart has
drawn its traces, change the window and the NodePool and see the charts change. Screenshots land in
test-artifacts/dashboards-*.png."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from tests.chromium import ARTIFACTS, BROWSER_TEST, browser  # noqa: F401 - browser is a fixture
from tests.dashboards.conftest import build_fleet, build_history

pytestmark = BROWSER_TEST

# page → {chart div id: traces that must carry data}
PAGES: dict[str, dict[str, int]] = {
    "/dashboards/": {"chart-efficiency": 2, "chart-cost": 3, "chart-optimality": 4, "chart-nodes": 4},
    "/dashboards/binpacking/": {"chart-nodes": 3, "chart-pool-efficiency": 4},
    "/dashboards/spot/": {"chart-spot-cost": 2, "chart-spot-pools": 1},
    # build_history's samples predate the per-pod keys: their pods are one "reason not recorded" trace
    "/dashboards/unschedulable/": {"chart-reasons": 1, "chart-reasons-pools": 2},
    "/dashboards/cost/": {"chart-cost-pools": 1, "chart-cost-families": 1, "chart-timeline": 3},
}

# Per chart: [number of points of each trace, sum of the first trace's y] — enough to see a change.
SHAPE_JS = """
const out = {};
for (const el of document.querySelectorAll('.js-plotly-plot')) {
  const data = el.data || [];
  const withData = data.filter(t => (t.x || []).length > 0 && (t.y || []).length > 0);
  const ys = (data[0] && data[0].y) ? Array.from(data[0].y) : [];
  const xs = (data[0] && data[0].x) ? Array.from(data[0].x) : [];
  out[el.id] = {traces: withData.length, points: data.map(t => (t.x || []).length),
                ysum: ys.concat(xs).reduce((a, v) => a + (typeof v === 'number' ? v : 0), 0)};
}
return out;
"""




def shot(driver: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"dashboards-{name}.png"))


def wait_charts(driver: Any, expected: dict[str, int]) -> dict[str, Any]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 20).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, ".plot-container")) >= len(expected))
    shape = driver.execute_script(SHAPE_JS)
    for div, traces in expected.items():
        assert shape[div]["traces"] == traces, (driver.current_url, div, shape[div])
    return shape


@pytest.mark.django_db(transaction=True)
def test_dashboards_in_browser(browser: Any, live_server: Any) -> None:  # noqa: F811
    from django.contrib.auth.models import Group, User
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import Select, WebDriverWait

    now = timezone.now().replace(second=0, microsecond=0)
    build_fleet(now)
    build_history(now, minutes=180)
    user = User.objects.create_user("vera", password="a long browser password")
    user.groups.add(Group.objects.get_or_create(name="viewer")[0])

    browser.get(live_server.url + "/dashboards/")
    assert "/accounts/login/" in browser.current_url
    browser.find_element(By.NAME, "username").send_keys("vera")
    browser.find_element(By.NAME, "password").send_keys("a long browser password")
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    WebDriverWait(browser, 15).until(EC.url_matches(r"/dashboards/$"))

    for url, expected in PAGES.items():
        browser.get(live_server.url + url + "?window=24h")
        wait_charts(browser, expected)
        shot(browser, url.strip("/").replace("/", "-"))

    # The window: 24 h of minutes → 7 d of hourly means, fewer points.
    browser.get(live_server.url + "/dashboards/?window=24h")
    before = wait_charts(browser, PAGES["/dashboards/"])
    # Cost vs bound: every minute on the x axis, the bound's unknown minutes as gaps (null), not zeros:
    # build_history's minutes with m % 5 == 0 and build_fleet's three minutes, which carry no bound.
    gaps = browser.execute_script(
        "const d = document.getElementById('chart-optimality').data;"
        "return [d[1].y.length, d[1].y.filter(v => v === null).length, d[1].y.filter(v => v === 0).length];")
    assert gaps == [180, sum(1 for m in range(3, 180) if m % 5 == 0) + 3, 0]
    Select(browser.find_element(By.ID, "window")).select_by_value("7d")
    WebDriverWait(browser, 15).until(EC.url_contains("window=7d"))
    after = wait_charts(browser, PAGES["/dashboards/"])
    assert before["chart-cost"]["points"][0] == 180
    assert 3 <= after["chart-cost"]["points"][0] <= 4
    shot(browser, "overview-7d")

    # The NodePool: pool a's cost is a third of the cluster's.
    Select(browser.find_element(By.ID, "window")).select_by_value("24h")
    WebDriverWait(browser, 15).until(EC.url_contains("window=24h"))
    cluster = wait_charts(browser, PAGES["/dashboards/"])
    Select(browser.find_element(By.ID, "nodepool")).select_by_value("a")
    WebDriverWait(browser, 15).until(EC.url_contains("nodepool=a"))
    pool_a = wait_charts(browser, PAGES["/dashboards/"])
    assert pool_a["chart-cost"]["points"] == cluster["chart-cost"]["points"]
    assert browser.find_element(By.ID, "cost-now").text == "$1.00/h"
    assert cluster["chart-cost"]["ysum"] != pool_a["chart-cost"]["ysum"]
    shot(browser, "overview-pool-a")

    # The filter follows across the tabs; bin-packing then shows only pool a's node.
    browser.find_element(By.LINK_TEXT, "Bin-packing").click()
    WebDriverWait(browser, 15).until(EC.url_contains("/binpacking/"))
    shape = wait_charts(browser, {"chart-nodes": 3, "chart-pool-efficiency": 2})
    assert shape["chart-nodes"]["points"] == [1, 1, 1]
    assert "node-n2" not in browser.find_element(By.ID, "nodes").text
    shot(browser, "binpacking-pool-a")
