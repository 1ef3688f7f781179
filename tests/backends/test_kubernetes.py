"""The Kubernetes cluster backend against kmock (extended in kmock_ext) on a private thread.

The tests are synchronous, like the backend; the emulator's event loop lives in its own thread and
is never the main thread's, so pytest-asyncio's per-test loops are unaffected.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from kubernetes import client

from console.backends.base import DISRUPTED_TAINT, UNREGISTERED_TAINT_KEY, ClusterBackend, WatchEvent
from console.backends.kubernetes import (
    INITIALIZED_LABEL,
    REGISTERED_LABEL,
    KubernetesCluster,
    NodeNotFound,
    ResourceExpired,
    Watcher,
)
from packing.kubeobjects import Inputs, parse_documents
from tests.backends.kmock_ext import NODES, PODS, KMockThread

CONTAINERS = [{"name": "app", "image": "registry.example/app:1",
               "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}]


# --- fixtures and builders -------------------------------------------------------------------------

@pytest.fixture
def kube() -> Iterator[KMockThread]:
    with KMockThread() as k:
        yield k


@pytest.fixture
def core(kube: KMockThread) -> client.CoreV1Api:
    return client.CoreV1Api(kube.api_client())


@pytest.fixture
def cluster(kube: KMockThread) -> KubernetesCluster:
    # A tiny page size so every list in these tests crosses pages (limit/continue).
    return KubernetesCluster(kube.api_client(), page_size=2, request_timeout=5)


def make_pod(core: client.CoreV1Api, name: str, *, namespace: str = "default", node: str | None = None,
             labels: Mapping[str, str] | None = None, phase: str = "Running", ready: bool = True,
             unschedulable: bool = False, owner_kind: str | None = None,
             finalizers: list[str] | None = None, extra_status: Mapping[str, Any] | None = None) -> None:
    conditions: list[dict[str, str]] = []
    if unschedulable:
        conditions.append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                           "message": "0/3 nodes are available: 3 Insufficient cpu."})
    elif node:
        conditions.append({"type": "PodScheduled", "status": "True"})
        conditions.append({"type": "Ready", "status": "True" if ready else "False"})
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if owner_kind:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner_kind, "name": "owner", "uid": "u-1",
                                    "controller": True}]
    if finalizers:
        meta["finalizers"] = finalizers
    spec: dict[str, Any] = {"containers": CONTAINERS}
    if node:
        spec["nodeName"] = node
    core.create_namespaced_pod(namespace, {
        "apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
        "status": {"phase": phase, "conditions": conditions, **(extra_status or {})},
    })


def make_node(core: client.CoreV1Api, name: str, *, provider_id: str = "", taints: list[dict[str, str]] | None = None,
              labels: Mapping[str, str] | None = None) -> None:
    core.create_node({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {"providerID": provider_id, "taints": taints or []},
        "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "29"}},
    })


def make_pdb(kube: KMockThread, name: str, selector: Mapping[str, str], *, min_available: int | str | None = None,
             max_unavailable: int | str | None = None, namespace: str = "default") -> None:
    spec: dict[str, Any] = {"selector": {"matchLabels": dict(selector)}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    client.PolicyV1Api(kube.api_client()).create_namespaced_pod_disruption_budget(namespace, {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name}, "spec": spec,
    })


def names(objs: list[dict[str, Any]]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)


def requests_to(kube: KMockThread, resource: Any, method: str) -> list[Any]:
    return [r for r in kube.emulator if r.resource == resource and r.method == method]


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


class Collector:
    """Run a Watcher in a thread and hand its events over a queue."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher
        self.events: queue.Queue[WatchEvent] = queue.Queue()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.error: BaseException | None = None

    def _run(self) -> None:
        try:
            for event in self.watcher:
                self.events.put(event)
        except BaseException as e:      # surfaced by take()/stop(), never swallowed
            self.error = e

    def __enter__(self) -> Collector:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.watcher.stop()
        self.thread.join(5)
        assert not self.thread.is_alive(), "the watcher did not stop"
        assert self.error is None, self.error

    def take(self, n: int, timeout: float = 5.0) -> list[tuple[str, str]]:
        out = []
        for _ in range(n):
            try:
                ev = self.events.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"expected {n} events, got {out}; error={self.error}") from None
            out.append((ev.type, ev.object["metadata"]["name"]))
        return out

    def assert_quiet(self, seconds: float = 0.3) -> None:
        time.sleep(seconds)
        assert self.events.empty(), f"unexpected events: {list(self.events.queue)}"


