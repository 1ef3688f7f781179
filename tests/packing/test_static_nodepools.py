"""Static NodePools (spec.replicas, Karpenter v1.14): the engine counts their nodes as existing capacity, never
launches from them for pending pods, and consolidation leaves their nodes alone."""

from __future__ import annotations

import dataclasses

import pytest

from packing.disruption import consolidate
from packing.disruption.model import NotDisruptedCategory
from packing.fields import FieldError
from packing.kubeobjects import Inputs, add_object
from packing.scheduling.reasons import ReasonKind
from tests.engine_builders import (
    AT,
    bound_pod,
    cluster,
    existing_node,
    mixed_capacity_pool,
    node,
    on_demand_pool,
    pod,
    req,
    small_catalog,
    solve,
)

M4 = {it.name: it for it in small_catalog()}["m-4x"]


def static(name: str, replicas: int = 2) -> object:
    return dataclasses.replace(on_demand_pool(name), replicas=replicas)


def test_a_static_pool_launches_nothing_for_pending_pods_and_says_so() -> None:
    _, r = solve([pod("a")], [static("fixed")])  # type: ignore[list-item]
    assert r.nodeclaims == []
    (reason,) = r.unschedulable_reasons["default/a"]
    assert (reason.kind, reason.nodepool, reason.detail) == (ReasonKind.STATIC_NODEPOOL, "fixed", {"replicas": 2})
    assert "static (spec.replicas: 2)" in reason.text


def test_a_dynamic_pool_launches_beside_a_static_one() -> None:
    _, r = solve([pod("a")], [static("fixed"), on_demand_pool("dyn")])  # type: ignore[list-item]
    assert [c.nodepool for c in r.nodeclaims] == ["dyn"]


def test_pods_schedule_onto_a_static_pools_existing_nodes() -> None:
    _, r = solve([pod("a")], [static("fixed")], existing_nodes=[existing_node("n1", pool_name="fixed")])  # type: ignore[list-item]
    assert [e.name for e in r.existing if e.pods] == ["n1"]
    assert r.unschedulable == {} and r.nodeclaims == []


def test_a_pod_the_static_pool_does_not_suit_gets_the_mismatch_not_the_static_reason() -> None:
    from packing.taints import Taint

    tainted = dataclasses.replace(on_demand_pool("fixed"), replicas=1, taints=(Taint("dedicated", "x"),))
    _, r = solve([pod("a")], [tainted])
    assert r.unschedulable_reasons["default/a"][0].kind is ReasonKind.TAINT


def test_consolidation_never_disrupts_static_nodes_and_says_why() -> None:
    pools = [dataclasses.replace(mixed_capacity_pool("default"), replicas=2)]
    nodes = [node("n1", M4), node("n2", M4)]  # both empty: a dynamic pool would delete them
    r = consolidate(cluster(nodes, [bound_pod("a", "n2", "1")], pools=pools), AT)
    assert r.actions == []
    cats = {n.node: (n.category, n.reason) for n in r.not_disrupted}
    assert cats["n1"][0] is NotDisruptedCategory.STATIC_NODEPOOL
    assert "static (spec.replicas: 2)" in cats["n1"][1]
    assert cats["n2"][0] is NotDisruptedCategory.STATIC_NODEPOOL


def test_the_same_nodes_in_a_dynamic_pool_are_consolidated() -> None:
    nodes = [node("n1", M4), node("n2", M4)]
    r = consolidate(cluster(nodes, [bound_pod("a", "n2", "1")], pools=[mixed_capacity_pool("default")]), AT)
    assert [a.reason for a in r.actions][:1] == ["empty"]


def _nodepool_doc(**spec: object) -> dict[str, object]:
    body: dict[str, object] = {"template": {"spec": {"requirements": [], "nodeClassRef": {"name": "default"}}}}
    body.update(spec)
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "fixed"}, "spec": body}


