"""SimulatedCluster against the ClusterBackend contract: the behaviours tests/backends/test_kubernetes.py
checks on the real backend, plus what the cluster's controllers do (replacing evicted pods)."""

from __future__ import annotations

import inspect
import itertools
import json

import pytest

from console.backends import base
from console.backends.base import DISRUPTED_TAINT, UNREGISTERED_TAINT_KEY, NodeNotFound, ResourceExpired
from console.backends.kubernetes import INITIALIZED_LABEL, REGISTERED_LABEL, Watcher
from console.simulation.cloud import SimulatedCloud
from console.simulation.cluster import SimulatedCluster
from console.simulation.models import SimState
from packing.kubeobjects import Inputs, parse_documents
from tests.simulation.conftest import Clock, Ticker, names, node, pdb, pod


def _protocol_methods(protocol: type) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(fn) for name, fn in vars(protocol).items()
            if callable(fn) and not name.startswith("_")}


@pytest.mark.parametrize(("protocol", "impl"), [(base.ClusterBackend, SimulatedCluster),
                                                (base.CloudProvider, SimulatedCloud)])
def test_conforms_to_the_interfaces(protocol: type, impl: type) -> None:
    wanted = _protocol_methods(protocol)
    assert wanted
    for name, signature in wanted.items():
        ours = inspect.signature(getattr(impl, name))
        assert list(ours.parameters) == list(signature.parameters), name
        for param in signature.parameters.values():
            assert ours.parameters[param.name].kind == param.kind, (name, param.name)
            assert ours.parameters[param.name].default == param.default, (name, param.name)


def test_lists_are_json_shaped_and_parse_as_engine_input(cluster: SimulatedCluster) -> None:
    cluster.apply(node("n1"))
    for i in range(3):
        cluster.apply(pod(f"web-{i}", node_name="n1", labels={"app": "web"}))
    cluster.apply(pdb("web", {"app": "web"}, min_available=1))
    pods, rv = cluster.list_pods()
    assert names(pods) == ["web-0", "web-1", "web-2"]
    assert int(rv) == SimState.objects.get().resource_version
    assert pods[0]["apiVersion"] == "v1" and pods[0]["kind"] == "Pod"
    assert pods[0]["metadata"]["uid"] and pods[0]["metadata"]["creationTimestamp"]
    assert pods[0]["metadata"]["resourceVersion"]
    nodes, _ = cluster.list_nodes()
    inputs = Inputs()
    parse_documents(json.dumps({"apiVersion": "v1", "kind": "List", "items": [*pods, *nodes, *cluster.list_pdbs()]}),
                    "cluster.json", inputs)
    assert len(inputs.running) == 3 and len(inputs.nodes) == 1 and len(inputs.pdbs) == 1


def test_pending_pods_are_the_unschedulable_unbound_ones(cluster: SimulatedCluster) -> None:
    cluster.apply(node("n1"))
    cluster.apply(pod("wants-a-node", unschedulable=True))
    cluster.apply(pod("other-namespace", namespace="team", unschedulable=True))
    cluster.apply(pod("not-yet-seen"))                                      # the scheduler has not judged it
    cluster.apply(pod("running", node_name="n1"))
    cluster.apply(pod("agent", owner="DaemonSet/agent", unschedulable=True))   # a new node would not help
    assert names(cluster.pending_pods()) == ["other-namespace", "wants-a-node"]
    assert names(cluster.pods_on_node("n1")) == ["running"]
    assert cluster.pods_on_node("n2") == []


def test_pdbs_get_a_computed_status_and_daemonsets_are_listed(cluster: SimulatedCluster) -> None:
    cluster.apply(node("n1"))
    for i in range(4):
        cluster.apply(pod(f"api-{i}", node_name="n1", labels={"app": "api"}))
    cluster.apply(pdb("api", {"app": "api"}, max_unavailable="25%"))
    cluster.apply({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "kube-system"},
                   "spec": {"template": {"spec": {"containers": []}}}})
    (budget,) = cluster.list_pdbs()
    assert budget["kind"] == "PodDisruptionBudget" and budget["apiVersion"] == "policy/v1"
    assert budget["status"] == {"currentHealthy": 4, "desiredHealthy": 3, "expectedPods": 4, "disruptionsAllowed": 1}
    assert names(cluster.list_daemonsets()) == ["agent"]


