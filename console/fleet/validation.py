"""Karpenter v1's admission rules for NodePool and EC2NodeClass, as plain functions.

One implementation serves the model's clean(), the forms, the YAML importer and the API, so a
value refused in one place is refused everywhere, with the same words. The rules follow the CEL
validations and OpenAPI patterns in Karpenter's v1 CRDs (karpenter.sh_nodepools.yaml and
karpenter.k8s.aws_ec2nodeclasses.yaml): if the API server would refuse an object, so do we.

Every check reports a :class:`FieldIssue`: the model field, a path inside it in the shape of the
Karpenter YAML (``[2].values``), and a message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from packing.cron import CronError, CronSchedule
from packing.durations import DurationError, parse_duration
from packing.quantity import QuantityError, parse_quantity

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")
NUMERIC_OPERATORS = ("Gt", "Lt", "Gte", "Lte")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
CONSOLIDATION_POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized")
BUDGET_REASONS = ("Empty", "Underutilized", "Drifted")
AMI_FAMILIES = ("AL2", "AL2023", "Bottlerocket", "Windows2019", "Windows2022", "Custom")
VOLUME_TYPES = ("standard", "io1", "io2", "gp2", "sc1", "st1", "gp3")
KUBELET_RESERVED_KEYS = ("cpu", "memory", "ephemeral-storage", "pid")
EVICTION_SIGNALS = (
    "memory.available", "nodefs.available", "nodefs.inodesFree",
    "imagefs.available", "imagefs.inodesFree", "pid.available",
)
NODECLASS_GROUP = "karpenter.k8s.aws"
NODECLASS_KIND = "EC2NodeClass"
MAX_REQUIREMENTS = 100
MAX_BUDGETS = 50

# Labels inside restricted domains that Karpenter nevertheless lets users select on.
WELL_KNOWN_LABELS = frozenset({
    "karpenter.sh/capacity-type", "karpenter.sh/nodepool",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "node.kubernetes.io/instance-type", "kubernetes.io/arch", "kubernetes.io/os",
    "node.kubernetes.io/windows-build",
    "beta.kubernetes.io/instance-type", "beta.kubernetes.io/os", "beta.kubernetes.io/arch",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    *(f"karpenter.k8s.aws/{suffix}" for suffix in (
        "instance-encryption-in-transit-supported", "instance-category", "instance-hypervisor",
        "instance-family", "instance-generation", "instance-local-nvme", "instance-size",
        "instance-cpu", "instance-cpu-manufacturer", "instance-cpu-sustained-clock-speed-mhz",
        "instance-memory", "instance-ebs-bandwidth", "instance-network-bandwidth",
        "instance-gpu-name", "instance-gpu-manufacturer", "instance-gpu-count", "instance-gpu-memory",
        "instance-accelerator-name", "instance-accelerator-manufacturer", "instance-accelerator-count",
        "instance-capability-flex",
    )),
})
RESTRICTED_DOMAINS = ("kubernetes.io", "k8s.io", "karpenter.sh", "karpenter.k8s.aws")
# Sub-domains of the restricted ones that are free to use (never passed to the kubelet by Karpenter).
DOMAIN_EXCEPTIONS = ("node.kubernetes.io", "node-restriction.kubernetes.io", "kops.k8s.io")
# EC2 tags Karpenter sets itself; a NodeClass may not set them.
RESTRICTED_TAG_PREFIXES = ("kubernetes.io/cluster/",)
RESTRICTED_TAGS = ("karpenter.sh/nodepool", "karpenter.sh/nodeclaim", "karpenter.k8s.aws/ec2nodeclass",
                   "eks:eks-cluster-name")

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_LABEL_NAME = re.compile(rf"^{_NAME}$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_OBJECT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_BUDGET_NODES = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)$")
_BUDGET_DURATION = re.compile(r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$")
_RESOURCE_NAME = re.compile(rf"^({_DNS_SUBDOMAIN.pattern[1:-1]}/)?{_NAME}$")
_PERCENT = re.compile(r"^(100|[0-9]{1,2}(\.[0-9]+)?)%$")


@dataclass(frozen=True)
class FieldIssue:
    field: str
    path: str
    message: str

    def located(self) -> str:
        return f"{self.path.lstrip('.')}: {self.message}" if self.path else self.message


class Issues:
    """Collects issues for one field so each check reads as one line."""

    def __init__(self, field: str) -> None:
        self.field = field
        self.items: list[FieldIssue] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(FieldIssue(self.field, path, message))


# --- names, labels, quantities ------------------------------------------------------------------

def qualified_name_problem(key: Any) -> str | None:
    """Kubernetes' IsQualifiedName: an optional DNS-subdomain prefix, '/', a 63-char name."""
    if not isinstance(key, str) or not key:
        return "key is required"
    prefix, _, name = key.rpartition("/")
    if "/" in key and not prefix:
        return f"{key!r}: prefix before '/' is empty"
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return f"{key!r}: prefix must be a lowercase DNS subdomain"
    if not name or len(name) > 63 or not _LABEL_NAME.match(name):
        return f"{key!r}: name part must be 1-63 characters of letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
    return None