def pod_watcher(cluster: KubernetesCluster, timeout_seconds: int = 10) -> Watcher:
    # Short backoff so reconnects are quick; short server timeout where the test wants clean ends.
    return Watcher.pods(cluster, timeout_seconds=timeout_seconds, backoff_base=0.05, backoff_max=0.2)


# --- the interface ---------------------------------------------------------------------------------

def test_conforms_to_the_cluster_backend_protocol(cluster: KubernetesCluster) -> None:
    backend: ClusterBackend = cluster       # checked by mypy; at runtime, every method is present
    for name in ClusterBackend.__dict__:
        if not name.startswith("_"):
            assert callable(getattr(backend, name)), name


def test_lists_are_json_shaped_and_parse_as_engine_input(kube: KMockThread, core: client.CoreV1Api,
                                                         cluster: KubernetesCluster) -> None:
    make_node(core, "n1", provider_id="aws:///us-east-1a/i-1")
    for i in range(5):
        make_pod(core, f"web-{i}", node="n1", labels={"app": "web"})
    make_pdb(kube, "web", {"app": "web"}, min_available=1)

    pods, rv = cluster.list_pods()
    nodes, _ = cluster.list_nodes()
    assert names(pods) == [f"web-{i}" for i in range(5)]
    assert rv == str(kube.emulator.resource_version)
    assert pods[0]["apiVersion"] == "v1" and pods[0]["kind"] == "Pod"
    assert pods[0]["spec"]["nodeName"] == "n1"               # camelCase, as kubectl -o json prints
    assert pods[0]["metadata"]["uid"] and pods[0]["metadata"]["creationTimestamp"]
    # Three pages of two: the backend followed the continue token.
    pages = [r for r in requests_to(kube, PODS, "GET") if r.params.get("continue")]
    assert len(pages) == 2

    inputs = Inputs()
    parse_documents(json.dumps({"apiVersion": "v1", "kind": "List",
                                "items": pods + nodes + cluster.list_pdbs()}), "cluster.json", inputs)
    assert len(inputs.running) == 5 and len(inputs.nodes) == 1 and len(inputs.pdbs) == 1


