"""console/adapters.cluster_inputs leaves out an object the engine cannot read, with a warning naming it, whatever
its metadata holds: one malformed object of a live cluster must not stop the loops."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from console import adapters


def _pod(name: str, metadata: Any = None) -> dict[str, Any]:
    meta = {"name": name, "namespace": "shop"} if metadata is None else metadata
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}


@pytest.mark.parametrize(("metadata", "named"), [
    ("not-an-object", "Pod (metadata str)"),
    (["a", "list"], "Pod (metadata list)"),
    (7, "Pod (metadata int)"),
])
def test_a_pod_whose_metadata_is_not_an_object_is_skipped_and_named(
        metadata: Any, named: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="console.adapters"):
        inputs = adapters.cluster_inputs(pods=[_pod("bad", metadata), _pod("good")], nodes=())
    assert [p.key for p in inputs.pending] == ["shop/good"]
    assert inputs.skipped == {"invalid Pod": 1}
    (record,) = [r for r in caplog.records if r.name == "console.adapters"]
    assert record.getMessage().startswith(f"skipping {named}: metadata"), record.getMessage()


def test_other_refused_objects_keep_their_name(caplog: pytest.LogCaptureFixture) -> None:
    bad = _pod("bad")
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    with caplog.at_level(logging.WARNING, logger="console.adapters"):
        inputs = adapters.cluster_inputs(pods=[bad], nodes=())
    assert not inputs.pending and inputs.skipped == {"invalid Pod": 1}
    assert any(r.getMessage().startswith("skipping Pod shop/bad: ") for r in caplog.records)
