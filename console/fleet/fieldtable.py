"""The fields of a NodePool and of an EC2NodeClass, each written once.

One :class:`FieldSpec` per model field says where the field lives in a Karpenter v1 manifest, what
Karpenter's CRD fills in when a manifest leaves it out, what kind of value it holds, and how the console
edits and shows it. Everything else reads these two tables:

* manifests.py: the YAML paths (import, export, the paths in error messages and in the change history),
  the CRD defaults applied on import, which fields must be strings or integers, which are written even
  when empty, and the key order of list items in an export;
* forms.py: the form inputs (field class, widget, label, help, initial value) and the inline row editors;
* api/serializers.py: the API's field list, the JSON field classes with their OpenAPI shape, the help
  texts, and the defaults a PUT gives to absent fields;
* the detail pages: one row per field, rendered by kind.

What is not here: the database column (models.py, whose defaults come from the same constants), the
rules a value must pass (validation.py: one function per field kind, with Karpenter's messages), and
where an input sits on the form page (templates/fleet/*_form.html; tests/fleet/test_field_table.py
fails when a table field has no input there). CONTRIBUTING.md ("Adding a NodePool field") lists the steps.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from console.fleet import validation
from packing.api import (
    BUDGET_NODES_DEFAULT,
    CONSOLIDATE_AFTER_DEFAULT,
    CONSOLIDATION_POLICY_DEFAULT,
    EXPIRE_AFTER_DEFAULT,
    ON_DEMAND_BASE_ANNOTATION,
    ON_DEMAND_PERCENTAGE_ANNOTATION,
    SCHEDULES_ANNOTATION,
)

NAME_MAX_LENGTH = 63  # a Kubernetes object name as Karpenter's CRDs cap it


class Kind(enum.Enum):
    """What a field holds; decides how import checks it, which API field carries it and how a page shows it."""

    NAME = "name"                      # metadata.name
    REFERENCE = "reference"            # the name of another object (nodeClassRef)
    STRING = "string"
    TEXT = "text"                      # a multi-line string (userData)
    DURATION = "duration"              # a Go duration as Karpenter writes it, or Never
    ENUM = "enum"                      # one of the field's choices
    INT = "int"
    BOOL = "bool"                      # true, false or not set (None)
    STRING_MAP = "string map"          # labels, annotations, tags
    QUANTITY_MAP = "quantity map"      # resource name -> quantity (limits)
    REQUIREMENTS = "requirements"      # node selector requirements
    TAINTS = "taints"
    BUDGETS = "budgets"                # disruption budgets
    SELECTOR_TERMS = "selector terms"  # a list of AMI / subnet / security group selector terms
    OBJECT_LIST = "object list"        # a list of mappings kept as written (blockDeviceMappings)
    OBJECT = "object"                  # a mapping kept as written (kubelet, metadataOptions)


# Kinds a manifest must give as a string: the model stores them in CharFields, and Django would turn 123 into "123".
STRING_KINDS = frozenset({Kind.NAME, Kind.REFERENCE, Kind.STRING, Kind.TEXT, Kind.DURATION, Kind.ENUM})
# Kinds stored as JSON exactly in Karpenter's spelling.
JSON_KINDS = frozenset({Kind.STRING_MAP, Kind.QUANTITY_MAP, Kind.REQUIREMENTS, Kind.TAINTS, Kind.BUDGETS,
                        Kind.SELECTOR_TERMS, Kind.OBJECT_LIST, Kind.OBJECT})


class Widget(enum.Enum):
    """How the form edits a field."""

    TEXT = "text"                  # one line of text
    TEXTAREA = "textarea"          # several lines, monospaced
    NUMBER = "number"
    SELECT = "select"              # one of the field's choices
    NULL_BOOLEAN = "null boolean"  # a select of not set / true / false
    KEY_VALUES = "key values"      # key=value, one per line
    YAML_LIST = "yaml list"        # a YAML list typed as text
    ROWS = "rows"                  # an inline table of rows, one form per list item
    PARTS = "parts"                # several inputs, one per key of the field's mapping (see Part)


class _Unset(enum.Enum):
    UNSET = "unset"


UNSET = _Unset.UNSET  # no CRD default: an absent field is an error (or handled by manifests.py)

Choices = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Part:
    """One input of a field edited through several (Widget.PARTS): the key it sets inside the field's mapping."""

    name: str       # the form field's name
    key: str        # the key inside the mapping, as in the manifest
    widget: Widget
    label: str
    choices: Choices = ()


