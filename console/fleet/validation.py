"""Karpenter v1's admission rules for NodePool and EC2NodeClass, as plain functions.

One implementation serves the model's clean(), the forms, the YAML importer and the API, so a
value refused in one place is refused everywhere, with the same words. The rules follow the CEL
validations (x-kubernetes-validations) and OpenAPI patterns in Karpenter's v1 CRDs
(karpenter.sh_nodepools.yaml and karpenter.k8s.aws_ec2nodeclasses.yaml): if the API server would
refuse an object, so do we. A few extra checks refuse what the API server lets through but the
cluster would then fail on (a taint Kubernetes cannot put on a node, a cron schedule Karpenter's
parser rejects, a duration too long for Go); each is marked "beyond the CRD" below.

Every check reports a :class:`FieldIssue`: the model field, a path inside it in the shape of the
Karpenter YAML (``[2].values``), and a message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from packing.api import (
    SCHEDULES_ANNOTATION,
    CronError,
    CronSchedule,
    DurationError,
    FieldError,
    QuantityError,
    parse_duration,
    parse_quantity,
    parse_windows,
)

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")
NUMERIC_OPERATORS = ("Gt", "Lt", "Gte", "Lte")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
CONSOLIDATION_POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced")  # Karpenter v1.14's CRD enum
BUDGET_REASONS = ("Empty", "Underutilized", "Drifted")
AMI_FAMILIES = ("AL2", "AL2023", "Bottlerocket", "Windows2019", "Windows2022", "Windows2025", "Custom")
# alias family (amiSelectorTerms[].alias "family@version") -> the amiFamily it implies
ALIAS_FAMILIES = {"al2": "AL2", "al2023": "AL2023", "bottlerocket": "Bottlerocket",
                  "windows2019": "Windows2019", "windows2022": "Windows2022", "windows2025": "Windows2025"}
NESTED_VIRTUALIZATION = ("enabled", "disabled")  # cpuOptions.nestedVirtualization
INTERFACE_TYPES = ("interface", "efa-only")       # networkInterfaces[].interfaceType
MAX_NETWORK_INTERFACES = 150
# connectionTracking: key -> (minimum, maximum) seconds, as the v1.14 CRD bounds them.
CONNECTION_TRACKING_RANGES = {"tcpEstablishedTimeout": (60, 432000), "udpStreamTimeout": (60, 180),
                              "udpTimeout": (30, 60)}
INSTANCE_MATCH_CRITERIA = ("open", "targeted")    # capacityReservationSelectorTerms[].instanceMatchCriteria
VOLUME_TYPES = ("standard", "io1", "io2", "gp2", "sc1", "st1", "gp3")
KUBELET_RESERVED_KEYS = ("cpu", "memory", "ephemeral-storage", "pid")
EVICTION_SIGNALS = (
    "memory.available", "nodefs.available", "nodefs.inodesFree",
    "imagefs.available", "imagefs.inodesFree", "pid.available",
)
KUBELET_FIELDS = ("clusterDNS", "maxPods", "podsPerCore", "systemReserved", "kubeReserved", "evictionHard",
                  "evictionSoft", "evictionSoftGracePeriod", "evictionMaxPodGracePeriod",
                  "imageGCHighThresholdPercent", "imageGCLowThresholdPercent", "cpuCFSQuota")
METADATA_OPTION_ENUMS = {"httpEndpoint": ("enabled", "disabled"), "httpProtocolIPv6": ("enabled", "disabled"),
                         "httpTokens": ("required", "optional")}
EBS_FIELDS = ("volumeSize", "volumeType", "iops", "throughput", "encrypted", "kmsKeyID",
              "deleteOnTermination", "snapshotID", "volumeInitializationRate")
NODECLASS_GROUP = "karpenter.k8s.aws"
NODECLASS_KIND = "EC2NodeClass"
MAX_REQUIREMENTS = 100
MAX_LABELS = 100
MAX_BUDGETS = 50
MAX_SELECTOR_TERMS = 30
MAX_SELECTOR_TAGS = 20
MAX_BLOCK_DEVICES = 50
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1

# The CEL rules on template labels and requirement keys: a key whose domain (the part before the
# first '/', or the whole key when there is none) *ends with* one of these strings is refused,
# unless it is listed here or its domain ends with one of the exempt suffixes.
_KUBERNETES_IO_ALLOWED = frozenset({
    "beta.kubernetes.io/instance-type", "failure-domain.beta.kubernetes.io/region", "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch", "failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region", "node.kubernetes.io/instance-type", "kubernetes.io/arch",
    "kubernetes.io/os", "node.kubernetes.io/windows-build",
})
_KUBERNETES_IO_EXEMPT_DOMAINS = ("node.kubernetes.io", "node-restriction.kubernetes.io")
_K8S_IO_EXEMPT_DOMAINS = ("kops.k8s.io",)
_KARPENTER_SH_ALLOWED = frozenset({"karpenter.sh/capacity-type"})
_KARPENTER_AWS_ALLOWED = frozenset({"karpenter.k8s.aws/ec2nodeclass", *(f"karpenter.k8s.aws/{suffix}" for suffix in (
    "instance-encryption-in-transit-supported", "instance-category", "instance-hypervisor",
    "instance-family", "instance-generation", "instance-local-nvme", "instance-size",
    "instance-cpu", "instance-cpu-manufacturer", "instance-cpu-sustained-clock-speed-mhz",
    "instance-memory", "instance-ebs-bandwidth", "instance-network-bandwidth",
    "instance-gpu-name", "instance-gpu-manufacturer", "instance-gpu-count", "instance-gpu-memory",
    "instance-accelerator-name", "instance-accelerator-manufacturer", "instance-accelerator-count",
    "instance-capability-flex", "placement-group-id", "placement-group-partition",
))})
# Labels inside restricted domains that a NodePool may nevertheless set or select on.
WELL_KNOWN_LABELS = _KUBERNETES_IO_ALLOWED | _KARPENTER_SH_ALLOWED | _KARPENTER_AWS_ALLOWED
RESTRICTED_DOMAINS = ("kubernetes.io", "k8s.io", "karpenter.sh", "karpenter.k8s.aws")
# EC2 tags Karpenter sets itself; an EC2NodeClass may not set them (CEL rules on spec.tags).
RESTRICTED_TAG_PREFIXES = ("kubernetes.io/cluster",)
RESTRICTED_TAGS = ("eks:eks-cluster-name", "karpenter.sh/nodepool", "karpenter.sh/nodeclaim",
                   "karpenter.k8s.aws/ec2nodeclass")

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_LABEL_NAME = re.compile(rf"^{_NAME}$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_OBJECT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_RESOURCE_NAME = re.compile(rf"^({_DNS_SUBDOMAIN.pattern[1:-1]}/)?{_NAME}$")
_UINT = re.compile(r"^[0-9]+$")
# CRD patterns, verbatim in meaning.
_DURATION_OR_NEVER = re.compile(r"^(([0-9]+(s|m|h))+|Never)$")          # expireAfter, consolidateAfter
_DURATION = re.compile(r"^([0-9]+(s|m|h))+$")                             # terminationGracePeriod
_BUDGET_NODES = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)$")
_BUDGET_DURATION = re.compile(r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$")
_BUDGET_SCHEDULE = re.compile(r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$")
_QUANTITY = re.compile(r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")
_EVICTION_PERCENT = re.compile(r"^(\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%$")
_GO_DURATION = re.compile(r"^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$")
# EBS volumeSize: Gi 1-59000, G 1-64000, Ti and T as the CRD's pattern allows (its empty alternative,
# which would let a bare "Ti" through, is left out: Karpenter could not parse that quantity).
_VOLUME_SIZE = re.compile(r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi"
                          r"|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G"
                          r"|([1-9]|[1-5][0-7]|58)Ti|([1-9]|[1-5][0-9]|6[0-3]|64)T)$")
_ALIAS = re.compile(r"^[a-zA-Z0-9]+@.+$")
# The id patterns are unanchored in the CRD (OpenAPI patterns match anywhere); so are these.
_AMI_ID = re.compile(r"ami-[0-9a-z]+")
_SUBNET_ID = re.compile(r"subnet-[0-9a-z]+")
_SG_ID = re.compile(r"sg-[0-9a-z]+")
_CAPACITY_RESERVATION_ID = re.compile(r"^cr-[0-9a-z]+$")
_PLACEMENT_GROUP_ID = re.compile(r"^pg-[0-9a-z]+$")
_OWNER_ID = re.compile(r"^[0-9]{12}$")
_GO_MAX_SECONDS = INT64_MAX // 10**9


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


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _unknown(mapping: Mapping[str, Any], allowed: Iterable[str]) -> str | None:
    unknown = sorted(str(k) for k in set(mapping) - set(allowed))
    return f"unknown field(s) {', '.join(unknown)}" if unknown else None


# --- names, labels, quantities ------------------------------------------------------------------

def qualified_name_problem(key: Any) -> str | None:
    """Kubernetes' IsQualifiedName: an optional DNS-subdomain prefix, '/', a 63-char name."""
    if key is None or key == "":
        return "key is required"
    if not isinstance(key, str):
        return f"key {key!r} must be a string"
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
    # CEL: key.find("^([^/]+)") -- everything before the first '/', the whole key if there is none.
    return key.split("/", 1)[0]


