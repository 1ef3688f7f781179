from __future__ import annotations

from packing.advisor.diversity import SPOT_TO_SPOT_MIN_TYPES
from tests.engine_builders import many_spot_types
from tests.packing.advisor.helpers import codes, deployment, nodepool, one, patch_of, run

ONE_ZONE = "      - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}"
ONE_FAMILY = "      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m]}"


def test_a_pool_in_one_zone_and_its_fix_drops_the_zone_requirement():
    f = one(run(nodepool(reqs=ONE_ZONE) + deployment("web")), "LM111")
    assert f.evidence["zones"] == ["us-east-1a"]
    reqs = patch_of(f)["spec"]["template"]["spec"]["requirements"]
    assert all(r["key"] != "topology.kubernetes.io/zone" for r in reqs)
    assert "-        - us-east-1a" in f.fix.diff
    assert f.monthly_savings == 0.0  # the test catalog prices every zone alike


def test_a_pool_of_one_family():
    f = one(run(nodepool(reqs=ONE_FAMILY) + deployment("web")), "LM112")
    assert f.evidence["families"] == ["m"]
    reqs = patch_of(f)["spec"]["template"]["spec"]["requirements"]
    assert [r["key"] for r in reqs] == ["karpenter.sh/capacity-type"]


def test_spot_with_fewer_than_fifteen_types():
    adv = run(nodepool(reqs=ONE_FAMILY) + deployment("web"))
    f = one(adv, "LM113")
    assert f.evidence["spot_instance_types"] == 5 and f.evidence["minimum"] == SPOT_TO_SPOT_MIN_TYPES
    assert f.evidence["after_fix"] == 17  # every type of the test catalog has a spot offering
    assert f.fix is not None


def test_fifteen_spot_types_are_enough():
    assert "LM113" not in codes(run(nodepool() + deployment("web"), many_spot_types()))


def test_every_pool_in_one_zone():
    text = nodepool("a", reqs=ONE_ZONE) + nodepool("b", reqs=ONE_ZONE)
    f = one(run(text), "LM114")
    assert f.objects == ("nodepool/a", "nodepool/b") and f.evidence["zone"] == "us-east-1a"
    assert "LM114" not in codes(run(nodepool("a", reqs=ONE_ZONE) + nodepool("b")))