@dataclass(frozen=True)
class FieldSpec:
    name: str                          # the model field
    path: tuple[str, ...]              # where it lives in the Karpenter v1 manifest
    kind: Kind
    label: str                         # on the form and the detail page
    widget: Widget
    default: Any = UNSET               # what Karpenter's CRD (the API server) fills in when the manifest leaves it out
    help: str = ""                     # under the form input
    api_help: str = ""                 # the API field's description; the YAML path when empty
    required: bool = False             # the form refuses it empty
    choices: Choices = ()              # Widget.SELECT / NULL_BOOLEAN: (value, label)
    crd_required: bool = False         # the CRD's "required": import refuses a manifest without it
    required_hint: str = ""            # added to the "is required" message
    export_empty: bool = False         # exported even when empty (required by the CRD, or empty differs from absent)
    item_keys: tuple[str, ...] = ()    # key order of list items in an export (PostgreSQL's jsonb keeps none)
    int_range: tuple[int, int] | None = None  # Kind.INT: what import accepts before validation runs
    datalist: str = ""                 # Widget.TEXT: id of the suggestions list the page provides
    rows_prefix: str = ""              # Widget.ROWS: the formset's prefix (the posted names: req-0-key)
    parts: tuple[Part, ...] = ()       # Widget.PARTS
    in_api: bool = True                # shown and written by the API

    @property
    def yaml_path(self) -> str:
        return ".".join(self.path)

    @property
    def has_default(self) -> bool:
        return self.default is not UNSET

    def fresh_default(self) -> Any:
        """The default as a new object: callers may change the lists and mappings they get."""
        return copy.deepcopy(self.default)


def _template(*keys: str) -> tuple[str, ...]:
    return ("spec", "template", "spec", *keys)


TAINT_KEYS = ("key", "value", "effect", "timeAdded")

# The object's own labels and annotations (not its nodes'): kept as written, and exported.
_METADATA_HELP = "The object's own metadata, e.g. kubernetes.io/description=…; not put on nodes."


def _metadata_fields() -> tuple[FieldSpec, FieldSpec]:
    return (FieldSpec("metadata_labels", ("metadata", "labels"), Kind.STRING_MAP, "Labels", Widget.KEY_VALUES,
                      default={}, help=_METADATA_HELP),
            FieldSpec("metadata_annotations", ("metadata", "annotations"), Kind.STRING_MAP, "Annotations",
                      Widget.KEY_VALUES, default={}, help=_METADATA_HELP))


