"""Reasons are data: each carries a kind, its NodePool and the figures and names its text is made from, so the
console can read fields instead of parsing the text back.

Until issue 15 the console parsed reason texts (the what-if page's _TAINT and _LIMIT, alerts' is_mismatch,
dashboards' reasons_nodepool); these tests keep those parsers as a check that each Reason's detail holds
everything they extracted from its text, and that the texts are the ones Results.unschedulable always carried.
"""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np

from packing.pods import Pod
from packing.requirements import Requirement, Requirements
from packing.resources import MAX_AMOUNT, Resources
from packing.scheduling import reasons
from packing.scheduling.existingnode import ExistingNode
from packing.scheduling.fit import Fit, Refusal
from packing.scheduling.nodeclaim import NodeClaim
from packing.scheduling.preferences import PodContext
from packing.scheduling.reasons import MISMATCH_KINDS, Reason, ReasonKind, UnusableCause
from packing.scheduling.results import Results
from packing.scheduling.scheduler import Scheduler
from packing.scheduling.topology import Topology
from packing.taints import Taint
from tests.engine_builders import catalog, on_demand_pool, pod, pool, term
from tests.engine_builders import existing_node as node_spec
from tests.engine_builders import instance_type as it

# the console's former parsers of reason texts, as a cross-check of the details
TAINT_TEXT = re.compile(r"taint (?P<key>[^=:\s]+)(?:=(?P<value>[^:\s]*))?:(?P<effect>\w+) not tolerated")
LIMIT_TEXT = re.compile(r"limit (?P<res>[\w./-]+)=(?P<limit>\S+) would be exceeded \(in use (?P<used>\S+)\)")


def text_is_mismatch(reason: str) -> bool:
    return (reason.startswith("taint ") and reason.endswith(" not tolerated")) or (
        reason.startswith("requirement ")
        and (" conflicts with nodepool requirement " in reason or reason.endswith(" is not satisfied by the nodepool's labels"))
    )


def check(res: Results) -> None:
    """What holds for every Reason of any Results."""
    assert res.unschedulable == {k: [(r.nodepool, r.text) for r in v] for k, v in res.unschedulable_reasons.items()}
    assert res.unusable_nodepools == {k: r.text for k, r in res.unusable_nodepool_reasons.items()}
    everything = [r for rs in res.unschedulable_reasons.values() for r in rs]
    everything += list(res.unusable_nodepool_reasons.values())
    for r in everything:
        assert isinstance(r.kind, ReasonKind) and str(r) == r.text
        json.dumps({"kind": r.kind, "nodepool": r.nodepool, "detail": r.detail})  # plain JSON values
        assert (r.kind in MISMATCH_KINDS) == text_is_mismatch(r.text), r
        m = TAINT_TEXT.search(r.text)
        if r.kind is ReasonKind.TAINT:
            assert m is not None
            assert (r.detail["key"], r.detail["value"] or None, r.detail["effect"]) == (m["key"], m["value"], m["effect"])
        m = LIMIT_TEXT.search(r.text)
        if r.kind is ReasonKind.LIMIT and r.detail:
            assert m is not None
            assert (r.detail["resource"], r.detail["limit"], r.detail["in_use"]) == (m["res"], m["limit"], m["used"])
    for name, r in res.unusable_nodepool_reasons.items():
        assert r.nodepool == name and r.kind is ReasonKind.NODEPOOL_UNUSABLE
        assert isinstance(r.detail["cause"], UnusableCause)


def only(res: Results, key: str) -> Reason:
    check(res)
    (r,) = res.unschedulable_reasons[key]
    return r