# --- nodes -----------------------------------------------------------------------------------------

def test_node_lookup_by_provider_id_and_name(cluster: SimulatedCluster) -> None:
    cluster.apply(node("ip-10-0-0-1", provider_id="aws:///us-east-1a/i-0aaa"))
    assert cluster.node_by_provider_id("aws:///us-east-1a/i-0aaa")["metadata"]["name"] == "ip-10-0-0-1"
    assert cluster.node_by_provider_id("aws:///us-east-1b/i-0ccc") is None
    assert cluster.get_node("ip-10-0-0-1")["kind"] == "Node"
    with pytest.raises(NodeNotFound):
        cluster.get_node("nope")
    with pytest.raises(NodeNotFound):
        cluster.cordon("nope")


def test_register_node_applies_the_claim_and_lifts_unregistered(cluster: SimulatedCluster) -> None:
    cluster.apply(node("n1", initialized=False, taints=[
        {"key": UNREGISTERED_TAINT_KEY, "effect": "NoExecute"}, {"key": "dedicated", "value": "old", "effect": "NoSchedule"}]))
    claim_labels = {"karpenter.sh/nodepool": "default", "team": "ml"}
    registered = cluster.register_node("n1", labels=claim_labels, taints=[
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        {"key": "startup", "effect": "NoExecute", "value": ""}])
    labels = registered["metadata"]["labels"]
    assert labels["karpenter.sh/nodepool"] == "default" and labels["team"] == "ml" and labels[REGISTERED_LABEL] == "true"
    assert INITIALIZED_LABEL not in labels
    assert {(t["key"], t.get("value"), t["effect"]) for t in registered["spec"]["taints"]} == {
        ("dedicated", "gpu", "NoSchedule"), ("startup", None, "NoExecute")}
    rv = SimState.objects.get().resource_version
    cluster.register_node("n1", labels=claim_labels, taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                                                             {"key": "startup", "effect": "NoExecute"}])
    assert SimState.objects.get().resource_version == rv          # nothing to change: no write
    assert cluster.mark_initialized("n1")["metadata"]["labels"][INITIALIZED_LABEL] == "true"
    cluster.mark_initialized("n1")
    assert SimState.objects.get().resource_version == rv + 1


def test_cordon_is_idempotent_and_keeps_other_taints(cluster: SimulatedCluster) -> None:
    cluster.apply(node("n1", taints=[{"key": "dedicated", "effect": "NoSchedule"}]))
    cluster.cordon("n1")
    rv = SimState.objects.get().resource_version
    cluster.cordon("n1")
    assert SimState.objects.get().resource_version == rv
    taints = [(t["key"], t["effect"]) for t in cluster.get_node("n1")["spec"]["taints"]]
    assert taints == [("dedicated", "NoSchedule"), (DISRUPTED_TAINT["key"], DISRUPTED_TAINT["effect"])]


def test_deleting_a_node_brings_its_pods_back_pending(cluster: SimulatedCluster, tick: Ticker) -> None:
    cluster.apply(node("n1"))
    cluster.apply(pod("web-abc12", node_name="n1", owner="ReplicaSet/web-5d8f", labels={"app": "web"}))
    cluster.apply(pod("db-0", node_name="n1", owner="StatefulSet/db"))
    cluster.apply(pod("agent-x", node_name="n1", owner="DaemonSet/agent"))
    cluster.delete_node("n1")
    cluster.delete_node("n1")                                  # already gone: fine
    pods, _ = cluster.list_pods()
    assert cluster.list_nodes()[0] == []
    by_name = {p["metadata"]["name"]: p for p in pods}
    assert "agent-x" not in by_name and "web-abc12" not in by_name
    assert "db-0" in by_name                                   # a StatefulSet keeps the name
    replacement = next(p for n, p in by_name.items() if n.startswith("web-5d8f-"))
    assert replacement["metadata"]["labels"] == {"app": "web"}
    assert all(not p["spec"].get("nodeName") and p["status"]["phase"] == "Pending" for p in pods)
    tick()                                                     # the scheduler finds no node for them
    assert names(cluster.pending_pods()) == sorted(by_name)


# --- eviction --------------------------------------------------------------------------------------

