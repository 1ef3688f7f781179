"""The why-pod page ranks its suggestions: the smallest, most targeted change first (a toleration, a
limit, one more allowed value), a removed requirement — which opens the pool to every value — last, and
by cost among equals. Quantities read as Kubernetes writes them."""

from __future__ import annotations

from typing import Any

from django.test import Client

from console.whatif import selectors
from tests.whatif.conftest import add_pod


def test_toleration_before_removing_a_requirement(world: Any) -> None:
    # Family g5 is category g: pool general (category c, m) can only take it by dropping its category
    # requirement; pool gpu needs the pod to tolerate its taint.
    add_pod(world, "trainer", namespace="ml", cpu="1500m", memory="4Gi",
            node_selector={"karpenter.k8s.aws/instance-family": "g5"})
    answer = selectors.why_pending("ml", "trainer", cluster=world.cluster, now=world.clock())
    rows = answer["pools"]
    assert [r["nodepool"] for r in rows] == ["gpu", "general"], rows
    assert rows[0]["suggestion"] == "tolerate nvidia.com/gpu" and rows[0]["recommended"]
    assert rows[0]["change_kind"] == "toleration" and rows[0]["cost_per_hour"] > 0
    assert rows[1]["suggestion"].startswith("remove requirement karpenter.k8s.aws/instance-category")
    assert rows[1]["change_kind"] == "remove-requirement" and not rows[1]["recommended"]
    assert "broad change" in rows[1]["change"]
    assert answer["requests"] == {"cpu": "1500m", "memory": "4Gi"}


def test_among_equal_changes_the_cheaper_first(world: Any) -> None:
    add_pod(world, "trainer", namespace="ml", cpu="2", memory="4Gi",
            node_selector={"karpenter.k8s.aws/instance-category": "g"})
    rows = selectors.why_pending("ml", "trainer", cluster=world.cluster, now=world.clock())["pools"]
    kinds = [selectors.CHANGE_KINDS[r["change_kind"]][0] for r in rows]
    assert kinds == sorted(kinds)
    assert rows[0]["change_kind"] == "toleration" and rows[1]["change_kind"] == "allow"


def test_page_shows_the_order(world: Any, viewer_client: Client) -> None:
    add_pod(world, "trainer", namespace="ml", cpu="1500m", memory="4Gi",
            node_selector={"karpenter.k8s.aws/instance-family": "g5"})
    html = viewer_client.get("/whatif/pods/ml/trainer/").content.decode()
    assert html.index("tolerate nvidia.com/gpu") < html.index("remove requirement")
    assert 'id="why-recommended"' in html and "broad change" in html
    assert "<code>cpu: 1500m</code>" in html and "<code>memory: 4Gi</code>" in html


def test_cpu_amounts_read_as_kubernetes_quantities() -> None:
    from console.fleet.templatetags.console_tags import kube_quantities

    assert kube_quantities("no instance type has 382.87 cpu available (largest offered: 191.5 cpu, 4 cpu)") == \
        "no instance type has 382870m cpu available (largest offered: 191500m cpu, 4 cpu)"
    assert kube_quantities("limit memory=8Gi would be exceeded (in use 7.5Gi)") == \
        "limit memory=8Gi would be exceeded (in use 7.5Gi)"


def test_page_prints_no_decimal_cpu(world: Any, viewer_client: Client) -> None:
    add_pod(world, "huge", namespace="ml", cpu="382870m", memory="4Gi")
    html = viewer_client.get("/whatif/pods/ml/huge/").content.decode()
    assert "<code>cpu: 382870m</code>" in html and "382.87" not in html
