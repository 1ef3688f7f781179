"""The AWS cloud backend: EC2 launch templates + CreateFleet, TerminateInstances, DescribeInstances, and
the EventBridge → SQS interruption queue, behind base.CloudProvider.

No Django here: the caller reads settings and passes region, cluster name, queue URL and clients in.

Shape of a launch (what Karpenter does, narrowed to one launch template per EC2NodeClass):
  1. adopt: an instance already tagged with this NodeClaim (a worker died after CreateFleet) is returned
     instead of launching a second one;
  2. the NodeClass's launch template is created, or a new version written when its content changed
     (the content hash is the version description, so an unchanged NodeClass costs one Describe call);
  3. CreateFleet type "instant", one node, up to 60 cheapest (type × zone) overrides with a subnet and an
     AMI of the right architecture each, a ClientToken derived from the NodeClaim and the overrides;
  4. capacity errors come back as LaunchError(unavailable=...) so the caller can mark those offerings
     unavailable and retry with the rest (launch_with_fallback does that loop).
"""

from __future__ import annotations

import base64
import email
import email.policy
import hashlib
import json
import logging
import math
import re
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from console.backends import aws_reservations
from console.backends.base import (
    TAG_CLUSTER,
    TAG_NODECLAIM,
    TAG_NODECLASS,
    TAG_NODEPOOL,
    UNREGISTERED_TAINT_KEY,
    CapacityReservation,
    CloudEvent,
    CloudProvider,
    Instance,
    LaunchError,
    LaunchOption,
    LaunchRequest,
)

log = logging.getLogger(__name__)

# CreateFleet accepts more, but Karpenter caps overrides at 60: past that the request gets slow and the
# extra pools are far more expensive than the cheapest ones anyway.
MAX_OVERRIDES = 60

# Every AWS API operation this module calls, as IAM actions (tests/backends/test_aws.py checks the list
# against the code in both directions), plus the actions IAM checks implicitly.
IAM_ACTIONS: list[str] = [
    "ec2:CreateFleet",
    "ec2:CreateLaunchTemplate",
    "ec2:CreateLaunchTemplateVersion",
    "ec2:DeleteLaunchTemplate",
    "ec2:DescribeCapacityReservations",
    "ec2:DescribeImages",
    "ec2:DescribeInstances",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:DescribePlacementGroups",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSubnets",
    "ec2:TerminateInstances",
    "sqs:DeleteMessage",
    "sqs:ReceiveMessage",
    "ssm:GetParameter",
]
# Not API calls of ours, but IAM evaluates them on our calls: CreateFleet launches through RunInstances,
# TagSpecifications on CreateFleet/CreateLaunchTemplate need CreateTags, and launching with an instance
# profile passes its role to EC2.
IMPLICIT_IAM_ACTIONS: dict[str, str] = {
    "ec2:RunInstances": "CreateFleet launches the instance through RunInstances",
    "ec2:CreateTags": "tags at creation (TagSpecifications on CreateFleet and CreateLaunchTemplate)",
    "iam:PassRole": "the launch template's instance profile hands its role to EC2",
}
IAM_POLICY_ACTIONS: list[str] = sorted([*IAM_ACTIONS, *IMPLICIT_IAM_ACTIONS])

# Errors CreateFleet reports per override when that pool cannot take the launch (Karpenter's list, plus
# the generic InsufficientCapacity): the offering is unavailable for a while, the others may be fine.
CAPACITY_ERROR_CODES = frozenset({
    "InsufficientInstanceCapacity",
    "InsufficientCapacity",
    "InsufficientHostCapacity",
    "InsufficientReservedInstanceCapacity",
    "UnfulfillableCapacity",
    "Unsupported",
    "MaxSpotInstanceCountExceeded",
    "VcpuLimitExceeded",
    "InsufficientFreeAddressesInSubnet",
    "ReservationCapacityExceeded",
    "SpotMaxPriceTooLow",
})
# Worth the same request again later; botocore already retried these with backoff before we see them.
THROTTLE_ERROR_CODES = frozenset({
    "RequestLimitExceeded", "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottled",
    "RequestThrottledException", "TooManyRequestsException", "EC2ThrottledException", "SlowDown",
})
TRANSIENT_ERROR_CODES = THROTTLE_ERROR_CODES | {
    "InternalError", "InternalFailure", "ServiceUnavailable", "Unavailable", "RequestTimeout",
    "RequestTimeoutException", "IdempotentParameterMismatch",
}

# Instances in these states hold (or will hold) capacity; "adopt" and GC look only at them.
LIVE_STATES = ("pending", "running")
NOT_TERMINATED_STATES = ("pending", "running", "shutting-down", "stopping", "stopped")
# State-change notifications that mean the node is going away (Karpenter acts on the same four).
LEAVING_STATES = frozenset({"stopping", "stopped", "shutting-down", "terminated"})

# Karpenter's default root volumes per AMI family, used when the NodeClass lists none.
_DEFAULT_BLOCK_DEVICES: dict[str, list[dict[str, Any]]] = {
    "AL2": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi", "volumeType": "gp3", "encrypted": True}}],
    "AL2023": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi", "volumeType": "gp3", "encrypted": True}}],
    "Bottlerocket": [
        {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "4Gi", "volumeType": "gp3", "encrypted": True}},
        {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "20Gi", "volumeType": "gp3", "encrypted": True}},
    ],
    "Windows2019": [{"deviceName": "/dev/sda1", "ebs": {"volumeSize": "50Gi", "volumeType": "gp3", "encrypted": True}}],
    "Windows2022": [{"deviceName": "/dev/sda1", "ebs": {"volumeSize": "50Gi", "volumeType": "gp3", "encrypted": True}}],
    "Windows2025": [{"deviceName": "/dev/sda1", "ebs": {"volumeSize": "50Gi", "volumeType": "gp3", "encrypted": True}}],
}
# Karpenter's IMDS defaults: IMDSv2 only, hop limit 1 so pods cannot reach the node's credentials.
_DEFAULT_METADATA = {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
                     "httpPutResponseHopLimit": 1, "httpTokens": "required"}
_ALIAS_FAMILIES = {"al2": "AL2", "al2023": "AL2023", "bottlerocket": "Bottlerocket",
                   "windows2019": "Windows2019", "windows2022": "Windows2022", "windows2025": "Windows2025"}
_WINDOWS_ALIASES = ("windows2019", "windows2022", "windows2025")
_INSTANCE_ID = re.compile(r"\bi-[0-9a-f]{8,17}\b")


def _now() -> datetime:
    return datetime.now(UTC)


def _digest(value: Any, length: int = 16) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:length]


def _field(nodeclass: Mapping[str, Any], snake: str, camel: str, default: Any = None) -> Any:
    """NodeClass values arrive as model fields (snake_case); accept the CRD spelling too, so a parsed
    EC2NodeClass spec works as well."""
    value = nodeclass.get(snake)
    if value is None:
        value = nodeclass.get(camel)
    return default if value is None else value


def instance_profile_for(nodeclass: Mapping[str, Any]) -> str:
    """The instance profile the launch template uses.

    instanceProfile is used as given. For role, Loadmaster does not create instance profiles (that would
    need iam:CreateInstanceProfile/AddRoleToInstanceProfile/PassRole on any role); it uses the instance
    profile named like the role, which is what the IAM console and CloudFormation's usual pattern
    create for an EC2 role. An ARN is reduced to its name.
    """
    profile = str(_field(nodeclass, "instance_profile", "instanceProfile", "") or "")
    if not profile:
        profile = str(_field(nodeclass, "role", "role", "") or "")
    return profile.rsplit("/", 1)[-1]


