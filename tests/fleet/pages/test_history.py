"""The change history reads as Karpenter YAML: paths like spec.template.spec.requirements and values as
YAML, never Python reprs ([{'key': …}], None, True), and no empty path on creation; the decision page's
details are YAML too."""

from __future__ import annotations

import html as htmllib
from typing import Any

from django.test import Client

from console.fleet import services
from console.fleet.models import Decision, NodePool
from console.fleet.templatetags.console_tags import history_changes, yaml_text


def test_updated_fields_show_yaml_values(pool: NodePool, operator: Any, viewer_client: Client) -> None:
    services.nodepool_update(nodepool=pool, values={
        "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]}],
        "limits": {"cpu": "200"}, "weight": 20}, user=operator)
    page = htmllib.unescape(viewer_client.get(f"/nodepools/{pool.name}/").content.decode())
    history = page[page.index("<h2>History</h2>"):]
    assert "<code>spec.weight</code>: <del><code>10</code></del> → <ins><code>20</code></ins>" in history
    assert "<code>spec.limits.cpu</code>:" in history and "<code>'200'</code>" in history
    assert "- key: karpenter.sh/capacity-type\n  operator: In\n  values: [spot, on-demand]" in history
    for repr_ in ("[{'", "{'", "['spot'", "None", "True", "False"):
        assert repr_ not in history, repr_


def test_creation_lists_what_was_set_without_an_empty_path(pool: NodePool, viewer_client: Client) -> None:
    page = htmllib.unescape(viewer_client.get(f"/nodepools/{pool.name}/").content.decode())
    history = page[page.index("<h2>History</h2>"):]
    assert "<code></code>" not in history
    assert "field set" in history or "fields set" in history
    assert "<code>spec.template.spec.nodeClassRef.name</code>: <code>default</code>" in history


def test_history_rows_skip_the_root_path() -> None:
    rows = history_changes({"": [{}, None], "spec.weight": [None, 10]})
    assert [(r.path, r.before, r.after) for r in rows] == [("spec.weight", None, "10")]
    assert yaml_text(["spot"]) == "[spot]" and yaml_text(True) == "true" and yaml_text("10") == "'10'"


def test_decision_details_are_yaml(viewer_client: Client, db: Any) -> None:
    d = Decision.objects.create(kind=Decision.UNSCHEDULABLE, why="x", details={
        "pod": "ml/a", "reasons": [{"nodepool": "gpu", "reason": "taint"}], "pending": True})
    page = htmllib.unescape(viewer_client.get(d.get_absolute_url()).content.decode())
    assert "reasons:\n- {nodepool: gpu, reason: taint}" in page and "pending: true" in page
    assert "{'" not in page and "True" not in page