def restricted_label_problem(key: str) -> str | None:
    """The CEL rules Karpenter puts on template label keys and requirement keys."""
    if key == "kubernetes.io/hostname":
        return 'label "kubernetes.io/hostname" is restricted'
    if key == "karpenter.sh/nodepool":
        return 'label "karpenter.sh/nodepool" is restricted (Karpenter sets it)'
    domain = _domain(key)
    if (domain.endswith("kubernetes.io") and key not in _KUBERNETES_IO_ALLOWED
            and not domain.endswith(_KUBERNETES_IO_EXEMPT_DOMAINS)):
        return 'label domain "kubernetes.io" is restricted'
    if domain.endswith("k8s.io") and not domain.endswith(_K8S_IO_EXEMPT_DOMAINS):
        return 'label domain "k8s.io" is restricted'
    if domain.endswith("karpenter.sh") and key not in _KARPENTER_SH_ALLOWED:
        return 'label domain "karpenter.sh" is restricted'
    if domain.endswith("karpenter.k8s.aws") and key not in _KARPENTER_AWS_ALLOWED:
        return 'label domain "karpenter.k8s.aws" is restricted'
    return None


def object_name_problem(name: Any) -> str | None:
    # NodePool names end up as the value of the karpenter.sh/nodepool label, so 63 characters.
    if name is None or name == "":
        return "name is required"
    if not isinstance(name, str) or len(name) > 63 or not _OBJECT_NAME.match(name):
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
    if mapping is None:
        return issues.items
    if template and len(mapping) > MAX_LABELS:
        issues.add("", f"at most {MAX_LABELS} labels")
    for key, value in mapping.items():
        path = f"[{key}]"
        problem = qualified_name_problem(key) or label_value_problem(value)
        if problem:
            issues.add(path, problem)
            continue
        if template:
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


# Kubernetes' own limit on an object's annotations (apimachinery TotalAnnotationSizeLimitB): keys and values together.
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024


def check_object_metadata(labels: Any, annotations: Any) -> list[FieldIssue]:
    """metadata.labels and metadata.annotations of the NodePool or EC2NodeClass itself, as the API server
    validates any object's (no Karpenter rule: the restricted label domains apply only to node labels)."""
    found = check_labels("metadata_labels", labels, template=False)
    found += check_annotations("metadata_annotations", annotations)
    if isinstance(annotations, Mapping):
        size = sum(len(str(k)) + len(v) for k, v in annotations.items() if isinstance(v, str))
        if size > TOTAL_ANNOTATION_SIZE_LIMIT:
            found.append(FieldIssue("metadata_annotations", "", f"annotations may not be larger than "
                                                                 f"{TOTAL_ANNOTATION_SIZE_LIMIT} bytes ({size} given)"))
    return found