NODEPOOL_FIELDS: tuple[FieldSpec, ...] = (
    FieldSpec("name", ("metadata", "name"), Kind.NAME, "Name", Widget.TEXT, required=True, export_empty=True,
              help="Becomes the karpenter.sh/nodepool label; cannot change later."),
    *_metadata_fields(),
    # Loadmaster's on-demand share (docs/engine.md): two annotations of the NodePool, each edited on its own and
    # taken out of the annotations above on import (manifests.py), so they export and import back unchanged.
    FieldSpec("on_demand_base", ("metadata", "annotations", ON_DEMAND_BASE_ANNOTATION), Kind.STRING,
              "On-demand base", Widget.TEXT, default="",
              help="Replicas of each workload this pool serves that run on on-demand nodes first (e.g. 2); "
                   "the rest prefer spot.",
              api_help=f"metadata.annotations[{ON_DEMAND_BASE_ANNOTATION}]: an integer, 0 or more, as a string."),
    FieldSpec("on_demand_percentage", ("metadata", "annotations", ON_DEMAND_PERCENTAGE_ANNOTATION), Kind.STRING,
              "On-demand percentage", Widget.TEXT, default="",
              help="Of the replicas above the base, this percentage (0-100, rounded up) on on-demand.",
              api_help=f"metadata.annotations[{ON_DEMAND_PERCENTAGE_ANNOTATION}]: an integer from 0 to 100, as a "
                       "string."),
    # Loadmaster's clock policies (docs/engine.md): windows kept in one annotation, edited as YAML on their own
    FieldSpec("schedules", ("metadata", "annotations", SCHEDULES_ANNOTATION), Kind.TEXT, "Clock policies",
              Widget.TEXTAREA, default="",
              help="Windows that change limits, consolidationPolicy or (static pools) replicas while open, as a "
                   "YAML list: - {name: peak, schedule: \"0 8 * * mon-fri\", duration: 10h, limits: {cpu: \"200\"}}",
              api_help=f"metadata.annotations[{SCHEDULES_ANNOTATION}]: a YAML list of windows (schedule, duration, "
                       "and limits, consolidationPolicy or replicas), as a string; empty: none."),
    FieldSpec("template_labels", ("spec", "template", "metadata", "labels"), Kind.STRING_MAP, "Node labels",
              Widget.KEY_VALUES, default={}),
    FieldSpec("template_annotations", ("spec", "template", "metadata", "annotations"), Kind.STRING_MAP,
              "Node annotations", Widget.KEY_VALUES, default={}),
    FieldSpec("node_class_name", _template("nodeClassRef", "name"), Kind.REFERENCE, "EC2NodeClass", Widget.TEXT,
              required=True, datalist="nodeclass-names"),
    FieldSpec("taints", _template("taints"), Kind.TAINTS, "Taints", Widget.ROWS, default=[],
              item_keys=TAINT_KEYS, rows_prefix="taint"),
    FieldSpec("startup_taints", _template("startupTaints"), Kind.TAINTS, "Startup taints", Widget.ROWS, default=[],
              item_keys=TAINT_KEYS, rows_prefix="stainit"),
    FieldSpec("requirements", _template("requirements"), Kind.REQUIREMENTS, "Requirements", Widget.ROWS, default=[],
              crd_required=True, required_hint="use [] to allow any instance type", export_empty=True,
              item_keys=("key", "operator", "values", "minValues"), rows_prefix="req"),
    FieldSpec("expire_after", _template("expireAfter"), Kind.DURATION, "Expire after", Widget.TEXT,
              default=EXPIRE_AFTER_DEFAULT, required=True, help="Duration (720h) or Never."),
    FieldSpec("termination_grace_period", _template("terminationGracePeriod"), Kind.DURATION,
              "Termination grace period", Widget.TEXT, default="", help="Optional, e.g. 48h."),
    FieldSpec("consolidation_policy", ("spec", "disruption", "consolidationPolicy"), Kind.ENUM,
              "Consolidation policy", Widget.SELECT, default=CONSOLIDATION_POLICY_DEFAULT, required=True,
              choices=tuple((p, p) for p in validation.CONSOLIDATION_POLICIES)),
    FieldSpec("consolidate_after", ("spec", "disruption", "consolidateAfter"), Kind.DURATION, "Consolidate after",
              Widget.TEXT, default=CONSOLIDATE_AFTER_DEFAULT, required=True, help="Duration (30s, 5m) or Never."),
    # budgets: [] (no budget: disruption unlimited) differs from an absent list (the CRD's one 10% budget).
    FieldSpec("budgets", ("spec", "disruption", "budgets"), Kind.BUDGETS, "Budgets", Widget.ROWS,
              default=[{"nodes": BUDGET_NODES_DEFAULT}], export_empty=True,
              item_keys=("nodes", "schedule", "duration", "reasons"), rows_prefix="budget"),
    FieldSpec("limits", ("spec", "limits"), Kind.QUANTITY_MAP, "Limits", Widget.KEY_VALUES, default={},
              help="cpu=1000, memory=1000Gi, nvidia.com/gpu=8, nodes=50",
              api_help="spec.limits: cpu, memory, nodes, nvidia.com/gpu…"),
    FieldSpec("weight", ("spec", "weight"), Kind.INT, "Weight", Widget.NUMBER, default=None, int_range=(1, 100),
              help="1-100; higher-weight pools are tried first.",
              api_help="spec.weight, 1-100: pools with a higher weight are tried first."),
    FieldSpec("replicas", ("spec", "replicas"), Kind.INT, "Replicas", Widget.NUMBER, default=None,
              int_range=(0, validation.INT64_MAX),
              help="Static NodePool: keep exactly this many nodes (only limits.nodes, no weight). Set when the pool "
                   "is created; a pool cannot switch between static and dynamic.",
              api_help="spec.replicas (static NodePool, Karpenter v1.14 alpha): the number of nodes to keep. Only "
                       "limits.nodes and no weight with it; cannot be added to or removed from an existing pool. "
                       "PATCH {\"replicas\": n} scales the pool."),
)