def test_evicting_an_unprotected_pod_deletes_it(cluster: SimulatedCluster) -> None:
    cluster.apply(node("n1"))
    cluster.apply(pod("lonely", node_name="n1"))
    _, rv = cluster.list_pods()
    assert cluster.evict("default", "lonely") == "evicted"
    assert cluster.pods_on_node("n1") == []
    assert cluster.evict("default", "lonely") == "gone"
    assert [(e.type, e.object["metadata"]["name"]) for e in cluster.watch_pods(rv, timeout_seconds=0)] == [
        ("DELETED", "lonely")]
    assert cluster.list_pods()[0] == []                        # a bare pod is not recreated by anyone


def test_drain_respects_the_pdb_and_replaces_evicted_pods(cluster: SimulatedCluster, tick: Ticker) -> None:
    cluster.apply(node("old"))
    cluster.apply(node("new"))
    cluster.cordon("old")
    cluster.apply(pod("web-1", node_name="old", labels={"app": "web"}, owner="ReplicaSet/web-6b7"))
    cluster.apply(pod("web-2", node_name="old", labels={"app": "web"}, owner="ReplicaSet/web-6b7"))
    cluster.apply(pdb("web", {"app": "web"}, min_available=1))

    outcomes = {name: cluster.evict("default", name) for name in ("web-1", "web-2")}
    assert outcomes == {"web-1": "evicted", "web-2": "blocked"}
    # The ReplicaSet's replacement is pending; the refused pod is still there.
    pods, _ = cluster.list_pods()
    replacement = next(p for p in pods if p["metadata"]["name"].startswith("web-6b7-"))
    assert not replacement["spec"].get("nodeName") and replacement["status"]["phase"] == "Pending"
    assert names(cluster.pods_on_node("old")) == ["web-2"]
    assert cluster.evict("default", "web-2") == "blocked"      # retrying changes nothing...

    report = tick()                                            # ...until the replacement runs elsewhere
    assert report.bound == [f"default/{replacement['metadata']['name']}"]
    assert cluster.pods_on_node("new")[0]["metadata"]["name"] == replacement["metadata"]["name"]
    assert cluster.evict("default", "web-2") == "evicted"
    assert cluster.pods_on_node("old") == []


def test_pdb_max_unavailable_counts_expected_pods(cluster: SimulatedCluster) -> None:
    cluster.apply(node("n1"))
    cluster.apply(pod("api-1", node_name="n1", labels={"app": "api"}))
    cluster.apply(pod("api-2", node_name="n1", labels={"app": "api"}))
    cluster.apply(pod("api-3", node_name="n1", labels={"app": "api"}, ready=False))
    budget = pdb("api", {"app": "api"}, max_unavailable=1)
    cluster.apply({**budget, "status": {"expectedPods": 3}})
    assert cluster.evict("default", "api-1") == "blocked"      # one of three already unavailable
    assert cluster.evict("default", "api-3") == "evicted"      # the unready one may go (IfHealthyBudget)
    assert cluster.evict("default", "api-1") == "blocked"
    cluster.apply(pod("api-4", node_name="n1", labels={"app": "api"}))
    assert cluster.evict("default", "api-1") == "evicted"
    assert cluster.evict("default", "api-2") == "blocked"


def test_pdb_percentages(cluster: SimulatedCluster) -> None:
    cluster.apply(node("n1"))
    for i in range(4):
        cluster.apply(pod(f"w-{i}", node_name="n1", labels={"app": "w"}, owner="ReplicaSet/w-7c9"))
    cluster.apply(pdb("w", {"app": "w"}, min_available="50%"))
    # Replacements are pending, so the expected count stays at four and two healthy pods must stay.
    assert [cluster.evict("default", f"w-{i}") for i in range(4)] == ["evicted", "evicted", "blocked", "blocked"]


def test_pending_and_terminal_pods_ignore_budgets(cluster: SimulatedCluster) -> None:
    cluster.apply(pod("waiting", labels={"app": "x"}))
    cluster.apply(pdb("x", {"app": "x"}, min_available=5))
    assert cluster.evict("default", "waiting") == "evicted"


# --- watches ---------------------------------------------------------------------------------------

