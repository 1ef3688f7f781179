"""The NodePool form in a real headless Chromium: sign in, add inline rows with the page's own
JavaScript, see an error next to the row that caused it, fix it, save, find the pool in the list.

Screenshots land in test-artifacts/ for a person to look at."""

from __future__ import annotations

from typing import Any

import pytest

from console.fleet.models import NodePool
from tests.chromium import BROWSER_TEST, shot

pytestmark = BROWSER_TEST


@pytest.mark.django_db(transaction=True)
def test_create_nodepool_in_browser(browser: Any, live_server: Any) -> None:
    from django.contrib.auth.models import Group, User
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import Select, WebDriverWait

    from console.fleet import services
    from tests.console_pages import NODECLASS

    user = User.objects.create_user("olga", password="a long browser password")
    user.groups.add(Group.objects.get_or_create(name="operator")[0])
    services.nodeclass_create(values=NODECLASS, user=user)

    browser.get(live_server.url + "/nodepools/new/")
    assert "/accounts/login/" in browser.current_url
    browser.find_element(By.NAME, "username").send_keys("olga")
    browser.find_element(By.NAME, "password").send_keys("a long browser password")
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    WebDriverWait(browser, 15).until(EC.url_matches(r"/nodepools/new/$"))

    browser.find_element(By.NAME, "name").send_keys("browser-pool")
    browser.find_element(By.NAME, "node_class_name").send_keys("default")
    browser.find_element(By.NAME, "weight").send_keys("30")
    # Row 0 exists; the "+ add requirement" button adds row 1 through the page's JavaScript.
    browser.find_element(By.NAME, "req-0-key").send_keys("kubernetes.io/arch")
    browser.find_element(By.NAME, "req-0-values").send_keys("arm64")
    browser.find_element(By.CSS_SELECTOR, "#rows-req .add-row").click()
    assert browser.find_element(By.NAME, "req-TOTAL_FORMS").get_attribute("value") == "2"
    browser.find_element(By.NAME, "req-1-key").send_keys("karpenter.k8s.aws/instance-cpu")
    Select(browser.find_element(By.NAME, "req-1-operator")).select_by_value("Gt")
    browser.find_element(By.NAME, "req-1-values").send_keys("many")
    browser.find_element(By.CSS_SELECTOR, "form.editor button.primary").click()
    WebDriverWait(browser, 15).until(EC.presence_of_element_located((By.CSS_SELECTOR, ".errors-top, .error")))
    error = browser.find_element(By.CSS_SELECTOR, "#rows-req tbody tr:nth-child(2) td[data-field=values] .error")
    assert "non-negative integer" in error.text
    assert not NodePool.objects.exists()
    shot(browser, "nodepool-form-error")

    values = browser.find_element(By.NAME, "req-1-values")
    values.clear()
    values.send_keys("4")
    browser.find_element(By.CSS_SELECTOR, "form.editor button.primary").click()
    WebDriverWait(browser, 15).until(EC.url_contains("/nodepools/browser-pool/"))
    pool = NodePool.objects.get(name="browser-pool")
    assert pool.requirements[1] == {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["4"]}
    assert pool.weight == 30
    shot(browser, "nodepool-detail")

    browser.get(live_server.url + "/nodepools/")
    assert "browser-pool" in browser.find_element(By.ID, "nodepools").text
    shot(browser, "nodepool-list")