def _quantity_problem(quantity: Any, *, strings_only: bool) -> str | None:
    if strings_only and not isinstance(quantity, str):
        return f"{quantity!r} must be a quantity string such as '100m' or '1Gi'"
    if not isinstance(quantity, str) and not _is_int(quantity):
        return f"{quantity!r} must be an integer or a quantity string such as '1.5' or '100Gi'"
    if isinstance(quantity, str) and not _QUANTITY.match(quantity):
        return f"{quantity!r} is not a quantity (e.g. '500m', '4', '16Gi')"
    try:
        milli = parse_quantity(quantity)
    except QuantityError as exc:
        return str(exc)
    if milli < 0:
        return f"{quantity!r} must not be negative"
    return None


def check_quantity_map(field: str, value: Any, *, allowed_keys: Iterable[str] | None = None,
                       strings_only: bool = False) -> list[FieldIssue]:
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
        problem = _quantity_problem(quantity, strings_only=strings_only)
        if problem:
            issues.add(path, problem)
    return issues.items


# --- NodePool parts -------------------------------------------------------------------------------

def check_requirement(req: Any, issues: Issues, path: str) -> None:
    if not isinstance(req, Mapping):
        issues.add(path, "must be a mapping with key, operator and values")
        return
    unknown = _unknown(req, ("key", "operator", "values", "minValues"))
    if unknown:
        issues.add(path, unknown)
    key = req.get("key")
    problem = qualified_name_problem(key)
    if problem:
        issues.add(f"{path}.key", problem)
    else:
        restricted = restricted_label_problem(key)
        if restricted:
            issues.add(f"{path}.key", restricted)
    operator = req.get("operator")
    if operator in (None, ""):
        issues.add(f"{path}.operator", f"operator is required: one of {', '.join(OPERATORS)}")
        return
    if operator not in OPERATORS:
        issues.add(f"{path}.operator", f"{operator!r} is not one of {', '.join(OPERATORS)}")
        return
    values = req.get("values")
    if values is None:
        values = []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        issues.add(f"{path}.values", "must be a list of strings")
        return
    if operator == "In" and not values:
        issues.add(f"{path}.values", "operator 'In' needs at least one value")
    if operator in ("Exists", "DoesNotExist") and values:
        # The CRD's field description: "If the operator is Exists or DoesNotExist, the values array must be empty."
        issues.add(f"{path}.values", f"operator {operator!r} takes no values")
    if operator in NUMERIC_OPERATORS:
        # CEL: x.values.size() == 1 && int(x.values[0]) >= 0 (int() is a 64-bit integer).
        if len(values) != 1 or not _UINT.match(values[0]) or int(values[0]) > INT64_MAX:
            issues.add(f"{path}.values", f"operator {operator!r} needs exactly one non-negative integer value")
    for i, v in enumerate(values):
        vp = label_value_problem(v)
        if vp:
            issues.add(f"{path}.values[{i}]", vp)
    if req.get("minValues") is not None:
        mv = req["minValues"]
        if not _is_int(mv) or not 1 <= mv <= 50:
            issues.add(f"{path}.minValues", "must be an integer from 1 to 50")
        elif operator == "In" and len(values) < mv:
            issues.add(f"{path}.minValues", f"minValues {mv} needs at least {mv} values, {len(values)} given")


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
    unknown = _unknown(taint, ("key", "value", "effect", "timeAdded"))
    if unknown:
        issues.add(path, unknown)
    problem = qualified_name_problem(taint.get("key"))
    if problem:
        issues.add(f"{path}.key", problem)
    if taint.get("value") is not None:
        value = taint["value"]
        if value == "":
            # The CRD's pattern on taint values needs at least one character.
            issues.add(f"{path}.value", "must not be empty; leave value out instead")
        else:
            vp = label_value_problem(value)
            if vp:
                issues.add(f"{path}.value", vp)
    effect = taint.get("effect")
    if effect in (None, ""):
        issues.add(f"{path}.effect", f"effect is required: one of {', '.join(TAINT_EFFECTS)}")
    elif effect not in TAINT_EFFECTS:
        issues.add(f"{path}.effect", f"{effect!r} is not one of {', '.join(TAINT_EFFECTS)}")
    if taint.get("timeAdded") is not None and not isinstance(taint["timeAdded"], str):
        issues.add(f"{path}.timeAdded", "must be an RFC 3339 date-time string")


def check_taints(field: str, value: Any) -> list[FieldIssue]:
    issues = Issues(field)
    taints = _check_list(value, issues)
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints or []):
        check_taint(taint, issues, f"[{i}]")
        if isinstance(taint, Mapping):
            # Beyond the CRD: Kubernetes refuses a node with two taints of the same key and effect.
            ident = (str(taint.get("key")), str(taint.get("effect")))
            if ident in seen:
                issues.add(f"[{i}]", f"duplicate taint {ident[0]}:{ident[1]} (key and effect must be unique)")
            seen.add(ident)
    return issues.items


def _duration_problem(value: Any, pattern: re.Pattern[str], *, allow_never: bool) -> str | None:
    hint = "'30s', '5m', '720h', '1h30m'" + (" or 'Never'" if allow_never else "")
    if not isinstance(value, str) or not pattern.match(value):
        return f"invalid duration {value!r}: use whole numbers with s, m or h, e.g. {hint}"
    try:
        delta = parse_duration(value, allow_never=allow_never)
    except DurationError as exc:
        return str(exc)
    # Beyond the CRD: Go's time.Duration (what Karpenter decodes into) tops out at about 292 years.
    if delta is not None and delta.total_seconds() > _GO_MAX_SECONDS:
        return f"duration {value!r} is too long (at most about 2562047h)"
    return None


