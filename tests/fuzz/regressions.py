"""Every input that broke the CLIs' exit contract (issue 14 items 16-20, and what the fuzz test found since).

Each case is one file (case.yaml) read after BASE (base.yaml: a NodePool and a pod that plan fine) with the fixed
catalog of test_cli_fuzz.py; `code` is the exit status and `message` a substring of the one line on stderr.
Before the fixes each of these printed a traceback, exited 1 naming nothing, printed several lines, ran out of
memory, or was accepted although it must not be.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    code: int
    message: str
    commands: tuple[str, ...] = ("plan", "consolidate")
    args: tuple[str, ...] = ()


BASE = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand, spot]}]
---
apiVersion: v1
kind: Pod
metadata: {name: ok}
spec: {containers: [{name: c, resources: {requests: {cpu: 500m, memory: 1Gi}}}]}
"""


def pod(spec: str, name: str = "p") -> str:
    return f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec: {spec}\n"


def pod_with(field: str) -> str:
    """A pod whose one container has `field` (YAML flow text) added."""
    return pod(f"{{containers: [{{name: c, {field}}}]}}")


def instance_type(offering: str, name: str = "t") -> str:
    return (f"apiVersion: loadmaster.dev/v1alpha1\nkind: InstanceType\nmetadata: {{name: {name}}}\n"
            f"spec:\n  capacity: {{cpu: '4', memory: 8Gi}}\n  offerings: [{offering}]\n")


def deployment(spec: str, kind: str = "Deployment", api: str = "apps/v1") -> str:
    return (f"apiVersion: {api}\nkind: {kind}\nmetadata: {{name: web}}\n"
            f"spec: {{{spec}, template: {{spec: {{containers: [{{name: c}}]}}}}}}\n")