def launch_template_name(cluster: str, nodeclass_name: str) -> str:
    # Launch template names allow [a-zA-Z0-9()./_-], up to 128 characters.
    return re.sub(r"[^a-zA-Z0-9()./_-]", "-", f"loadmaster/{cluster}/{nodeclass_name}")[:128]


def ami_family(nodeclass: Mapping[str, Any]) -> str:
    """The AMI family: implied by an alias term, else amiFamily (validation requires one of the two)."""
    for term in _field(nodeclass, "ami_selector_terms", "amiSelectorTerms", []) or []:
        alias = term.get("alias") if isinstance(term, Mapping) else None
        if alias:
            return _ALIAS_FAMILIES.get(str(alias).split("@", 1)[0].lower(), "Custom")
    return str(_field(nodeclass, "ami_family", "amiFamily", "") or "Custom")


def volume_size_gib(size: str) -> int:
    """Karpenter's volumeSize ("100Gi", "100G", "1Ti", "1T") as the whole GiB EC2 wants, rounded up."""
    m = re.fullmatch(r"(\d+)(Gi|G|Ti|T)", size.strip())
    if not m:
        raise ValueError(f"volumeSize {size!r} is not a size in Gi, G, Ti or T")
    n, unit = int(m.group(1)), m.group(2)
    factor = {"Gi": 2**30, "G": 10**9, "Ti": 2**40, "T": 10**12}[unit]
    return math.ceil(n * factor / 2**30)


def block_device_mappings(nodeclass: Mapping[str, Any]) -> list[dict[str, Any]]:
    mappings = _field(nodeclass, "block_device_mappings", "blockDeviceMappings", []) or []
    if not mappings:
        mappings = _DEFAULT_BLOCK_DEVICES.get(ami_family(nodeclass), [])
    out: list[dict[str, Any]] = []
    for bdm in mappings:
        entry: dict[str, Any] = {"DeviceName": bdm.get("deviceName", "/dev/xvda")}
        ebs_in = bdm.get("ebs") or {}
        ebs: dict[str, Any] = {
            # Karpenter's default, and the safe one: a terminated node must not leave a billed volume.
            "DeleteOnTermination": ebs_in.get("deleteOnTermination", True),
        }
        if ebs_in.get("volumeSize") is not None:
            ebs["VolumeSize"] = volume_size_gib(str(ebs_in["volumeSize"]))
        for src, dst in (("volumeType", "VolumeType"), ("iops", "Iops"), ("throughput", "Throughput"),
                         ("encrypted", "Encrypted"), ("kmsKeyID", "KmsKeyId"), ("snapshotID", "SnapshotId"),
                         ("volumeInitializationRate", "VolumeInitializationRate")):
            if ebs_in.get(src) is not None:
                ebs[dst] = ebs_in[src]
        entry["Ebs"] = ebs
        out.append(entry)
    return out


def metadata_options(nodeclass: Mapping[str, Any]) -> dict[str, Any]:
    given = _field(nodeclass, "metadata_options", "metadataOptions", {}) or {}
    merged = {**_DEFAULT_METADATA, **{k: v for k, v in given.items() if v is not None}}
    return {"HttpEndpoint": merged["httpEndpoint"], "HttpProtocolIpv6": merged["httpProtocolIPv6"],
            "HttpPutResponseHopLimit": int(merged["httpPutResponseHopLimit"]), "HttpTokens": merged["httpTokens"]}


def connection_tracking(nodeclass: Mapping[str, Any]) -> dict[str, int] | None:
    """spec.connectionTracking as EC2's ConnectionTrackingSpecification, or None when nothing is set."""
    given = _field(nodeclass, "connection_tracking", "connectionTracking", {}) or {}
    names = {"tcpEstablishedTimeout": "TcpEstablishedTimeout", "udpStreamTimeout": "UdpStreamTimeout",
             "udpTimeout": "UdpTimeout"}
    spec = {ec2: int(given[key]) for key, ec2 in names.items() if given.get(key) is not None}
    return spec or None


def network_interfaces(nodeclass: Mapping[str, Any], groups: Sequence[str]) -> list[dict[str, Any]] | None:
    """The launch template's interfaces, as the provider builds them: the NodeClass's networkInterfaces, one
    each (efa-only ones without a public address or connection tracking, which EC2 refuses on them); else
    one primary interface when a public-address choice or connection tracking needs one; else None (the
    groups then go in SecurityGroupIds)."""
    public_ip = _field(nodeclass, "associate_public_ip_address", "associatePublicIPAddress")
    tracking = connection_tracking(nodeclass)
    listed = _field(nodeclass, "network_interfaces", "networkInterfaces", []) or []
    if listed:
        out = []
        for ni in listed:
            efa_only = ni.get("interfaceType") == "efa-only"
            entry: dict[str, Any] = {"NetworkCardIndex": int(ni["networkCardIndex"]),
                                     "DeviceIndex": int(ni["deviceIndex"]),
                                     "InterfaceType": str(ni["interfaceType"]), "Groups": list(groups)}
            if public_ip is not None and not efa_only:
                entry["AssociatePublicIpAddress"] = bool(public_ip)
            if tracking and not efa_only:
                entry["ConnectionTrackingSpecification"] = dict(tracking)
            out.append(entry)
        return out
    if public_ip is None and tracking is None:
        return None
    # The subnet still comes from each CreateFleet override; EC2 refuses groups both here and in
    # SecurityGroupIds, so they move onto the interface.
    primary: dict[str, Any] = {"DeviceIndex": 0}
    if public_ip is not None:
        primary["AssociatePublicIpAddress"] = bool(public_ip)
    primary["Groups"] = list(groups)
    if tracking:
        primary["ConnectionTrackingSpecification"] = tracking
    return [primary]


def cpu_options(nodeclass: Mapping[str, Any]) -> dict[str, str] | None:
    nested = (_field(nodeclass, "cpu_options", "cpuOptions", {}) or {}).get("nestedVirtualization")
    return {"NestedVirtualization": str(nested)} if nested else None


# --- user data ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ClusterInfo:
    """What a node needs to join: given, Loadmaster writes the bootstrap part of the user data (as
    Karpenter does); without it the NodeClass's userData is used verbatim and must join by itself."""

    name: str
    endpoint: str
    certificate_authority: str     # base64 PEM, as `aws eks describe-cluster` prints it
    service_cidr: str = "10.100.0.0/16"


def _mime_parts(user_data: str) -> list[tuple[str, str]]:
    """(content type, body) parts of a user's user data: MIME multipart as sent, or one part."""
    if user_data.lstrip().upper().startswith("MIME-VERSION"):
        msg = email.message_from_string(user_data, policy=email.policy.default)
        parts = []
        for part in msg.walk():
            if part.is_multipart():
                continue
            payload = part.get_payload(decode=True)
            body = payload.decode() if isinstance(payload, bytes) else str(part.get_payload())
            parts.append((part.get_content_type(), body))
        return parts
    if "kind: NodeConfig" in user_data:
        return [("application/node.eks.aws", user_data)]
    return [("text/x-shellscript", user_data)]


