from __future__ import annotations

import pytest

from packing.pods import ContainerResources, pod_requests
from packing.quantity import QuantityError, format_quantity, parse_quantity
from packing.requirements import Requirement, RequirementError, Requirements
from packing.resources import Resources
from packing.taints import Taint, Toleration, first_untolerated
from tests.engine_builders import res


@pytest.mark.parametrize(
    ("text", "milli"),
    [
        ("100m", 100),
        ("1.5", 1500),
        ("512Mi", 512 * 2**20 * 1000),
        ("2Gi", 2 * 2**30 * 1000),
        ("1e3", 1_000_000),
        ("1k", 1_000_000),
        ("1M", 1_000_000_000),
        ("1", 1000),
        (3, 3000),
        (0.25, 250),
        ("0.0001", 1),  # fractions of a milli-unit round up
        ("1n", 1),
        ("+2", 2000),
        ("1.5Gi", 1536 * 2**20 * 1000),
        ("12E-1", 1200),
    ],
)
def test_parse_quantity_exact(text: str | int | float, milli: int) -> None:
    assert parse_quantity(text) == milli


@pytest.mark.parametrize("bad", ["", "abc", "1.2.3", "1Gb", "Mi", "1 Gi", "--1", "1e", True])
def test_parse_quantity_rejects_and_names_value(bad: object) -> None:
    with pytest.raises(QuantityError) as e:
        parse_quantity(bad)  # type: ignore[arg-type]
    assert repr(bad) in str(e.value)


def test_format_quantity_canonical() -> None:
    assert format_quantity(1500, "cpu") == "1500m"
    assert format_quantity(2000, "cpu") == "2"
    assert format_quantity(3 * 2**30 * 1000, "memory") == "3Gi"
    assert format_quantity(7680 * 2**20 * 1000, "memory") == "7680Mi"
    assert format_quantity(1000 * 1000, "memory") == "1000"
    assert format_quantity(58000, "pods") == "58"


def test_resources_arithmetic_and_fit() -> None:
    a = Resources.parse({"cpu": "1", "memory": "1Gi"})
    b = Resources.parse({"cpu": "500m", "nvidia.com/gpu": "1"})
    s = a + b
    assert s["cpu"] == 1500 and s["nvidia.com/gpu"] == 1000
    assert (s - b) == a
    assert len(a - a) == 0  # zero entries are dropped
    assert a.fits(s) and not s.fits(a)
    assert s.exceeded(a) == ["cpu", "nvidia.com/gpu"]
    assert s.to_strings() == {"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": "1"}
    with pytest.raises(QuantityError, match="memory"):
        Resources.parse({"memory": "lots"})


def test_pod_requests_like_kubernetes() -> None:
    c1 = ContainerResources(Resources.parse({"cpu": "500m", "memory": "1Gi"}), Resources())
    limits_only = ContainerResources(Resources(), Resources.parse({"cpu": "1", "memory": "2Gi"}))
    big_init = ContainerResources(Resources.parse({"cpu": "3", "memory": "512Mi"}), Resources())
    overhead = Resources.parse({"cpu": "100m"})
    r = pod_requests([c1, limits_only], [big_init], overhead)
    # cpu: max(0.5 + 1, 3) + 0.1; memory: max(1Gi + 2Gi, 512Mi); plus one pod
    assert r == Resources.parse({"cpu": "3100m", "memory": "3Gi", "pods": "1"})


def test_pod_requests_sidecar_init_containers_add_up() -> None:
    main = ContainerResources(Resources.parse({"cpu": "1"}), Resources())
    sidecar = ContainerResources(Resources.parse({"cpu": "200m"}), Resources(), restart_always=True)
    init = ContainerResources(Resources.parse({"cpu": "1"}), Resources())
    r = pod_requests([main], [sidecar, init])
    assert r["cpu"] == 1200


def test_requests_set_only_limits_win_over_nothing_but_requests_win_over_limits() -> None:
    c = ContainerResources(Resources.parse({"cpu": "250m"}), Resources.parse({"cpu": "1", "memory": "1Gi"}))
    assert pod_requests([c]) == Resources.parse({"cpu": "250m", "memory": "1Gi", "pods": "1"})