def check_duration(field: str, value: Any, *, allow_never: bool, required: bool = True) -> list[FieldIssue]:
    issues = Issues(field)
    if value is None or value == "":
        if required:
            issues.add("", "is required")
        return issues.items
    problem = _duration_problem(value, _DURATION_OR_NEVER if allow_never else _DURATION, allow_never=allow_never)
    if problem:
        issues.add("", problem)
    return issues.items


def _robfig_problem(schedule: str) -> str | None:
    """Beyond the CRD: what robfig/cron's standard parser (used by Karpenter) refuses although the
    CRD pattern lets it through -- day-of-week 7 (robfig's range is 0-6)."""
    fields = schedule.split()
    if len(fields) != 5:
        return None
    for part in fields[4].split(","):
        if "7" in part.split("/", 1)[0].split("-"):
            return "day of week 7 is not accepted by Karpenter's cron parser; use 0 for Sunday"
    return None


def check_budget(budget: Any, issues: Issues, path: str) -> None:
    if not isinstance(budget, Mapping):
        issues.add(path, "must be a mapping with nodes and optional schedule, duration, reasons")
        return
    unknown = _unknown(budget, ("nodes", "schedule", "duration", "reasons"))
    if unknown:
        issues.add(path, unknown)
    nodes = budget.get("nodes")
    if nodes is None or nodes == "":
        issues.add(f"{path}.nodes", "nodes is required: a node count (e.g. '5') or a percentage (e.g. '10%')")
    elif not isinstance(nodes, str) or not _BUDGET_NODES.match(nodes):
        issues.add(f"{path}.nodes", f"{nodes!r} must be a node count (e.g. '5') or a percentage 0-100% (e.g. '10%'), as a string")
    schedule, duration = budget.get("schedule"), budget.get("duration")
    # CEL: has(x.schedule) == has(x.duration)
    if (schedule is None) != (duration is None):
        issues.add(f"{path}.duration" if duration is None else f"{path}.schedule",
                   "'schedule' must be set with 'duration'")
    if schedule is not None:
        if not isinstance(schedule, str) or not _BUDGET_SCHEDULE.match(schedule):
            issues.add(f"{path}.schedule", f"invalid cron schedule {schedule!r}: use 5 fields "
                                           "(minute hour day-of-month month day-of-week) or a macro such as @daily")
        else:
            try:
                CronSchedule.parse(schedule)
            except CronError as exc:
                issues.add(f"{path}.schedule", f"invalid cron schedule {schedule!r}: {exc}")
            else:
                problem = _robfig_problem(schedule)
                if problem:
                    issues.add(f"{path}.schedule", f"invalid cron schedule {schedule!r}: {problem}")
    if duration is not None and (not isinstance(duration, str) or not _BUDGET_DURATION.match(duration)):
        issues.add(f"{path}.duration", f"{duration!r} must be hours and/or minutes, e.g. '10m', '8h', '1h30m'")
    reasons = budget.get("reasons")
    if reasons is not None:
        if not isinstance(reasons, list):
            issues.add(f"{path}.reasons", "must be a list")
        else:
            seen: set[Any] = set()
            for j, reason in enumerate(reasons):
                if reason not in BUDGET_REASONS:
                    issues.add(f"{path}.reasons[{j}]", f"{reason!r} is not one of {', '.join(BUDGET_REASONS)}")
                elif reason in seen:
                    issues.add(f"{path}.reasons[{j}]", f"{reason!r} is listed twice")
                seen.add(reason)


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


def check_static(data: Mapping[str, Any], before: Mapping[str, Any] | None) -> list[FieldIssue]:
    """spec.replicas and the CEL rules Karpenter v1.14 puts on a static NodePool (the NodePool spec's
    x-kubernetes-validations); ``before``: the stored pool's values, for the transition rule."""
    found: list[FieldIssue] = []
    replicas = data.get("replicas")
    if replicas is not None and (not _is_int(replicas) or not 0 <= replicas <= INT64_MAX):
        found.append(FieldIssue("replicas", "", f"{replicas!r} must be an integer from 0 to {INT64_MAX}"))
    if before is not None and (replicas is None) != (before.get("replicas") is None):
        found.append(FieldIssue("replicas", "", "Cannot transition NodePool between static (replicas set) and "
                                                "dynamic (replicas unset) provisioning modes"))
    if replicas is None:
        return found
    limits = data.get("limits")
    if isinstance(limits, Mapping) and set(limits) - {"nodes"}:
        found.append(FieldIssue("limits", "", "only 'limits.nodes' is supported on static NodePools"))
    if data.get("weight") is not None:
        found.append(FieldIssue("weight", "", "'weight' is not supported on static NodePools"))
    return found


def check_nodepool(data: Mapping[str, Any], *, before: Mapping[str, Any] | None = None) -> list[FieldIssue]:
    """Validate a NodePool given as model-field values (see models.NodePool); ``before``: the stored values of the
    pool being changed (None when it is created), for the rules on transitions."""
    found: list[FieldIssue] = []
    problem = object_name_problem(data.get("name"))
    if problem:
        found.append(FieldIssue("name", "", problem))
    found += check_object_metadata(data.get("metadata_labels"), data.get("metadata_annotations"))
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
    policy = data.get("consolidation_policy")
    if policy not in CONSOLIDATION_POLICIES:
        found.append(FieldIssue("consolidation_policy", "", f"{policy!r} is not one of {', '.join(CONSOLIDATION_POLICIES)}"))
    found += check_duration("consolidate_after", data.get("consolidate_after"), allow_never=True)
    found += check_budgets("budgets", data.get("budgets"))
    found += check_quantity_map("limits", data.get("limits"))
    weight = data.get("weight")
    if weight is not None and (not _is_int(weight) or not 1 <= weight <= 100):
        found.append(FieldIssue("weight", "", f"{weight!r} must be an integer from 1 to 100"))
    found += check_static(data, before)
    found += check_schedules(data)
    return found