def _mime(parts: Iterable[tuple[str, str]]) -> str:
    """A multipart/mixed document as nodeadm and cloud-init read it (written by hand: the email package
    would re-encode bodies and pick its own boundary, changing the template hash on every run)."""
    lines = ["MIME-Version: 1.0", 'Content-Type: multipart/mixed; boundary="//"', ""]
    for content_type, body in parts:
        lines += ["--//", f'Content-Type: {content_type}; charset="us-ascii"', "", body.rstrip("\n")]
    lines.append("--//--")
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value))


def _toml(table: Mapping[str, Any], prefix: str = "") -> str:
    """A small TOML writer for Bottlerocket settings (nested tables of scalars and lists)."""
    scalars = [(k, v) for k, v in table.items() if not isinstance(v, Mapping)]
    tables = [(k, v) for k, v in table.items() if isinstance(v, Mapping)]
    lines = []
    if prefix and scalars:
        lines.append(f"[{prefix}]")
    lines += [f"{json.dumps(k) if not re.fullmatch(r'[A-Za-z0-9_-]+', k) else k} = {_toml_value(v)}"
              for k, v in scalars]
    out = "\n".join(lines) + ("\n" if lines else "")
    for k, v in tables:
        key = json.dumps(k) if not re.fullmatch(r"[A-Za-z0-9_-]+", k) else k
        out += ("\n" if out else "") + _toml(v, f"{prefix}.{key}" if prefix else key)
    return out


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    for k, v in extra.items():
        if isinstance(v, Mapping) and isinstance(base.get(k), dict):
            _merge(base[k], v)
        else:
            base[k] = v
    return base


def user_data_for(nodeclass: Mapping[str, Any], cluster: ClusterInfo | None) -> str:
    """The launch template's user data. Nodes register with the karpenter.sh/unregistered taint, which
    the Kubernetes backend removes once it has applied the NodeClaim's labels and taints (this is why a
    per-NodeClass launch template is enough: nothing NodePool-specific goes into user data)."""
    given = str(_field(nodeclass, "user_data", "userData", "") or "")
    family = ami_family(nodeclass)
    kubelet = dict(_field(nodeclass, "kubelet", "kubelet", {}) or {})
    raid0 = str(_field(nodeclass, "instance_store_policy", "instanceStorePolicy", "") or "") == "RAID0"
    if cluster is None or family not in ("AL2023", "AL2", "Bottlerocket"):
        return given
    taint = f"{UNREGISTERED_TAINT_KEY}=:NoExecute"
    if family == "AL2023":
        node_config: dict[str, Any] = {
            "apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig",
            "spec": {"cluster": {"name": cluster.name, "apiServerEndpoint": cluster.endpoint,
                                 "certificateAuthority": cluster.certificate_authority, "cidr": cluster.service_cidr},
                     "kubelet": {"config": kubelet, "flags": [f"--register-with-taints={taint}"]}},
        }
        if raid0:
            # instanceStorePolicy RAID0: nodeadm stripes the instance-store disks and puts kubelet and
            # containerd state on them.
            node_config["spec"]["instance"] = {"localStorage": {"strategy": "RAID0"}}
        # JSON is YAML, and nodeadm reads YAML: no YAML writer needed.
        return _mime([*(_mime_parts(given) if given else []),
                      ("application/node.eks.aws", json.dumps(node_config, indent=2))])
    if family == "AL2":
        extra = [f"--register-with-taints={taint}"]
        if kubelet.get("maxPods") is not None:
            extra.append(f"--max-pods={int(kubelet['maxPods'])}")
        script = ("#!/bin/bash -xe\nexec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n"
                  f"/etc/eks/bootstrap.sh {json.dumps(cluster.name)} --apiserver-endpoint {json.dumps(cluster.endpoint)} "
                  f"--b64-cluster-ca {json.dumps(cluster.certificate_authority)} "
                  + ("--use-max-pods false " if kubelet.get("maxPods") is not None else "")
                  + ("--local-disks raid0 " if raid0 else "")
                  + f"--kubelet-extra-args {json.dumps(' '.join(extra))}\n")
        return _mime([*(_mime_parts(given) if given else []), ("text/x-shellscript", script)])
    # Bottlerocket: one TOML document; ours is merged over the user's so the join settings win.
    settings: dict[str, Any] = tomllib.loads(given) if given.strip() else {}
    k8s: dict[str, Any] = {"cluster-name": cluster.name, "api-server": cluster.endpoint,
                           "cluster-certificate": cluster.certificate_authority,
                           "node-taints": {UNREGISTERED_TAINT_KEY: ["NoExecute"]}}
    for src, dst in (("maxPods", "max-pods"), ("clusterDNS", "cluster-dns-ip"), ("systemReserved", "system-reserved"),
                     ("kubeReserved", "kube-reserved"), ("evictionHard", "eviction-hard"),
                     ("imageGCHighThresholdPercent", "image-gc-high-threshold-percent"),
                     ("imageGCLowThresholdPercent", "image-gc-low-threshold-percent"),
                     ("cpuCFSQuota", "cpu-cfs-quota-enforced")):
        if kubelet.get(src) is not None:
            k8s[dst] = kubelet[src]
    return _toml(_merge(settings, {"settings": {"kubernetes": k8s}}))


# --- architecture of an instance type ------------------------------------------------------------

def default_architecture(region: str) -> Callable[[str], str]:
    """instance type -> EC2 architecture ("x86_64" | "arm64"), from the bundled catalog, else by name
    (Graviton families carry a "g" after the generation digit: m7g, c6gn, r8gd, t4g; a1 is arm64)."""
    specs: Mapping[str, Any] = {}
    try:
        from packing.api import load_bundled
        specs = load_bundled(region).specs
    except Exception:  # an unknown region or an unreadable snapshot only loses the lookup
        specs = {}

    def arch(instance_type: str) -> str:
        spec = specs.get(instance_type)
        if spec is not None:
            return "arm64" if spec.arch == "arm64" else "x86_64"
        family = instance_type.split(".", 1)[0]
        if family == "a1" or (re.fullmatch(r"[a-z]+\d+[a-z]*g[a-z]*", family) and not family.startswith("mac")):
            return "arm64"
        return "x86_64"

    return arch


# --- the provider ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Template:
    name: str
    version: str
    images: Mapping[str, str]          # architecture -> AMI id
    subnets: Mapping[str, str]         # zone -> subnet id (the one with the most free addresses)
    tags: Mapping[str, str]            # NodeClass-level tags, also on the template's instances


def _tag_filters(tags: Mapping[str, str]) -> list[dict[str, Any]]:
    # "*" selects on the key alone (Karpenter's convention).
    return [{"Name": "tag-key", "Values": [k]} if v == "*" else {"Name": f"tag:{k}", "Values": [v]}
            for k, v in tags.items()]


