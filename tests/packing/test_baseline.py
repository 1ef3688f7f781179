"""The benchmark's Karpenter-style baseline: feasible, and the bound never exceeds it."""

from __future__ import annotations

from hypothesis import given, settings

from packing.bench.baseline import karpenter_baseline
from packing.bound import lower_bound
from packing.instancetype import InstanceType
from packing.nodepool import NodePool
from packing.pods import Pod
from packing.scheduling.scheduler import Scheduler
from packing.scheduling.verify import check_plan
from tests.engine_builders import catalog, pod, pool, res
from tests.packing.test_properties import catalogs, pod_lists, pools


@settings(max_examples=60, deadline=None)
@given(catalogs(), pools(), pod_lists())
def test_baseline_plans_are_feasible_and_above_the_bound(
    cat: list[InstanceType], nps: list[NodePool], pods: list[Pod]
) -> None:
    s = Scheduler(nps, cat)
    base = karpenter_baseline(s, pods)
    assert check_plan(s, pods, base) == []
    assert lower_bound(s, base, pods) <= base.cost_per_hour + 1e-9
    again = karpenter_baseline(s, list(reversed(pods)))
    assert [(c.instance_type, sorted(p.name for p in c.pods)) for c in again.nodeclaims] == [
        (c.instance_type, sorted(p.name for p in c.pods)) for c in base.nodeclaims
    ]


def test_baseline_keeps_cpu_pods_off_gpu_types() -> None:
    s = Scheduler([pool()], catalog())
    pods = [Pod("gpu-0", requests=res("2", "4Gi", **{"nvidia.com/gpu": "1"}))] + [
        pod(f"web-{i}", "1", "2Gi") for i in range(3)
    ]
    r = karpenter_baseline(s, pods)
    assert check_plan(s, pods, r) == []
    gpu_claims = [c for c in r.nodeclaims if c.instance_type == "g-4x"]
    assert len(gpu_claims) == 1 and [p.name for p in gpu_claims[0].pods] == ["gpu-0"]


def test_baseline_first_fit_grows_claims_then_launches_cheapest_fitting_type() -> None:
    s = Scheduler([pool()], catalog())
    pods = [pod(f"p-{i}", "3", "1Gi") for i in range(9)]
    r = karpenter_baseline(s, pods)
    assert check_plan(s, pods, r) == []
    # first-fit keeps adding to the first claim while any type (up to 32 cpu) holds it
    assert len(r.nodeclaims) == 1 and len(r.nodeclaims[0].pods) == 9
    assert r.nodeclaims[0].instance_type == "c-32x"