def test_pending_pods_are_the_unschedulable_unbound_ones(kube: KMockThread, core: client.CoreV1Api,
                                                         cluster: KubernetesCluster) -> None:
    make_node(core, "n1")
    make_pod(core, "wants-a-node", phase="Pending", unschedulable=True)
    make_pod(core, "other-namespace", namespace="team-b", phase="Pending", unschedulable=True)
    make_pod(core, "just-created", phase="Pending")                       # scheduler hasn't looked yet
    make_pod(core, "running", node="n1")
    make_pod(core, "bound-not-started", node="n1", phase="Pending")
    make_pod(core, "daemon", phase="Pending", unschedulable=True, owner_kind="DaemonSet")
    make_pod(core, "nominated", phase="Pending", unschedulable=True,
             extra_status={"nominatedNodeName": "n1"})                   # preemption frees room
    make_pod(core, "terminating", phase="Pending", unschedulable=True, finalizers=["example.com/hold"])
    core.delete_namespaced_pod("terminating", "default")
    make_pod(core, "gated", phase="Pending")
    core.patch_namespaced_pod_status("gated", "default", {"status": {"conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}},
        _content_type="application/merge-patch+json")

    assert names(cluster.pending_pods()) == ["other-namespace", "wants-a-node"]
    lists = [r for r in requests_to(kube, PODS, "GET") if "fieldSelector" in r.params]
    assert lists and all(r.params["fieldSelector"] == "spec.nodeName=,status.phase=Pending" for r in lists)


def test_pods_on_node_uses_the_node_name_field_selector(kube: KMockThread, core: client.CoreV1Api,
                                                        cluster: KubernetesCluster) -> None:
    for node in ("n1", "n2"):
        make_node(core, node)
    make_pod(core, "a", node="n1")
    make_pod(core, "b", node="n1", namespace="kube-system")
    make_pod(core, "c", node="n2")
    make_pod(core, "d", phase="Pending", unschedulable=True)
    assert names(cluster.pods_on_node("n1")) == ["a", "b"]
    assert names(cluster.pods_on_node("n3")) == []


def test_pdbs_and_daemonsets_are_listed(kube: KMockThread, core: client.CoreV1Api, cluster: KubernetesCluster) -> None:
    make_pdb(kube, "web", {"app": "web"}, max_unavailable="25%")
    make_pdb(kube, "db", {"app": "db"}, min_available=2, namespace="data")
    client.AppsV1Api(kube.api_client()).create_namespaced_daemon_set("kube-system", {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "node-agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                 "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": CONTAINERS}}},
    })
    pdbs = cluster.list_pdbs()
    assert names(pdbs) == ["db", "web"]
    assert {p["kind"] for p in pdbs} == {"PodDisruptionBudget"} and pdbs[0]["apiVersion"] == "policy/v1"
    assert next(p for p in pdbs if p["metadata"]["name"] == "web")["spec"]["maxUnavailable"] == "25%"
    daemonsets = cluster.list_daemonsets()
    assert names(daemonsets) == ["node-agent"]
    assert daemonsets[0]["kind"] == "DaemonSet" and daemonsets[0]["apiVersion"] == "apps/v1"


def test_pod_templates_are_listed_across_namespaces(kube: KMockThread, core: client.CoreV1Api,
                                                     cluster: KubernetesCluster) -> None:
    """The shapes CapacityBuffers name (podTemplateRef): every namespace's, typed, read by the engine's parser."""
    for namespace, name in (("default", "burst"), ("batch", "burst"), ("batch", "worker")):
        core.create_namespaced_pod_template(namespace, {
            "apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": name},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": CONTAINERS}},
        })
    templates = cluster.list_pod_templates()
    assert sorted((t["metadata"]["namespace"], t["metadata"]["name"]) for t in templates) == [
        ("batch", "burst"), ("batch", "worker"), ("default", "burst")]
    assert {(t["apiVersion"], t["kind"]) for t in templates} == {("v1", "PodTemplate")}
    inputs = Inputs()
    parse_documents(json.dumps({"apiVersion": "v1", "kind": "List", "items": templates}), "cluster.json", inputs)
    assert inputs.pod_templates[("batch", "worker")].requests == inputs.pod_templates[("default", "burst")].requests


# --- nodes: registration, cordon, delete -----------------------------------------------------------

def test_node_registration_by_provider_id(kube: KMockThread, core: client.CoreV1Api, cluster: KubernetesCluster) -> None:
    make_node(core, "ip-10-0-0-1", provider_id="aws:///us-east-1a/i-0aaa")
    make_node(core, "ip-10-0-0-2", provider_id="aws:///us-east-1b/i-0bbb", labels={"kubernetes.io/os": "linux"},
              taints=[{"key": UNREGISTERED_TAINT_KEY, "effect": "NoExecute"},
                      {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
                      {"key": "dedicated", "value": "old", "effect": "NoSchedule"}])

    node = cluster.node_by_provider_id("aws:///us-east-1b/i-0bbb")
    assert node is not None and node["metadata"]["name"] == "ip-10-0-0-2"
    assert cluster.node_by_provider_id("aws:///us-east-1b/i-0ccc") is None

    claim_labels = {"karpenter.sh/nodepool": "default", "node.kubernetes.io/instance-type": "m6i.large",
                    "karpenter.sh/capacity-type": "spot"}
    claim_taints = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    registered = cluster.register_node("ip-10-0-0-2", labels=claim_labels, taints=claim_taints)

    stored = core.read_node("ip-10-0-0-2")
    assert stored.metadata.labels == {"kubernetes.io/os": "linux", **claim_labels, REGISTERED_LABEL: "true"}
    taints = {(t.key, t.value, t.effect) for t in stored.spec.taints}
    assert taints == {("node.kubernetes.io/not-ready", None, "NoSchedule"), ("dedicated", "gpu", "NoSchedule")}
    assert registered["metadata"]["labels"]["karpenter.sh/nodepool"] == "default"

    # Idempotent: a second registration (a retried task) reads but writes nothing.
    patches = len(requests_to(kube, NODES, "PATCH"))
    cluster.register_node("ip-10-0-0-2", labels=claim_labels, taints=claim_taints)
    assert len(requests_to(kube, NODES, "PATCH")) == patches

    assert INITIALIZED_LABEL not in stored.metadata.labels
    cluster.mark_initialized("ip-10-0-0-2")
    cluster.mark_initialized("ip-10-0-0-2")
    assert core.read_node("ip-10-0-0-2").metadata.labels[INITIALIZED_LABEL] == "true"
    assert len(requests_to(kube, NODES, "PATCH")) == patches + 1

    with pytest.raises(NodeNotFound):
        cluster.register_node("nope", labels={}, taints=[])


def test_cordon_is_idempotent_and_keeps_other_taints(kube: KMockThread, core: client.CoreV1Api,
                                                     cluster: KubernetesCluster) -> None:
    make_node(core, "n1", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
    cluster.cordon("n1")
    cluster.cordon("n1")
    taints = [(t.key, t.effect) for t in core.read_node("n1").spec.taints]
    assert taints == [("dedicated", "NoSchedule"), (DISRUPTED_TAINT["key"], DISRUPTED_TAINT["effect"])]
    assert len(requests_to(kube, NODES, "PATCH")) == 1
    with pytest.raises(NodeNotFound):
        cluster.cordon("missing")


def test_cordon_does_not_overwrite_a_concurrent_taint(kube: KMockThread, core: client.CoreV1Api,
                                                      cluster: KubernetesCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    # Another writer adds a taint between our read and our patch: the patch carries the old
    # resourceVersion, the server answers 409, and we must re-read rather than drop their taint.
    make_node(core, "n1")
    real_get = cluster.get_node
    raced = []

    def racing_get(name: str) -> dict[str, Any]:
        node = real_get(name)
        if not raced:
            raced.append(True)
            core.patch_node(name, {"spec": {"taints": [{"key": "other", "effect": "NoExecute"}]}},
                            _content_type="application/merge-patch+json")
        return node

    monkeypatch.setattr(cluster, "get_node", racing_get)
    cluster.cordon("n1")
    taints = {(t.key, t.effect) for t in core.read_node("n1").spec.taints}
    assert taints == {("other", "NoExecute"), (DISRUPTED_TAINT["key"], "NoSchedule")}


def test_delete_node(core: client.CoreV1Api, cluster: KubernetesCluster) -> None:
    make_node(core, "n1")
    make_node(core, "n2")
    cluster.delete_node("n1")
    cluster.delete_node("n1")                  # already gone: fine
    assert names(cluster.list_nodes()[0]) == ["n2"]


# --- eviction --------------------------------------------------------------------------------------

def test_evicting_an_unprotected_pod_deletes_it(kube: KMockThread, core: client.CoreV1Api,
                                                cluster: KubernetesCluster) -> None:
    make_node(core, "n1")
    make_pod(core, "lonely", node="n1")
    _, rv = cluster.list_pods()
    assert cluster.evict("default", "lonely") == "evicted"
    assert cluster.pods_on_node("n1") == []
    assert cluster.evict("default", "lonely") == "gone"
    # Watchers see the eviction as the pod's deletion.
    stream = cluster.watch_pods(rv, timeout_seconds=1)
    assert [(e.type, e.object["metadata"]["name"]) for e in stream] == [("DELETED", "lonely")]
    # Through the Eviction API only.
    evictions = [r for r in requests_to(kube, PODS, "POST") if r.subresource == "eviction"]
    assert len(evictions) == 2 and not requests_to(kube, PODS, "DELETE")


def test_drain_respects_the_pdb(kube: KMockThread, core: client.CoreV1Api, cluster: KubernetesCluster) -> None:
    make_node(core, "old")
    make_node(core, "new")
    make_pod(core, "web-1", node="old", labels={"app": "web"})
    make_pod(core, "web-2", node="old", labels={"app": "web"})
    make_pdb(kube, "web", {"app": "web"}, min_available=1)
    cluster.cordon("old")

    outcomes = {p["metadata"]["name"]: cluster.evict("default", p["metadata"]["name"])
                for p in sorted(cluster.pods_on_node("old"), key=lambda p: p["metadata"]["name"])}
    assert outcomes == {"web-1": "evicted", "web-2": "blocked"}
    # The refused pod is still there, and nothing ever deleted a pod directly.
    assert names(cluster.pods_on_node("old")) == ["web-2"]
    assert not requests_to(kube, PODS, "DELETE")
    assert cluster.evict("default", "web-2") == "blocked"          # retrying changes nothing...

    make_pod(core, "web-3", node="new", labels={"app": "web"})     # ...until the replacement is ready
    assert cluster.evict("default", "web-2") == "evicted"
    assert cluster.pods_on_node("old") == []


def test_pdb_max_unavailable_counts_expected_pods(kube: KMockThread, core: client.CoreV1Api,
                                                  cluster: KubernetesCluster) -> None:
    make_node(core, "n1")
    make_pod(core, "api-1", node="n1", labels={"app": "api"})
    make_pod(core, "api-2", node="n1", labels={"app": "api"})
    make_pod(core, "api-3", node="n1", labels={"app": "api"}, ready=False)
    make_pdb(kube, "api", {"app": "api"}, max_unavailable=1)
    # The emulator has no disruption controller: pin the controller's replica count.
    client.PolicyV1Api(kube.api_client()).patch_namespaced_pod_disruption_budget_status(
        "api", "default", {"status": {"expectedPods": 3}}, _content_type="application/merge-patch+json")
    # One of three is already unavailable: no healthy pod may go...
    assert cluster.evict("default", "api-1") == "blocked"
    # ...but the unready one may, as the budget is met without it (IfHealthyBudget, the default).
    assert cluster.evict("default", "api-3") == "evicted"
    assert cluster.evict("default", "api-1") == "blocked"
    make_pod(core, "api-4", node="n1", labels={"app": "api"})
    assert cluster.evict("default", "api-1") == "evicted"
    assert cluster.evict("default", "api-2") == "blocked"


# --- watch -----------------------------------------------------------------------------------------

def test_watch_pods_resumes_from_a_resource_version(kube: KMockThread, core: client.CoreV1Api,
                                                    cluster: KubernetesCluster) -> None:
    make_pod(core, "a", phase="Pending")
    _, rv = cluster.list_pods()
    make_pod(core, "b", phase="Pending")
    core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"x": "1"}}},
                              _content_type="application/merge-patch+json")
    events = list(cluster.watch_pods(rv, timeout_seconds=1))
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [("ADDED", "b"), ("MODIFIED", "a")]
    assert events[0].object["kind"] == "Pod"
    kube.call(kube.emulator.expire)
    with pytest.raises(ResourceExpired):
        list(cluster.watch_pods(rv, timeout_seconds=1))