_METADATA_CHOICES = {
    "httpEndpoint": (("", "(default: enabled)"), ("enabled", "enabled"), ("disabled", "disabled")),
    "httpProtocolIPv6": (("", "(default: disabled)"), ("enabled", "enabled"), ("disabled", "disabled")),
    "httpTokens": (("", "(default: required)"), ("required", "required"), ("optional", "optional")),
}
_TERMS_HELP = "e.g. - tags: {karpenter.sh/discovery: my-cluster}"

NODECLASS_FIELDS: tuple[FieldSpec, ...] = (
    FieldSpec("name", ("metadata", "name"), Kind.NAME, "Name", Widget.TEXT, required=True, export_empty=True),
    *_metadata_fields(),
    FieldSpec("ami_family", ("spec", "amiFamily"), Kind.ENUM, "Ami family", Widget.SELECT, default="",
              choices=(("", "(from alias)"), *((f, f) for f in validation.AMI_FAMILIES))),
    FieldSpec("ami_selector_terms", ("spec", "amiSelectorTerms"), Kind.SELECTOR_TERMS, "Ami selector terms",
              Widget.YAML_LIST, default=[], crd_required=True, export_empty=True,
              help="e.g. - alias: al2023@latest"),
    FieldSpec("subnet_selector_terms", ("spec", "subnetSelectorTerms"), Kind.SELECTOR_TERMS, "Subnet selector terms",
              Widget.YAML_LIST, default=[], crd_required=True, export_empty=True, help=_TERMS_HELP),
    FieldSpec("security_group_selector_terms", ("spec", "securityGroupSelectorTerms"), Kind.SELECTOR_TERMS,
              "Security group selector terms", Widget.YAML_LIST, default=[], crd_required=True, export_empty=True,
              help=_TERMS_HELP),
    # Stored and exported; what Loadmaster does with reservations is the capacity issue's (not launched into yet).
    FieldSpec("capacity_reservation_selector_terms", ("spec", "capacityReservationSelectorTerms"),
              Kind.SELECTOR_TERMS, "Capacity reservation selector terms", Widget.YAML_LIST, default=[],
              item_keys=("id", "ownerID", "tags", "instanceMatchCriteria"),
              help="e.g. - tags: {team: ml}  or  - id: cr-0123456789abcdef0"),
    FieldSpec("role", ("spec", "role"), Kind.STRING, "Role", Widget.TEXT, default="",
              help="IAM role name for the instance profile Karpenter creates."),
    FieldSpec("instance_profile", ("spec", "instanceProfile"), Kind.STRING, "Instance profile", Widget.TEXT,
              default="", help="Or an existing instance profile (not both)."),
    FieldSpec("tags", ("spec", "tags"), Kind.STRING_MAP, "EC2 tags", Widget.KEY_VALUES, default={}),
    FieldSpec("block_device_mappings", ("spec", "blockDeviceMappings"), Kind.OBJECT_LIST, "Block device mappings",
              Widget.YAML_LIST, default=[], item_keys=("deviceName", "rootVolume", "ebs"),
              help="e.g. - deviceName: /dev/xvda\n  ebs: {volumeSize: 100Gi, volumeType: gp3}"),
    # The form shows the common kubelet settings; the others (evictionSoft, clusterDNS…) are kept as they were.
    FieldSpec("kubelet", ("spec", "kubelet"), Kind.OBJECT, "Kubelet", Widget.PARTS, default={}, parts=(
        Part("kubelet_max_pods", "maxPods", Widget.NUMBER, "kubelet maxPods"),
        Part("kubelet_pods_per_core", "podsPerCore", Widget.NUMBER, "kubelet podsPerCore"),
        Part("kubelet_system_reserved", "systemReserved", Widget.KEY_VALUES, "kubelet systemReserved"),
        Part("kubelet_kube_reserved", "kubeReserved", Widget.KEY_VALUES, "kubelet kubeReserved"),
        Part("kubelet_eviction_hard", "evictionHard", Widget.KEY_VALUES, "kubelet evictionHard"))),
    # Stored as written: an absent key means Karpenter's default, which Karpenter fills in when the export is
    # applied (see manifests.py); the choices say which default that is.
    FieldSpec("metadata_options", ("spec", "metadataOptions"), Kind.OBJECT, "Metadata options", Widget.PARTS,
              default={}, parts=(
                  Part("http_endpoint", "httpEndpoint", Widget.SELECT, "Http endpoint",
                       _METADATA_CHOICES["httpEndpoint"]),
                  Part("http_protocol_ipv6", "httpProtocolIPv6", Widget.SELECT, "httpProtocolIPv6",
                       _METADATA_CHOICES["httpProtocolIPv6"]),
                  Part("http_put_response_hop_limit", "httpPutResponseHopLimit", Widget.NUMBER,
                       "httpPutResponseHopLimit"),
                  Part("http_tokens", "httpTokens", Widget.SELECT, "Http tokens", _METADATA_CHOICES["httpTokens"]))),
    FieldSpec("user_data", ("spec", "userData"), Kind.TEXT, "User data", Widget.TEXTAREA, default=""),
    FieldSpec("ip_prefix_count", ("spec", "ipPrefixCount"), Kind.INT, "IPv4 prefix count", Widget.NUMBER, default=None,
              int_range=(0, validation.INT32_MAX),
              help="IPv4 prefixes assigned to the network interface (stored and exported; not applied at launch yet).",
              api_help="spec.ipPrefixCount, 0 or more."),
    FieldSpec("context", ("spec", "context"), Kind.STRING, "Context", Widget.TEXT, default="",
              help="EC2's reserved Context value for CreateFleet (stored and exported; not sent yet)."),
    # Karpenter v1.14's launch settings: sent in the launch template as the provider sends them (backends/aws.py).
    FieldSpec("connection_tracking", ("spec", "connectionTracking"), Kind.OBJECT, "Connection tracking", Widget.PARTS,
              default={}, parts=(
                  Part("ct_tcp_established_timeout", "tcpEstablishedTimeout", Widget.NUMBER,
                       "tcpEstablishedTimeout (s, 60-432000)"),
                  Part("ct_udp_stream_timeout", "udpStreamTimeout", Widget.NUMBER, "udpStreamTimeout (s, 60-180)"),
                  Part("ct_udp_timeout", "udpTimeout", Widget.NUMBER, "udpTimeout (s, 30-60)"))),
    FieldSpec("cpu_options", ("spec", "cpuOptions"), Kind.OBJECT, "CPU options", Widget.PARTS, default={}, parts=(
        Part("cpu_nested_virtualization", "nestedVirtualization", Widget.SELECT, "nestedVirtualization",
             (("", "(EC2 default)"), *((v, v) for v in validation.NESTED_VIRTUALIZATION))),)),
    FieldSpec("network_interfaces", ("spec", "networkInterfaces"), Kind.OBJECT_LIST, "Network interfaces",
              Widget.YAML_LIST, default=[], item_keys=("networkCardIndex", "deviceIndex", "interfaceType"),
              help="e.g. - {networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}\n"
                   "  - {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}"),
    FieldSpec("placement_group_selector", ("spec", "placementGroupSelector"), Kind.OBJECT, "Placement group",
              Widget.PARTS, default={}, parts=(
                  Part("placement_group_name", "name", Widget.TEXT, "Placement group name"),
                  Part("placement_group_id", "id", Widget.TEXT, "or placement group id (pg-…)"))),
    # The three below are not in the API yet: adding them changes its OpenAPI schema (a PUT keeps their values).
    FieldSpec("instance_store_policy", ("spec", "instanceStorePolicy"), Kind.ENUM, "Instance store policy",
              Widget.SELECT, default="", choices=(("", "(none)"), ("RAID0", "RAID0")), in_api=False,
              help="RAID0: use the local NVMe instance store for ephemeral storage."),
    FieldSpec("detailed_monitoring", ("spec", "detailedMonitoring"), Kind.BOOL, "Detailed monitoring",
              Widget.NULL_BOOLEAN, default=None, in_api=False,
              choices=(("unknown", "(default: off)"), ("true", "on"), ("false", "off"))),
    FieldSpec("associate_public_ip_address", ("spec", "associatePublicIPAddress"), Kind.BOOL,
              "Associate public IP address", Widget.NULL_BOOLEAN, default=None, in_api=False,
              choices=(("unknown", "(subnet default)"), ("true", "yes"), ("false", "no"))),
)


