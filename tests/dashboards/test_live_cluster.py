"""The live read takes of each pod only its node, phase, owner's kind and requests, instead of running
the engine's whole parser over it (console.control.live_cluster): for every pod it must give what the
engine's parse gives — the same requests, the same node and owner kind, the same pods left out."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console import adapters
from console.control import live_cluster

QUANTITIES = st.one_of(
    st.sampled_from(["100m", "250m", "1", "2", "1.5", "0", "0.1", "512Mi", "2Gi", "1G", "1e3", "3k", "10Ki",
                     "1Pi", "900Ti", "1Ei", "-1", "-100m", "abc", "1.2.3", " 5", "", "1Gb", "0.0001m"]),
    st.integers(min_value=-5, max_value=2**51), st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.sampled_from([True, None, ["1"], {"a": 1}]))
RESOURCE = st.sampled_from(["cpu", "memory", "pods", "ephemeral-storage", "nvidia.com/gpu"])
AMOUNTS = st.one_of(st.dictionaries(RESOURCE, QUANTITIES, max_size=3), st.none(), st.sampled_from(["x", [1]]))


@st.composite
def containers(draw: Any, *, init: bool) -> Any:
    def container() -> Any:
        if draw(st.integers(0, 20)) == 0:
            return draw(st.sampled_from(["x", None, 3]))
        c: dict[str, Any] = {"name": "c", "image": "x"}
        shape = draw(st.integers(0, 6))
        if shape:
            c["resources"] = ({"requests": draw(AMOUNTS), "limits": draw(AMOUNTS)} if shape > 1
                              else draw(st.sampled_from([None, "x"])))
        if init and draw(st.booleans()):
            c["restartPolicy"] = draw(st.sampled_from(["Always", "OnFailure"]))
        return c

    if draw(st.integers(0, 30)) == 0:
        return draw(st.sampled_from(["x", {"a": 1}]))
    return [container() for _ in range(draw(st.integers(0, 3)))]


@st.composite
def pods(draw: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": draw(containers(init=False))}
    if draw(st.booleans()):
        spec["initContainers"] = draw(containers(init=True))
    if draw(st.integers(0, 4)) == 0:
        spec["overhead"] = draw(AMOUNTS)
    node = draw(st.sampled_from(["node-a", "node-b", "", None]))
    if node is not None:
        spec["nodeName"] = node
    meta: dict[str, Any] = {"name": "p", "namespace": "default", "uid": "u"}
    owner = draw(st.sampled_from(["", "DaemonSet", "ReplicaSet", "Node"]))
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner, "name": "o", "uid": "o"}]
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    phase = draw(st.sampled_from(["Running", "Pending", "Succeeded", "Failed", "Unknown", None]))
    if phase is not None:
        pod["status"] = {"phase": phase}
    return pod


def _engine(pod: dict[str, Any]) -> tuple[str, str, dict[str, int]] | None:
    """What the read took from the engine's parse before: a running pod's node, owner kind, requests."""
    running = adapters.cluster_inputs(pods=[pod], nodes=()).running
    return (running[0].node_name, running[0].owner_kind, running[0].requests.as_dict()) if running else None


def _light(pod: dict[str, Any]) -> tuple[str, str, dict[str, int]] | None:
    bound = live_cluster.node_and_owner(pod)
    if bound is None:
        return None
    requests = live_cluster.pod_requests_of(bound[2])
    return None if requests is None else (bound[0], bound[1], requests.as_dict())


@pytest.mark.django_db
@given(pods())
def test_a_pod_reads_as_the_engine_parses_it(pod: dict[str, Any]) -> None:
    assert _light(pod) == _engine(pod)


@pytest.mark.django_db
def test_sidecars_init_containers_and_overhead() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "nodeName": "n",
        "containers": [{"resources": {"requests": {"cpu": "1"}}}, {"resources": {"limits": {"memory": "1Gi"}}}],
        "initContainers": [{"restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
                           {"resources": {"requests": {"cpu": "3"}}}],
        "overhead": {"cpu": "100m"}}}
    # max(1 + 0.5 sidecar, 0.5 + 3 init) + 0.1 overhead; the limits-only container requests its limits.
    assert _light(pod) == _engine(pod) == ("n", "", {"cpu": 3600, "memory": 2**30 * 1000, "pods": 1000})