def test_watcher_resumes_after_a_cut_without_losing_events(kube: KMockThread, core: client.CoreV1Api,
                                                           cluster: KubernetesCluster) -> None:
    make_pod(core, "p1", phase="Pending")
    make_pod(core, "p2", phase="Pending")
    with Collector(pod_watcher(cluster)) as c:
        assert sorted(c.take(2)) == [("ADDED", "p1"), ("ADDED", "p2")]          # the initial list
        make_pod(core, "p3", phase="Pending")
        assert c.take(1) == [("ADDED", "p3")]                                   # live
        watches = len(kube.emulator.watch_log)

        # Drop the connection and keep the watcher out while the cluster changes.
        kube.emulator.refuse_watches = True
        kube.call(kube.emulator.cut_watches)
        wait_until(lambda: len(kube.emulator.watch_log) > watches, what="a refused reconnect")
        core.delete_namespaced_pod("p1", "default")
        core.patch_namespaced_pod("p2", "default", {"metadata": {"labels": {"tier": "batch"}}},
                                  _content_type="application/merge-patch+json")
        make_pod(core, "p4", phase="Pending")
        kube.emulator.refuse_watches = False

        assert c.take(3) == [("DELETED", "p1"), ("MODIFIED", "p2"), ("ADDED", "p4")]
        c.assert_quiet()
        assert c.watcher.relists == 1 and c.watcher.errors >= 2          # resumed, not relisted
        resumed = [w for w in kube.emulator.watch_log[watches:] if w.get("resourceVersion")]
        assert resumed and all(w["resourceVersion"] != "0" for w in resumed)
        assert names(list(c.watcher.store.values())) == ["p2", "p3", "p4"]