def check_schedules(data: Mapping[str, Any]) -> list[FieldIssue]:
    """The clock-policy windows in the loadmaster.dev/schedules annotation, read by the engine's own parser (so
    the console refuses exactly what `plan` would); the issue is the annotations field's, at the window's path."""
    annotations = data.get("metadata_annotations")
    if not isinstance(annotations, Mapping) or SCHEDULES_ANNOTATION not in annotations:
        return []
    try:
        parse_windows(annotations[SCHEDULES_ANNOTATION], static=data.get("replicas") is not None,
                      path=SCHEDULES_ANNOTATION)
    except FieldError as e:
        return [FieldIssue("metadata_annotations", e.path, e.message)]
    return []


# --- EC2NodeClass ---------------------------------------------------------------------------------

def _check_selector_tags(tags: Any, issues: Issues, path: str) -> None:
    if not isinstance(tags, Mapping) or not tags:
        issues.add(path, "must be a non-empty mapping of tag: value")
        return
    if len(tags) > MAX_SELECTOR_TAGS:
        issues.add(path, f"at most {MAX_SELECTOR_TAGS} tags")
    for k, v in tags.items():
        if not isinstance(k, str) or not k or not isinstance(v, str) or not v:
            issues.add(f"{path}[{k}]", "empty tag keys or values aren't supported ('*' matches any value)")


def _check_terms(field: str, value: Any, *, allowed: tuple[str, ...], selecting: tuple[str, ...],
                 exclusive: Mapping[str, tuple[str, ...]], id_pattern: re.Pattern[str],
                 min_items: int = 1) -> tuple[list[FieldIssue], list[Any]]:
    """Shared rules of amiSelectorTerms, subnetSelectorTerms and securityGroupSelectorTerms."""
    issues = Issues(field)
    terms = _check_list(value, issues)
    if terms is None:
        return issues.items, []
    if len(terms) < min_items:
        issues.add("", "at least one selector term is required")
    if len(terms) > MAX_SELECTOR_TERMS:
        issues.add("", f"at most {MAX_SELECTOR_TERMS} selector terms")
    for i, term in enumerate(terms):
        path = f"[{i}]"
        if not isinstance(term, Mapping):
            issues.add(path, f"must be a mapping with one of {', '.join(selecting)}")
            continue
        unknown = _unknown(term, allowed)
        if unknown:
            issues.add(path, f"{unknown}; allowed: {', '.join(allowed)}")
        if not any(term.get(k) is not None for k in selecting):
            issues.add(path, f"set at least one of {', '.join(selecting)}")
        for key, others in exclusive.items():
            if term.get(key) is not None and any(term.get(o) is not None for o in others):
                issues.add(path, f"'{key}' cannot be combined with {', '.join(repr(o) for o in others)} in one term")
        for key in allowed:
            if key == "tags" or term.get(key) is None:
                continue
            if not isinstance(term[key], str) or not term[key]:
                issues.add(f"{path}.{key}", "must be a non-empty string")
        if isinstance(term.get("id"), str) and term["id"] and not id_pattern.search(term["id"]):
            issues.add(f"{path}.id", f"{term['id']!r} does not look like an id ({id_pattern.pattern})")
        if term.get("tags") is not None:
            _check_selector_tags(term["tags"], issues, f"{path}.tags")
    return issues.items, terms


def _check_alias(alias: Any, issues: Issues, path: str) -> None:
    if not isinstance(alias, str) or not alias:
        return  # reported as "must be a non-empty string"
    if len(alias) > 30:
        issues.add(path, "must be at most 30 characters")
    if not _ALIAS.match(alias):
        issues.add(path, f"{alias!r} must be 'family@version', e.g. 'al2023@latest' or 'bottlerocket@v1.20.0'")
        return
    family, version = alias.split("@", 1)
    if family not in ALIAS_FAMILIES:
        issues.add(path, f"family {family!r} is not supported; use one of {', '.join(ALIAS_FAMILIES)} (lowercase)")
    elif family.startswith("windows") and version != "latest":
        issues.add(path, "windows families may only use version 'latest'")


