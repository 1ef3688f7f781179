from __future__ import annotations

from tests.packing.advisor.helpers import codes, deployment, nodepool, one, patch_of, run


def test_pods_without_requests_by_workload():
    f = one(run(nodepool() + deployment("web", 3, requests=False) + deployment("api")), "LM161")
    assert f.objects == ("deployment/default/web",) and f.evidence["pods"] == 3


def test_one_pool_for_every_kind_of_workload():
    text = nodepool() + deployment("web") + deployment("db", kind="StatefulSet")
    assert one(run(text), "LM162").evidence["workload_kinds"] == ["service", "stateful"]
    assert "LM162" not in codes(run(text + nodepool("batch")))
    assert "LM162" not in codes(run(nodepool() + deployment("web")))


TAINTED = "      taints: [{key: dedicated, value: gpu, effect: NoSchedule}]"


def test_taints_no_pod_tolerates():
    f = one(run(nodepool("gpu", template=TAINTED) + nodepool() + deployment("web")), "LM163")
    assert f.objects == ("nodepool/gpu",) and f.evidence["taints"] == ["dedicated=gpu:NoSchedule"]
    assert patch_of(f) == {"spec": {"template": {"spec": {"taints": None}}}}
    tolerant = "      tolerations: [{key: dedicated, operator: Exists}]"
    assert "LM163" not in codes(run(nodepool("gpu", template=TAINTED) + deployment("web", spec=tolerant)))


def test_a_heavier_pool_shadows_a_lighter_one():
    heavy = nodepool("heavy", weight="  weight: 50")
    light = nodepool("light", reqs="      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m]}")
    f = one(run(heavy + light), "LM164")
    assert f.objects == ("nodepool/light", "nodepool/heavy")
    # with limits the heavy pool is the first choice and the light one the overflow: no finding
    assert "LM164" not in codes(run(heavy.replace("  weight: 50", "  weight: 50\n  limits: {cpu: '8'}") + light))
    # a taint on the heavy pool keeps the pods that do not tolerate it on the light one
    assert "LM164" not in codes(run(nodepool("heavy", weight="  weight: 50", template=TAINTED) + light))