def test_watcher_relists_and_diffs_on_410(kube: KMockThread, core: client.CoreV1Api,
                                          cluster: KubernetesCluster) -> None:
    make_pod(core, "p1", phase="Pending")
    make_pod(core, "p2", phase="Pending")
    make_pod(core, "p3", phase="Pending")
    with Collector(pod_watcher(cluster)) as c:
        assert len(c.take(3)) == 3
        watches = len(kube.emulator.watch_log)
        kube.emulator.refuse_watches = True
        kube.call(kube.emulator.cut_watches)
        wait_until(lambda: len(kube.emulator.watch_log) > watches, what="a refused reconnect")
        core.delete_namespaced_pod("p1", "default")
        core.patch_namespaced_pod("p2", "default", {"metadata": {"labels": {"tier": "batch"}}},
                                  _content_type="application/merge-patch+json")
        make_pod(core, "p4", phase="Pending")
        kube.call(kube.emulator.expire)            # the history behind the watcher is gone: 410
        kube.emulator.refuse_watches = False

        assert sorted(c.take(3)) == [("ADDED", "p4"), ("DELETED", "p1"), ("MODIFIED", "p2")]
        c.assert_quiet()                                                  # p3 unchanged: no event
        assert c.watcher.relists == 2
        make_pod(core, "p5", phase="Pending")                             # and it watches again
        assert c.take(1) == [("ADDED", "p5")]
        assert names(list(c.watcher.store.values())) == ["p2", "p3", "p4", "p5"]