def test_a_taint_names_its_key_value_and_effect() -> None:
    gpu = on_demand_pool("gpu", taints=(Taint("nvidia.com/gpu", "true", "NoSchedule"),))
    r = only(Scheduler([gpu], catalog()).solve([pod("p")]), "default/p")
    assert r == Reason(
        ReasonKind.TAINT,
        "gpu",
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
        "taint nvidia.com/gpu=true:NoSchedule not tolerated",
    )
    plain = on_demand_pool("plain", taints=(Taint("dedicated", "", "NoExecute"),))
    r = only(Scheduler([plain], catalog()).solve([pod("p")]), "default/p")
    assert r.detail == {"key": "dedicated", "value": "", "effect": "NoExecute"}
    assert r.text == "taint dedicated:NoExecute not tolerated" and r.kind in MISMATCH_KINDS


def test_a_limit_names_the_resource_the_limit_and_what_is_in_use() -> None:
    capped = dataclasses.replace(on_demand_pool(), limits=Resources.parse({"cpu": "4"}))
    res = Scheduler([capped], catalog()).solve([pod(f"p{i}", "3", "1Gi") for i in range(2)])
    check(res)
    (r,) = next(iter(res.unschedulable_reasons.values()))
    assert r.kind is ReasonKind.LIMIT and r.nodepool == "default"
    assert r.detail["resource"] == "cpu" and r.detail["limit"] == "4" and r.detail["limit_milli"] == 4000
    assert r.text == f"limit cpu=4 would be exceeded (in use {r.detail['in_use']})"
    assert r.kind not in MISMATCH_KINDS


def test_requirements_the_pool_contradicts_are_mismatches_with_both_sides() -> None:
    arm = Scheduler([on_demand_pool()], catalog()).solve(
        [pod("arm", node_selector={"karpenter.sh/capacity-type": "spot"})]
    )
    r = only(arm, "default/arm")
    assert r.kind is ReasonKind.REQUIREMENT_CONFLICT and r.kind in MISMATCH_KINDS
    assert r.detail["key"] == "karpenter.sh/capacity-type"
    assert (r.detail["operator"], r.detail["values"]) == ("In", ("spot",))
    assert (r.detail["nodepool_operator"], r.detail["nodepool_values"]) == ("In", ("on-demand",))
    assert r.text == (
        "requirement karpenter.sh/capacity-type In [spot] conflicts with nodepool requirement "
        "karpenter.sh/capacity-type In [on-demand]"
    )
    team = only(Scheduler([on_demand_pool()], catalog()).solve([pod("t", node_selector={"team": "blue"})]), "default/t")
    assert team.kind is ReasonKind.REQUIREMENT_LABELS and team.kind in MISMATCH_KINDS
    assert team.detail == {"key": "team", "operator": "In", "values": ("blue",), "requirement": "team In [blue]"}


def test_a_requirement_no_offering_matches_is_not_a_mismatch() -> None:
    r = only(Scheduler([on_demand_pool()], catalog()).solve([pod("z", node_selector={"topology.kubernetes.io/zone": "us-east-1z"})]), "default/z")
    assert r.kind is ReasonKind.OFFERING and r.kind not in MISMATCH_KINDS
    assert r.detail["key"] == "topology.kubernetes.io/zone" and r.detail["values"] == ("us-east-1z",)


def test_a_pod_too_large_for_every_type_carries_its_requests_and_the_largest_offer() -> None:
    r = only(Scheduler([on_demand_pool()], catalog()).solve([pod("huge", "500", "1Gi")]), "default/huge")
    assert r.kind is ReasonKind.RESOURCES
    assert r.detail["requests"] == {"cpu": 500_000, "memory": 2**30 * 1000}
    largest = r.detail["largest"]
    assert isinstance(largest, dict) and set(largest) == {"cpu", "memory"} and largest["cpu"] < 500_000
    assert r.text.startswith("no instance type has 500 cpu and 1Gi memory available (largest offered: ")


def test_reasons_about_no_pool_in_particular() -> None:
    r = only(Scheduler([], catalog()).solve([pod("p")]), "default/p")
    assert r == reasons.no_nodepool() and r.nodepool == ""
    big = Pod("big", requests=Resources({"cpu": MAX_AMOUNT + 1}))
    r = only(Scheduler([on_demand_pool()], catalog()).solve([big]), "default/big")
    assert r.kind is ReasonKind.BEYOND_RANGE and r.nodepool == ""
    assert r.detail["resources"] == ("cpu",) and r.detail["requests_milli"] == {"cpu": MAX_AMOUNT + 1}


