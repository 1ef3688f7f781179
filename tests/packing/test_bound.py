"""The LP lower bound: never above a feasible plan, and it knows which pods fit which node sizes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from packing.bench.baseline import karpenter_baseline
from packing.bound import lower_bound
from packing.instancetype import InstanceType
from packing.nodepool import DaemonSet, ExistingNodeSpec
from packing.pods import Pod
from packing.resources import Resources
from packing.scheduling.scheduler import Scheduler
from packing.scheduling.verify import check_plan
from tests.engine_builders import existing_node, instance_type, pod, pool


def test_bound_keeps_pods_off_sizes_they_do_not_fit() -> None:
    # 3300Mi and 3900Mi fall in one cpu x memory cell; only the first fits the cheap type (3840Mi
    # allocatable), so the 3900Mi pods need at least their share of the dear type's memory
    cat = [instance_type("small-2x", 2, 4, 0.01), instance_type("big-8x", 8, 32, 1.0)]
    s = Scheduler([pool()], cat)
    pods = [pod(f"a-{i}", "500m", "3300Mi") for i in range(4)] + [
        pod(f"b-{i}", "500m", "3900Mi") for i in range(4)
    ]
    r = s.solve(pods, lower_bound=True)
    assert check_plan(s, pods, r) == []
    assert r.lower_bound is not None
    big_spot = 0.4
    assert 4 * 3900 / (32 * 1024 - 256) * big_spot * 0.999 <= r.lower_bound <= r.cost_per_hour + 1e-9


@st.composite
def threshold_cases(
    draw: st.DrawFn,
) -> tuple[list[InstanceType], list[Pod], list[DaemonSet], list[ExistingNodeSpec]]:
    n_types = draw(st.integers(1, 5))
    cat = []
    for i in range(n_types):
        cpu = draw(st.sampled_from([1, 2, 3, 4, 8]))
        mem = draw(st.sampled_from([1, 2, 4, 8, 16]))
        price = round(draw(st.floats(0.001, 2.0)), 4)
        cat.append(instance_type(f"t{i}", cpu, mem, price, pods=draw(st.sampled_from([2, 4, 110]))))
    pods = []
    for i in range(draw(st.integers(1, 30))):
        # sizes around the allocatable of the types (capacity - 100m cpu / 256Mi memory overhead)
        cpu_m = draw(st.sampled_from([100, 800, 900, 1000, 1800, 1900, 2000, 2800, 2900, 3900, 7900]))
        mem_mi = draw(st.sampled_from([128, 700, 768, 1024, 1792, 2048, 3840, 4096, 7936, 16128]))
        pods.append(pod(f"p{i}", f"{cpu_m}m", f"{mem_mi}Mi"))
    ds = []
    if draw(st.booleans()):
        ds.append(
            DaemonSet(
                "kube-system",
                "ds",
                Pod("ds", requests=Resources.parse({"cpu": "100m", "memory": "128Mi", "pods": "1"})),
            )
        )
    nodes = []
    if draw(st.booleans()):
        nodes.append(
            existing_node("n-1", draw(st.sampled_from(["1", "2", "4"])), draw(st.sampled_from(["2Gi", "8Gi"])))
        )
    return cat, pods, ds, nodes


@settings(max_examples=150, deadline=None)
@given(threshold_cases())
def test_bound_never_exceeds_any_feasible_plan(
    case: tuple[list[InstanceType], list[Pod], list[DaemonSet], list[ExistingNodeSpec]],
) -> None:
    cat, pods, ds, nodes = case
    s = Scheduler([pool()], cat, existing_nodes=nodes, daemonsets=ds)
    plans = [s.solve(pods, lower_bound=True), s.solve(pods, strategy="greedy"), karpenter_baseline(s, pods)]
    for r in plans:
        assert check_plan(s, pods, r) == []
    same = [r for r in plans if set(r.unschedulable) == set(plans[0].unschedulable)]
    bound = plans[0].lower_bound
    assert bound is not None
    for r in same:
        assert bound <= r.cost_per_hour + 1e-9
        assert lower_bound(s, r, pods) <= r.cost_per_hour + 1e-9