def check_nodeclass(data: Mapping[str, Any]) -> list[FieldIssue]:
    """Validate an EC2NodeClass given as model-field values (see models.EC2NodeClass)."""
    found: list[FieldIssue] = []
    problem = object_name_problem(data.get("name"))
    if problem:
        found.append(FieldIssue("name", "", problem))
    found += check_object_metadata(data.get("metadata_labels"), data.get("metadata_annotations"))

    ami_family = data.get("ami_family") or ""
    if ami_family and ami_family not in AMI_FAMILIES:
        found.append(FieldIssue("ami_family", "", f"{ami_family!r} is not one of {', '.join(AMI_FAMILIES)}"))
    ami_issues, ami_terms = _check_terms(
        "ami_selector_terms", data.get("ami_selector_terms"),
        allowed=("alias", "id", "name", "owner", "tags", "ssmParameter"),
        selecting=("tags", "id", "name", "alias", "ssmParameter"),
        exclusive={"id": ("alias", "tags", "name", "owner"), "alias": ("id", "tags", "name", "owner")},
        id_pattern=_AMI_ID)
    found += ami_issues
    issues = Issues("ami_selector_terms")
    aliases = [t.get("alias") for t in ami_terms if isinstance(t, Mapping) and t.get("alias") is not None]
    for i, term in enumerate(ami_terms):
        if isinstance(term, Mapping) and term.get("alias") is not None:
            _check_alias(term["alias"], issues, f"[{i}].alias")
    if aliases and len(ami_terms) > 1:
        issues.add("", "a term with 'alias' must be the only term")
    found += issues.items
    alias_families = {ALIAS_FAMILIES.get(str(a).split("@", 1)[0]) for a in aliases} - {None}
    if ami_family in AMI_FAMILIES:
        for implied in sorted(f for f in alias_families if f):
            if ami_family not in (implied, "Custom"):
                found.append(FieldIssue("ami_family", "", f"must be {implied} or Custom (or left empty) with a "
                                                          f"{implied} alias in amiSelectorTerms"))
    if not ami_family and isinstance(data.get("ami_selector_terms"), list) and not aliases:
        found.append(FieldIssue("ami_family", "", "amiFamily is required when amiSelectorTerms has no alias"))

    found += _check_terms("subnet_selector_terms", data.get("subnet_selector_terms"),
                          allowed=("id", "tags", "cidr"), selecting=("tags", "id", "cidr"),
                          exclusive={"id": ("tags",)}, id_pattern=_SUBNET_ID)[0]
    found += _check_terms("security_group_selector_terms", data.get("security_group_selector_terms"),
                          allowed=("id", "name", "tags"), selecting=("tags", "id", "name"),
                          exclusive={"id": ("tags", "name"), "name": ("tags", "id")}, id_pattern=_SG_ID)[0]

    role, profile = data.get("role") or "", data.get("instance_profile") or ""
    if bool(role) == bool(profile):
        found.append(FieldIssue("role", "", "set exactly one of role or instanceProfile"
                                + (" (not both)" if role else "")))
    issues = Issues("tags")
    tags = _check_mapping(data.get("tags"), issues)
    for key, value in (tags or {}).items():
        if not isinstance(key, str) or not key:
            issues.add(f"[{key}]", "empty tag keys aren't supported")
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
    if (data.get("instance_store_policy") or "") not in ("", "RAID0"):
        found.append(FieldIssue("instance_store_policy", "", f"{data.get('instance_store_policy')!r} is not RAID0"))
    for flag in ("detailed_monitoring", "associate_public_ip_address"):
        if data.get(flag) is not None and not isinstance(data.get(flag), bool):
            found.append(FieldIssue(flag, "", "must be true or false"))
    found += _check_capacity_reservation_terms(data.get("capacity_reservation_selector_terms"))
    issues = Issues("ip_prefix_count")
    _check_int32(data.get("ip_prefix_count"), issues, "")
    found += issues.items
    context = data.get("context")
    if context is not None and not isinstance(context, str):
        found.append(FieldIssue("context", "", "must be a string"))
    found += _check_connection_tracking(data.get("connection_tracking"))
    found += _check_cpu_options(data.get("cpu_options"))
    found += _check_network_interfaces(data.get("network_interfaces"))
    found += _check_placement_group_selector(data.get("placement_group_selector"))
    return found


def _check_connection_tracking(value: Any) -> list[FieldIssue]:
    """connectionTracking as the v1.14 CRD checks it; {} is what an absent field is stored as (an explicit {},
    which its CEL rule refuses, is refused by the import)."""
    issues = Issues("connection_tracking")
    tracking = _check_mapping(value, issues)
    if not tracking:
        return issues.items
    unknown = _unknown(tracking, CONNECTION_TRACKING_RANGES)
    if unknown:
        issues.add("", unknown)
    for key, (low, high) in CONNECTION_TRACKING_RANGES.items():
        _check_int32(tracking.get(key), issues, f".{key}", low, high)
    if all(tracking.get(key) is None for key in CONNECTION_TRACKING_RANGES):
        issues.add("", "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set")
    return issues.items


def _check_cpu_options(value: Any) -> list[FieldIssue]:
    issues = Issues("cpu_options")
    options = _check_mapping(value, issues)
    if not options:
        return issues.items
    unknown = _unknown(options, ("nestedVirtualization",))
    if unknown:
        issues.add("", unknown)
    nested = options.get("nestedVirtualization")
    if nested is not None and nested not in NESTED_VIRTUALIZATION:
        issues.add(".nestedVirtualization", f"{nested!r} is not one of {', '.join(NESTED_VIRTUALIZATION)}")
    return issues.items


def _check_network_interfaces(value: Any) -> list[FieldIssue]:
    """networkInterfaces as the v1.14 CRD checks them: each item's three required keys, then its two list-wide
    CEL rules (a primary interface; no repeated card/device pair, at most one efa-only per card)."""
    issues = Issues("network_interfaces")
    interfaces = _check_list(value, issues)
    if interfaces is None:
        return issues.items
    if len(interfaces) > MAX_NETWORK_INTERFACES:
        issues.add("", f"at most {MAX_NETWORK_INTERFACES} network interfaces")
    whole = True
    for i, ni in enumerate(interfaces):
        path = f"[{i}]"
        if not isinstance(ni, Mapping):
            issues.add(path, "must be a mapping with networkCardIndex, deviceIndex and interfaceType")
            whole = False
            continue
        unknown = _unknown(ni, ("networkCardIndex", "deviceIndex", "interfaceType"))
        if unknown:
            issues.add(path, unknown)
        for key in ("networkCardIndex", "deviceIndex", "interfaceType"):
            if ni.get(key) is None:
                issues.add(f"{path}.{key}", f"{key} is required")
                whole = False
        for key in ("networkCardIndex", "deviceIndex"):
            if ni.get(key) is not None and (not _is_int(ni[key]) or not 0 <= ni[key] <= INT32_MAX):
                issues.add(f"{path}.{key}", "must be a non-negative integer")
                whole = False
        kind = ni.get("interfaceType")
        if kind is not None and kind not in INTERFACE_TYPES:
            issues.add(f"{path}.interfaceType", f"{kind!r} is not one of {', '.join(INTERFACE_TYPES)}")
    if not whole or not interfaces:
        return issues.items
    if not any(ni["deviceIndex"] == 0 and ni["networkCardIndex"] == 0 and ni["interfaceType"] == "interface"
               for ni in interfaces):
        issues.add("", "networkInterfaces must include a primary interface with interfaceType='interface'")
    pairs = [(ni["networkCardIndex"], ni["deviceIndex"]) for ni in interfaces]
    efa_cards = [ni["networkCardIndex"] for ni in interfaces if ni["interfaceType"] == "efa-only"]
    if len(set(pairs)) != len(pairs) or len(set(efa_cards)) != len(efa_cards):
        issues.add("", "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and can "
                       "have at most one efa device per network card")
    return issues.items