def alias_bomb(levels: int) -> str:
    lines = ["apiVersion: v1", "kind: Pod", "metadata: {name: x}",
             "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, levels)]
    lines.append(f"spec: {{containers: *a{levels - 1}}}")
    return "\n".join(lines) + "\n"


def spread(skew: object, domains: object = 1) -> str:
    return pod(f"{{containers: [{{name: c}}], topologySpreadConstraints: [{{maxSkew: {skew}, minDomains: {domains}, "
               "topologyKey: topology.kubernetes.io/zone}]}")


def affinity_weight(weight: object) -> str:
    return pod("{containers: [{name: c}], affinity: {podAffinity: {preferredDuringSchedulingIgnoredDuringExecution: "
               f"[{{weight: {weight}, podAffinityTerm: {{topologyKey: kubernetes.io/hostname}}}}]}}}}}}")


CASES: list[Case] = [
    # item 17: alias bombs (a 507-byte input died with MemoryError after 48 s)
    Case("alias-bomb", alias_bomb(6), 2, "case.yaml: document 1: invalid YAML (line 1, column 1): aliases expand"),
    Case("alias-recursive", "apiVersion: v1\nkind: Pod\nmetadata: &m {name: x, self: *m}\n", 2,
         "document 1: invalid YAML"),
    Case("alias-small-is-fine", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n"
         "spec: {containers: [&c {name: c, resources: {requests: {cpu: 100m}}}, *c]}\n", 0, ""),
    Case("long-value-quoted-briefly", pod_with("resources: {requests: {cpu: '" + "9x" * 5000 + "'}}"), 2,
         "invalid quantity '9x9x"),
    # item 19: explicit tags raised ValueError/AttributeError/KeyError (a traceback)
    Case("tag-int", pod_with("resources: {requests: {cpu: !!int x}}"), 2, "(line 4, column 59): invalid integer 'x'"),
    Case("tag-timestamp", "apiVersion: v1\nkind: Pod\nmetadata: {name: x, creationTimestamp: !!timestamp x}\n", 2,
         "invalid timestamp 'x'"),
    Case("tag-float", pod_with("resources: {requests: {cpu: !!float x}}"), 2, "invalid number 'x'"),
    Case("tag-bool", pod_with("resources: {requests: {cpu: !!bool x}}"), 2, "invalid boolean 'x'"),
    Case("tag-binary", pod_with("image: !!binary aGk="), 2, "tag !!binary is not supported"),
    Case("tag-python", pod_with("image: !!python/object/apply:os.system [ls]"), 2, "is not supported"),
    Case("tag-unknown", pod_with("image: !secret x"), 2, "tag !secret is not supported"),
    Case("int-5000-digits", pod_with("ports: [{hostPort: " + "9" * 5000 + "}]"), 2, "invalid integer '9999"),
    # item 20: unicode digits (int() accepts what str.isdigit() says yes to, or raises)
    Case("weight-superscript", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\n"
         "spec: {weight: '²', template: {spec: {}}}\n", 2, "(NodePool p): spec.weight: must be an integer, got '²'"),
    Case("weight-range", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\n"
         "spec: {weight: 1000, template: {spec: {}}}\n", 2, "spec.weight: must be at most 100"),
    Case("maxskew-superscript", spread("'²'"), 2, "maxSkew: must be an integer, got '²'"),
    Case("mindomains-arabic", spread(1, "'٣'"), 2, "minDomains: must be an integer, got '٣'"),
    Case("hostport-superscript", pod_with("ports: [{hostPort: '²'}]"), 2, "hostPort: must be an integer"),
    Case("hostport-range", pod_with("ports: [{hostPort: 70000}]"), 2, "hostPort: must be at most 65535"),
    Case("replicas-superscript", deployment("replicas: '²'"), 2, "(Deployment web): spec.replicas: must be an integer"),
    Case("parallelism-superscript", deployment("parallelism: '³'", "Job", "batch/v1"), 2,
         "spec.parallelism: must be an integer"),
    Case("affinity-weight-superscript", affinity_weight("'²'"), 2, "weight: must be an integer, got '²'"),
    Case("affinity-weight-range", affinity_weight(1000), 2, "weight: must be at most 100"),
    # item 20: numbers beyond what the engine represents
    Case("price-400-digits", instance_type("{zone: a, capacityType: spot, price: " + "9" * 400 + "}"), 2,
         "(InstanceType t): spec.offerings[0].price: must be at most 1000000 dollars per hour"),
    Case("price-nan", instance_type("{zone: a, capacityType: spot, price: .nan}"), 2,
         "spec.offerings[0].price: must be a number, got NaN"),
    Case("price-nan-string", instance_type("{zone: a, capacityType: spot, price: 'NaN'}"), 2,
         "spec.offerings[0].price: must be a number, got 'NaN'"),
    Case("price-negative", instance_type("{zone: a, capacityType: spot, price: -5}"), 2,
         "spec.offerings[0].price: must not be negative, got -5"),
    Case("price-infinite", instance_type("{zone: a, capacityType: spot, price: .inf}"), 2,
         "spec.offerings[0].price: must be at most"),
    Case("cpu-1e30", pod_with("resources: {requests: {cpu: '1e30'}}"), 2,
         "(Pod p): spec.containers[0].resources.requests.cpu: invalid quantity '1e30': more than the maximum 1Pi"),
    Case("memory-8Ei", pod_with("resources: {limits: {memory: 8Ei}}"), 2, "more than the maximum 1Pi"),
    Case("limit-1Ei", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\n"
         "spec: {limits: {memory: 1Ei}, template: {spec: {}}}\n", 2, "spec.limits.memory: invalid quantity '1Ei'"),
    Case("cpu-negative", pod_with("resources: {requests: {cpu: '-100'}}"), 2,
         "requests.cpu: must not be negative, got '-100'"),
    Case("cpu-infinite", pod_with("resources: {requests: {cpu: .inf}}"), 2, "invalid quantity inf"),
    Case("cpu-sum-beyond-maximum", pod("{containers: [" + ", ".join(["{name: c, resources: {requests: {cpu: 1Pi}}}"] * 2)
                                       + "]}"), 2, "adds up to"),
    Case("cpu-arabic-digits", pod_with("resources: {requests: {cpu: '٣'}}"), 2, "invalid quantity '٣'"),
    Case("json-990-deep", '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": '
         + "[" * 990 + "]" * 990 + "}", 2, "nested deeper than 100 levels"),
    Case("yaml-5000-deep", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: " + "[" * 5000 + "]" * 5000 + "\n",
         2, "invalid YAML"),
    # item 20: duplicates
    Case("duplicate-instancetype", instance_type("{zone: a, capacityType: spot, price: 1}") + "---\n"
         + instance_type("{zone: a, capacityType: spot, price: 2}"), 2,
         "case.yaml: document 2 (InstanceType t): metadata.name: InstanceType t is defined more than once "
         "(also"),
    Case("duplicate-instancetype-in-catalog", instance_type("{zone: a, capacityType: spot, price: 1}", "fixed-4x"), 2,
         "InstanceType fixed-4x is defined more than once"),
    Case("duplicate-key-yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nmetadata: {name: y}\n", 2,
         "case.yaml: document 1: invalid YAML (line 4, column 1): key 'metadata' is given twice"),
    Case("duplicate-key-json", '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "name": "y"}}', 2,
         "(line 1, column 63): key 'name' is given twice"),
    Case("merge-key-override-is-fine", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n"
         "x-base: &b {name: c}\nspec: {containers: [{<<: *b, name: d}]}\n", 0, ""),
    # item 16: replicas
    Case("replicas-ten-billion", deployment("replicas: 10000000000"), 2,
         "(Deployment web): spec.replicas: 10000000000 is more than the maximum 10000 pods per workload"),
    Case("replicas-in-all", "\n---\n".join(deployment("replicas: 10000").replace("name: web", f"name: w{i}")
                                           for i in range(11)), 2,
         "(Deployment w9): spec.replicas: the workloads without pods of their own would make more than 100000"),
    Case("parallelism-ten-billion", deployment("parallelism: 10000000000", "Job", "batch/v1"), 2,
         "spec.parallelism: 10000000000 is more than the maximum"),
    Case("replicas-negative", deployment("replicas: -1"), 2, "spec.replicas: must be at least 0"),
    # PDB counts and the disruption extras
    Case("pdb-superscript", "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: b}\n"
         "spec: {minAvailable: '²', selector: {}}\n", 2, "spec.minAvailable: must be a count or a percentage"),
    Case("pdb-percent-range", "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: b}\n"
         "spec: {maxUnavailable: '101%', selector: {}}\n", 2, "from 0% to 100%"),
    Case("priority-huge", pod("{priority: " + "9" * 30 + ", containers: []}"), 2,
         "spec.priority: must be an integer (32 bits)", commands=("consolidate",)),
    Case("expire-after-huge", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\n"
         "spec: {template: {spec: {expireAfter: 99999999999h}}}\n", 2,
         "spec.template.spec.expireAfter: invalid duration '99999999999h': longer than", commands=("consolidate",)),
    # item 18 (CLI): the size cap, and its flag
    Case("input-over-the-limit", pod_with("image: c"), 2, "the input is larger than 100 bytes", args=("--max-input-bytes", "100")),
    Case("limit-flag-raises-it", pod_with("image: c"), 0, "", args=("--max-input-bytes", "100000")),
    # argparse errors printed five lines
    Case("bad-flag", pod_with("image: c"), 2, "error: packing plan: argument --output: invalid choice",
         commands=("plan",), args=("--output", "xml")),
    Case("bad-flag-consolidate", pod_with("image: c"), 2, "unrecognized arguments: --frobnicate",
         commands=("consolidate",), args=("--frobnicate",)),
]
