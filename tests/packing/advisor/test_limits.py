from __future__ import annotations

from packing.advisor.context import Context
from tests.packing.advisor.helpers import codes, deployment, node, nodepool, one, patch_of, run


def test_pods_pending_because_of_a_limit_name_the_pool_and_raise_it():
    adv = run(nodepool(extra_spec="  limits: {cpu: '4'}") + deployment("web", 6, cpu="1"))
    f = one(adv, "LM101")
    assert f.objects == ("nodepool/default",)
    assert f.evidence["pending_pods"] > 0 and f.evidence["resources"] == ["cpu"]
    raised = int(patch_of(f)["spec"]["limits"]["cpu"])
    assert raised >= 6  # six 1-CPU pods need at least 6 CPUs of capacity
    assert "-    cpu: '4'" in f.fix.diff


def test_no_limit_finding_when_the_limit_leaves_room():
    adv = run(nodepool(extra_spec="  limits: {cpu: '100'}") + deployment("web", 2))
    assert not {"LM101", "LM102", "LM103"} & set(codes(adv))


def test_usage_above_ninety_percent_of_a_limit():
    text = nodepool(extra_spec="  limits: {cpu: '8'}") + node("n1") + node("n2", cpu="3600m")
    f = one(run(text), "LM102")
    assert f.evidence["usage_percent"] == {"cpu": 95.0}
    assert int(patch_of(f)["spec"]["limits"]["cpu"]) == 11  # 7.6 CPUs fill three quarters of 11 (rounded up)


def test_limit_below_one_node_of_the_smallest_type():
    adv = run(nodepool(reqs="      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m]}",
                       extra_spec="  limits: {cpu: '1'}"))
    f = one(adv, "LM103")
    assert f.evidence["one_node"] == {"cpu": "2"} and f.evidence["smallest_type"] == {"cpu": "m-2x"}
    assert patch_of(f) == {"spec": {"limits": {"cpu": "2"}}}


def test_the_baseline_plan_is_the_plan_cli_plan():
    # the advisor's own plan of the pending pods leaves the input untouched for the checks
    from packing.disruption.inputs import parse_texts
    from tests.engine_builders import catalog

    inp, ex = parse_texts([("t.yaml", nodepool() + deployment("web", 3))])
    ctx = Context(inp, ex, catalog(), {})
    assert sum(len(c.pods) for c in ctx.baseline.nodeclaims) == 3
    assert len(ctx.inputs.pending) == 3
