"""Karpenter v1 admission rules, checked through the models' full_clean().

Every rule has a valid and an invalid case; an invalid case asserts the model field the error is
keyed to and the path inside that field (``[0].values: ...``), so a rule reported against the
wrong field or row fails the test.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from console.fleet.models import EC2NodeClass, NodePool

pytestmark = pytest.mark.django_db


def pool(**overrides: Any) -> NodePool:
    values: dict[str, Any] = {
        "name": "general",
        "template_labels": {"team": "platform"},
        "template_annotations": {"example.com/owner": "platform"},
        "taints": [{"key": "example.com/special", "value": "true", "effect": "NoSchedule"}],
        "startup_taints": [{"key": "example.com/booting", "effect": "NoExecute"}],
        "requirements": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
            {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]},
        ],
        "node_class_name": "default",
        "expire_after": "720h",
        "termination_grace_period": "48h",
        "consolidation_policy": "WhenEmptyOrUnderutilized",
        "consolidate_after": "1m",
        "budgets": [{"nodes": "10%"}, {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}],
        "limits": {"cpu": "1000", "memory": "1000Gi"},
        "weight": 10,
    }
    values.update(overrides)
    return NodePool(**values)


def nodeclass(**overrides: Any) -> EC2NodeClass:
    values: dict[str, Any] = {
        "name": "default",
        "ami_family": "AL2023",
        "ami_selector_terms": [{"alias": "al2023@latest"}],
        "subnet_selector_terms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        "security_group_selector_terms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        "role": "KarpenterNodeRole-demo",
        "tags": {"team": "platform"},
    }
    values.update(overrides)
    return EC2NodeClass(**values)


def errors_of(obj: NodePool | EC2NodeClass) -> dict[str, list[str]]:
    try:
        obj.full_clean()
    except ValidationError as exc:
        return exc.message_dict
    return {}


def assert_valid(obj: NodePool | EC2NodeClass) -> None:
    assert errors_of(obj) == {}


def assert_invalid(obj: NodePool | EC2NodeClass, field: str, starts_with: str) -> None:
    """The error is keyed to ``field`` and one message starts with ``starts_with`` (path + words)."""
    errors = errors_of(obj)
    assert field in errors, f"no error on {field!r}: {errors}"
    assert any(m.startswith(starts_with) for m in errors[field]), errors[field]


def test_baselines_are_valid() -> None:
    assert_valid(pool())
    assert_valid(nodeclass())


# --- NodePool: name, labels, annotations --------------------------------------------------------------

@pytest.mark.parametrize("name", ["a", "general-purpose", "gpu.p5", "x" * 63])
def test_name_valid(name: str) -> None:
    assert_valid(pool(name=name))


@pytest.mark.parametrize("name", ["General", "-edge", "edge-", "under_score", "x" * 64, ""])
def test_name_invalid(name: str) -> None:
    errors = errors_of(pool(name=name))
    assert "name" in errors


@pytest.mark.parametrize("key", [
    "team", "example.com/team", "topology.kubernetes.io/zone", "kubernetes.io/arch", "kubernetes.io/os",
    "node.kubernetes.io/instance-type", "node.kubernetes.io/anything", "foo.node.kubernetes.io/x",
    "node-restriction.kubernetes.io/x", "kops.k8s.io/role", "karpenter.sh/capacity-type",
    "karpenter.k8s.aws/instance-family", "karpenter.k8s.aws/ec2nodeclass", "beta.kubernetes.io/arch",
])
def test_template_label_key_allowed(key: str) -> None:
    assert_valid(pool(template_labels={key: "x"}))


@pytest.mark.parametrize("key, message", [
    ("kubernetes.io/hostname", 'label "kubernetes.io/hostname" is restricted'),
    ("karpenter.sh/nodepool", 'label "karpenter.sh/nodepool" is restricted'),
    ("example.kubernetes.io/x", 'label domain "kubernetes.io" is restricted'),
    ("mykubernetes.io/x", 'label domain "kubernetes.io" is restricted'),   # CEL endsWith, not a dot suffix
    ("kubernetes.io", 'label domain "kubernetes.io" is restricted'),       # no '/': the whole key is the domain
    ("topology.kubernetes.io/rack", 'label domain "kubernetes.io" is restricted'),
    ("apps.k8s.io/x", 'label domain "k8s.io" is restricted'),
    ("karpenter.sh/custom", 'label domain "karpenter.sh" is restricted'),
    ("team.karpenter.sh/x", 'label domain "karpenter.sh" is restricted'),
    ("karpenter.k8s.aws/custom", 'label domain "karpenter.k8s.aws" is restricted'),
])
def test_template_label_key_restricted(key: str, message: str) -> None:
    assert_invalid(pool(template_labels={key: "x"}), "template_labels", f"[{key}]: {message}")


@pytest.mark.parametrize("labels, path", [
    ({"team": "a b"}, "[team]: value 'a b'"),
    ({"team": "x" * 64}, "[team]: value"),
    ({"team": 5}, "[team]: value 5 must be a string"),
    ({"Bad_Prefix/x": "1"}, "[Bad_Prefix/x]: 'Bad_Prefix/x': prefix must be a lowercase DNS subdomain"),
    ({"/x": "1"}, "[/x]: '/x': prefix before '/' is empty"),
])
def test_template_label_invalid(labels: dict[str, Any], path: str) -> None:
    assert_invalid(pool(template_labels=labels), "template_labels", path)


def test_template_labels_at_most_100() -> None:
    assert_valid(pool(template_labels={f"l{i}": "v" for i in range(100)}))
    assert_invalid(pool(template_labels={f"l{i}": "v" for i in range(101)}), "template_labels", "at most 100 labels")


def test_template_label_empty_value_allowed() -> None:
    assert_valid(pool(template_labels={"team": ""}))


def test_annotations() -> None:
    assert_valid(pool(template_annotations={"example.com/owner": "anything at all: even spaces"}))
    assert_invalid(pool(template_annotations={"example.com/n": 3}), "template_annotations",
                   "[example.com/n]: annotation values must be strings")
    assert_invalid(pool(template_annotations="x=y"), "template_annotations", "must be a mapping")


# --- taints ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("field", ["taints", "startup_taints"])
def test_taints_valid(field: str) -> None:
    assert_valid(pool(**{field: [
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        {"key": "example.com/x", "effect": "PreferNoSchedule"},
        {"key": "example.com/x", "effect": "NoExecute", "timeAdded": "2024-02-02T19:54:34Z"},
    ]}))


@pytest.mark.parametrize("field", ["taints", "startup_taints"])
@pytest.mark.parametrize("taint, path", [
    ({"key": "dedicated", "effect": "NoEvict"}, "[0].effect: 'NoEvict' is not one of"),
    ({"key": "dedicated"}, "[0].effect: effect is required"),
    ({"effect": "NoSchedule"}, "[0].key: key is required"),
    ({"key": "bad key", "effect": "NoSchedule"}, "[0].key: 'bad key'"),
    ({"key": "dedicated", "value": "", "effect": "NoSchedule"}, "[0].value: must not be empty"),
    ({"key": "dedicated", "value": "a/b", "effect": "NoSchedule"}, "[0].value: value 'a/b'"),
    ({"key": "dedicated", "effect": "NoSchedule", "operator": "Equal"}, "[0]: unknown field(s) operator"),
])
def test_taint_invalid(field: str, taint: dict[str, Any], path: str) -> None:
    assert_invalid(pool(**{field: [taint]}), field, path)


def test_taints_unique_by_key_and_effect() -> None:
    assert_valid(pool(taints=[{"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoExecute"}]))
    assert_invalid(pool(taints=[{"key": "a", "value": "1", "effect": "NoSchedule"},
                                {"key": "a", "value": "2", "effect": "NoSchedule"}]),
                   "taints", "[1]: duplicate taint a:NoSchedule")


def test_taints_must_be_a_list() -> None:
    assert_invalid(pool(taints={"key": "a"}), "taints", "must be a list")


# --- requirements ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("req", [
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
    {"key": "karpenter.sh/capacity-type", "operator": "NotIn", "values": ["spot"]},
    {"key": "karpenter.sh/capacity-type", "operator": "NotIn", "values": []},
    {"key": "karpenter.k8s.aws/instance-family", "operator": "Exists"},
    {"key": "karpenter.k8s.aws/instance-family", "operator": "DoesNotExist", "values": []},
    {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["4"]},
    {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": ["0"]},
    {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gte", "values": ["8"]},
    {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lte", "values": ["64"]},
    {"key": "example.com/team", "operator": "In", "values": ["a", "b"]},
    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]},
    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"], "minValues": 2},
    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"], "minValues": 3},
    {"key": "karpenter.k8s.aws/instance-family", "operator": "Exists", "minValues": 5},
])
def test_requirement_valid(req: dict[str, Any]) -> None:
    assert_valid(pool(requirements=[req]))


@pytest.mark.parametrize("req, path", [
    ({"key": "karpenter.sh/capacity-type", "operator": "In", "values": []}, "[0].values: operator 'In' needs at least one value"),
    ({"key": "karpenter.sh/capacity-type", "operator": "In"}, "[0].values: operator 'In' needs at least one value"),
    ({"key": "example.com/x", "operator": "Exists", "values": ["a"]}, "[0].values: operator 'Exists' takes no values"),
    ({"key": "example.com/x", "operator": "DoesNotExist", "values": ["a"]}, "[0].values: operator 'DoesNotExist' takes no values"),
    ({"key": "example.com/x", "operator": "Equals", "values": ["a"]}, "[0].operator: 'Equals' is not one of"),
    ({"key": "example.com/x", "values": ["a"]}, "[0].operator: operator is required"),
    ({"operator": "In", "values": ["a"]}, "[0].key: key is required"),
    ({"key": "example.com/x", "operator": "In", "values": "a"}, "[0].values: must be a list of strings"),
    ({"key": "example.com/x", "operator": "In", "values": [1]}, "[0].values: must be a list of strings"),
    ({"key": "example.com/x", "operator": "In", "values": ["a b"]}, "[0].values[0]: value 'a b'"),
    ({"key": "example.com/x", "operator": "In", "values": ["a"], "minValue": 1}, "[0]: unknown field(s) minValue"),
    ({"key": "kubernetes.io/hostname", "operator": "In", "values": ["a"]}, '[0].key: label "kubernetes.io/hostname" is restricted'),
    ({"key": "karpenter.sh/nodepool", "operator": "In", "values": ["a"]}, '[0].key: label "karpenter.sh/nodepool" is restricted'),
    ({"key": "karpenter.sh/foo", "operator": "Exists"}, '[0].key: label domain "karpenter.sh" is restricted'),
    ({"key": "karpenter.k8s.aws/foo", "operator": "Exists"}, '[0].key: label domain "karpenter.k8s.aws" is restricted'),
    ({"key": "x", "operator": "In", "values": ["a"], "minValues": 2}, "[0].minValues: minValues 2 needs at least 2 values, 1 given"),
    ({"key": "x", "operator": "In", "values": ["a"], "minValues": 0}, "[0].minValues: must be an integer from 1 to 50"),
    ({"key": "x", "operator": "Exists", "minValues": 51}, "[0].minValues: must be an integer from 1 to 50"),
    ({"key": "x", "operator": "Exists", "minValues": "2"}, "[0].minValues: must be an integer from 1 to 50"),
])
def test_requirement_invalid(req: dict[str, Any], path: str) -> None:
    assert_invalid(pool(requirements=[req]), "requirements", path)


@pytest.mark.parametrize("operator", ["Gt", "Lt", "Gte", "Lte"])
@pytest.mark.parametrize("values", [[], ["1", "2"], ["-1"], ["abc"], ["1.5"], ["+3"], ["²"], [str(2**63)]])
def test_numeric_operators_take_one_non_negative_integer(operator: str, values: list[str]) -> None:
    assert_invalid(pool(requirements=[{"key": "karpenter.k8s.aws/instance-cpu", "operator": operator, "values": values}]),
                   "requirements", f"[0].values: operator '{operator}' needs exactly one non-negative integer value")


def test_requirement_error_names_its_row() -> None:
    reqs = [{"key": "example.com/a", "operator": "Exists"}, {"key": "example.com/b", "operator": "In", "values": []}]
    assert_invalid(pool(requirements=reqs), "requirements", "[1].values:")
    assert not any(m.startswith("[0]") for m in errors_of(pool(requirements=reqs))["requirements"])


def test_requirements_at_most_100() -> None:
    assert_valid(pool(requirements=[{"key": f"example.com/k{i}", "operator": "Exists"} for i in range(100)]))
    assert_invalid(pool(requirements=[{"key": f"example.com/k{i}", "operator": "Exists"} for i in range(101)]),
                   "requirements", "at most 100 requirements")


# --- nodeClassRef, durations, policy ---------------------------------------------------------------------

def test_node_class_name() -> None:
    assert_invalid(pool(node_class_name=""), "node_class_name", "nodeClassRef name is required")
    assert_invalid(pool(node_class_name="Bad Name"), "node_class_name", "'Bad Name' must be")


@pytest.mark.parametrize("field", ["expire_after", "consolidate_after"])
@pytest.mark.parametrize("value", ["720h", "Never", "30s", "5m", "1h30m", "0s", "2562047h"])
def test_duration_or_never_valid(field: str, value: str) -> None:
    assert_valid(pool(**{field: value}))


@pytest.mark.parametrize("field", ["expire_after", "consolidate_after"])
@pytest.mark.parametrize("value", ["5d", "1.5h", "never", " 30s", "30", "10sfoo", "-5m", "300ms", "9999999h"])
def test_duration_or_never_invalid(field: str, value: str) -> None:
    errors = errors_of(pool(**{field: value}))
    assert field in errors and len(errors) == 1, errors


@pytest.mark.parametrize("field", ["expire_after", "consolidate_after"])
def test_duration_required(field: str) -> None:
    assert_invalid(pool(**{field: ""}), field, "This field cannot be blank")


def test_termination_grace_period() -> None:
    assert_valid(pool(termination_grace_period=""))
    assert_valid(pool(termination_grace_period="48h"))
    assert_valid(pool(termination_grace_period="1h30m15s"))
    assert_invalid(pool(termination_grace_period="Never"), "termination_grace_period", "invalid duration 'Never'")
    assert_invalid(pool(termination_grace_period="2d"), "termination_grace_period", "invalid duration '2d'")


@pytest.mark.parametrize("policy", ["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"])
def test_consolidation_policy_valid(policy: str) -> None:
    assert_valid(pool(consolidation_policy=policy))


@pytest.mark.parametrize("policy", ["WhenUnderutilized", "Always", "whenempty"])
def test_consolidation_policy_invalid(policy: str) -> None:
    assert "consolidation_policy" in errors_of(pool(consolidation_policy=policy))


# --- budgets ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("budget", [
    {"nodes": "10%"}, {"nodes": "0"}, {"nodes": "100%"}, {"nodes": "0%"}, {"nodes": "25"},
    {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"},
    {"nodes": "0", "schedule": "@daily", "duration": "10m"},
    {"nodes": "0", "schedule": "*/15 * * * *", "duration": "1h30m"},
    {"nodes": "0", "schedule": "0 0 * * 0", "duration": "8h0m0s"},
    {"nodes": "5", "reasons": ["Empty", "Drifted", "Underutilized"]},
])
def test_budget_valid(budget: dict[str, Any]) -> None:
    assert_valid(pool(budgets=[budget]))


@pytest.mark.parametrize("budget, path", [
    ({"nodes": "101%"}, "[0].nodes: '101%' must be a node count"),
    ({"nodes": "ten"}, "[0].nodes: 'ten' must be a node count"),
    ({"nodes": 5}, "[0].nodes: 5 must be a node count"),
    ({"nodes": "1.5%"}, "[0].nodes: '1.5%' must be a node count"),
    ({}, "[0].nodes: nodes is required"),
    ({"nodes": "0", "schedule": "0 9 * * *"}, "[0].duration: 'schedule' must be set with 'duration'"),
    ({"nodes": "0", "duration": "8h"}, "[0].schedule: 'schedule' must be set with 'duration'"),
    ({"nodes": "0", "schedule": "0 9 * *", "duration": "8h"}, "[0].schedule: invalid cron schedule '0 9 * *'"),
    ({"nodes": "0", "schedule": "61 9 * * *", "duration": "8h"}, "[0].schedule: invalid cron schedule '61 9 * * *'"),
    ({"nodes": "0", "schedule": "@Daily", "duration": "8h"}, "[0].schedule: invalid cron schedule '@Daily'"),
    ({"nodes": "0", "schedule": "@every 1h", "duration": "8h"}, "[0].schedule: invalid cron schedule '@every 1h'"),
    ({"nodes": "0", "schedule": "0 0 * * 7", "duration": "8h"}, "[0].schedule: invalid cron schedule '0 0 * * 7'"),
    ({"nodes": "0", "schedule": "", "duration": "8h"}, "[0].schedule: invalid cron schedule ''"),
    ({"nodes": "0", "schedule": "0 9 * * *", "duration": "30s"}, "[0].duration: '30s' must be hours and/or minutes"),
    ({"nodes": "0", "schedule": "0 9 * * *", "duration": "1d"}, "[0].duration: '1d' must be hours and/or minutes"),
    ({"nodes": "0", "reasons": ["Expired"]}, "[0].reasons[0]: 'Expired' is not one of Empty, Underutilized, Drifted"),
    ({"nodes": "0", "reasons": ["Empty", "Empty"]}, "[0].reasons[1]: 'Empty' is listed twice"),
    ({"nodes": "0", "reasons": "Empty"}, "[0].reasons: must be a list"),
    ({"nodes": "0", "when": "now"}, "[0]: unknown field(s) when"),
])
def test_budget_invalid(budget: dict[str, Any], path: str) -> None:
    assert_invalid(pool(budgets=[budget]), "budgets", path)


def test_budgets_at_most_50_and_may_be_empty() -> None:
    assert_valid(pool(budgets=[]))
    assert_valid(pool(budgets=[{"nodes": "1"}] * 50))
    assert_invalid(pool(budgets=[{"nodes": "1"}] * 51), "budgets", "at most 50 budgets")


# --- limits and weight ------------------------------------------------------------------------------------

def test_limits_valid() -> None:
    assert_valid(pool(limits={"cpu": "1000", "memory": "1000Gi", "nvidia.com/gpu": 8, "nodes": "10",
                              "ephemeral-storage": "1Ti", "cpu2": "500m"}))
    assert_valid(pool(limits={}))


@pytest.mark.parametrize("limits, path", [
    ({"cpu": "lots"}, ".cpu: 'lots' is not a quantity"),
    ({"cpu": 1.5}, ".cpu: 1.5 must be an integer or a quantity string"),
    ({"cpu": True}, ".cpu: True must be an integer or a quantity string"),
    ({"cpu": "-1"}, ".cpu: '-1' must not be negative"),
    ({"bad key": "1"}, ".bad key: 'bad key' is not a resource name"),
])
def test_limits_invalid(limits: dict[str, Any], path: str) -> None:
    assert_invalid(pool(limits=limits), "limits", path.lstrip("."))


@pytest.mark.parametrize("weight", [1, 50, 100, None])
def test_weight_valid(weight: int | None) -> None:
    assert_valid(pool(weight=weight))


@pytest.mark.parametrize("weight", [0, 101, 1000])
def test_weight_invalid(weight: int) -> None:
    assert_invalid(pool(weight=weight), "weight", f"{weight} must be an integer from 1 to 100")


# --- EC2NodeClass: AMIs -----------------------------------------------------------------------------------

@pytest.mark.parametrize("overrides", [
    {"ami_family": "", "ami_selector_terms": [{"alias": "al2023@latest"}]},
    {"ami_family": "Custom", "ami_selector_terms": [{"alias": "al2023@v20240807"}]},
    {"ami_family": "Bottlerocket", "ami_selector_terms": [{"alias": "bottlerocket@v1.20.0"}]},
    {"ami_family": "", "ami_selector_terms": [{"alias": "windows2022@latest"}]},
    {"ami_family": "AL2", "ami_selector_terms": [{"id": "ami-0123abcd"}, {"name": "my-ami", "owner": "self"}]},
    {"ami_family": "AL2023", "ami_selector_terms": [{"tags": {"team": "*"}, "owner": "123456789012"}]},
    {"ami_family": "AL2023", "ami_selector_terms": [{"ssmParameter": "/aws/service/eks/ami"}]},
])
def test_ami_selector_valid(overrides: dict[str, Any]) -> None:
    assert_valid(nodeclass(**overrides))


@pytest.mark.parametrize("overrides, field, path", [
    ({"ami_selector_terms": []}, "ami_selector_terms", "at least one selector term is required"),
    ({"ami_selector_terms": [{"alias": "al2023@latest"}, {"id": "ami-1"}]}, "ami_selector_terms",
     "a term with 'alias' must be the only term"),
    ({"ami_selector_terms": [{"alias": "al2023@latest", "owner": "self"}]}, "ami_selector_terms",
     "[0]: 'alias' cannot be combined"),
    ({"ami_family": "AL2", "ami_selector_terms": [{"id": "ami-1", "name": "x"}]}, "ami_selector_terms",
     "[0]: 'id' cannot be combined"),
    ({"ami_family": "AL2", "ami_selector_terms": [{"owner": "self"}]}, "ami_selector_terms",
     "[0]: set at least one of tags, id, name, alias, ssmParameter"),
    ({"ami_family": "AL2", "ami_selector_terms": [{"id": "img-123"}]}, "ami_selector_terms", "[0].id: 'img-123' does not look like an id"),
    ({"ami_selector_terms": [{"alias": "al2023"}]}, "ami_selector_terms", "[0].alias: 'al2023' must be 'family@version'"),
    ({"ami_selector_terms": [{"alias": "AL2023@latest"}]}, "ami_selector_terms", "[0].alias: family 'AL2023' is not supported"),
    ({"ami_selector_terms": [{"alias": "ubuntu@latest"}]}, "ami_selector_terms", "[0].alias: family 'ubuntu' is not supported"),
    ({"ami_family": "", "ami_selector_terms": [{"alias": "windows2019@v1"}]}, "ami_selector_terms",
     "[0].alias: windows families may only use version 'latest'"),
    ({"ami_selector_terms": [{"alias": "bottlerocket@" + "1" * 30}]}, "ami_selector_terms", "[0].alias: must be at most 30"),
    ({"ami_family": "AL2", "ami_selector_terms": [{"tags": {"team": ""}}]}, "ami_selector_terms", "[0].tags[team]: empty tag keys or values"),
    ({"ami_family": "AL2", "ami_selector_terms": [{"tags": {f"t{i}": "v" for i in range(21)}}]}, "ami_selector_terms",
     "[0].tags: at most 20 tags"),
    ({"ami_family": "AL2", "ami_selector_terms": [{"id": "ami-1", "arch": "x"}]}, "ami_selector_terms", "[0]: unknown field(s) arch"),
    ({"ami_family": "AL2", "ami_selector_terms": [{"alias": "al2023@latest"}]}, "ami_family", "must be AL2023 or Custom"),
    ({"ami_family": "", "ami_selector_terms": [{"id": "ami-1"}]}, "ami_family", "amiFamily is required when amiSelectorTerms has no alias"),
    ({"ami_family": "Ubuntu"}, "ami_family", "'Ubuntu' is not one of"),
])
def test_ami_selector_invalid(overrides: dict[str, Any], field: str, path: str) -> None:
    assert_invalid(nodeclass(**overrides), field, path)


def test_ami_selector_terms_at_most_30() -> None:
    assert_invalid(nodeclass(ami_family="AL2", ami_selector_terms=[{"id": f"ami-{i}"} for i in range(31)]),
                   "ami_selector_terms", "at most 30 selector terms")


# --- subnets and security groups ----------------------------------------------------------------------------

def test_subnet_and_security_group_terms_valid() -> None:
    assert_valid(nodeclass(subnet_selector_terms=[{"id": "subnet-09fa4a0a8f233a921"}, {"tags": {"a": "b"}},
                                                  {"cidr": "10.0.0.0/16"}],
                           security_group_selector_terms=[{"id": "sg-063d7acfb4b06c82c"}, {"name": "my-sg"},
                                                          {"tags": {"a": "*"}}]))


@pytest.mark.parametrize("field, terms, path", [
    ("subnet_selector_terms", [], "at least one selector term is required"),
    ("subnet_selector_terms", [{"id": "subnet-1", "tags": {"a": "b"}}], "[0]: 'id' cannot be combined"),
    ("subnet_selector_terms", [{"id": "sn-1"}], "[0].id: 'sn-1' does not look like an id"),
    ("subnet_selector_terms", [{"name": "x"}], "[0]: unknown field(s) name"),
    ("subnet_selector_terms", [{}], "[0]: set at least one of tags, id, cidr"),
    ("security_group_selector_terms", [], "at least one selector term is required"),
    ("security_group_selector_terms", [{"name": "a", "tags": {"a": "b"}}], "[0]: 'name' cannot be combined"),
    ("security_group_selector_terms", [{"id": "sg-1", "name": "a"}], "[0]: 'id' cannot be combined"),
    ("security_group_selector_terms", [{"id": "group-1"}], "[0].id: 'group-1' does not look like an id"),
    ("security_group_selector_terms", [{"tags": {}}], "[0].tags: must be a non-empty mapping"),
])
def test_subnet_and_security_group_terms_invalid(field: str, terms: list[Any], path: str) -> None:
    assert_invalid(nodeclass(**{field: terms}), field, path)


# --- role / instanceProfile, tags -----------------------------------------------------------------------------

def test_role_xor_instance_profile() -> None:
    assert_valid(nodeclass(role="KarpenterNodeRole", instance_profile=""))
    assert_valid(nodeclass(role="", instance_profile="KarpenterNodeInstanceProfile"))
    assert_invalid(nodeclass(role="", instance_profile=""), "role", "set exactly one of role or instanceProfile")
    assert_invalid(nodeclass(role="r", instance_profile="p"), "role", "set exactly one of role or instanceProfile (not both)")


@pytest.mark.parametrize("key", ["kubernetes.io/cluster/demo", "kubernetes.io/clusterx", "eks:eks-cluster-name",
                                 "karpenter.sh/nodepool", "karpenter.sh/nodeclaim", "karpenter.k8s.aws/ec2nodeclass"])
def test_restricted_tags(key: str) -> None:
    assert_invalid(nodeclass(tags={key: "x"}), "tags", f"[{key}]: tag {key!r} is set by Karpenter")


def test_tags_valid_and_invalid() -> None:
    assert_valid(nodeclass(tags={"team": "a", "kubernetes.io/role": "x", "karpenter.sh/discovery": "demo", "empty": ""}))
    assert_invalid(nodeclass(tags={"": "x"}), "tags", "[]: empty tag keys aren't supported")
    assert_invalid(nodeclass(tags={"team": 5}), "tags", "[team]: tag values must be strings")


# --- blockDeviceMappings ----------------------------------------------------------------------------------------

DOC_BDM = {"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {
    "volumeSize": "100Gi", "volumeType": "gp3", "iops": 10000, "encrypted": True,
    "kmsKeyID": "1234abcd-12ab-34cd-56ef-1234567890ab", "deleteOnTermination": True, "throughput": 125,
    "snapshotID": "snap-0123456789", "volumeInitializationRate": 200}}


@pytest.mark.parametrize("size", ["1Gi", "100Gi", "59000Gi", "64000G", "1Ti", "58Ti", "64T"])
def test_block_devices_valid(size: str) -> None:
    assert_valid(nodeclass(block_device_mappings=[DOC_BDM, {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": size}}]))


@pytest.mark.parametrize("bdms, path", [
    ([DOC_BDM, {**DOC_BDM, "deviceName": "/dev/xvdb"}], "must have only one blockDeviceMappings with rootVolume"),
    ([{"deviceName": "/dev/xvda", "ebs": {"volumeType": "gp3"}}], "[0].ebs: snapshotID or volumeSize must be defined"),
    ([{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20"}}], "[0].ebs.volumeSize: '20' must be a size"),
    ([{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Mi"}}], "[0].ebs.volumeSize: '20Mi' must be a size"),
    ([{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "60000Gi"}}], "[0].ebs.volumeSize: '60000Gi' must be a size"),
    ([{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "Ti"}}], "[0].ebs.volumeSize: 'Ti' must be a size"),
    ([{"deviceName": "/dev/xvda", "ebs": {"volumeSize": 20}}], "[0].ebs.volumeSize: 20 must be a size"),
    ([{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi", "volumeType": "gp4"}}], "[0].ebs.volumeType: 'gp4' is not one of"),
    ([{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi", "iops": -1}}], "[0].ebs.iops: must be a non-negative integer"),
    ([{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi", "throughput": "125"}}], "[0].ebs.throughput: must be a non-negative integer"),
    ([{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi", "volumeInitializationRate": 200}}],
     "[0].ebs.volumeInitializationRate: snapshotID must be set"),
    ([{"deviceName": "/dev/xvda", "ebs": {"snapshotID": "snap-1", "volumeInitializationRate": 50}}],
     "[0].ebs.volumeInitializationRate: must be an integer from 100 to 300"),
    ([{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi", "encrypted": "yes"}}], "[0].ebs.encrypted: must be true or false"),
    ([{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi", "size": 1}}], "[0].ebs: unknown field(s) size"),
    ([{"deviceName": "", "ebs": {"volumeSize": "20Gi"}}], "[0].deviceName: must be a device name"),
    ([{"deviceName": "/dev/xvda", "rootVolume": "yes"}], "[0].rootVolume: must be true or false"),
    ([{"device": "/dev/xvda"}], "[0]: unknown field(s) device"),
])
def test_block_devices_invalid(bdms: list[Any], path: str) -> None:
    assert_invalid(nodeclass(block_device_mappings=bdms), "block_device_mappings", path)


# --- kubelet ------------------------------------------------------------------------------------------------------

DOC_KUBELET = {
    "podsPerCore": 2, "maxPods": 20,
    "systemReserved": {"cpu": "100m", "memory": "100Mi", "ephemeral-storage": "1Gi"},
    "kubeReserved": {"cpu": "200m", "memory": "100Mi", "ephemeral-storage": "3Gi"},
    "evictionHard": {"memory.available": "5%", "nodefs.available": "10%", "nodefs.inodesFree": "10%"},
    "evictionSoft": {"memory.available": "500Mi", "nodefs.available": "15%", "nodefs.inodesFree": "15%"},
    "evictionSoftGracePeriod": {"memory.available": "1m", "nodefs.available": "1m30s", "nodefs.inodesFree": "2m"},
    "evictionMaxPodGracePeriod": 60, "imageGCHighThresholdPercent": 85, "imageGCLowThresholdPercent": 80,
    "cpuCFSQuota": True, "clusterDNS": ["10.0.1.100"],
}


def test_kubelet_valid() -> None:
    assert_valid(nodeclass(kubelet=DOC_KUBELET))
    assert_valid(nodeclass(kubelet={"evictionHard": {"memory.available": "100.00%", "pid.available": "7.5%"}}))


@pytest.mark.parametrize("kubelet, path", [
    ({"maxPods": -1}, "maxPods: must be a non-negative integer"),
    ({"podsPerCore": "2"}, "podsPerCore: must be a non-negative integer"),
    ({"maxPods": 2**31}, "maxPods: must be a non-negative integer"),
    ({"systemReserved": {"gpu": "1"}}, "systemReserved.gpu: unknown key 'gpu'"),
    ({"kubeReserved": {"cpu": 1}}, "kubeReserved.cpu: 1 must be a quantity string"),
    ({"kubeReserved": {"cpu": "-100m"}}, "kubeReserved.cpu: '-100m' must not be negative"),
    ({"evictionHard": {"memory.free": "5%"}}, "evictionHard.memory.free: unknown signal"),
    ({"evictionHard": {"memory.available": "150%"}}, "evictionHard.memory.available: '150%' must be a quantity"),
    ({"evictionHard": {"memory.available": "5.555%"}}, "evictionHard.memory.available: '5.555%' must be a quantity"),
    ({"evictionSoft": {"memory.available": "5%"}}, "evictionSoft.memory.available: needs a matching evictionSoftGracePeriod"),
    ({"evictionSoftGracePeriod": {"memory.available": "1m"}}, "evictionSoftGracePeriod.memory.available: needs a matching evictionSoft"),
    ({"evictionSoft": {"memory.available": "5%"}, "evictionSoftGracePeriod": {"memory.available": "soon"}},
     "evictionSoftGracePeriod.memory.available: 'soon' must be a duration"),
    ({"imageGCHighThresholdPercent": 80, "imageGCLowThresholdPercent": 80}, "imageGCHighThresholdPercent: imageGCHighThresholdPercent must be greater"),
    ({"imageGCHighThresholdPercent": 101}, "imageGCHighThresholdPercent: must be an integer from 0 to 100"),
    ({"cpuCFSQuota": "yes"}, "cpuCFSQuota: must be true or false"),
    ({"clusterDNS": "10.0.0.10"}, "clusterDNS: must be a list of IP addresses"),
    ({"maxpods": 10}, "unknown field(s) maxpods"),
])
def test_kubelet_invalid(kubelet: dict[str, Any], path: str) -> None:
    assert_invalid(nodeclass(kubelet=kubelet), "kubelet", path)


# --- metadataOptions, userData --------------------------------------------------------------------------------------

def test_metadata_options() -> None:
    assert_valid(nodeclass(metadata_options={"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
                                             "httpPutResponseHopLimit": 1, "httpTokens": "required"}))
    assert_valid(nodeclass(metadata_options={"httpTokens": "optional", "httpPutResponseHopLimit": 64}))
    assert_invalid(nodeclass(metadata_options={"httpTokens": "maybe"}), "metadata_options", "httpTokens: 'maybe' is not one of")
    assert_invalid(nodeclass(metadata_options={"httpEndpoint": "on"}), "metadata_options", "httpEndpoint: 'on' is not one of")
    assert_invalid(nodeclass(metadata_options={"httpPutResponseHopLimit": 0}), "metadata_options",
                   "httpPutResponseHopLimit: must be an integer from 1 to 64")
    assert_invalid(nodeclass(metadata_options={"httpPutResponseHopLimit": 65}), "metadata_options",
                   "httpPutResponseHopLimit: must be an integer from 1 to 64")
    assert_invalid(nodeclass(metadata_options={"httpTimeout": 1}), "metadata_options", "unknown field(s) httpTimeout")


def test_user_data() -> None:
    assert_valid(nodeclass(user_data='#!/bin/bash\necho "Hello world"\n'))


def test_nodeclass_name() -> None:
    assert_invalid(nodeclass(name="Default"), "name", "'Default' must be")