def test_watcher_resumes_after_a_server_timeout(kube: KMockThread, core: client.CoreV1Api,
                                                cluster: KubernetesCluster) -> None:
    with Collector(pod_watcher(cluster, timeout_seconds=1)) as c:
        wait_until(lambda: kube.emulator.live_watches == 1, what="the watch to connect")
        make_node(core, "n1")            # moves the cluster's resourceVersion, but is no pod event
        wait_until(lambda: len(kube.emulator.watch_log) >= 2, what="a second watch", timeout=5)
        make_pod(core, "late", phase="Pending")
        assert c.take(1) == [("ADDED", "late")]
        assert c.watcher.errors == 0 and c.watcher.relists == 1
        # A clean end resumes at once, from the bookmark sent before it: past the node's version.
        first, second = kube.emulator.watch_log[:2]
        assert first["allowWatchBookmarks"] == "true"
        assert int(second["resourceVersion"]) == int(first["resourceVersion"]) + 1


def test_watcher_stops_promptly_while_blocked(kube: KMockThread, cluster: KubernetesCluster) -> None:
    watcher = Watcher.nodes(cluster, timeout_seconds=60)
    c = Collector(watcher).__enter__()
    wait_until(lambda: kube.emulator.live_watches == 1, what="the watch to connect")
    started = time.monotonic()
    c.__exit__(None, None, None)
    assert time.monotonic() - started < 2
    # The connection was closed, not just abandoned: the server's side of the watch ends too.
    wait_until(lambda: kube.emulator.live_watches == 0, what="the server to see the watch go")