def label_value_problem(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"value {value!r} must be a string"
    if value and (len(value) > 63 or not _LABEL_NAME.match(value)):
        return f"value {value!r} must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
    return None


def _domain(key: str) -> str:
    return key.split("/", 1)[0] if "/" in key else ""


def restricted_label_problem(key: str) -> str | None:
    """Karpenter refuses labels in its own and Kubernetes' domains unless well known."""
    if key == "kubernetes.io/hostname":
        return 'label "kubernetes.io/hostname" is restricted'
    if key in WELL_KNOWN_LABELS:
        return None
    domain = _domain(key)
    if any(domain == d or domain.endswith("." + d) for d in DOMAIN_EXCEPTIONS):
        return None
    for restricted in RESTRICTED_DOMAINS:
        if domain == restricted or domain.endswith("." + restricted):
            return f'label domain "{restricted}" is restricted; use a well-known label or a custom domain'
    return None


def object_name_problem(name: Any) -> str | None:
    # NodePool names end up as the value of the karpenter.sh/nodepool label, so 63 characters.
    if not isinstance(name, str) or not name:
        return "name is required"
    if len(name) > 63 or not _OBJECT_NAME.match(name):
        return f"{name!r} must be at most 63 lowercase letters, digits, '-' or '.', starting and ending with a letter or digit"
    return None


def _check_mapping(value: Any, issues: Issues, path: str = "") -> Mapping[str, Any] | None:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        issues.add(path, "must be a mapping of key: value")
        return None
    return value


def _check_list(value: Any, issues: Issues, path: str = "") -> list[Any] | None:
    if value is None:
        return []
    if not isinstance(value, list):
        issues.add(path, "must be a list")
        return None
    return value


def check_labels(field: str, labels: Any, *, template: bool) -> list[FieldIssue]:
    issues = Issues(field)
    mapping = _check_mapping(labels, issues)
    for key, value in (mapping or {}).items():
        path = f"[{key}]"
        problem = qualified_name_problem(key) or label_value_problem(value)
        if problem:
            issues.add(path, problem)
            continue
        if template and key == "karpenter.sh/nodepool":
            issues.add(path, 'label "karpenter.sh/nodepool" is restricted (Karpenter sets it)')
        elif template:
            restricted = restricted_label_problem(key)
            if restricted:
                issues.add(path, restricted)
    return issues.items


def check_annotations(field: str, annotations: Any) -> list[FieldIssue]:
    issues = Issues(field)
    mapping = _check_mapping(annotations, issues)
    for key, value in (mapping or {}).items():
        problem = qualified_name_problem(key)
        if problem:
            issues.add(f"[{key}]", problem)
        elif not isinstance(value, str):
            issues.add(f"[{key}]", "annotation values must be strings")
    return issues.items


def check_quantity_map(field: str, value: Any, *, allowed_keys: Iterable[str] | None = None) -> list[FieldIssue]:
    issues = Issues(field)
    mapping = _check_mapping(value, issues)
    allowed = tuple(allowed_keys) if allowed_keys is not None else None
    for key, quantity in (mapping or {}).items():
        path = f".{key}"
        if allowed is not None and key not in allowed:
            issues.add(path, f"unknown key {key!r}; allowed: {', '.join(allowed)}")
            continue
        if allowed is None and (not isinstance(key, str) or not _RESOURCE_NAME.match(key)):
            issues.add(path, f"{key!r} is not a resource name")
            continue
        if not isinstance(quantity, str | int | float) or isinstance(quantity, bool):
            issues.add(path, f"{quantity!r} is not a quantity")
            continue
        try:
            milli = parse_quantity(quantity)
        except QuantityError as exc:
            issues.add(path, str(exc))
            continue
        if milli < 0:
            issues.add(path, f"{quantity!r} must not be negative")
    return issues.items


# --- NodePool parts -------------------------------------------------------------------------------

def check_requirement(req: Any, issues: Issues, path: str) -> None:
    if not isinstance(req, Mapping):
        issues.add(path, "must be a mapping with key, operator and values")
        return
    unknown = set(req) - {"key", "operator", "values", "minValues"}
    if unknown:
        issues.add(path, f"unknown field(s) {', '.join(sorted(unknown))}")
    key = req.get("key")
    problem = qualified_name_problem(key)
    if problem:
        issues.add(f"{path}.key", problem)
    else:
        restricted = restricted_label_problem(key)
        if restricted:
            issues.add(f"{path}.key", restricted)
    operator = req.get("operator")
    if operator not in OPERATORS:
        issues.add(f"{path}.operator", f"{operator!r} is not one of {', '.join(OPERATORS)}")
        return
    values = req.get("values", [])
    if values is None:
        values = []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        issues.add(f"{path}.values", "must be a list of strings")
        return
    if operator == "In" and not values:
        issues.add(f"{path}.values", "requirements with operator 'In' must have a value defined")
    if operator in ("Exists", "DoesNotExist") and values:
        issues.add(f"{path}.values", f"operator {operator!r} takes no values")
    if operator in NUMERIC_OPERATORS:
        if len(values) != 1 or not values[0].isdigit():
            issues.add(f"{path}.values", f"operator {operator!r} must have exactly one non-negative integer value")
    elif operator in ("In", "NotIn"):
        for i, v in enumerate(values):
            vp = label_value_problem(v)
            if vp:
                issues.add(f"{path}.values[{i}]", vp)
    if "minValues" in req and req["minValues"] is not None:
        mv = req["minValues"]
        if not isinstance(mv, int) or isinstance(mv, bool) or not 1 <= mv <= 50:
            issues.add(f"{path}.minValues", "must be an integer from 1 to 50")
        elif operator == "In" and len(values) < mv:
            issues.add(f"{path}.minValues",
                       f"minValues {mv} needs at least {mv} values, {len(values)} given")


def check_requirements(field: str, value: Any) -> list[FieldIssue]:
    issues = Issues(field)
    reqs = _check_list(value, issues)
    if reqs is None:
        return issues.items
    if len(reqs) > MAX_REQUIREMENTS:
        issues.add("", f"at most {MAX_REQUIREMENTS} requirements")
    for i, req in enumerate(reqs):
        check_requirement(req, issues, f"[{i}]")
    return issues.items


def check_taint(taint: Any, issues: Issues, path: str) -> None:
    if not isinstance(taint, Mapping):
        issues.add(path, "must be a mapping with key, value and effect")
        return
    unknown = set(taint) - {"key", "value", "effect", "timeAdded"}
    if unknown:
        issues.add(path, f"unknown field(s) {', '.join(sorted(unknown))}")
    problem = qualified_name_problem(taint.get("key"))
    if problem:
        issues.add(f"{path}.key", problem)
    if "value" in taint and taint["value"] is not None:
        vp = label_value_problem(taint["value"])
        if vp:
            issues.add(f"{path}.value", vp)
    if taint.get("effect") not in TAINT_EFFECTS:
        issues.add(f"{path}.effect", f"{taint.get('effect')!r} is not one of {', '.join(TAINT_EFFECTS)}")


def check_taints(field: str, value: Any) -> list[FieldIssue]:
    issues = Issues(field)
    taints = _check_list(value, issues)
    seen: set[tuple[Any, Any]] = set()
    for i, taint in enumerate(taints or []):
        check_taint(taint, issues, f"[{i}]")
        if isinstance(taint, Mapping):
            ident = (taint.get("key"), taint.get("effect"))
            if ident in seen:
                issues.add(f"[{i}]", f"duplicate taint {ident[0]}:{ident[1]}")
            seen.add(ident)
    return issues.items


def check_duration(field: str, value: Any, *, allow_never: bool, required: bool = True) -> list[FieldIssue]:
    issues = Issues(field)
    if value in (None, ""):
        if required:
            issues.add("", "is required")
        return issues.items
    try:
        parse_duration(value, allow_never=allow_never)
    except DurationError as exc:
        issues.add("", str(exc))
    return issues.items


def check_budget(budget: Any, issues: Issues, path: str) -> None:
    if not isinstance(budget, Mapping):
        issues.add(path, "must be a mapping with nodes and optional schedule, duration, reasons")
        return
    unknown = set(budget) - {"nodes", "schedule", "duration", "reasons"}
    if unknown:
        issues.add(path, f"unknown field(s) {', '.join(sorted(unknown))}")
    nodes = budget.get("nodes", "10%")
    if not isinstance(nodes, str) or not _BUDGET_NODES.match(nodes):
        issues.add(f"{path}.nodes", f"{nodes!r} must be a node count (e.g. '5') or a percentage 0-100% (e.g. '10%')")
    schedule = budget.get("schedule")
    duration = budget.get("duration")
    if (schedule in (None, "")) != (duration in (None, "")):
        issues.add(f"{path}.schedule" if schedule in (None, "") else f"{path}.duration",
                   "'schedule' must be set with 'duration'")
    if schedule not in (None, ""):
        try:
            CronSchedule.parse(schedule)
        except CronError as exc:
            issues.add(f"{path}.schedule", f"invalid cron schedule {schedule!r}: {exc}")
    if duration not in (None, ""):
        if not isinstance(duration, str) or not _BUDGET_DURATION.match(duration):
            issues.add(f"{path}.duration", f"{duration!r} must be hours and/or minutes, e.g. '10m', '8h', '1h30m'")
    reasons = budget.get("reasons")
    if reasons is not None:
        if not isinstance(reasons, list):
            issues.add(f"{path}.reasons", "must be a list")
        else:
            for j, reason in enumerate(reasons):
                if reason not in BUDGET_REASONS:
                    issues.add(f"{path}.reasons[{j}]", f"{reason!r} is not one of {', '.join(BUDGET_REASONS)}")


def check_budgets(field: str, value: Any) -> list[FieldIssue]:
    issues = Issues(field)
    budgets = _check_list(value, issues)
    if budgets is None:
        return issues.items
    if len(budgets) > MAX_BUDGETS:
        issues.add("", f"at most {MAX_BUDGETS} budgets")
    for i, budget in enumerate(budgets):
        check_budget(budget, issues, f"[{i}]")
    return issues.items


def check_nodepool(data: Mapping[str, Any]) -> list[FieldIssue]:
    """Validate a NodePool given as model-field values (see models.NodePool)."""
    found: list[FieldIssue] = []
    problem = object_name_problem(data.get("name"))
    if problem:
        found.append(FieldIssue("name", "", problem))
    found += check_labels("template_labels", data.get("template_labels"), template=True)
    found += check_annotations("template_annotations", data.get("template_annotations"))
    found += check_taints("taints", data.get("taints"))
    found += check_taints("startup_taints", data.get("startup_taints"))
    found += check_requirements("requirements", data.get("requirements"))
    problem = object_name_problem(data.get("node_class_name"))
    if problem:
        found.append(FieldIssue("node_class_name", "", problem.replace("name is required", "nodeClassRef name is required")))
    found += check_duration("expire_after", data.get("expire_after"), allow_never=True)
    found += check_duration("termination_grace_period", data.get("termination_grace_period"),
                            allow_never=False, required=False)
    if data.get("consolidation_policy") not in CONSOLIDATION_POLICIES:
        found.append(FieldIssue("consolidation_policy", "",
                                f"{data.get('consolidation_policy')!r} is not one of {', '.join(CONSOLIDATION_POLICIES)}"))
    found += check_duration("consolidate_after", data.get("consolidate_after"), allow_never=True)
    found += check_budgets("budgets", data.get("budgets"))
    found += check_quantity_map("limits", data.get("limits"))
    weight = data.get("weight")
    if weight is not None and (not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100):
        found.append(FieldIssue("weight", "", f"{weight!r} must be an integer from 1 to 100"))
    return found


# --- EC2NodeClass ---------------------------------------------------------------------------------

def _check_selector_terms(field: str, value: Any, allowed: tuple[str, ...], *, required: bool) -> list[FieldIssue]:
    issues = Issues(field)
    terms = _check_list(value, issues)
    if terms is None:
        return issues.items
    if required and not terms:
        issues.add("", "at least one selector term is required")
    if len(terms) > 30:
        issues.add("", "at most 30 selector terms")
    for i, term in enumerate(terms):
        path = f"[{i}]"
        if not isinstance(term, Mapping) or not term:
            issues.add(path, f"must set one of {', '.join(allowed)}")
            continue
        unknown = set(term) - set(allowed)
        if unknown:
            issues.add(path, f"unknown field(s) {', '.join(sorted(unknown))}; allowed: {', '.join(allowed)}")
        if "id" in term and len(term) > 1:
            issues.add(path, "'id' is mutually exclusive with the other fields of a term")
        if "alias" in term and len(term) > 1:
            issues.add(path, "'alias' is mutually exclusive with the other fields of a term")
        tags = term.get("tags")
        if tags is not None:
            if not isinstance(tags, Mapping) or not tags:
                issues.add(f"{path}.tags", "must be a non-empty mapping")
            else:
                for k, v in tags.items():
                    if not k or not isinstance(v, str) or not v:
                        issues.add(f"{path}.tags[{k}]", "tag keys and values must be non-empty strings")
        for key in ("id", "name", "alias", "owner"):
            if key in term and (not isinstance(term[key], str) or not term[key]):
                issues.add(f"{path}.{key}", "must be a non-empty string")
        if "alias" in term and isinstance(term["alias"], str):
            family, _, version = term["alias"].partition("@")
            if family.lower() not in ("al2", "al2023", "bottlerocket", "windows2019", "windows2022") or not version:
                issues.add(f"{path}.alias", f"{term['alias']!r} must look like 'al2023@latest' or 'bottlerocket@v1.20.0'")
    return issues.items


def check_nodeclass(data: Mapping[str, Any]) -> list[FieldIssue]:
    """Validate an EC2NodeClass given as model-field values (see models.EC2NodeClass)."""
    found: list[FieldIssue] = []
    problem = object_name_problem(data.get("name"))
    if problem:
        found.append(FieldIssue("name", "", problem))
    ami_family = data.get("ami_family") or ""
    ami_terms = data.get("ami_selector_terms")
    if ami_family and ami_family not in AMI_FAMILIES:
        found.append(FieldIssue("ami_family", "", f"{ami_family!r} is not one of {', '.join(AMI_FAMILIES)}"))
    found += _check_selector_terms("ami_selector_terms", ami_terms, ("alias", "id", "name", "owner", "tags", "ssmParameter"),
                                   required=True)
    if isinstance(ami_terms, list):
        aliases = [t for t in ami_terms if isinstance(t, Mapping) and "alias" in t]
        if aliases and len(ami_terms) > 1:
            found.append(FieldIssue("ami_selector_terms", "", "a term with 'alias' must be the only term"))
    if not ami_family and isinstance(ami_terms, list) and ami_terms and not any(
            isinstance(t, Mapping) and "alias" in t for t in ami_terms):
        found.append(FieldIssue("ami_family", "", "amiFamily is required when amiSelectorTerms has no alias"))
    found += _check_selector_terms("subnet_selector_terms", data.get("subnet_selector_terms"), ("id", "tags"),
                                   required=True)
    found += _check_selector_terms("security_group_selector_terms", data.get("security_group_selector_terms"),
                                   ("id", "name", "tags"), required=True)
    role, profile = data.get("role") or "", data.get("instance_profile") or ""
    if bool(role) == bool(profile):
        found.append(FieldIssue("role", "", "set exactly one of role or instanceProfile"))
    issues = Issues("tags")
    tags = _check_mapping(data.get("tags"), issues)
    for key, value in (tags or {}).items():
        if not isinstance(key, str) or not key:
            issues.add(f"[{key}]", "tag keys must be non-empty strings")
        elif key in RESTRICTED_TAGS or key.startswith(RESTRICTED_TAG_PREFIXES):
            issues.add(f"[{key}]", f"tag {key!r} is set by Karpenter and may not be overridden")
        elif not isinstance(value, str):
            issues.add(f"[{key}]", "tag values must be strings")
    found += issues.items
    found += _check_block_devices(data.get("block_device_mappings"))
    found += _check_kubelet(data.get("kubelet"))
    found += _check_metadata_options(data.get("metadata_options"))
    user_data = data.get("user_data")
    if user_data is not None and not isinstance(user_data, str):
        found.append(FieldIssue("user_data", "", "must be a string"))
    return found


def _check_block_devices(value: Any) -> list[FieldIssue]:
    issues = Issues("block_device_mappings")
    mappings = _check_list(value, issues)
    roots = 0
    for i, bdm in enumerate(mappings or []):
        path = f"[{i}]"
        if not isinstance(bdm, Mapping):
            issues.add(path, "must be a mapping")
            continue
        unknown = set(bdm) - {"deviceName", "ebs", "rootVolume"}
        if unknown:
            issues.add(path, f"unknown field(s) {', '.join(sorted(unknown))}")
        if not isinstance(bdm.get("deviceName"), str) or not bdm.get("deviceName"):
            issues.add(f"{path}.deviceName", "is required, e.g. /dev/xvda")
        if bdm.get("rootVolume") is True:
            roots += 1
        ebs = bdm.get("ebs")
        if ebs is None:
            continue
        if not isinstance(ebs, Mapping):
            issues.add(f"{path}.ebs", "must be a mapping")
            continue
        allowed = {"volumeSize", "volumeType", "iops", "throughput", "encrypted", "kmsKeyID",
                   "deleteOnTermination", "snapshotID", "volumeInitializationRate"}
        unknown = set(ebs) - allowed
        if unknown:
            issues.add(f"{path}.ebs", f"unknown field(s) {', '.join(sorted(unknown))}")
        if "volumeType" in ebs and ebs["volumeType"] not in VOLUME_TYPES:
            issues.add(f"{path}.ebs.volumeType", f"{ebs['volumeType']!r} is not one of {', '.join(VOLUME_TYPES)}")
        if "volumeSize" in ebs:
            try:
                if parse_quantity(ebs["volumeSize"]) <= 0:
                    issues.add(f"{path}.ebs.volumeSize", "must be positive")
            except QuantityError as exc:
                issues.add(f"{path}.ebs.volumeSize", str(exc))
        for key in ("iops", "throughput"):
            if key in ebs and (not isinstance(ebs[key], int) or isinstance(ebs[key], bool) or ebs[key] < 0):
                issues.add(f"{path}.ebs.{key}", "must be a non-negative integer")
        for key in ("encrypted", "deleteOnTermination"):
            if key in ebs and not isinstance(ebs[key], bool):
                issues.add(f"{path}.ebs.{key}", "must be true or false")
    if roots > 1:
        issues.add("", "at most one block device mapping may be the rootVolume")
    return issues.items


def _check_kubelet(value: Any) -> list[FieldIssue]:
    issues = Issues("kubelet")
    kubelet = _check_mapping(value, issues)
    if kubelet is None:
        return issues.items
    known = {"maxPods", "podsPerCore", "systemReserved", "kubeReserved", "evictionHard", "evictionSoft",
             "evictionSoftGracePeriod", "evictionMaxPodGracePeriod", "imageGCHighThresholdPercent",
             "imageGCLowThresholdPercent", "cpuCFSQuota", "clusterDNS"}
    unknown = set(kubelet) - known
    if unknown:
        issues.add("", f"unknown field(s) {', '.join(sorted(unknown))}")
    for key in ("maxPods", "podsPerCore"):
        if key in kubelet and (not isinstance(kubelet[key], int) or isinstance(kubelet[key], bool) or kubelet[key] < 0):
            issues.add(f".{key}", "must be a non-negative integer")
    for key in ("systemReserved", "kubeReserved"):
        for item in check_quantity_map("kubelet", kubelet.get(key), allowed_keys=KUBELET_RESERVED_KEYS):
            issues.add(f".{key}{item.path}", item.message)
    for key in ("evictionHard", "evictionSoft"):
        signals = kubelet.get(key)
        if signals is None:
            continue
        if not isinstance(signals, Mapping):
            issues.add(f".{key}", "must be a mapping of signal: threshold")
            continue
        for signal, threshold in signals.items():
            if signal not in EVICTION_SIGNALS:
                issues.add(f".{key}.{signal}", f"unknown signal; allowed: {', '.join(EVICTION_SIGNALS)}")
                continue
            if isinstance(threshold, str) and _PERCENT.match(threshold):
                continue
            try:
                parse_quantity(threshold)
            except QuantityError:
                issues.add(f".{key}.{signal}", f"{threshold!r} must be a quantity (100Mi) or a percentage (10%)")
    return issues.items


def _check_metadata_options(value: Any) -> list[FieldIssue]:
    issues = Issues("metadata_options")
    options = _check_mapping(value, issues)
    if options is None:
        return issues.items
    enums = {"httpEndpoint": ("enabled", "disabled"), "httpProtocolIPv6": ("enabled", "disabled"),
             "httpTokens": ("required", "optional")}
    unknown = set(options) - set(enums) - {"httpPutResponseHopLimit"}
    if unknown:
        issues.add("", f"unknown field(s) {', '.join(sorted(unknown))}")
    for key, allowed in enums.items():
        if key in options and options[key] not in allowed:
            issues.add(f".{key}", f"{options[key]!r} is not one of {', '.join(allowed)}")
    hop = options.get("httpPutResponseHopLimit")
    if hop is not None and (not isinstance(hop, int) or isinstance(hop, bool) or not 1 <= hop <= 64):
        issues.add(".httpPutResponseHopLimit", "must be an integer from 1 to 64")
    return issues.items
