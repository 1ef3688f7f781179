"""The preview shows what an edit does to the commitments' use: each Reserved Instance's and Savings Plan's units
used by the running nodes and the plan, and left, before and after, from the plan results' commitments (the plan
priced with the stored commitments, as the provision loop prices)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from console.commitments import services as commitment_services
from console.whatif import selectors
from tests.whatif.test_pages_api import general_post


@pytest.fixture
def plan_commitment(world: Any) -> Any:
    commitment_services.commitment_create(values={"name": "sp", "type": "ComputeSavingsPlan",
                                                  "hourly_commitment": "100", "rates": {"c5": "0.3", "m5": "0.3",
                                                                                        "c6i": "0.3", "m6i": "0.3",
                                                                                        "c7i": "0.3", "m7i": "0.3"}})
    return world


def test_an_edit_that_launches_less_uses_less_of_the_commitment(plan_commitment: Any) -> None:
    result = selectors.preview_nodepool_change(values={"limits": {"cpu": "2"}}, name="general",
                                               cluster=plan_commitment.cluster, now=plan_commitment.clock())
    (row,) = result["commitments"]
    before, after = result["before"], result["after"]
    assert row["name"] == "sp" and row["unit"] == "$/h" and row["total"] == 100
    assert before["launch"] and all(c["covered_by"] == ["sp"] for c in before["launch"])
    # a Savings Plan's use is the covered launches' on-demand price × (1 − rate), all of it within the plan
    assert row["used_before"] == pytest.approx(sum(c["price_per_hour"] * 0.7 for c in before["launch"]), abs=1e-5)
    assert row["used_after"] == pytest.approx(sum(c["price_per_hour"] * 0.7 for c in after["launch"]), abs=1e-5)
    assert row["used_after"] < row["used_before"]
    assert row["used_change"] == pytest.approx(row["used_after"] - row["used_before"], abs=1e-6)
    assert row["left_before"] == pytest.approx(100 - row["used_before"], abs=1e-5)
    assert all(c["effective_price_per_hour"] == 0.0 for c in before["launch"])   # wholly covered


def test_the_page_shows_the_commitment_table(plan_commitment: Any, viewer_client: Client) -> None:
    html = viewer_client.post("/whatif/nodepools/general/preview/", general_post(limits="cpu=2"),
                              HTTP_X_REQUESTED_WITH="fetch").content.decode()
    assert 'id="whatif-commitments"' in html and "ComputeSavingsPlan" in html
    assert "(effective $0.0/h under sp)" in html


def test_without_commitments_the_preview_has_none(world: Any, viewer_client: Client) -> None:
    result = selectors.preview_nodepool_change(values={"limits": {"cpu": "2"}}, name="general",
                                               cluster=world.cluster, now=world.clock())
    assert result["commitments"] == [] and result["before"]["launch"]
    assert all(c["covered_by"] == [] and c["effective_price_per_hour"] is None for c in result["before"]["launch"])
    html = viewer_client.post("/whatif/nodepools/general/preview/", general_post(limits="cpu=2"),
                              HTTP_X_REQUESTED_WITH="fetch").content.decode()
    assert 'id="whatif-commitments"' not in html
