"""The preview flow in headless Chromium: the NodePool edit form's Preview button;
edit the cpu limit, press Preview, see the progress indicator go and the side-by-side result come,
and nothing saved. Screenshots land in test-artifacts/."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chromium import BROWSER_TEST, browser, shot  # noqa: F401 - browser is a fixture

pytestmark = BROWSER_TEST

@pytest.mark.django_db(transaction=True)
def test_preview_flow_in_browser(browser: Any, live_server: Any, world: Any) -> None:  # noqa: F811
    from django.contrib.auth.models import Group, User
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    from console.fleet.models import NodePool

    user = User.objects.create_user("olga", password="a long browser password")
    user.groups.add(Group.objects.get_or_create(name="operator")[0])
    revision = NodePool.objects.get(name="general").revision

    browser.get(live_server.url + "/nodepools/general/edit/")
    browser.find_element(By.NAME, "username").send_keys("olga")
    browser.find_element(By.NAME, "password").send_keys("a long browser password")
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    WebDriverWait(browser, 15).until(EC.url_matches(r"/nodepools/general/edit/$"))

    limits = browser.find_element(By.NAME, "limits")
    limits.clear()
    limits.send_keys("cpu=2")
    progress = browser.find_element(By.ID, "whatif-preview-progress")
    assert not progress.is_displayed()
    # Slow the request down a little in the page so the indicator is observable, then press Preview.
    browser.execute_script("""
      const real = window.fetch;
      window.fetch = (...a) => new Promise(r => setTimeout(() => r(real(...a)), 400));""")
    browser.find_element(By.ID, "whatif-preview-button").click()
    WebDriverWait(browser, 5).until(EC.visibility_of_element_located((By.ID, "whatif-preview-progress")))
    shot(browser, "whatif-preview-running")
    card = WebDriverWait(browser, 30).until(EC.visibility_of_element_located((By.ID, "whatif-preview")))
    assert not browser.find_element(By.ID, "whatif-preview-progress").is_displayed()
    assert "Pods that become unschedulable" in card.text and "limit cpu=2 would be exceeded" in card.text
    assert browser.find_element(By.ID, "whatif-after-unschedulable").text != "0"
    shot(browser, "whatif-preview-result")
    # Still on the edit page, nothing saved.
    assert browser.current_url.endswith("/nodepools/general/edit/")
    pool = NodePool.objects.get(name="general")
    assert pool.limits == {"cpu": "16"} and pool.revision == revision
