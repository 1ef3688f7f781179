from __future__ import annotations

from tests.packing.advisor.helpers import codes, node, nodepool, one, patch_of, pod, run


def test_when_empty_with_the_waste_it_leaves():
    pool = nodepool(extra_spec="  disruption: {consolidationPolicy: WhenEmpty}")
    text = pool + node("n1") + node("n2") + pod("web-1", "n1") + pod("web-2", "n2")
    f = one(run(text), "LM151")
    # two m-4x ($0.192 each) hold 1 CPU of pods; a fresh plan puts both on one smaller spot node
    assert f.evidence["waste_per_hour"] > 0.2
    assert f.monthly_savings == round(f.evidence["waste_per_hour"] * 730, 2)
    assert patch_of(f) == {"spec": {"disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized"}}}
    assert "LM151" not in codes(run(nodepool() + node("n1") + pod("web-1", "n1")))


def test_consolidate_after_never():
    f = one(run(nodepool(extra_spec="  disruption: {consolidateAfter: Never}")), "LM151")
    assert f.evidence["consolidate_after"] == "Never" and f.monthly_savings is None
    assert patch_of(f)["spec"]["disruption"]["consolidateAfter"] == "0s"


def test_expire_after_never():
    f = one(run(nodepool(template="      expireAfter: Never")), "LM152")
    assert patch_of(f) == {"spec": {"template": {"spec": {"expireAfter": "720h"}}}}
    assert "LM152" not in codes(run(nodepool(template="      expireAfter: 24h")))


def test_budgets_zero_at_all_times():
    zero = nodepool(extra_spec="  disruption: {budgets: [{nodes: '0'}]}")
    assert one(run(zero), "LM153").fix is not None
    scheduled = nodepool(extra_spec="  disruption: {budgets: [{nodes: '0', schedule: '0 9 * * *', duration: 8h}]}")
    assert "LM153" not in codes(run(scheduled))
    one_reason = nodepool(extra_spec="  disruption: {budgets: [{nodes: '0%', reasons: [Drifted]}]}")
    assert "LM153" not in codes(run(one_reason))


def test_do_not_disrupt_on_more_than_the_share():
    dnd = "karpenter.sh/do-not-disrupt: 'true'"
    text = nodepool() + node("n1") + pod("a", "n1", annotations=dnd) + pod("b", "n1") + pod("c", "n1")
    f = one(run(text), "LM154")
    assert f.evidence["pods"] == 1 and f.evidence["running_pods"] == 3
    assert "LM154" not in codes(run(text, do_not_disrupt_share=0.5))