class TestRequirements:
    def test_operators(self) -> None:
        r_in = Requirement.new("k", "In", ["a", "b"])
        assert r_in.has("a") and not r_in.has("c") and not r_in.has(None)
        notin = Requirement.new("k", "NotIn", ["a"])
        assert notin.has("b") and not notin.has("a") and notin.has(None)
        ex = Requirement.new("k", "Exists")
        assert ex.has("x") and not ex.has(None)
        dne = Requirement.new("k", "DoesNotExist")
        assert dne.has(None) and not dne.has("x")
        gt = Requirement.new("k", "Gt", ["4"])
        assert gt.has("5") and not gt.has("4") and not gt.has("x") and not gt.has(None)
        assert Requirement.new("k", "Gte", ["4"]).has("4")
        assert Requirement.new("k", "Lt", ["4"]).has("3") and not Requirement.new("k", "Lt", ["4"]).has("4")
        assert Requirement.new("k", "Lte", ["4"]).has("4")

    def test_bad_operator_and_values(self) -> None:
        with pytest.raises(RequirementError, match="Bogus"):
            Requirement.new("k", "Bogus", ["a"])
        with pytest.raises(RequirementError):
            Requirement.new("k", "Gt", ["x"])
        with pytest.raises(RequirementError):
            Requirement.new("k", "In", [])

    def test_intersection(self) -> None:
        a = Requirement.new("k", "In", ["a", "b", "c"])
        assert a.intersect(Requirement.new("k", "NotIn", ["b"])).values == frozenset({"a", "c"})
        assert a.intersect(Requirement.new("k", "In", ["d"])).is_empty()
        assert (
            not Requirement.new("k", "NotIn", ["a"])
            .intersect(Requirement.new("k", "NotIn", ["b"]))
            .is_empty()
        )
        assert Requirement.new("k", "Exists").intersect(Requirement.new("k", "DoesNotExist")).is_empty()
        rng = Requirement.new("k", "Gt", ["2"]).intersect(Requirement.new("k", "Lt", ["5"]))
        assert rng.has("3") and rng.has("4") and not rng.has("5")
        assert Requirement.new("k", "Gt", ["4"]).intersect(Requirement.new("k", "Lt", ["5"])).is_empty()
        narrowed = Requirement.new("k", "In", ["1", "8"]).intersect(Requirement.new("k", "Gt", ["4"]))
        assert narrowed.values == frozenset({"8"})

    def test_requirements_conflict_and_match(self) -> None:
        pool = Requirements(
            [Requirement.new("zone", "In", ["a", "b"]), Requirement.new("arch", "In", ["amd64"])]
        )
        pod = Requirements([Requirement.new("zone", "In", ["c"])])
        conflict = pool.conflict(pod)
        assert conflict is not None and conflict[0].key == "zone"
        assert pool.compatible(Requirements([Requirement.new("zone", "NotIn", ["a"])]))
        assert pool.matches({"zone": "a", "arch": "amd64"})
        assert not pool.matches({"zone": "a"})
        assert str(Requirement.new("zone", "In", ["b", "a"])) == "zone In [a, b]"


def test_taints_and_tolerations() -> None:
    t = Taint("nvidia.com/gpu", "true", "NoSchedule")
    assert str(t) == "nvidia.com/gpu=true:NoSchedule"
    assert Toleration("nvidia.com/gpu", "Equal", "true", "NoSchedule").tolerates(t)
    assert Toleration("nvidia.com/gpu", "Exists").tolerates(t)
    assert Toleration("", "Exists").tolerates(t)
    assert not Toleration("nvidia.com/gpu", "Equal", "false").tolerates(t)
    assert not Toleration("nvidia.com/gpu", "Exists", effect="NoExecute").tolerates(t)
    soft = Taint("x", "", "PreferNoSchedule")
    assert first_untolerated([soft], []) is None
    assert first_untolerated([soft], [], include_prefer=True) == soft
    assert first_untolerated([t, soft], []) == t


def test_res_helper() -> None:
    assert res("2", "4Gi")["cpu"] == 2000


def test_on_node_is_replace_with_every_field_kept() -> None:
    # on_node passes every field positionally: a field added to Pod without it would be lost here
    import dataclasses as dc

    from packing.pods import HostPort, LabelSelector, Pod, PodAffinityTerm, TopologySpread

    def sel(app: str) -> LabelSelector:
        return LabelSelector(Requirements([Requirement.new("app", "In", [app])]))

    values = {
        "name": "web-1", "namespace": "shop", "labels": {"app": "web"},
        "requests": Resources({"cpu": 500, "pods": 1000}), "node_selector": {"disk": "ssd"},
        "required_terms": (Requirements([Requirement.new("zone", "In", ["a"])]),),
        "preferred_terms": ((5, Requirements([Requirement.new("zone", "In", ["b"])])),),
        "tolerations": (Toleration("k", "Exists", "", "NoSchedule"),),
        "spread": (TopologySpread(1, "kubernetes.io/hostname", "DoNotSchedule", sel("web")),),
        "affinity": (PodAffinityTerm(sel("db"), "zone"),),
        "anti_affinity": (PodAffinityTerm(sel("web"), "kubernetes.io/hostname"),),
        "preferred_affinity": ((3, PodAffinityTerm(sel("cache"), "zone")),),
        "preferred_anti_affinity": ((2, PodAffinityTerm(sel("x"), "zone")),),
        "host_ports": (HostPort(8080),), "node_name": "n1", "owner_kind": "ReplicaSet", "owner_name": "web-abc",
        "uid": "u-1", "terminating": True,
    }
    assert set(values) == {f.name for f in dc.fields(Pod) if f.init}
    p = Pod(**values)  # type: ignore[arg-type]
    moved = p.on_node("n2")
    assert moved == dc.replace(p, node_name="n2")
    assert moved.key == "shop/web-1" and moved.node_name == "n2" and p.node_name == "n1"