def _check_placement_group_selector(value: Any) -> list[FieldIssue]:
    issues = Issues("placement_group_selector")
    selector = _check_mapping(value, issues)
    if not selector:
        return issues.items
    unknown = _unknown(selector, ("name", "id"))
    if unknown:
        issues.add("", unknown)
    name, pg_id = selector.get("name"), selector.get("id")
    if name is not None and (not isinstance(name, str) or not name):
        issues.add(".name", "must be a non-empty string")
    if pg_id is not None and (not isinstance(pg_id, str) or not _PLACEMENT_GROUP_ID.match(pg_id)):
        issues.add(".id", f"{pg_id!r} should match '^pg-[0-9a-z]+$'")
    if name is None and pg_id is None:
        issues.add("", "expected at least one, got none, ['name', 'id']")
    elif name is not None and pg_id is not None:
        issues.add("", "'name' and 'id' are mutually exclusive")
    return issues.items


CAPACITY_RESERVATION_TERM_KEYS = ("id", "ownerID", "tags", "instanceMatchCriteria")


def _check_capacity_reservation_terms(value: Any) -> list[FieldIssue]:
    """capacityReservationSelectorTerms as the v1.14 CRD checks them. Its exclusivity rule is list-wide CEL
    (`!self.all(...)`), so it is applied list-wide here too: 'id' with another key is refused when every term
    does it. [] is what an absent field is stored as; an explicit [] (which that rule refuses) is refused by
    the import (manifests.py)."""
    issues = Issues("capacity_reservation_selector_terms")
    terms = _check_list(value, issues)
    if terms is None:
        return issues.items
    if len(terms) > MAX_SELECTOR_TERMS:
        issues.add("", f"at most {MAX_SELECTOR_TERMS} selector terms")
    mixed = 0
    for i, term in enumerate(terms):
        path = f"[{i}]"
        if not isinstance(term, Mapping):
            issues.add(path, "must be a mapping with one of tags, id, instanceMatchCriteria")
            continue
        unknown = _unknown(term, CAPACITY_RESERVATION_TERM_KEYS)
        if unknown:
            issues.add(path, f"{unknown}; allowed: {', '.join(CAPACITY_RESERVATION_TERM_KEYS)}")
        if all(term.get(k) is None for k in ("tags", "id", "instanceMatchCriteria")):
            issues.add(path, "expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']")
        if term.get("id") is not None and any(term.get(k) is not None for k in ("tags", "ownerID", "instanceMatchCriteria")):
            mixed += 1
        cr_id = term.get("id")
        if cr_id is not None and (not isinstance(cr_id, str) or not _CAPACITY_RESERVATION_ID.match(cr_id)):
            issues.add(f"{path}.id", f"{cr_id!r} should match '^cr-[0-9a-z]+$'")
        owner = term.get("ownerID")
        if owner is not None and (not isinstance(owner, str) or not _OWNER_ID.match(owner)):
            issues.add(f"{path}.ownerID", f"{owner!r} should match '^[0-9]{{12}}$' (an AWS account id, as a string)")
        criteria = term.get("instanceMatchCriteria")
        if criteria is not None and criteria not in INSTANCE_MATCH_CRITERIA:
            issues.add(f"{path}.instanceMatchCriteria", f"{criteria!r} is not one of {', '.join(INSTANCE_MATCH_CRITERIA)}")
        if term.get("tags") is not None:
            _check_selector_tags(term["tags"], issues, f"{path}.tags")
    if terms and mixed == len(terms):
        issues.add("", "'id' is mutually exclusive, cannot be set along with other fields in a capacity reservation "
                       "selector term")
    return issues.items


def _check_block_devices(value: Any) -> list[FieldIssue]:
    issues = Issues("block_device_mappings")
    mappings = _check_list(value, issues)
    if mappings is None:
        return issues.items
    if len(mappings) > MAX_BLOCK_DEVICES:
        issues.add("", f"at most {MAX_BLOCK_DEVICES} block device mappings")
    roots = 0
    for i, bdm in enumerate(mappings):
        path = f"[{i}]"
        if not isinstance(bdm, Mapping):
            issues.add(path, "must be a mapping with deviceName, ebs and rootVolume")
            continue
        unknown = _unknown(bdm, ("deviceName", "ebs", "rootVolume"))
        if unknown:
            issues.add(path, unknown)
        if bdm.get("deviceName") is not None and (not isinstance(bdm["deviceName"], str) or not bdm["deviceName"]):
            issues.add(f"{path}.deviceName", "must be a device name such as /dev/xvda")
        if bdm.get("rootVolume") is not None and not isinstance(bdm["rootVolume"], bool):
            issues.add(f"{path}.rootVolume", "must be true or false")
        if bdm.get("rootVolume") is True:
            roots += 1
        ebs = bdm.get("ebs")
        if ebs is None:
            continue
        if not isinstance(ebs, Mapping):
            issues.add(f"{path}.ebs", "must be a mapping")
            continue
        unknown = _unknown(ebs, EBS_FIELDS)
        if unknown:
            issues.add(f"{path}.ebs", unknown)
        if ebs.get("snapshotID") is None and ebs.get("volumeSize") is None:
            issues.add(f"{path}.ebs", "snapshotID or volumeSize must be defined")
        size = ebs.get("volumeSize")
        if size is not None and (not isinstance(size, str) or not _VOLUME_SIZE.match(size)):
            issues.add(f"{path}.ebs.volumeSize", f"{size!r} must be a size in Gi, G, Ti or T, e.g. '100Gi' (at most 59000Gi)")
        if ebs.get("volumeType") is not None and ebs["volumeType"] not in VOLUME_TYPES:
            issues.add(f"{path}.ebs.volumeType", f"{ebs['volumeType']!r} is not one of {', '.join(VOLUME_TYPES)}")
        for key in ("iops", "throughput"):
            if ebs.get(key) is not None and (not _is_int(ebs[key]) or not 0 <= ebs[key] <= INT64_MAX):
                issues.add(f"{path}.ebs.{key}", "must be a non-negative integer")
        rate = ebs.get("volumeInitializationRate")
        if rate is not None:
            if not _is_int(rate) or not 100 <= rate <= 300:
                issues.add(f"{path}.ebs.volumeInitializationRate", "must be an integer from 100 to 300 (MiB/s)")
            if not ebs.get("snapshotID"):
                issues.add(f"{path}.ebs.volumeInitializationRate", "snapshotID must be set when volumeInitializationRate is set")
        for key in ("encrypted", "deleteOnTermination"):
            if ebs.get(key) is not None and not isinstance(ebs[key], bool):
                issues.add(f"{path}.ebs.{key}", "must be true or false")
        for key in ("kmsKeyID", "snapshotID"):
            if ebs.get(key) is not None and not isinstance(ebs[key], str):
                issues.add(f"{path}.ebs.{key}", "must be a string")
    if roots > 1:
        issues.add("", "must have only one blockDeviceMappings with rootVolume")
    return issues.items