def test_watch_pods_resumes_from_a_resource_version(cluster: SimulatedCluster) -> None:
    cluster.apply(pod("a"))
    _, rv = cluster.list_pods()
    cluster.apply(pod("b"))
    cluster.apply(pod("a", labels={"x": "1"}))
    events = list(cluster.watch_pods(rv, timeout_seconds=0))
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [("ADDED", "b"), ("MODIFIED", "a")]
    assert events[0].object["kind"] == "Pod"
    last = events[-1].object["metadata"]["resourceVersion"]
    cluster.delete("Pod", "b", "default")
    assert [(e.type, e.object["metadata"]["name"]) for e in cluster.watch_pods(last, timeout_seconds=0)] == [
        ("DELETED", "b")]
    assert [e.type for e in cluster.watch_pods("0", timeout_seconds=0)] == ["ADDED"]   # "any": the current state


def test_an_empty_watch_polls_until_its_timeout(world: Clock) -> None:
    slept: list[float] = []
    cluster = SimulatedCluster(clock=world, sleep=slept.append, poll_interval=2.0)
    _, rv = cluster.list_nodes()
    assert list(cluster.watch_nodes(rv, timeout_seconds=5)) == []
    assert slept == [2.0, 2.0, 2.0]


def test_watch_from_compacted_history_raises_resource_expired(cluster: SimulatedCluster, tick: Ticker) -> None:
    cluster.apply(node("n1"))
    _, rv = cluster.list_nodes()
    cluster.apply(node("n2"))
    cluster.expire_history()
    with pytest.raises(ResourceExpired):
        cluster.watch_nodes(rv)
    _, fresh = cluster.list_nodes()
    assert list(cluster.watch_nodes(fresh, timeout_seconds=0)) == []
    # Tombstone retention: once a deletion the resume needs is pruned, the resume is refused.
    _, before = cluster.list_pods()
    for i in range(3):
        cluster.apply(pod(f"p{i}"))
        cluster.delete("Pod", f"p{i}", "default")
    tick(tombstone_retention=1)
    with pytest.raises(ResourceExpired):
        cluster.watch_pods(before)
    with pytest.raises(ResourceExpired):
        cluster.watch_pods("not-a-version")


def test_the_kubernetes_watcher_follows_the_simulation_across_expiry(cluster: SimulatedCluster) -> None:
    cluster.apply(pod("p1"))
    cluster.apply(pod("p2"))
    watcher = Watcher(cluster.list_pods, lambda rv, timeout_seconds: cluster.watch_pods(rv, timeout_seconds=0),
                      backoff_base=0.0, backoff_max=0.0)
    stream = iter(watcher)
    seen = [(e.type, e.object["metadata"]["name"]) for e in itertools.islice(stream, 2)]
    assert sorted(seen) == [("ADDED", "p1"), ("ADDED", "p2")]
    cluster.delete("Pod", "p1", "default")
    cluster.apply(pod("p2", labels={"v": "2"}))
    cluster.expire_history()                   # the watcher's version is now too old: it must relist
    cluster.apply(pod("p3"))
    seen = sorted((e.type, e.object["metadata"]["name"]) for e in itertools.islice(stream, 3))
    assert seen == [("ADDED", "p3"), ("DELETED", "p1"), ("MODIFIED", "p2")]
    assert watcher.relists == 2
    watcher.stop()


def test_pod_condition_keeps_its_transition_time_while_the_status_holds() -> None:
    # The alerts' pending clocks and kubectl both read lastTransitionTime as "since when"; a new
    # message (another node count) is not a transition.
    from console.simulation.scheduler import _set_condition

    body: dict = {}
    unsched = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    assert _set_condition(body, {**unsched, "message": "0/3 nodes are available."}, "t1")
    assert not _set_condition(body, {**unsched, "message": "0/3 nodes are available."}, "t2")
    assert _set_condition(body, {**unsched, "message": "0/4 nodes are available."}, "t3")
    cond = body["status"]["conditions"][0]
    assert (cond["lastTransitionTime"], cond["message"]) == ("t1", "0/4 nodes are available.")
    assert _set_condition(body, {"type": "PodScheduled", "status": "True"}, "t4")
    assert body["status"]["conditions"][0]["lastTransitionTime"] == "t4"
    assert "message" not in body["status"]["conditions"][0]  # a stale Unschedulable message would mislead