def test_a_topology_refusal_names_the_constraint_and_its_key() -> None:
    pods = [
        pod(f"a{i}", "100m", "128Mi", labels={"app": "a"}, anti_affinity=(term("topology.kubernetes.io/zone", app="a"),))
        for i in range(4)
    ]
    res = Scheduler([on_demand_pool()], catalog()).solve(pods)
    check(res)
    (r,) = next(iter(res.unschedulable_reasons.values()))
    assert r.kind is ReasonKind.TOPOLOGY
    assert r.detail["constraint"] == "anti-affinity" and r.detail["topology_key"] == "topology.kubernetes.io/zone"
    assert r.text == f"pod anti-affinity on topology.kubernetes.io/zone ({r.detail['selector']}) conflicts with a running or planned pod"


def test_unusable_pools_carry_their_cause(broken_pool: str) -> None:
    bad = pool("bad", Requirement.new("node.kubernetes.io/instance-type", "In", ["no-such-type"]))
    lone = Pod(
        "lone",
        requests=Resources.parse({"cpu": "1", "memory": "1Gi"}),
        required_terms=(Requirements([Requirement.new("karpenter.sh/nodepool", "In", ["boom"])]),),
    )
    sched = Scheduler([pool(broken_pool), bad, pool("good")], catalog())
    res = sched.solve([lone, pod("p")])
    check(res)
    boom, nomatch = res.unusable_nodepool_reasons["boom"], res.unusable_nodepool_reasons["bad"]
    assert boom.detail["cause"] is UnusableCause.PREPARATION_FAILED and boom.detail["error_type"] == "OverflowError"
    assert nomatch.detail == {"cause": UnusableCause.NO_MATCHING_TYPE, "catalog_types": len(catalog())}
    assert sched.unusable_nodepool_reasons() == res.unusable_nodepool_reasons
    assert sched.unusable == res.unusable_nodepools
    mine = {r.nodepool: r for r in res.unschedulable_reasons["default/lone"]}
    assert mine["boom"].kind is ReasonKind.NODEPOOL_UNUSABLE and mine["boom"].detail == boom.detail
    assert mine["boom"].text == f"nodepool unusable: {boom.text}"
    empty = Scheduler([pool("p")], []).unusable_nodepool_reasons()
    assert empty["p"].detail == {"cause": UnusableCause.EMPTY_CATALOG}


def test_existing_nodes_and_nodeclaims_answer_with_fit_or_refusal() -> None:
    sched = Scheduler([on_demand_pool()], [it("m-4x", 4, 16, 0.2)])
    keys = ("cpu", "memory", "pods")
    (tpl,) = sched.templates(keys)
    topo = Topology()
    small, big = PodContext(pod("s", "1", "1Gi"), keys), PodContext(pod("b", "16", "1Gi"), keys)
    spec = node_spec("n1", taints=(Taint("dedicated", "x", "NoSchedule"),))
    existing = ExistingNode(spec, (4000, 16 * 2**30 * 1000, 110_000), [], None)
    refused = existing.can_add(small, topo)
    assert isinstance(refused, Refusal) and refused.reason.kind is ReasonKind.TAINT
    assert refused.reason.nodepool == "default"
    open_node = ExistingNode(node_spec("n2"), (4000, 16 * 2**30 * 1000, 110_000), [], None)
    assert isinstance(open_node.can_add(small, topo), Fit)
    claim = NodeClaim("default-1", tpl, tpl.base, np.arange(len(tpl.options), dtype=np.int64))
    fit = claim.can_add(small, topo)
    assert isinstance(fit, Fit) and fit.reqs is not None and fit.types is not None and fit.types.size
    claim.add(small, topo, fit)
    too_big = claim.can_add(big, topo)
    assert isinstance(too_big, Refusal) and too_big.reason.kind is ReasonKind.RESOURCES