def _tags(resource: Mapping[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in resource.get("Tags") or []}


def _error_code(e: ClientError) -> str:
    return str(e.response.get("Error", {}).get("Code", ""))


class AWSCloudProvider:
    """base.CloudProvider on EC2 + SSM + SQS.

    Pass a boto3 Session (clients are made with retry config for throttling), or ready clients (tests).
    """

    # DescribeInstances page size (AWS allows 5..1000 with filters); tests lower it to see pagination.
    describe_page_size = 500

    def __init__(
        self,
        session: Any = None,
        *,
        region: str,
        cluster_name: str,
        queue_url: str | None = None,
        ec2: Any = None,
        ssm: Any = None,
        sqs: Any = None,
        endpoint_url: str | None = None,
        kubernetes_version: str | None = None,
        cluster: ClusterInfo | None = None,
        architecture: Callable[[str], str] | None = None,
        max_attempts: int = 8,
        retry_mode: str = "standard",
        sqs_wait_seconds: int = 1,
        cache_ttl: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if session is None and (ec2 is None or ssm is None or sqs is None):
            import boto3
            session = boto3.Session(region_name=region)
        # botocore retries throttling (RequestLimitExceeded, Throttling...) and 5xx with exponential
        # backoff and jitter ("standard" mode; "adaptive" adds client-side rate limiting but botocore
        # still calls it experimental). What still fails after max_attempts tries in all reaches the caller.
        config = Config(region_name=region, retries={"mode": retry_mode, "total_max_attempts": max_attempts},
                        connect_timeout=10, read_timeout=60)
        self._ec2 = ec2 or session.client("ec2", config=config, endpoint_url=endpoint_url)
        self._ssm = ssm or session.client("ssm", config=config, endpoint_url=endpoint_url)
        self._sqs = sqs or session.client("sqs", config=config, endpoint_url=endpoint_url)
        self.region = region
        self.cluster_name = cluster_name
        self.queue_url = queue_url
        self.kubernetes_version = kubernetes_version
        self.cluster = cluster
        self._architecture = architecture or default_architecture(region)
        self._sqs_wait = sqs_wait_seconds
        self._ttl = cache_ttl
        self._clock = clock
        self._cache: dict[str, tuple[float, Any]] = {}
        # SQS receipt -> events of that message not yet acked (an AWS Health event names several
        # instances; the message is deleted once all of them are handled).
        self._outstanding: dict[str, int] = {}

    # -- small cache for lookups that change rarely (AMIs, subnets, security groups, templates) --

    def _cached(self, key: str, load: Callable[[], Any], ttl: float | None = None) -> Any:
        hit = self._cache.get(key)
        now = self._clock()
        if hit is not None and now - hit[0] < (self._ttl if ttl is None else ttl):
            return hit[1]
        value = load()
        self._cache[key] = (now, value)
        return value

    def invalidate_caches(self) -> None:
        self._cache.clear()

    # -- launch ----------------------------------------------------------------------------------

    def launch(self, request: LaunchRequest) -> Instance:
        try:
            return self._launch(request)
        except ClientError as e:
            code = _error_code(e)
            stale = code.startswith(("InvalidLaunchTemplate", "InvalidAMIID", "InvalidSubnetID", "InvalidGroup"))
            if stale:
                # Someone deleted the template (or an AMI, subnet, group) behind our cache: look again
                # on the next attempt instead of failing until the cache expires.
                self.invalidate_caches()
            raise LaunchError(f"{e.operation_name} failed: {code}: {e}",
                              retryable=stale or code in TRANSIENT_ERROR_CODES) from e
        except BotoCoreError as e:
            # Connection reset, read timeout, endpoint unreachable: the same request (same ClientToken)
            # may be sent again safely.
            raise LaunchError(f"AWS unreachable: {e}", retryable=True) from e

    def _launch(self, request: LaunchRequest) -> Instance:
        if not request.options:
            raise LaunchError(f"NodeClaim {request.nodeclaim}: no launch options")
        cluster = request.cluster or self.cluster_name
        existing = self.find_claimed(request.nodeclaim, cluster)
        if existing is not None:
            log.info("NodeClaim %s already has instance %s; adopting it", request.nodeclaim, existing.instance_id)
            return replace(existing, price=_price_of(existing, request.options))

        zones = sorted({o.zone for o in request.options})
        if min(request.options, key=lambda o: o.price).capacity_type == "reserved":
            return self._launch_reserved(request, cluster, zones)
        template = self.ensure_launch_template(request.nodeclass, cluster, zones=zones)
        # One capacity type per fleet, as Karpenter does: the cheapest option's first (spot whenever spot
        # is allowed and priced below on-demand, which is what the engine planned with), the other one
        # only if nothing of the first can launch here (no subnet in its zones, no AMI for its arch).
        by_price = sorted(request.options, key=lambda o: o.price)
        overrides: list[dict[str, Any]] = []
        chosen: list[LaunchOption] = []
        skipped_arch: set[str] = set()
        capacity = by_price[0].capacity_type
        for capacity in dict.fromkeys(o.capacity_type for o in by_price):
            seen: set[tuple[str, str]] = set()
            for option in (o for o in by_price if o.capacity_type == capacity):
                if (option.instance_type, option.zone) in seen or option.zone not in template.subnets:
                    continue
                image = template.images.get(self._architecture(option.instance_type))
                if image is None:
                    skipped_arch.add(option.instance_type)
                    continue
                seen.add((option.instance_type, option.zone))
                overrides.append({"InstanceType": option.instance_type, "SubnetId": template.subnets[option.zone],
                                  "ImageId": image})
                chosen.append(option)
                if len(overrides) == MAX_OVERRIDES:
                    break
            if overrides:
                break
        if not overrides:
            why = (f"no AMI for the architecture of {', '.join(sorted(skipped_arch))}" if skipped_arch
                   else f"no subnet of NodeClass {self._nodeclass_name(request.nodeclass)} in zones {', '.join(zones)}")
            raise LaunchError(f"NodeClaim {request.nodeclaim}: nothing to launch ({why})")

        configs = [{"LaunchTemplateSpecification": {"LaunchTemplateName": template.name, "Version": template.version},
                    "Overrides": overrides}]
        allocation: dict[str, Any] = (
            {"SpotOptions": {"AllocationStrategy": "price-capacity-optimized"}} if capacity == "spot"
            else {"OnDemandOptions": {"AllocationStrategy": "lowest-price"}})
        return self._create_fleet(request, cluster, zones, template, configs, chosen, capacity, capacity, allocation)

    def _launch_reserved(self, request: LaunchRequest, cluster: str, zones: Sequence[str]) -> Instance:
        """A launch into capacity reservations: one launch template per reservation, each targeting it with
        capacity-reservations-only and carrying the one override that fits it (its type in its zone), so the
        instance lands in one of these reservations or nowhere (Karpenter's launch of a reserved NodeClaim)."""
        candidates = aws_reservations.partition(request.options)
        configs: list[dict[str, Any]] = []
        chosen: list[LaunchOption] = []
        template: _Template | None = None
        skipped_arch: set[str] = set()
        for option in candidates:
            template = self.ensure_launch_template(request.nodeclass, cluster, zones=zones, reservation=option)
            if option.zone not in template.subnets:
                continue
            image = template.images.get(self._architecture(option.instance_type))
            if image is None:
                skipped_arch.add(option.instance_type)
                continue
            configs.append({
                "LaunchTemplateSpecification": {"LaunchTemplateName": template.name, "Version": template.version},
                "Overrides": [{"InstanceType": option.instance_type, "SubnetId": template.subnets[option.zone],
                               "ImageId": image}]})
            chosen.append(option)
            if len(configs) == MAX_OVERRIDES:
                break
        if not configs or template is None:
            why = (f"no AMI for the architecture of {', '.join(sorted(skipped_arch))}" if skipped_arch
                   else "no reserved option with a reservation id and a subnet in its zone")
            raise LaunchError(f"NodeClaim {request.nodeclaim}: nothing to launch into a reservation ({why})")
        return self._create_fleet(request, cluster, zones, template, configs, chosen, "reserved",
                                  aws_reservations.fleet_capacity_type(chosen[0]),
                                  aws_reservations.fleet_options(chosen[0]))

    def _create_fleet(self, request: LaunchRequest, cluster: str, zones: Sequence[str], template: _Template,
                      configs: list[dict[str, Any]], chosen: Sequence[LaunchOption], capacity: str, target_type: str,
                      allocation: Mapping[str, Any]) -> Instance:
        tags = {**template.tags, TAG_NODEPOOL: request.nodepool, TAG_NODECLAIM: request.nodeclaim}
        tag_list = [{"Key": k, "Value": v} for k, v in sorted(tags.items())]
        params: dict[str, Any] = {
            "Type": "instant",
            "LaunchTemplateConfigs": configs,
            "TargetCapacitySpecification": {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": target_type},
            "TagSpecifications": [{"ResourceType": "instance", "Tags": tag_list},
                                  {"ResourceType": "volume", "Tags": tag_list}],
            **allocation,
        }
        # Same NodeClaim + same request => same token => AWS returns the first call's result instead of
        # launching again (botocore's own retries and a re-run task send exactly this). A retry after a
        # capacity error has fewer overrides, hence a new token (reusing one with other parameters is
        # IdempotentParameterMismatch); find_claimed above covers a launch that went through meanwhile.
        params["ClientToken"] = f"lm-{_digest([cluster, request.nodeclaim, params], 40)}"

        try:
            response = self._ec2.create_fleet(**params)
        except ClientError as e:
            if _error_code(e) == "IdempotentParameterMismatch":
                # Another worker used this token for the same claim: whatever it launched is the claim's.
                adopted = self.find_claimed(request.nodeclaim, cluster)
                if adopted is not None:
                    return replace(adopted, price=_price_of(adopted, request.options))
            raise
        zone_of_subnet = {s: z for z, s in template.subnets.items()}
        for fleet_instance in response.get("Instances") or []:
            ids = fleet_instance.get("InstanceIds") or []
            if not ids:
                continue
            if len(ids) > 1 or len(response["Instances"]) > 1:
                log.error("CreateFleet for %s returned several instances: %s", request.nodeclaim, response["Instances"])
            ov = (fleet_instance.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
            itype = fleet_instance.get("InstanceType") or ov.get("InstanceType", "")
            zone = ov.get("AvailabilityZone") or zone_of_subnet.get(ov.get("SubnetId", ""), "")
            lifecycle = fleet_instance.get("Lifecycle") or capacity
            reservation = ""
            if capacity == "reserved":
                lt_name = ((fleet_instance.get("LaunchTemplateAndOverrides") or {})
                           .get("LaunchTemplateSpecification") or {}).get("LaunchTemplateName")
                reservation = next((o.reservation_id for o in chosen if lt_name and lt_name == launch_template_name(
                    cluster, f"{self._nodeclass_name(request.nodeclass)}/{o.reservation_id}")), "") or next(
                    (o.reservation_id for o in chosen if (o.instance_type, o.zone) == (itype, zone)), "")
            instance = Instance(instance_id=ids[0], instance_type=itype, zone=zone,
                                capacity_type="reserved" if capacity == "reserved"
                                else "spot" if lifecycle == "spot" else "on-demand",
                                state="pending", launch_time=_now(), tags=tags, reservation_id=reservation)
            for err in response.get("Errors") or []:
                log.info("CreateFleet for %s: %s on %s (launched elsewhere)", request.nodeclaim,
                         err.get("ErrorCode"), (err.get("LaunchTemplateAndOverrides") or {}).get("Overrides"))
            return replace(instance, price=_price_of(instance, chosen))

        errors = response.get("Errors") or []
        unavailable = _unavailable_options(errors, chosen, capacity, zone_of_subnet)
        codes = sorted({str(e.get("ErrorCode")) for e in errors}) or ["no instance and no error"]
        stale = any(c.startswith(("InvalidLaunchTemplate", "InvalidAMIID", "InvalidSubnetID", "InvalidGroup"))
                    for c in codes)
        if stale:
            self.invalidate_caches()
        elif "InsufficientFreeAddressesInSubnet" in codes:
            self._cache.pop(self._subnet_key(request.nodeclass, zones), None)
        message = f"CreateFleet for {request.nodeclaim} launched nothing: {', '.join(codes)}"
        detail = "; ".join(str(e.get("ErrorMessage", "")) for e in errors[:3] if e.get("ErrorMessage"))
        raise LaunchError(message + (f" ({detail})" if detail else ""), unavailable=unavailable,
                          retryable=not errors or stale or any(c in TRANSIENT_ERROR_CODES for c in codes))

    def find_claimed(self, nodeclaim: str, cluster: str | None = None) -> Instance | None:
        """The live instance tagged with this NodeClaim, if any (the trace a crashed launch leaves)."""
        found = self._describe([
            {"Name": f"tag:{TAG_NODECLAIM}", "Values": [nodeclaim]},
            {"Name": f"tag:{TAG_CLUSTER}", "Values": [cluster or self.cluster_name]},
            {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
        ])
        if len(found) > 1:
            log.error("NodeClaim %s has %d instances: %s", nodeclaim, len(found), [i.instance_id for i in found])
        # The oldest is the one to keep; GC terminates the others (no NodeClaim owns them).
        found.sort(key=lambda i: (i.launch_time or _now(), i.instance_id))
        return found[0] if found else None

    # -- launch template ---------------------------------------------------------------------------

    @staticmethod
    def _nodeclass_name(nodeclass: Mapping[str, Any]) -> str:
        return str(nodeclass.get("name") or "default")

    def _subnet_key(self, nodeclass: Mapping[str, Any], zones: Sequence[str]) -> str:
        return "subnets:" + _digest([_field(nodeclass, "subnet_selector_terms", "subnetSelectorTerms", []), zones])

    def ensure_launch_template(self, nodeclass: Mapping[str, Any], cluster: str | None = None, *,
                               zones: Sequence[str] = (), reservation: LaunchOption | None = None) -> _Template:
        """Create or update (idempotently) the NodeClass's launch template; resolve AMIs and subnets. With a
        `reservation` (a reserved launch option), the NodeClass's template for that one capacity reservation."""
        cluster = cluster or self.cluster_name
        name = self._nodeclass_name(nodeclass)
        images = self._cached("amis:" + _digest([_field(nodeclass, "ami_selector_terms", "amiSelectorTerms", []),
                                                 self.kubernetes_version]),
                              lambda: self.resolve_amis(nodeclass))
        if not images:
            raise LaunchError(f"NodeClass {name}: amiSelectorTerms match no AMI")
        subnets = self._cached(self._subnet_key(nodeclass, zones), lambda: self.resolve_subnets(nodeclass, zones),
                               ttl=min(self._ttl, 60.0))
        if not subnets:
            raise LaunchError(f"NodeClass {name}: subnetSelectorTerms match no subnet with free addresses"
                              f" in {', '.join(zones) or 'any zone'}")
        groups = self._cached("sgs:" + _digest(_field(nodeclass, "security_group_selector_terms",
                                                      "securityGroupSelectorTerms", [])),
                              lambda: self.resolve_security_groups(nodeclass))
        if not groups:
            raise LaunchError(f"NodeClass {name}: securityGroupSelectorTerms match no security group")
        tags = {**{str(k): str(v) for k, v in (_field(nodeclass, "tags", "tags", {}) or {}).items()},
                TAG_CLUSTER: cluster, TAG_NODECLASS: name, f"kubernetes.io/cluster/{cluster}": "owned"}
        tag_list = [{"Key": k, "Value": v} for k, v in sorted(tags.items())]
        data: dict[str, Any] = {
            "BlockDeviceMappings": block_device_mappings(nodeclass),
            "MetadataOptions": metadata_options(nodeclass),
            "TagSpecifications": [{"ResourceType": "instance", "Tags": tag_list},
                                  {"ResourceType": "volume", "Tags": tag_list}],
            # The AMI goes into each CreateFleet override (one per architecture); this default only
            # matters to someone launching from the template by hand.
            "ImageId": images.get("x86_64") or next(iter(images.values())),
        }
        interfaces = network_interfaces(nodeclass, groups)
        if interfaces is None:
            data["SecurityGroupIds"] = list(groups)
        else:
            data["NetworkInterfaces"] = interfaces
        cpu = cpu_options(nodeclass)
        if cpu:
            data["CpuOptions"] = cpu
        placement = self._placement_group(nodeclass)
        if placement:
            data["Placement"] = placement
        monitoring = _field(nodeclass, "detailed_monitoring", "detailedMonitoring")
        if monitoring is not None:
            data["Monitoring"] = {"Enabled": bool(monitoring)}
        profile = instance_profile_for(nodeclass)
        if profile:
            data["IamInstanceProfile"] = {"Name": profile}
        user_data = user_data_for(nodeclass, self.cluster)
        if user_data:
            data["UserData"] = base64.b64encode(user_data.encode()).decode()
        lt_name = launch_template_name(cluster, name)
        if reservation is not None:
            data.update(aws_reservations.template_data(reservation))
            lt_name = launch_template_name(cluster, f"{name}/{reservation.reservation_id}")
        description = f"loadmaster {_digest(data)}"
        version = self._cached(f"lt:{lt_name}:{description}", lambda: self._write_template(lt_name, data, description, tags))
        return _Template(name=lt_name, version=version, images=images, subnets=subnets, tags=tags)

    def _placement_group(self, nodeclass: Mapping[str, Any]) -> dict[str, str] | None:
        """spec.placementGroupSelector as the template's Placement.GroupId; a name is resolved to its id
        first, as the provider does, so a missing group fails the launch here with its name."""
        selector = _field(nodeclass, "placement_group_selector", "placementGroupSelector", {}) or {}
        if selector.get("id"):
            return {"GroupId": str(selector["id"])}
        name = selector.get("name")
        if not name:
            return None

        def resolve() -> str:
            try:
                found = self._ec2.describe_placement_groups(GroupNames=[str(name)])["PlacementGroups"]
            except ClientError as e:
                if not _error_code(e).startswith("InvalidPlacementGroup"):
                    raise
                found = []
            if not found:
                raise LaunchError(f"NodeClass {self._nodeclass_name(nodeclass)}: placementGroupSelector "
                                  f"name {name!r} matches no placement group")
            return str(found[0]["GroupId"])

        return {"GroupId": self._cached(f"pg:{name}", resolve)}

    def _write_template(self, lt_name: str, data: Mapping[str, Any], description: str,
                        tags: Mapping[str, str]) -> str:
        """The version number of the template version with this content, creating what is missing."""
        try:
            latest = self._ec2.describe_launch_template_versions(
                LaunchTemplateName=lt_name, Versions=["$Latest"])["LaunchTemplateVersions"]
        except ClientError as e:
            if not _error_code(e).startswith("InvalidLaunchTemplateName.NotFound"):
                raise
            latest = []
        if latest and latest[0].get("VersionDescription") == description:
            return str(latest[0]["VersionNumber"])
        if not latest:
            try:
                created = self._ec2.create_launch_template(
                    LaunchTemplateName=lt_name, VersionDescription=description, LaunchTemplateData=dict(data),
                    TagSpecifications=[{"ResourceType": "launch-template",
                                        "Tags": [{"Key": k, "Value": v} for k, v in sorted(tags.items())
                                                 if k in (TAG_CLUSTER, TAG_NODECLASS)]}])
                return str(created["LaunchTemplate"]["LatestVersionNumber"])
            except ClientError as e:
                # Another worker created it between our Describe and Create: add our version to theirs.
                if not _error_code(e).startswith("InvalidLaunchTemplateName.AlreadyExists"):
                    raise
        created = self._ec2.create_launch_template_version(
            LaunchTemplateName=lt_name, VersionDescription=description, LaunchTemplateData=dict(data))
        return str(created["LaunchTemplateVersion"]["VersionNumber"])

    def delete_launch_template(self, nodeclass_name: str, cluster: str | None = None) -> bool:
        """Remove a deleted NodeClass's template; False when there was none."""
        lt_name = launch_template_name(cluster or self.cluster_name, nodeclass_name)
        self._cache = {k: v for k, v in self._cache.items() if not k.startswith(f"lt:{lt_name}:")}
        try:
            self._ec2.delete_launch_template(LaunchTemplateName=lt_name)
        except ClientError as e:
            if _error_code(e).startswith("InvalidLaunchTemplateName.NotFound"):
                return False
            raise
        return True

    # -- selectors -------------------------------------------------------------------------------

    def resolve_amis(self, nodeclass: Mapping[str, Any]) -> dict[str, str]:
        """architecture -> AMI id for the NodeClass's amiSelectorTerms (newest match per architecture)."""
        terms = list(_field(nodeclass, "ami_selector_terms", "amiSelectorTerms", []) or [])
        found: dict[str, tuple[str, str]] = {}            # arch -> (creation date, id)
        ids: list[str] = []
        for term in terms:
            if term.get("alias"):
                return self._alias_amis(str(term["alias"]))
            if term.get("id"):
                ids.append(str(term["id"]))
            elif term.get("ssmParameter"):
                ids.append(self._ssm.get_parameter(Name=str(term["ssmParameter"]))["Parameter"]["Value"])
            else:
                filters = [{"Name": "state", "Values": ["available"]}, *_tag_filters(term.get("tags") or {})]
                if term.get("name"):
                    filters.append({"Name": "name", "Values": [str(term["name"])]})
                owners = [str(term["owner"])] if term.get("owner") else (["self", "amazon"] if term.get("name") else [])
                kwargs: dict[str, Any] = {"Filters": filters}
                if owners:
                    kwargs["Owners"] = owners
                for image in self._ec2.describe_images(**kwargs).get("Images", []):
                    _keep_newest(found, image)
        if ids:
            for image in self._ec2.describe_images(ImageIds=sorted(set(ids))).get("Images", []):
                _keep_newest(found, image)
        return {arch: image_id for arch, (_, image_id) in found.items()}

    def _alias_amis(self, alias: str) -> dict[str, str]:
        """EKS-optimized AMIs from AWS's public SSM parameters (what Karpenter's alias resolves to)."""
        family, version = alias.split("@", 1)
        family = family.lower()
        k8s = self.kubernetes_version
        if not k8s:   # every family's parameter path names the Kubernetes version, Windows' too
            raise LaunchError(f"alias {alias!r} needs the cluster's Kubernetes version (kubernetes_version)")
        paths: dict[str, str] = {}
        if family == "al2023":
            for arch in ("x86_64", "arm64"):
                leaf = ("recommended" if version == "latest"
                        else f"amazon-eks-node-al2023-{arch}-standard-{k8s}-{version}")
                paths[arch] = f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023/{arch}/standard/{leaf}/image_id"
        elif family == "al2":
            paths["x86_64"] = (f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2/"
                               + ("recommended" if version == "latest" else f"amazon-eks-node-{k8s}-{version}") + "/image_id")
            paths["arm64"] = (f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2-arm64/"
                              + ("recommended" if version == "latest" else f"amazon-eks-arm64-node-{k8s}-{version}")
                              + "/image_id")
        elif family == "bottlerocket":
            leaf = "latest" if version == "latest" else version.lstrip("v")
            for arch in ("x86_64", "arm64"):
                paths[arch] = f"/aws/service/bottlerocket/aws-k8s-{k8s}/{arch}/{leaf}/image_id"
        elif family in _WINDOWS_ALIASES:
            # Windows Server Core only, amd64 only, and only @latest (validation refuses other versions).
            year = family[-4:]
            paths["x86_64"] = f"/aws/service/ami-windows-latest/Windows_Server-{year}-English-Core-EKS_Optimized-{k8s}/image_id"
        else:
            raise LaunchError(f"alias family {family!r} is not supported")
        out: dict[str, str] = {}
        for arch, path in paths.items():
            try:
                out[arch] = self._ssm.get_parameter(Name=path)["Parameter"]["Value"]
            except ClientError as e:
                # An architecture without a published AMI (or a version that does not exist) only
                # removes that architecture's options.
                if _error_code(e) != "ParameterNotFound":
                    raise
                log.warning("alias %s: no SSM parameter %s", alias, path)
        return out

    def resolve_subnets(self, nodeclass: Mapping[str, Any], zones: Sequence[str] = ()) -> dict[str, str]:
        """zone -> subnet id, for subnets matching subnetSelectorTerms in `zones` (all zones when empty);
        per zone the subnet with the most free addresses, as Karpenter picks."""
        best: dict[str, tuple[int, str]] = {}
        for term in _field(nodeclass, "subnet_selector_terms", "subnetSelectorTerms", []) or []:
            filters = [{"Name": "state", "Values": ["available"]}, *_tag_filters(term.get("tags") or {})]
            if term.get("id"):
                filters.append({"Name": "subnet-id", "Values": [str(term["id"])]})
            if term.get("cidr"):
                filters.append({"Name": "cidr-block", "Values": [str(term["cidr"])]})
            if zones:
                filters.append({"Name": "availability-zone", "Values": list(zones)})
            for subnet in self._ec2.describe_subnets(Filters=filters).get("Subnets", []):
                free = int(subnet.get("AvailableIpAddressCount", 0))
                zone = subnet["AvailabilityZone"]
                if free > 0 and (zone not in best or (free, subnet["SubnetId"]) > best[zone]):
                    best[zone] = (free, subnet["SubnetId"])
        return {zone: sid for zone, (_, sid) in sorted(best.items())}

    def resolve_security_groups(self, nodeclass: Mapping[str, Any]) -> list[str]:
        ids: set[str] = set()
        for term in _field(nodeclass, "security_group_selector_terms", "securityGroupSelectorTerms", []) or []:
            filters = _tag_filters(term.get("tags") or {})
            if term.get("id"):
                filters.append({"Name": "group-id", "Values": [str(term["id"])]})
            if term.get("name"):
                filters.append({"Name": "group-name", "Values": [str(term["name"])]})
            for group in self._ec2.describe_security_groups(Filters=filters).get("SecurityGroups", []):
                ids.add(group["GroupId"])
        return sorted(ids)

    def capacity_reservations(self, terms: Sequence[Mapping[str, Any]]) -> list[CapacityReservation]:
        """The active capacity reservations capacityReservationSelectorTerms select (aws_reservations.describe)."""
        if not terms:
            return []
        return aws_reservations.describe(self._ec2, terms, _now())

    # -- terminate / describe / list -----------------------------------------------------------------

    def terminate(self, instance_ids: Sequence[str]) -> None:
        """Terminate; ids that no longer exist (or are malformed) are skipped, not an error."""
        pending = sorted(set(instance_ids))
        for start in range(0, len(pending), 500):
            batch = pending[start:start + 500]
            while batch:
                try:
                    self._ec2.terminate_instances(InstanceIds=batch)
                    break
                except ClientError as e:
                    if not _error_code(e).startswith(("InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed")):
                        raise
                    # AWS rejects the whole call and names the unknown ids; drop them and go again.
                    gone = set(_INSTANCE_ID.findall(str(e.response.get("Error", {}).get("Message", "")))) & set(batch)
                    if not gone:
                        if len(batch) == 1:
                            break
                        # The message did not say which: one at a time, so the rest still go.
                        for one in batch:
                            self.terminate([one])
                        break
                    log.info("terminate: %s already gone", ", ".join(sorted(gone)))
                    batch = [i for i in batch if i not in gone]

    def describe(self, instance_ids: Sequence[str]) -> list[Instance]:
        """The instances that exist (terminated ones included while EC2 still shows them)."""
        ids = sorted(set(instance_ids))
        out: list[Instance] = []
        # A filter, not InstanceIds=: unknown ids then simply match nothing instead of failing the call.
        for start in range(0, len(ids), 200):
            out += self._describe([{"Name": "instance-id", "Values": ids[start:start + 200]}])
        return out

    def list_instances(self, cluster: str) -> list[Instance]:
        """Every non-terminated instance tagged for `cluster`, for garbage collection."""
        return self._describe([{"Name": f"tag:{TAG_CLUSTER}", "Values": [cluster]},
                               {"Name": "instance-state-name", "Values": list(NOT_TERMINATED_STATES)}])

    def _describe(self, filters: list[dict[str, Any]]) -> list[Instance]:
        out: list[Instance] = []
        pages = self._ec2.get_paginator("describe_instances").paginate(
            Filters=filters, PaginationConfig={"PageSize": self.describe_page_size})
        for page in pages:
            for reservation in page.get("Reservations", []):
                for raw in reservation.get("Instances", []):
                    out.append(_instance(raw))
        return out

    # -- interruption queue ------------------------------------------------------------------------

    def poll_events(self, max_events: int = 10) -> list[CloudEvent]:
        """Up to max_events events from the queue. Messages that are not events we act on are deleted
        here (and logged when unparseable) so they never block or crash the loop."""
        if not self.queue_url:
            return []
        events: list[CloudEvent] = []
        first = True
        while len(events) < max_events:
            response = self._sqs.receive_message(
                QueueUrl=self.queue_url, MaxNumberOfMessages=min(10, max(1, max_events - len(events))),
                # Long-poll only on the first call; later calls just drain what is already there.
                WaitTimeSeconds=self._sqs_wait if first else 0)
            first = False
            messages = response.get("Messages") or []
            if not messages:
                break
            for message in messages:
                receipt = message.get("ReceiptHandle", "")
                try:
                    parsed = parse_message(message.get("Body", ""), receipt)
                except (ValueError, KeyError, TypeError, AttributeError) as e:
                    log.warning("interruption queue: dropping unparseable message %s: %s; body %.300r",
                                message.get("MessageId"), e, message.get("Body"))
                    self._delete(receipt)
                    continue
                if not parsed:
                    self._delete(receipt)
                    continue
                self._outstanding[receipt] = len(parsed)
                events += parsed
        return events

    def ack(self, event: CloudEvent) -> None:
        """The event is handled. The message goes once every event it carried is acked; a receipt this
        process never saw (another worker polled it) is deleted at once."""
        left = self._outstanding.get(event.receipt, 1) - 1
        if left > 0:
            self._outstanding[event.receipt] = left
            return
        self._outstanding.pop(event.receipt, None)
        self._delete(event.receipt)

    def _delete(self, receipt: str) -> None:
        if not receipt or not self.queue_url:
            return
        try:
            self._sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=receipt)
        except ClientError as e:
            # An expired receipt: the message becomes visible again and is handled (idempotently) again.
            log.warning("interruption queue: could not delete a message: %s", e)


# --- helpers --------------------------------------------------------------------------------------

def _keep_newest(found: dict[str, tuple[str, str]], image: Mapping[str, Any]) -> None:
    arch = str(image.get("Architecture", "x86_64"))
    if arch not in ("x86_64", "arm64"):
        return
    key = (str(image.get("CreationDate", "")), str(image["ImageId"]))
    if arch not in found or key > found[arch]:
        found[arch] = key


def _instance(raw: Mapping[str, Any]) -> Instance:
    reservation = aws_reservations.instance_reservation(raw)
    return Instance(
        instance_id=raw["InstanceId"],
        instance_type=raw.get("InstanceType", ""),
        zone=(raw.get("Placement") or {}).get("AvailabilityZone", ""),
        capacity_type="reserved" if reservation else "spot" if raw.get("InstanceLifecycle") == "spot" else "on-demand",
        state=(raw.get("State") or {}).get("Name", ""),
        launch_time=raw.get("LaunchTime"),
        tags=_tags(raw),
        reservation_id=reservation,
    )


def _price_of(instance: Instance, options: Iterable[LaunchOption]) -> float | None:
    for o in options:
        if (o.instance_type, o.zone, o.capacity_type) == (instance.instance_type, instance.zone, instance.capacity_type):
            return o.price
    return None


def _unavailable_options(errors: Sequence[Mapping[str, Any]], chosen: Sequence[LaunchOption], capacity: str,
                         zone_of_subnet: Mapping[str, str]) -> list[LaunchOption]:
    """The options CreateFleet refused for capacity. An error naming no pool (an account-wide spot
    limit, say) makes every chosen option of its capacity type unavailable."""
    out: list[LaunchOption] = []
    for err in errors:
        if str(err.get("ErrorCode")) not in CAPACITY_ERROR_CODES:
            continue
        lifecycle = err.get("Lifecycle") or capacity
        lifecycle = "reserved" if capacity == "reserved" else "spot" if lifecycle == "spot" else "on-demand"
        ov = (err.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
        itype = ov.get("InstanceType")
        zone = ov.get("AvailabilityZone") or zone_of_subnet.get(ov.get("SubnetId", ""))
        for o in chosen:
            if o.capacity_type != lifecycle or (itype and o.instance_type != itype) or (zone and o.zone != zone):
                continue
            if o not in out:
                out.append(o)
    return out


def launch_with_fallback(
    provider: CloudProvider,
    request: LaunchRequest,
    mark_unavailable: Callable[[Sequence[LaunchOption]], None] | None = None,
    *,
    max_attempts: int = 10,
) -> Instance:
    """launch(), and on capacity errors mark the refused offerings unavailable (through the callback,
    e.g. the catalog's unavailable-offerings cache) and retry with the rest, as Karpenter does.

    Raises the last LaunchError when nothing is left, no progress is made, or attempts run out; its
    `unavailable` then lists every offering refused along the way."""
    options = list(request.options)
    refused: list[LaunchOption] = []
    for _ in range(max_attempts):
        try:
            return provider.launch(replace(request, options=options))
        except LaunchError as e:
            if not e.unavailable:
                raise LaunchError(str(e), unavailable=refused, retryable=e.retryable) from e
            if mark_unavailable is not None:
                mark_unavailable(e.unavailable)
            refused += [o for o in e.unavailable if o not in refused]
            remaining = [o for o in options if o not in set(e.unavailable)]
            if not remaining or len(remaining) == len(options):
                raise LaunchError(f"{e} (no offering left to try)", unavailable=refused, retryable=False) from e
            log.info("NodeClaim %s: %d offerings unavailable, retrying with %d", request.nodeclaim,
                     len(e.unavailable), len(remaining))
            options = remaining
    raise LaunchError(f"NodeClaim {request.nodeclaim}: still no capacity after {max_attempts} attempts",
                      unavailable=refused, retryable=True)


# --- EventBridge messages -------------------------------------------------------------------------

_KINDS = {
    "EC2 Spot Instance Interruption Warning": "spot_interruption",
    "EC2 Instance Rebalance Recommendation": "rebalance",
    "EC2 Instance State-change Notification": "state_change",
    "AWS Health Event": "scheduled_change",
}


def _time(value: Any) -> datetime:
    parsed = datetime.fromisoformat(str(value))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def parse_message(body: str, receipt: str = "") -> list[CloudEvent]:
    """CloudEvents in one SQS message body (an EventBridge event, possibly wrapped by SNS).

    Returns [] for well-formed events we do not act on (other detail-types, a state change to running,
    a Health event that is not an EC2 scheduled change); raises ValueError/KeyError/TypeError on junk."""
    event = json.loads(body)
    if not isinstance(event, dict):
        raise ValueError("not a JSON object")
    if event.get("Type") == "Notification" and isinstance(event.get("Message"), str):
        event = json.loads(event["Message"])             # EventBridge → SNS → SQS
        if not isinstance(event, dict):
            raise ValueError("SNS message is not a JSON object")
    kind = _KINDS.get(str(event.get("detail-type", "")))
    if "detail" not in event or "detail-type" not in event:
        raise ValueError("not an EventBridge event (no detail-type/detail)")
    if kind is None:
        return []
    detail = event["detail"]
    if not isinstance(detail, dict):
        raise ValueError("detail is not an object")
    when = _time(event["time"])
    common = {"detail-type": event["detail-type"], "id": event.get("id", ""), "source": event.get("source", ""),
              "region": event.get("region", "")}
    if kind == "scheduled_change":
        if detail.get("service") != "EC2" or detail.get("eventTypeCategory") != "scheduledChange":
            return []
        out = []
        for entity in detail.get("affectedEntities") or []:
            instance_id = str(entity.get("entityValue", ""))
            if _INSTANCE_ID.fullmatch(instance_id):
                out.append(CloudEvent(kind="scheduled_change", instance_id=instance_id, time=when, receipt=receipt,
                                      detail={**common, **{k: detail.get(k) for k in
                                              ("eventTypeCode", "eventArn", "startTime", "endTime")}}))
        return out
    instance_id = str(detail["instance-id"])
    if not _INSTANCE_ID.fullmatch(instance_id):
        raise ValueError(f"{instance_id!r} is not an instance id")
    if kind == "state_change" and detail.get("state") not in LEAVING_STATES:
        return []
    extra = {k: v for k, v in detail.items() if k != "instance-id"}
    if kind == "spot_interruption":
        # The two-minute warning: the instance is reclaimed at about event time + 2 min.
        extra["deadline"] = when + timedelta(minutes=2)
    return [CloudEvent(kind=kind, instance_id=instance_id, time=when, receipt=receipt,   # type: ignore[arg-type]
                       detail={**common, **extra})]
