from __future__ import annotations

from tests.packing.advisor.helpers import codes, deployment, node, nodepool, one, patch_of, pdb, pod, run

ON_DEMAND = nodepool().replace("values: [spot, on-demand]", "values: [on-demand]")
SPOT_ONLY = nodepool().replace("values: [spot, on-demand]", "values: [spot]")
AMD64 = nodepool(reqs="      - {key: kubernetes.io/arch, operator: In, values: [amd64]}")


def test_workloads_that_could_run_on_spot_with_the_saving():
    f = one(run(ON_DEMAND + deployment("web", 4)), "LM131")
    # the test catalog's spot price is 0.4 x on-demand: the saving is 60 % of the on-demand plan
    assert f.monthly_savings is not None and f.monthly_savings > 0
    reqs = patch_of(f)["spec"]["template"]["spec"]["requirements"]
    assert reqs[0] == {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]}


def test_pods_pinned_to_on_demand_are_not_counted():
    pinned = "      nodeSelector: {karpenter.sh/capacity-type: on-demand}"
    assert "LM131" not in codes(run(ON_DEMAND + deployment("web", 4, spec=pinned)))


def test_spot_only_pool_without_fallback_for_a_pdb_guarded_workload():
    text = SPOT_ONLY + node("n1", ct="spot") + pod("web-1", "n1") + pod("web-2", "n1")
    assert "LM132" not in codes(run(text))
    f = one(run(text + pdb("web", "web", max_unavailable="1")), "LM132")
    assert f.evidence["pdbs"] == ["default/web"]
    # an on-demand pool the pods may use is the fallback
    fallback = ON_DEMAND.replace("name: default}", "name: fallback}")
    assert "LM132" not in codes(run(text + pdb("web", "web", max_unavailable="1") + fallback))


def test_graviton_saving_for_pods_that_do_not_pin_amd64():
    f = one(run(AMD64 + deployment("web", 4, cpu="3")), "LM141")
    assert f.monthly_savings is not None and f.monthly_savings > 0  # a-4x (arm64) is cheaper than m-4x
    assert f.evidence["images_checked"] is False
    pinned = "      nodeSelector: {kubernetes.io/arch: amd64}"
    assert "LM141" not in codes(run(AMD64 + deployment("web", 4, cpu="3", spec=pinned)))