def by_name(fields: Iterable[FieldSpec]) -> dict[str, FieldSpec]:
    return {spec.name: spec for spec in fields}


NODEPOOL = by_name(NODEPOOL_FIELDS)
NODECLASS = by_name(NODECLASS_FIELDS)


def paths(fields: Iterable[FieldSpec]) -> dict[str, tuple[str, ...]]:
    return {spec.name: spec.path for spec in fields}


def defaults(fields: Iterable[FieldSpec]) -> dict[str, Any]:
    """The CRD defaults, for the fields that have one (what import and a PUT give an absent field)."""
    return {spec.name: spec.default for spec in fields if spec.has_default}


# --- detail pages -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class DetailRow:
    label: str
    kind: str     # Kind.value: the template picks the rendering by it
    value: Any
    text: str     # scalar kinds: the value as shown ("(none)" when not set, a choice's label)


def _text(spec: FieldSpec, value: Any) -> str:
    if spec.choices:
        key = value if spec.kind is not Kind.BOOL else {None: "unknown", True: "true", False: "false"}.get(value)
        label = dict(spec.choices).get(key)  # type: ignore[arg-type]
        if label is not None:
            return label
    if value is None or value == "":
        return "(none)"
    return str(value)


def detail_rows(fields: Iterable[FieldSpec], values: Mapping[str, Any]) -> list[DetailRow]:
    """The rows of an object's Spec table, in manifest order (the name is in the page's heading)."""
    return [DetailRow(spec.label, spec.kind.value, values.get(spec.name), _text(spec, values.get(spec.name)))
            for spec in fields if spec.kind is not Kind.NAME]
