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

VALID_QUANTITIES = st.one_of(
    st.sampled_from(["100m", "250m", "1", "2", "1.5", "0", "0.1", "512Mi", "2Gi", "1G", "1e3", "3k", "10Ki",
                     "0.0001m", "110"]),
    st.integers(min_value=0, max_value=64), st.floats(min_value=0, max_value=64, allow_nan=False))
ODD_QUANTITIES = st.one_of(
    st.sampled_from(["1Pi", "900Ti", "1Ei", "-1", "-100m", "abc", "1.2.3", " 5", "", "1Gb"]),
    st.integers(min_value=-5, max_value=2**51), st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.sampled_from([True, None, ["1"], {"a": 1}]))


def rarely(one_in: int) -> Any:
    """True one time in `one_in` (sampled_from draws evenly; st.integers favours its bounds)."""
    return st.sampled_from([False] * (one_in - 1) + [True])


def mostly(common: Any, rare: Any, one_in: int = 10) -> Any:
    """`common`, and one time in `one_in` `rare` (so most objects are read, some refused)."""
    return rarely(one_in).flatmap(lambda r: rare if r else common)


QUANTITIES = mostly(VALID_QUANTITIES, ODD_QUANTITIES, 15)
RESOURCE = st.sampled_from(["cpu", "memory", "pods", "ephemeral-storage", "nvidia.com/gpu"])
AMOUNTS = mostly(st.dictionaries(RESOURCE, QUANTITIES, max_size=3), st.sampled_from([None, "x", [1]]), 8)


@st.composite
def containers(draw: Any, *, init: bool) -> Any:
    def container() -> Any:
        if draw(rarely(21)):
            return draw(st.sampled_from(["x", None, 3]))
        c: dict[str, Any] = {"name": "c", "image": "x"}
        shape = draw(st.integers(0, 6))
        if shape:
            c["resources"] = ({"requests": draw(AMOUNTS), "limits": draw(AMOUNTS)} if shape > 1
                              else draw(st.sampled_from([None, "x"])))
        if init and draw(st.booleans()):
            c["restartPolicy"] = draw(st.sampled_from(["Always", "OnFailure"]))
        return c

    if draw(rarely(31)):
        return draw(st.sampled_from(["x", {"a": 1}]))
    return [container() for _ in range(draw(st.integers(0, 3)))]


@st.composite
def pods(draw: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": draw(containers(init=False))}
    if draw(st.booleans()):
        spec["initContainers"] = draw(containers(init=True))
    if draw(rarely(5)):
        spec["overhead"] = draw(AMOUNTS)
    odd = st.sampled_from([None, 0, 1.5, True, "", ["x"], {"a": 1}])  # values of the wrong type, or empty
    node = draw(mostly(st.sampled_from(["node-a", "node-b"]), st.one_of(st.sampled_from(["", None]), odd), 6))
    if node is not None:
        spec["nodeName"] = node
    meta: dict[str, Any] = {"name": "p", "namespace": "default", "uid": "u"}
    for key in ("name", "namespace", "uid"):
        if draw(rarely(13)):
            meta[key] = draw(odd)
    owner = draw(st.sampled_from(["", "DaemonSet", "ReplicaSet", "Node"]))
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner, "name": "o", "uid": "o"}]
    if draw(rarely(13)):
        meta["ownerReferences"] = draw(st.sampled_from([[], [None], ["x"], {"kind": "DaemonSet"}, "x"]))
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    if draw(rarely(13)):
        pod["apiVersion"] = draw(st.sampled_from(["apps/v1", "v2", None, 1]))
    if draw(rarely(21)):
        pod["kind"] = draw(st.sampled_from(["Node", None, "pod"]))
    if draw(rarely(21)):
        pod["metadata"] = draw(st.sampled_from([None, "x", ["m"], 3]))
    phase = draw(st.sampled_from(["Running", "Pending", "Succeeded", "Failed", "Unknown", None]))
    if phase is not None:
        pod["status"] = {"phase": phase}
    elif draw(rarely(11)):
        pod["status"] = draw(st.sampled_from(["x", [1], {}]))
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
    return None if requests is None else (bound[0], bound[1], requests)


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


@pytest.mark.django_db
def test_a_pod_without_an_object_for_metadata_is_left_out() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": "x", "spec": {"nodeName": "n", "containers": []}}
    assert live_cluster.node_and_owner(pod) is None


TEXT = st.sampled_from(["a", "", "linux"])
TEXT_OR_ODD = mostly(TEXT, st.sampled_from([None, 0, 2.5, True, ["x"], {"a": 1}]), 12)


@st.composite
def nodes(draw: Any) -> dict[str, Any]:
    labels: Any = draw(st.dictionaries(st.sampled_from(["kubernetes.io/os", "karpenter.sh/nodepool",
                                                          "node.kubernetes.io/instance-type"]), TEXT_OR_ODD, max_size=3))
    if draw(rarely(16)):
        labels = draw(st.sampled_from([None, "x", ["a"]]))
    meta: dict[str, Any] = {"name": draw(mostly(st.just("n1"), st.sampled_from([None, 7, True, ""]))), "labels": labels}
    if draw(rarely(13)):
        meta["namespace"] = draw(TEXT_OR_ODD)
    status: Any = {"allocatable": draw(AMOUNTS), "capacity": draw(AMOUNTS)}
    if draw(rarely(16)):
        status = draw(st.sampled_from([None, "x"]))
    effect = mostly(st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"]), st.sampled_from(["Nope", None, 1]))
    taint = mostly(st.fixed_dictionaries({"key": TEXT, "effect": effect}, optional={"value": TEXT_OR_ODD}),
                   st.one_of(st.fixed_dictionaries({}, optional={"key": TEXT_OR_ODD, "effect": effect}),
                             st.sampled_from([None, "x"])))
    spec: Any = {"taints": draw(mostly(st.lists(taint, max_size=2), st.sampled_from([None, "x"])))}
    if draw(rarely(11)):
        spec["providerID"] = draw(TEXT_OR_ODD)
    if draw(rarely(16)):
        spec = draw(st.sampled_from([None, "x"]))
    node: dict[str, Any] = {"apiVersion": draw(mostly(st.just("v1"), st.sampled_from(["apps/v1", None]), 20)),
                            "kind": draw(mostly(st.just("Node"), st.sampled_from(["Pod", None]), 20)),
                            "metadata": meta, "spec": spec}
    if status is not None:
        node["status"] = status
    return node


@pytest.mark.django_db
@given(nodes())
def test_a_node_reads_as_the_engine_parses_it(node: dict[str, Any]) -> None:
    parsed = adapters.cluster_inputs(pods=(), nodes=[node]).nodes
    engine = (parsed[0].name, dict(parsed[0].labels), parsed[0].allocatable.as_dict()) if parsed else None
    assert live_cluster.node_of(node) == engine