def test_the_reader_takes_replicas() -> None:
    inp = Inputs()
    add_object(_nodepool_doc(replicas=3, limits={"nodes": 5}), inp)
    assert inp.nodepools[0].replicas == 3 and inp.nodepools[0].static
    inp = Inputs()
    add_object(_nodepool_doc(), inp)
    assert inp.nodepools[0].replicas is None and not inp.nodepools[0].static


@pytest.mark.parametrize(
    ("spec", "path", "words"),
    [
        ({"replicas": -1}, "spec.replicas", "at least 0"),
        ({"replicas": "many"}, "spec.replicas", "must be an integer"),
        ({"replicas": 2, "limits": {"cpu": "10"}}, "spec.limits", "only 'limits.nodes'"),
        ({"replicas": 2, "weight": 10}, "spec.weight", "'weight' is not supported on static NodePools"),
    ],
)
def test_the_reader_refuses_what_the_crd_refuses(spec: dict[str, object], path: str, words: str) -> None:
    with pytest.raises(FieldError) as e:
        add_object(_nodepool_doc(**spec), Inputs())
    assert e.value.path == path and words in str(e.value)


def test_a_static_pool_launches_its_cheapest_type_with_daemonset_overhead() -> None:
    from packing.api import static_nodeclaim
    from packing.nodepool import DaemonSet
    from tests.engine_builders import catalog

    ds = DaemonSet("kube-system", "agent", pod("agent", "100m", "128Mi"))
    c = static_nodeclaim(static("fixed"), catalog(), [ds], name="fixed-1")  # type: ignore[arg-type]
    assert c is not None and c.name == "fixed-1" and c.nodepool == "fixed" and c.pods == []
    cheapest = min((o.price or 0.0, it.name) for it in catalog() for o in it.offerings if o.capacity_type == "on-demand")
    assert (c.price_per_hour, c.instance_type) == cheapest
    assert c.labels["karpenter.sh/nodepool"] == "fixed" and c.instance_type_options[0] == c.instance_type
    assert c.requests.get("cpu") == 100
    no_type = req("node.kubernetes.io/instance-type", "In", "no-such-type")
    impossible = dataclasses.replace(static("fixed"), requirements=no_type)  # type: ignore[type-var]
    assert static_nodeclaim(impossible, catalog()) is None  # type: ignore[arg-type]


def test_scale_down_takes_unlaunched_then_empty_then_least_disruptive() -> None:
    from packing.api import ScaleDownCandidate, scale_down_order

    cands = [
        ScaleDownCandidate("busy-dnd", True, 3, True, cost=1.0),
        ScaleDownCandidate("busy-costly", True, 5, False, cost=5.0),
        ScaleDownCandidate("busy-cheap", True, 1, False, cost=1.0),
        ScaleDownCandidate("empty", True, 0, False),
        ScaleDownCandidate("pending", False, 0, False),
        ScaleDownCandidate("busy-first", True, 5, False, priority=100, cost=9.0),
    ]
    assert [c.name for c in scale_down_order(cands)] == [
        "pending", "empty", "busy-first", "busy-cheap", "busy-costly", "busy-dnd"]


def test_a_drifted_static_node_is_replaced_one_for_one() -> None:
    from packing.requirements import Requirement

    # the pool now wants instance family c: its m node has drifted
    family = Requirement.new("karpenter.k8s.aws/instance-family", "In", ["c"])
    fixed = dataclasses.replace(mixed_capacity_pool("fixed", family), replicas=1)
    r = consolidate(cluster([node("n1", M4, pool_name="fixed")], [bound_pod("a", "n1", "1")], pools=[fixed,
                            mixed_capacity_pool("default")]), AT)
    (a,) = [x for x in r.actions if x.reason == "drifted"]
    assert a.type == "replace" and a.nodes == ["n1"]
    static_claims = [c for c in a.replacements if c["nodepool"] == "fixed"]
    assert len(static_claims) == 1 and static_claims[0]["pods"] == []
    assert static_claims[0]["labels"]["karpenter.k8s.aws/instance-family"] == "c"