# --- the emulator itself ---------------------------------------------------------------------------

def test_emulator_fills_the_kmock_gaps(kube: KMockThread, core: client.CoreV1Api) -> None:
    api = kube.api_client()
    assert client.VersionApi(api).get_code().git_version                  # /version/ answers
    custom = client.CustomObjectsApi(api)
    claim = custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", {
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "default-abcde"}})
    assert claim is not None and claim["metadata"]["uid"]                  # 201, so not None
    pool = custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", {
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"}})
    assert int(pool["metadata"]["resourceVersion"]) > int(claim["metadata"]["resourceVersion"])

    make_pod(core, "a", labels={"app": "web", "tier": "fe"}, node="n1")
    make_pod(core, "b", labels={"app": "db"})
    make_pod(core, "c", labels={})
    def sel(selector: str) -> list[str]:
        return sorted(p.metadata.name for p in core.list_pod_for_all_namespaces(label_selector=selector).items)

    assert sel("app in (web,db),tier notin (be)") == ["a", "b"]
    assert sel("!app") == ["c"]
    assert sel("app!=web") == ["b", "c"]
    assert sel("app=web,tier") == ["a"]
    with pytest.raises(client.ApiException) as e:
        core.list_node(field_selector="spec.providerID=aws:///x")          # not selectable upstream
    assert e.value.status == 400


def test_built_from_a_kubeconfig(kube: KMockThread, core: client.CoreV1Api, tmp_path: Any,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "kmock",
        "clusters": [{"name": "kmock", "cluster": {"server": kube.url}}],
        "users": [{"name": "me", "user": {"token": "t"}}],
        "contexts": [{"name": "kmock", "context": {"cluster": "kmock", "user": "me"}}],
    }))
    make_node(core, "n1")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert names(KubernetesCluster.from_environment(str(kubeconfig)).list_nodes()[0]) == ["n1"]
    assert names(KubernetesCluster.from_kubeconfig(str(kubeconfig), context="kmock").list_nodes()[0]) == ["n1"]


def test_delete_pod_deletes_past_the_pdb_with_the_grace_period_given(kube: KMockThread, core: client.CoreV1Api,
                                                                     cluster: KubernetesCluster) -> None:
    # Only for a drain whose terminationGracePeriod ends: a DELETE, not an eviction, so no PDB is asked.
    make_node(core, "n1")
    make_pod(core, "web-1", node="n1", labels={"app": "web"})
    make_pdb(kube, "web", {"app": "web"}, min_available=1)
    assert cluster.evict("default", "web-1") == "blocked"
    assert cluster.delete_pod("default", "web-1", 42) is True
    assert cluster.pods_on_node("n1") == []
    assert cluster.delete_pod("default", "web-1", 0) is False
    [delete, *_] = requests_to(kube, PODS, "DELETE")
    assert (delete.data or {}).get("gracePeriodSeconds") == 42