def _check_int32(value: Any, issues: Issues, path: str, low: int = 0, high: int = INT32_MAX) -> None:
    if value is not None and (not _is_int(value) or not low <= value <= high):
        issues.add(path, f"must be an integer from {low} to {high}" if high != INT32_MAX
                   else "must be a non-negative integer" if low == 0 else f"must be an integer of at least {low}")


def _check_kubelet(value: Any) -> list[FieldIssue]:
    issues = Issues("kubelet")
    kubelet = _check_mapping(value, issues)
    if kubelet is None:
        return issues.items
    unknown = _unknown(kubelet, KUBELET_FIELDS)
    if unknown:
        issues.add("", unknown)
    for key in ("maxPods", "podsPerCore", "evictionMaxPodGracePeriod"):
        _check_int32(kubelet.get(key), issues, f".{key}")
    for key in ("imageGCHighThresholdPercent", "imageGCLowThresholdPercent"):
        _check_int32(kubelet.get(key), issues, f".{key}", 0, 100)
    high, low = kubelet.get("imageGCHighThresholdPercent"), kubelet.get("imageGCLowThresholdPercent")
    if _is_int(high) and _is_int(low) and not high > low:
        issues.add(".imageGCHighThresholdPercent", "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent")
    if kubelet.get("cpuCFSQuota") is not None and not isinstance(kubelet["cpuCFSQuota"], bool):
        issues.add(".cpuCFSQuota", "must be true or false")
    dns = kubelet.get("clusterDNS")
    if dns is not None and (not isinstance(dns, list) or not all(isinstance(ip, str) and ip for ip in dns)):
        issues.add(".clusterDNS", "must be a list of IP addresses")
    for key in ("systemReserved", "kubeReserved"):
        for item in check_quantity_map("kubelet", kubelet.get(key), allowed_keys=KUBELET_RESERVED_KEYS, strings_only=True):
            issues.add(f".{key}{item.path}", item.message)
    maps: dict[str, Mapping[str, Any]] = {}
    for key in ("evictionHard", "evictionSoft", "evictionSoftGracePeriod"):
        signals = kubelet.get(key)
        if signals is None:
            continue
        if not isinstance(signals, Mapping):
            issues.add(f".{key}", "must be a mapping of signal: " + ("grace period" if key.endswith("Period") else "threshold"))
            continue
        maps[key] = signals
        for signal, threshold in signals.items():
            if signal not in EVICTION_SIGNALS:
                issues.add(f".{key}.{signal}", f"unknown signal; allowed: {', '.join(EVICTION_SIGNALS)}")
            elif key == "evictionSoftGracePeriod":
                if not isinstance(threshold, str) or not _GO_DURATION.match(threshold):
                    issues.add(f".{key}.{signal}", f"{threshold!r} must be a duration such as '1m30s'")
            elif not isinstance(threshold, str) or not (
                    _EVICTION_PERCENT.match(threshold) or (_QUANTITY.match(threshold) and not threshold.startswith("-"))):
                issues.add(f".{key}.{signal}", f"{threshold!r} must be a quantity ('100Mi') or a percentage ('10%'), as a string")
    soft, grace = maps.get("evictionSoft", {}), maps.get("evictionSoftGracePeriod", {})
    for signal in soft:
        if signal in EVICTION_SIGNALS and signal not in grace:
            issues.add(f".evictionSoft.{signal}", "needs a matching evictionSoftGracePeriod")
    for signal in grace:
        if signal in EVICTION_SIGNALS and signal not in soft:
            issues.add(f".evictionSoftGracePeriod.{signal}", "needs a matching evictionSoft threshold")
    return issues.items


def _check_metadata_options(value: Any) -> list[FieldIssue]:
    issues = Issues("metadata_options")
    options = _check_mapping(value, issues)
    if options is None:
        return issues.items
    unknown = _unknown(options, (*METADATA_OPTION_ENUMS, "httpPutResponseHopLimit"))
    if unknown:
        issues.add("", unknown)
    for key, allowed in METADATA_OPTION_ENUMS.items():
        if options.get(key) is not None and options[key] not in allowed:
            issues.add(f".{key}", f"{options[key]!r} is not one of {', '.join(allowed)}")
    hop = options.get("httpPutResponseHopLimit")
    if hop is not None and (not _is_int(hop) or not 1 <= hop <= 64):
        issues.add(".httpPutResponseHopLimit", "must be an integer from 1 to 64")
    return issues.items
