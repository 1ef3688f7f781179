"""Karpenter YAML import and export: the documented examples, the round trip, and bad input.

Bad-input tests assert the document number, the YAML path and the message of each problem, and
that nothing from the batch was written (row counts of NodePool, EC2NodeClass and ChangeRecord).
"""

from __future__ import annotations

import copy
import textwrap
from typing import Any

import pytest
import yaml
from django.contrib.auth.models import User
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.fleet import manifests, services, validation
from console.fleet.models import ChangeRecord, EC2NodeClass, NodePool

# Karpenter's documentation example (karpenter.sh, Concepts > NodePools, v1), verbatim but for the
# "A | B" alternatives, each resolved to one value: expireAfter 720h, consolidationPolicy
# WhenEmptyOrUnderutilized, consolidateAfter 1m.
DOC_NODEPOOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  # Template section that describes how to template out NodeClaim resources that Karpenter will provision
  # Karpenter will consider this template to be the minimum requirements needed to provision a Node using this NodePool
  # It will overlay this NodePool with Pods that need to schedule to further constrain the NodeClaims
  # Karpenter will provision to launch new Nodes for the cluster
  template:
    metadata:
      # Labels are arbitrary key-values that are applied to all nodes
      labels:
        billing-team: my-team

      # Annotations are arbitrary key-values that are applied to all nodes
      annotations:
        example.com/owner: "my-team"
    spec:
      # References the Cloud Provider's NodeClass resource, see your cloud provider specific documentation
      nodeClassRef:
        group: karpenter.k8s.aws  # Updated since only a single version will be served
        kind: EC2NodeClass
        name: default

      # Provisioned nodes will have these taints
      # Taints may prevent pods from scheduling if they are not tolerated by the pod.
      taints:
        - key: example.com/special-taint
          effect: NoSchedule

      # Provisioned nodes will have these taints, but pods do not need to tolerate these taints to be provisioned by this
      # NodePool. These taints are expected to be temporary and some other entity (e.g. a DaemonSet) is responsible for
      # removing the taint after it has finished initializing the node.
      startupTaints:
        - key: example.com/another-taint
          effect: NoSchedule

      # The amount of time a Node can live on the cluster before being removed
      # Avoiding long-running Nodes helps to reduce security vulnerabilities as well as to reduce the chance of issues that can plague Nodes with long uptimes such as file fragmentation or memory leaks from system processes
      # You can choose to disable expiration entirely by setting the string value 'Never' here

      # Note: changing this value in the nodepool will drift the nodeclaims.
      expireAfter: 720h

      # The amount of time that a node can be draining before it's forcibly deleted. A node begins draining when a delete call is made against it, starting
      # its finalization flow. Pods with TerminationGracePeriodSeconds will be deleted preemptively before this terminationGracePeriod ends to give as much time to cleanup as possible.
      # If your pod's terminationGracePeriodSeconds is larger than this terminationGracePeriod, Karpenter may forcibly delete the pod
      # before it has its full terminationGracePeriod to cleanup.

      # Note: changing this value in the nodepool will drift the nodeclaims.
      terminationGracePeriod: 48h

      # Requirements that constrain the parameters of provisioned nodes.
      # These requirements are combined with pod.spec.topologySpreadConstraints, pod.spec.affinity.nodeAffinity, pod.spec.affinity.podAffinity, and pod.spec.nodeSelector rules.
      # Operators { In, NotIn, Exists, DoesNotExist, Gt, and Lt } are supported.
      # https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#operators
      requirements:
        - key: "karpenter.k8s.aws/instance-category"
          operator: In
          values: ["c", "m", "r"]
          # minValues here enforces the scheduler to consider at least that number of unique instance-category to schedule the pods.
          # This field is ALPHA and can be dropped or replaced at any time
          minValues: 2
        - key: "karpenter.k8s.aws/instance-family"
          operator: In
          values: ["m5","m5d","c5","c5d","c4","r4"]
          minValues: 5
        - key: "karpenter.k8s.aws/instance-cpu"
          operator: In
          values: ["4", "8", "16", "32"]
        - key: "karpenter.k8s.aws/instance-hypervisor"
          operator: In
          values: ["nitro"]
        - key: "karpenter.k8s.aws/instance-generation"
          operator: Gt
          values: ["2"]
        - key: "topology.kubernetes.io/zone"
          operator: In
          values: ["us-west-2a", "us-west-2b"]
        - key: "kubernetes.io/arch"
          operator: In
          values: ["arm64", "amd64"]
        - key: "karpenter.sh/capacity-type"
          operator: In
          values: ["spot", "on-demand"]

  # Disruption section which describes the ways in which Karpenter can disrupt and replace Nodes
  # Configuration in this section constrains how aggressive Karpenter can be with performing operations
  # like rolling Nodes due to them hitting their maximum lifetime (expiry) or scaling down nodes to reduce cluster cost
  disruption:
    # Describes which types of Nodes Karpenter should consider for consolidation
    # If using 'WhenEmptyOrUnderutilized', Karpenter will consider all nodes for consolidation and attempt to remove or replace Nodes when it discovers that the Node is empty or underutilized and could be changed to reduce cost
    # If using `WhenEmpty`, Karpenter will only consider nodes for consolidation that contain no workload pods
    consolidationPolicy: WhenEmptyOrUnderutilized

    # The amount of time Karpenter should wait to consolidate a node after a pod has been added or removed from the node.
    # You can choose to disable consolidation entirely by setting the string value 'Never' here
    consolidateAfter: 1m # Added to allow additional control over consolidation aggressiveness

    # Budgets control the speed Karpenter can scale down nodes.
    # Karpenter will respect the minimum of the currently active budgets, and will round up
    # when considering percentages. Duration and Schedule must be set together.
    budgets:
    - nodes: 10%
    # On Weekdays during business hours, don't do any deprovisioning.
    - schedule: "0 9 * * mon-fri"
      duration: 8h
      nodes: "0"

  # Resource limits constrain the total size of the pool.
  # Limits prevent Karpenter from creating new instances once the limit is exceeded.
  limits:
    cpu: "1000"
    memory: 1000Gi

  # Priority given to the NodePool when the scheduler considers which NodePool
  # to select. Higher weights indicate higher priority when comparing NodePools.
  # Specifying no weight is equivalent to specifying a weight of 0.
  weight: 10
status:
  conditions:
    - type: Initialized
      status: "False"
      observedGeneration: 1
      lastTransitionTime: "2024-02-02T19:54:34Z"
      reason: NodeClaimNotLaunched
      message: "NodeClaim hasn't succeeded launch"
  resources:
    cpu: "20"
    memory: "8192Mi"
    ephemeral-storage: "100Gi"
"""

DOC_NODEPOOL_VALUES: dict[str, Any] = {
    "name": "default",
    "metadata_labels": {},
    "metadata_annotations": {},
    "on_demand_base": "", "on_demand_percentage": "", "schedules": "",
    "template_labels": {"billing-team": "my-team"},
    "template_annotations": {"example.com/owner": "my-team"},
    "node_class_name": "default",
    "taints": [{"key": "example.com/special-taint", "effect": "NoSchedule"}],
    "startup_taints": [{"key": "example.com/another-taint", "effect": "NoSchedule"}],
    "requirements": [
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"], "minValues": 2},
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In",
         "values": ["m5", "m5d", "c5", "c5d", "c4", "r4"], "minValues": 5},
        {"key": "karpenter.k8s.aws/instance-cpu", "operator": "In", "values": ["4", "8", "16", "32"]},
        {"key": "karpenter.k8s.aws/instance-hypervisor", "operator": "In", "values": ["nitro"]},
        {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2a", "us-west-2b"]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64", "amd64"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
    ],
    "expire_after": "720h",
    "termination_grace_period": "48h",
    "consolidation_policy": "WhenEmptyOrUnderutilized",
    "consolidate_after": "1m",
    "budgets": [{"nodes": "10%"}, {"schedule": "0 9 * * mon-fri", "duration": "8h", "nodes": "0"}],
    "limits": {"cpu": "1000", "memory": "1000Gi"},
    "weight": 10,
    "replicas": None,
}

# Karpenter's documentation example EC2NodeClass (karpenter.sh, Concepts > NodeClasses, v1). The example
# sets both role and instanceProfile ("Must specify one of"); it is resolved to role.
DOC_NODECLASS_HEAD = """\
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  kubelet:
    podsPerCore: 2
    maxPods: 20
    systemReserved:
      cpu: 100m
      memory: 100Mi
      ephemeral-storage: 1Gi
    kubeReserved:
      cpu: 200m
      memory: 100Mi
      ephemeral-storage: 3Gi
    evictionHard:
      memory.available: 5%
      nodefs.available: 10%
      nodefs.inodesFree: 10%
    evictionSoft:
      memory.available: 500Mi
      nodefs.available: 15%
      nodefs.inodesFree: 15%
    evictionSoftGracePeriod:
      memory.available: 1m
      nodefs.available: 1m30s
      nodefs.inodesFree: 2m
    evictionMaxPodGracePeriod: 60
    imageGCHighThresholdPercent: 85
    imageGCLowThresholdPercent: 80
    cpuCFSQuota: true
    clusterDNS: ["10.0.1.100"]
  # Optional, dictates UserData generation and default block device mappings.
  # May be ommited when using an `alias` amiSelectorTerm, otherwise required.
  amiFamily: AL2

  # Required, discovers subnets to attach to instances
  # Each term in the array of subnetSelectorTerms is ORed together
  # Within a single term, all conditions are ANDed
  subnetSelectorTerms:
    # Select on any subnet that has the "karpenter.sh/discovery: ${CLUSTER_NAME}"
    # AND the "environment: test" tag OR any subnet with ID "subnet-09fa4a0a8f233a921"
    - tags:
        karpenter.sh/discovery: "${CLUSTER_NAME}"
        environment: test
    - id: subnet-09fa4a0a8f233a921

  # Required, discovers security groups to attach to instances
  # Each term in the array of securityGroupSelectorTerms is ORed together
  # Within a single term, all conditions are ANDed
  securityGroupSelectorTerms:
    # Select on any security group that has both the "karpenter.sh/discovery: ${CLUSTER_NAME}" tag
    # AND the "environment: test" tag OR any security group with the "my-security-group" name
    # OR any security group with ID "sg-063d7acfb4b06c82c"
    - tags:
        karpenter.sh/discovery: "${CLUSTER_NAME}"
        environment: test
    - name: my-security-group
    - id: sg-063d7acfb4b06c82c

  # Optional, IAM role to use for the node identity.
  # The "role" field is immutable after EC2NodeClass creation. This may change in the
  # future, but this restriction is currently in place today to ensure that Karpenter
  # avoids leaking managed instance profiles in your account.
  # Must specify one of "role" or "instanceProfile" for Karpenter to launch nodes
  role: "KarpenterNodeRole-${CLUSTER_NAME}"

  # Each term in the array of amiSelectorTerms is ORed together
  # Within a single term, all conditions are ANDed
  amiSelectorTerms:
    # Select on any AMI that has both the `karpenter.sh/discovery: ${CLUSTER_NAME}`
    # AND `environment: test` tags OR any AMI with the name `my-ami` OR an AMI with
    # ID `ami-123`
    - tags:
        karpenter.sh/discovery: "${CLUSTER_NAME}"
        environment: test
    - name: my-ami
    - id: ami-123
    # Select EKS optimized AL2023 AMIs with version `v20240703`. This term is mutually
    # exclusive and can't be specified with other terms.
    # - alias: al2023@v20240703

  # Optional, propagates tags to underlying EC2 resources
  tags:
    team: team-a
    app: team-a-app

  # Optional, configures IMDS for the instance
  metadataOptions:
    httpEndpoint: enabled
    httpProtocolIPv6: disabled
    httpPutResponseHopLimit: 1 # This is changed to disable IMDS access from containers not on the host network
    httpTokens: required

  # Optional, configures storage devices for the instance
  blockDeviceMappings:
    - deviceName: /dev/xvda
      ebs:
        volumeSize: 100Gi
        volumeType: gp3
        iops: 10000
        encrypted: true
        kmsKeyID: "1234abcd-12ab-34cd-56ef-1234567890ab"
        deleteOnTermination: true
        throughput: 125
        snapshotID: snap-0123456789
"""
# The example's three optional switches for which the EC2NodeClass model has no column yet.
DOC_NODECLASS_UNSUPPORTED = """\

  # Optional, use instance-store volumes for node ephemeral-storage
  instanceStorePolicy: RAID0
"""
DOC_NODECLASS_USERDATA = """\

  # Optional, overrides autogenerated userdata with a merge semantic
  userData: |
    echo "Hello world"
"""
DOC_NODECLASS_UNSUPPORTED_TAIL = """\

  # Optional, configures detailed monitoring for the instance
  detailedMonitoring: true

  # Optional, configures if the instance should be launched with an associated public IP address.
  # If not specified, the default value depends on the subnet's public IP auto-assign setting.
  associatePublicIPAddress: true
"""
DOC_NODECLASS_STATUS = """\
status:
  # Resolved subnets
  subnets:
    - id: subnet-0a462d98193ff9fac
      zone: us-east-2b
  # Resolved security groups
  securityGroups:
    - id: sg-041513b454818610b
      name: ClusterSharedNodeSecurityGroup
  # Resolved AMIs
  amis:
    - id: ami-01234567890123456
      name: custom-ami-amd64
      requirements:
        - key: kubernetes.io/arch
          operator: In
          values:
            - amd64
  # Generated instance profile name from "role"
  instanceProfile: "${CLUSTER_NAME}-0123456778901234567789"
  conditions:
    - lastTransitionTime: "2024-02-02T19:54:34Z"
      status: "True"
      type: Ready
"""
DOC_NODECLASS = DOC_NODECLASS_HEAD + DOC_NODECLASS_USERDATA + DOC_NODECLASS_STATUS
DOC_NODECLASS_VERBATIM = (DOC_NODECLASS_HEAD + DOC_NODECLASS_UNSUPPORTED + DOC_NODECLASS_USERDATA
                          + DOC_NODECLASS_UNSUPPORTED_TAIL + DOC_NODECLASS_STATUS)

DOC_NODECLASS_VALUES: dict[str, Any] = {
    "name": "default",
    "metadata_labels": {},
    "metadata_annotations": {},
    "capacity_reservation_selector_terms": [],
    "ip_prefix_count": None,
    "context": "",
    "connection_tracking": {},
    "cpu_options": {},
    "network_interfaces": [],
    "placement_group_selector": {},
    "ami_family": "AL2",
    "ami_selector_terms": [{"tags": {"karpenter.sh/discovery": "${CLUSTER_NAME}", "environment": "test"}},
                           {"name": "my-ami"}, {"id": "ami-123"}],
    "subnet_selector_terms": [{"tags": {"karpenter.sh/discovery": "${CLUSTER_NAME}", "environment": "test"}},
                              {"id": "subnet-09fa4a0a8f233a921"}],
    "security_group_selector_terms": [{"tags": {"karpenter.sh/discovery": "${CLUSTER_NAME}", "environment": "test"}},
                                      {"name": "my-security-group"}, {"id": "sg-063d7acfb4b06c82c"}],
    "role": "KarpenterNodeRole-${CLUSTER_NAME}",
    "instance_profile": "",
    "tags": {"team": "team-a", "app": "team-a-app"},
    "block_device_mappings": [{"deviceName": "/dev/xvda", "ebs": {
        "volumeSize": "100Gi", "volumeType": "gp3", "iops": 10000, "encrypted": True,
        "kmsKeyID": "1234abcd-12ab-34cd-56ef-1234567890ab", "deleteOnTermination": True, "throughput": 125,
        "snapshotID": "snap-0123456789"}}],
    "kubelet": {
        "podsPerCore": 2, "maxPods": 20,
        "systemReserved": {"cpu": "100m", "memory": "100Mi", "ephemeral-storage": "1Gi"},
        "kubeReserved": {"cpu": "200m", "memory": "100Mi", "ephemeral-storage": "3Gi"},
        "evictionHard": {"memory.available": "5%", "nodefs.available": "10%", "nodefs.inodesFree": "10%"},
        "evictionSoft": {"memory.available": "500Mi", "nodefs.available": "15%", "nodefs.inodesFree": "15%"},
        "evictionSoftGracePeriod": {"memory.available": "1m", "nodefs.available": "1m30s", "nodefs.inodesFree": "2m"},
        "evictionMaxPodGracePeriod": 60, "imageGCHighThresholdPercent": 85, "imageGCLowThresholdPercent": 80,
        "cpuCFSQuota": True, "clusterDNS": ["10.0.1.100"],
    },
    "metadata_options": {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
                         "httpPutResponseHopLimit": 1, "httpTokens": "required"},
    "user_data": 'echo "Hello world"\n',
    "instance_store_policy": "", "detailed_monitoring": None, "associate_public_ip_address": None,
}

NODEPOOL_FIELDS = list(manifests.NODEPOOL_PATHS)
NODECLASS_FIELDS = list(manifests.NODECLASS_PATHS)


@pytest.fixture
def importer(db: Any) -> User:
    return User.objects.create_user(username="ida-importer", password="pw")


def counts() -> tuple[int, int, int]:
    return NodePool.objects.count(), EC2NodeClass.objects.count(), ChangeRecord.objects.count()


def stored(obj: NodePool | EC2NodeClass) -> dict[str, Any]:
    fields = NODEPOOL_FIELDS if isinstance(obj, NodePool) else NODECLASS_FIELDS
    obj.refresh_from_db()
    return {f: getattr(obj, f) for f in fields}


def run_import(user: User, *texts: str | tuple[str, str], dry_run: bool = False) -> services.ImportResult:
    pairs = [t if isinstance(t, tuple) else ("", t) for t in texts]
    return services.karpenter_import(texts=pairs, user=user, dry_run=dry_run)


def problems(result: services.ImportResult) -> list[tuple[int, str, str]]:
    return [(p.document, p.path, p.message) for p in result.problems]


def minimal_pool(name: str = "general", **spec: Any) -> str:
    doc: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
        "spec": {"template": {"spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]}}},
    }
    doc["spec"].update(spec)
    return yaml.safe_dump(doc, sort_keys=False)


def minimal_nodeclass(name: str = "default", **spec: Any) -> str:
    doc: dict[str, Any] = {
        "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": name},
        "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "KarpenterNodeRole-demo",
                 "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
                 "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}]},
    }
    doc["spec"].update(spec)
    return yaml.safe_dump(doc, sort_keys=False)


# --- Karpenter's documentation examples -------------------------------------------------------------------

def test_documented_nodepool_imports_cleanly(importer: User) -> None:
    result = run_import(importer, ("nodepool.yaml", DOC_NODEPOOL))
    assert problems(result) == []
    assert result.created == ["NodePool/default"]
    assert stored(NodePool.objects.get(name="default")) == DOC_NODEPOOL_VALUES


def test_documented_nodeclass_imports_cleanly(importer: User) -> None:
    result = run_import(importer, ("nodeclass.yaml", DOC_NODECLASS))
    assert problems(result) == []
    assert result.created == ["EC2NodeClass/default"]
    assert stored(EC2NodeClass.objects.get(name="default")) == DOC_NODECLASS_VALUES


def test_documented_examples_import_together_as_one_stream(importer: User) -> None:
    result = run_import(importer, DOC_NODEPOOL + "---\n" + DOC_NODECLASS)
    assert problems(result) == []
    assert sorted(result.created) == ["EC2NodeClass/default", "NodePool/default"]


def test_documented_nodeclass_verbatim_imports_and_round_trips(importer: User) -> None:
    assert problems(run_import(importer, DOC_NODECLASS_VERBATIM)) == []
    nodeclass = EC2NodeClass.objects.get(name="default")
    assert (nodeclass.instance_store_policy, nodeclass.detailed_monitoring, nodeclass.associate_public_ip_address) == (
        "RAID0", True, True)
    (doc,) = yaml.safe_load_all(services.karpenter_export([nodeclass]))
    assert (doc["spec"]["instanceStorePolicy"], doc["spec"]["detailedMonitoring"],
            doc["spec"]["associatePublicIPAddress"]) == ("RAID0", True, True)


def test_bad_nodeclass_switches_are_refused(importer: User) -> None:
    bad = DOC_NODECLASS_VERBATIM.replace("instanceStorePolicy: RAID0", "instanceStorePolicy: RAID5").replace(
        "detailedMonitoring: true", "detailedMonitoring: 'yes'")
    result = run_import(importer, bad)
    assert {(d, p) for d, p, _ in problems(result)} == {(1, "spec.instanceStorePolicy"), (1, "spec.detailedMonitoring")}
    assert counts() == (0, 0, 0)


def test_documented_nodepool_exports_back_to_the_same_values(importer: User) -> None:
    run_import(importer, DOC_NODEPOOL)
    exported = services.karpenter_export([NodePool.objects.get(name="default")])
    (doc,) = yaml.safe_load_all(exported)
    values, structural = manifests.fields_from_manifest(doc)
    assert structural == []
    assert values == DOC_NODEPOOL_VALUES
    assert doc["spec"]["template"]["spec"]["nodeClassRef"] == {
        "group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
    assert "status" not in doc


# --- round trip -------------------------------------------------------------------------------------------

FULL_POOL: dict[str, Any] = {
    "name": "everything",
    "metadata_labels": {"app.kubernetes.io/managed-by": "loadmaster", "tier": "y"},
    "metadata_annotations": {"kubernetes.io/description": "General purpose: on call", "example.com/empty": ""},
    "on_demand_base": "2", "on_demand_percentage": "20",
    "schedules": "- {name: nights, schedule: '0 20 * * *', duration: 8h, consolidationPolicy: WhenEmpty}",
    "template_labels": {"team": "platform", "example.com/tier": "1", "flag": "y", "num": "1e3", "off": "off",
                        "date": "2024-01-01", "karpenter.sh/capacity-type": "spot"},
    "template_annotations": {"example.com/owner": "platform team: on call", "empty": ""},
    "node_class_name": "gpu",
    "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
               {"key": "example.com/drain", "effect": "NoExecute", "timeAdded": "2024-02-02T19:54:34Z"}],
    "startup_taints": [{"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}],
    "requirements": [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"], "minValues": 1},
        {"key": "karpenter.k8s.aws/instance-family", "operator": "NotIn", "values": ["t2", "t3"]},
        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Exists"},
        {"key": "example.com/legacy", "operator": "DoesNotExist"},
        {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["3"]},
        {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": ["129"]},
        {"key": "karpenter.k8s.aws/instance-memory", "operator": "Gte", "values": ["8192"]},
        {"key": "karpenter.k8s.aws/instance-memory", "operator": "Lte", "values": ["524288"]},
    ],
    "expire_after": "Never",
    "termination_grace_period": "1h30m",
    "consolidation_policy": "WhenEmpty",
    "consolidate_after": "Never",
    "budgets": [{"nodes": "20%", "reasons": ["Empty", "Drifted"]},
                {"nodes": "0", "schedule": "@daily", "duration": "10m", "reasons": ["Underutilized"]},
                {"nodes": "3", "schedule": "30 8 * * 1-5", "duration": "1h30m"}],
    "limits": {"cpu": "1000", "memory": "4000Gi", "nvidia.com/gpu": 16, "nodes": "50"},
    "weight": 100,
    "replicas": None,
}
FULL_NODECLASS: dict[str, Any] = {
    **DOC_NODECLASS_VALUES,
    "name": "everything",
    "ami_family": "Custom",
    "ami_selector_terms": [{"alias": "bottlerocket@v1.20.0"}],
    "subnet_selector_terms": [{"id": "subnet-0123abcd"}, {"cidr": "10.0.0.0/16"}],
    "metadata_labels": {"team": "ml"},
    "metadata_annotations": {"kubernetes.io/description": "GPU nodes"},
    "capacity_reservation_selector_terms": [{"id": "cr-0123456789abcdef0"},
                                            {"tags": {"team": "ml", "env": "*"}, "ownerID": "123456789012",
                                             "instanceMatchCriteria": "targeted"}],
    "ip_prefix_count": 4,
    "context": "c-abc123",
    "connection_tracking": {"udpStreamTimeout": 120},
    "cpu_options": {"nestedVirtualization": "disabled"},
    "network_interfaces": [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}],
    "placement_group_selector": {"id": "pg-0123456789abcdef0"},
    "block_device_mappings": [
        {"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "20Gi", "volumeType": "gp3"}},
        {"deviceName": "/dev/xvdb", "ebs": {"snapshotID": "snap-1", "volumeInitializationRate": 300,
                                            "deleteOnTermination": False, "encrypted": False}}],
    "tags": {"team": "a", "cost-center": "0042", "yes": "no"},
    "metadata_options": {"httpTokens": "optional", "httpPutResponseHopLimit": 2},
    "user_data": "[settings.kubernetes]\nmax-pods = 110\n\n# trailing spaces stay   \n",
}


@pytest.mark.parametrize("kind, values, create, update", [
    ("NodePool", FULL_POOL, services.nodepool_create, services.nodepool_update),
    ("NodePool", {**FULL_POOL, "name": "sparse", "metadata_labels": {}, "metadata_annotations": {},
                  "on_demand_base": "", "on_demand_percentage": "", "schedules": "",
                  "template_labels": {}, "template_annotations": {}, "taints": [],
                  "startup_taints": [], "requirements": [], "termination_grace_period": "", "budgets": [],
                  "limits": {}, "weight": None}, services.nodepool_create, services.nodepool_update),
    ("NodePool", {**FULL_POOL, "name": "static", "limits": {"nodes": 8}, "weight": None, "replicas": 5},
     services.nodepool_create, services.nodepool_update),
    ("EC2NodeClass", FULL_NODECLASS, services.nodeclass_create, services.nodeclass_update),
    ("EC2NodeClass", {**FULL_NODECLASS, "name": "profiled", "role": "", "instance_profile": "NodeProfile",
                      "tags": {}, "block_device_mappings": [], "kubelet": {}, "metadata_options": {}, "user_data": "",
                      "metadata_labels": {}, "metadata_annotations": {}, "capacity_reservation_selector_terms": [],
                      "ip_prefix_count": None, "context": "", "connection_tracking": {}, "cpu_options": {},
                      "network_interfaces": [], "placement_group_selector": {}},
     services.nodeclass_create, services.nodeclass_update),
])
def test_export_then_import_gives_the_same_object(importer: User, kind: str, values: dict[str, Any],
                                                  create: Any, update: Any) -> None:
    obj = create(values=copy.deepcopy(values), user=importer, source="form")
    obj = type(obj).objects.get(pk=obj.pk)  # as stored (PostgreSQL's jsonb reorders keys)
    exported = services.karpenter_export([obj])
    history = ChangeRecord.objects.count()

    # Re-importing onto the same object changes nothing and records nothing.
    result = run_import(importer, exported)
    assert problems(result) == [] and result.unchanged == [f"{kind}/{values['name']}"]
    assert ChangeRecord.objects.count() == history
    assert stored(obj) == values

    # Importing into an empty fleet recreates exactly the same field values.
    obj.delete()
    result = run_import(importer, exported)
    assert problems(result) == [] and result.created == [f"{kind}/{values['name']}"]
    assert stored(type(obj).objects.get(name=values["name"])) == values
    assert services.karpenter_export([type(obj).objects.get(name=values["name"])]) == exported


def test_export_quotes_strings_go_yaml_would_misread(importer: User) -> None:
    pool = services.nodepool_create(values=copy.deepcopy(FULL_POOL), user=importer)
    exported = services.karpenter_export([pool])
    assert 'flag: "y"' in exported and 'num: "1e3"' in exported and "'off': 'off'" in exported
    assert "nodes: '0'" in exported and "date: '2024-01-01'" in exported


def test_export_writes_required_and_meaningful_empty_fields(importer: User) -> None:
    values = {**FULL_POOL, "name": "bare", "requirements": [], "budgets": [], "weight": None,
              "termination_grace_period": "", "limits": {}, "template_labels": {}, "template_annotations": {}}
    (doc,) = yaml.safe_load_all(services.karpenter_export([services.nodepool_create(values=values, user=importer)]))
    assert doc["spec"]["template"]["spec"]["requirements"] == []   # required by the CRD
    assert doc["spec"]["disruption"]["budgets"] == []              # [] is not the default [{nodes: 10%}]
    assert "weight" not in doc["spec"] and "limits" not in doc["spec"] and "metadata" not in doc["spec"]["template"]
    assert "terminationGracePeriod" not in doc["spec"]["template"]["spec"]


def test_export_of_several_objects_is_one_multi_document_stream(importer: User) -> None:
    run_import(importer, DOC_NODEPOOL + "---\n" + DOC_NODECLASS)
    objs = [NodePool.objects.get(name="default"), EC2NodeClass.objects.get(name="default")]
    docs = list(yaml.safe_load_all(services.karpenter_export(objs)))
    assert [(d["apiVersion"], d["kind"], d["metadata"]) for d in docs] == [
        ("karpenter.sh/v1", "NodePool", {"name": "default"}), ("karpenter.k8s.aws/v1", "EC2NodeClass", {"name": "default"})]


# A strategy for valid NodePools: every generated value passes validation (asserted in the test).
_label_values = st.sampled_from(["", "a", "y", "n", "on", "off", "true", "null", "1e3", "0x1F", "007", "2024-01-01",
                                 "1.5", "my-team", "A_b.c"])
_label_keys = st.sampled_from(["team", "example.com/team", "topology.kubernetes.io/zone", "node.kubernetes.io/x",
                               "karpenter.sh/capacity-type", "karpenter.k8s.aws/instance-family", "yes", "1"])
_durations = st.builds(lambda h, m, s: f"{h}h{m}m{s}s" if h else f"{m}m" if m else f"{s}s",
                       st.integers(0, 2000), st.integers(0, 59), st.integers(0, 59))
_requirement = st.one_of(
    st.builds(lambda k, vs, mv: {"key": k, "operator": "In", "values": vs, **({"minValues": mv} if mv else {})},
              _label_keys, st.lists(_label_values.filter(bool), min_size=3, max_size=4, unique=True),
              st.sampled_from([None, 1, 2, 3])),
    st.builds(lambda k, vs: {"key": k, "operator": "NotIn", "values": vs}, _label_keys,
              st.lists(_label_values, max_size=3)),
    st.builds(lambda k, op: {"key": k, "operator": op}, _label_keys, st.sampled_from(["Exists", "DoesNotExist"])),
    st.builds(lambda k, op, n: {"key": k, "operator": op, "values": [str(n)]}, _label_keys,
              st.sampled_from(["Gt", "Lt", "Gte", "Lte"]), st.integers(0, 10**12)),
)
_taint = st.builds(lambda k, v, e: {"key": k, **({"value": v} if v else {}), "effect": e},
                   st.sampled_from(["dedicated", "example.com/gpu", "node.cilium.io/agent-not-ready"]),
                   _label_values, st.sampled_from(validation.TAINT_EFFECTS))
_budget = st.builds(
    lambda nodes, sched, reasons: {"nodes": nodes, **(sched or {}), **({"reasons": reasons} if reasons else {})},
    st.one_of(st.integers(0, 100).map(lambda n: f"{n}%"), st.integers(0, 500).map(str)),
    st.one_of(st.none(), st.builds(lambda s, d: {"schedule": s, "duration": d},
                                   st.sampled_from(["@daily", "0 9 * * mon-fri", "*/30 * * * *", "0 0 1 * *"]),
                                   st.sampled_from(["10m", "8h", "1h30m", "2h0m"]))),
    st.lists(st.sampled_from(validation.BUDGET_REASONS), unique=True))
_quantity = st.one_of(st.integers(0, 10**6), st.sampled_from(["1000", "500m", "64Gi", "1.5", "2k", "1e3"]))


@st.composite
def valid_nodepools(draw: st.DrawFn) -> dict[str, Any]:
    taints = draw(st.lists(_taint, max_size=3, unique_by=lambda t: (t["key"], t["effect"])))
    values = {
        "name": draw(st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?\Z")),
        "metadata_labels": draw(st.dictionaries(_label_keys, _label_values, max_size=2)),
        "metadata_annotations": draw(st.dictionaries(st.sampled_from(["a", "kubernetes.io/description"]),
                                                     st.text(max_size=20), max_size=2)),
        "on_demand_base": draw(st.sampled_from(["", "0", "3"])),
        "on_demand_percentage": draw(st.sampled_from(["", "0", "50", "100"])),
        "schedules": draw(st.sampled_from(["", "- {name: nights, schedule: '0 20 * * *', duration: 8h, consolidationPolicy: WhenEmpty}"])),
        "template_labels": draw(st.dictionaries(_label_keys, _label_values, max_size=4)),
        "template_annotations": draw(st.dictionaries(st.sampled_from(["a", "example.com/b"]),
                                                     st.text(max_size=20), max_size=2)),
        "node_class_name": draw(st.sampled_from(["default", "gpu", "bottlerocket.v1"])),
        "taints": taints,
        "startup_taints": draw(st.lists(_taint, max_size=2, unique_by=lambda t: (t["key"], t["effect"]))),
        "requirements": draw(st.lists(_requirement, max_size=6)),
        "expire_after": draw(st.one_of(st.just("Never"), _durations)),
        "termination_grace_period": draw(st.one_of(st.just(""), _durations)),
        "consolidation_policy": draw(st.sampled_from(validation.CONSOLIDATION_POLICIES)),
        "consolidate_after": draw(st.one_of(st.just("Never"), _durations)),
        "budgets": draw(st.lists(_budget, max_size=3)),
        "limits": draw(st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "nodes"]), _quantity, max_size=4)),
        "weight": draw(st.one_of(st.none(), st.integers(1, 100))),
        "replicas": None,
    }
    if draw(st.booleans()):  # a static pool: replicas, with only limits.nodes and no weight (the CRD's CEL rules)
        values.update(replicas=draw(st.integers(0, validation.INT64_MAX)), weight=None,
                      limits={k: v for k, v in values["limits"].items() if k == "nodes"})
    return values


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=valid_nodepools())
def test_property_export_import_round_trip(values: dict[str, Any]) -> None:
    assert validation.check_nodepool(values) == []
    text = manifests.dump_yaml([manifests.nodepool_to_manifest(values)])
    (doc,) = manifests.load_yaml_documents(text)
    imported, structural = manifests.fields_from_manifest(doc)
    assert structural == []
    assert imported == values
    # and Go's YAML reader (YAML 1.1) would read the same strings: nothing ambiguous is left bare
    assert list(yaml.safe_load_all(text)) == [doc]


# --- defaults, ignored parts, kind: List, numbers, empty optional fields --------------------------------

def test_defaults_applied_as_the_api_server_would(importer: User) -> None:
    result = run_import(importer, minimal_pool())
    assert problems(result) == []
    pool = NodePool.objects.get(name="general")
    assert (pool.expire_after, pool.consolidation_policy, pool.consolidate_after, pool.budgets, pool.weight,
            pool.termination_grace_period, pool.limits, pool.taints) == (
        "720h", "WhenEmptyOrUnderutilized", "0s", [{"nodes": "10%"}], None, "", {}, [])


def test_defaults_inside_a_given_disruption_block(importer: User) -> None:
    result = run_import(importer, minimal_pool(disruption={
        "consolidateAfter": "5m", "budgets": [{"schedule": "@daily", "duration": "1h"}, {"nodes": "1"}]}))
    assert problems(result) == []
    pool = NodePool.objects.get(name="general")
    assert pool.consolidation_policy == "WhenEmptyOrUnderutilized"
    assert pool.budgets == [{"nodes": "10%", "schedule": "@daily", "duration": "1h"}, {"nodes": "1"}]


def test_disruption_block_without_consolidate_after_is_refused(importer: User) -> None:
    result = run_import(importer, minimal_pool(disruption={"consolidationPolicy": "WhenEmpty"}))
    assert problems(result) == [(1, "spec.disruption.consolidateAfter",
                                 "consolidateAfter is required when disruption is set (e.g. '0s', '5m' or 'Never')")]
    assert counts() == (0, 0, 0)


def test_server_set_metadata_and_status_are_ignored_labels_and_annotations_kept(importer: User) -> None:
    text = textwrap.dedent("""\
        apiVersion: karpenter.sh/v1
        kind: NodePool
        metadata:
          name: general
          uid: 0f6c7d8e-1111-2222-3333-444455556666
          resourceVersion: "123"
          generation: 4
          creationTimestamp: 2024-02-02T19:54:34Z
          labels: {app: karpenter}
          annotations: {karpenter.sh/nodepool-hash: "42"}
          finalizers: [karpenter.sh/termination]
          managedFields: [{manager: kubectl}]
        spec:
          template:
            spec:
              nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
              requirements: []
        status:
          resources: {cpu: "4"}
          conditions: [{type: Ready, status: "True"}]
        """)
    result = run_import(importer, text)
    assert problems(result) == [] and result.created == ["NodePool/general"]
    pool = NodePool.objects.get(name="general")
    assert (pool.metadata_labels, pool.metadata_annotations) == ({"app": "karpenter"}, {"karpenter.sh/nodepool-hash": "42"})
    (doc,) = yaml.safe_load_all(services.karpenter_export([pool]))
    assert doc["metadata"] == {"name": "general", "labels": {"app": "karpenter"},
                               "annotations": {"karpenter.sh/nodepool-hash": "42"}}


def test_kind_list_imports_its_items(importer: User) -> None:
    items = [yaml.safe_load(DOC_NODEPOOL), yaml.safe_load(minimal_nodeclass())]
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items})
    result = run_import(importer, text)
    assert problems(result) == []
    assert sorted(result.created) == ["EC2NodeClass/default", "NodePool/default"]


def test_kind_list_errors_name_the_item(importer: User) -> None:
    bad = yaml.safe_load(minimal_pool("b", weight=0))
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [yaml.safe_load(minimal_pool("a")), bad]})
    result = run_import(importer, ("list.yaml", "# fleet\n" + text))
    assert problems(result) == [(1, "items[1].spec.weight", "0 must be an integer from 1 to 100")]
    assert str(result.problems[0]) == "list.yaml: document 1: items[1].spec.weight: 0 must be an integer from 1 to 100"
    assert counts() == (0, 0, 0)


@pytest.mark.parametrize("weight, stored_weight", [(10, 10), (10.0, 10), (None, None), (1, 1), (100, 100)])
def test_weight_numbers(importer: User, weight: Any, stored_weight: int | None) -> None:
    assert problems(run_import(importer, minimal_pool(weight=weight))) == []
    assert NodePool.objects.get().weight == stored_weight


@pytest.mark.parametrize("weight, message", [
    ("5", "must be an integer from 1 to 100, got '5'"),
    (5.5, "must be an integer from 1 to 100, got 5.5"),
    (True, "must be an integer from 1 to 100, got True"),
    (0, "0 must be an integer from 1 to 100"),
    (101, "101 must be an integer from 1 to 100"),
])
def test_weight_bad_numbers(importer: User, weight: Any, message: str) -> None:
    assert problems(run_import(importer, minimal_pool(weight=weight))) == [(1, "spec.weight", message)]
    assert counts() == (0, 0, 0)


def test_integral_floats_count_as_integers(importer: User) -> None:
    text = minimal_pool(limits={"cpu": 4.0, "memory": "16Gi"}).replace("values:\n        - spot",
                                                                     "values: [spot, on-demand]\n        minValues: 2.0")
    assert problems(run_import(importer, text)) == []
    pool = NodePool.objects.get()
    assert pool.limits == {"cpu": 4, "memory": "16Gi"} and type(pool.limits["cpu"]) is int
    assert pool.requirements[0]["minValues"] == 2 and type(pool.requirements[0]["minValues"]) is int
    assert problems(run_import(importer, minimal_pool("frac", limits={"cpu": 1.5}))) == [
        (1, "spec.limits.cpu", "1.5 must be an integer or a quantity string such as '1.5' or '100Gi'")]


def test_empty_optional_fields(importer: User) -> None:
    text = minimal_pool(limits={}, weight=None) .replace(
        "requirements:", "taints: []\n      startupTaints: null\n      requirements:")
    assert problems(run_import(importer, text)) == []
    pool = NodePool.objects.get()
    assert (pool.taints, pool.startup_taints, pool.limits, pool.weight) == ([], [], {}, None)
    assert problems(run_import(importer, minimal_nodeclass("nc", tags={}, kubelet=None, userData=None))) == []
    nc = EC2NodeClass.objects.get()
    assert (nc.tags, nc.kubelet, nc.user_data, nc.metadata_options, nc.instance_profile) == ({}, {}, "", {}, "")


def test_timestamps_stay_strings(importer: User) -> None:
    text = minimal_pool().replace("requirements:", "taints:\n      - {key: a, effect: NoExecute, "
                                                   "timeAdded: 2024-02-02T19:54:34Z}\n      requirements:")
    assert problems(run_import(importer, text)) == []
    assert NodePool.objects.get().taints == [{"key": "a", "effect": "NoExecute", "timeAdded": "2024-02-02T19:54:34Z"}]


# --- bad input: a clear message naming the document, the file and the field; nothing saved ------------------

@pytest.fixture
def existing(importer: User) -> tuple[int, int, int]:
    """An existing NodePool and EC2NodeClass that a failed batch must leave untouched."""
    run_import(importer, minimal_pool("existing", weight=5) + "---\n" + minimal_nodeclass("existing"))
    return counts()


GOOD = minimal_pool("good")


@pytest.mark.parametrize("text, expected", [
    (GOOD + "---\nkind: NodePool\nmetadata: {name: [unclosed\n",
     (2, "", "malformed YAML at line 20, column 1: did not find expected ',' or ']'")),
    ("---\n" + GOOD + "---\napiVersion: karpenter.sh/v1\nkind: NodePool\n  bad: indent\n",
     (2, "", "malformed YAML at line")),
    (GOOD + "---\n- just\n- a list\n", (2, "", "expected a mapping with apiVersion and kind, got list")),
    (GOOD + "---\njust a string\n", (2, "", "expected a mapping with apiVersion and kind, got str")),
    (GOOD + "---\n" + minimal_pool("p").replace("kind: NodePool", "kind: Provisioner"),
     (2, "kind", "unsupported kind 'Provisioner'; expected NodePool (karpenter.sh/v1), EC2NodeClass (karpenter.k8s.aws/v1), CapacityBuffer (autoscaling.x-k8s.io/v1beta1), NodeOverlay (karpenter.sh/v1alpha1) or Commitment (loadmaster.dev/v1alpha1)")),
    (GOOD + "---\n" + minimal_pool("p").replace("kind: NodePool\n", ""),
     (2, "kind", "kind is missing; expected NodePool (karpenter.sh/v1), EC2NodeClass (karpenter.k8s.aws/v1), CapacityBuffer (autoscaling.x-k8s.io/v1beta1), NodeOverlay (karpenter.sh/v1alpha1) or Commitment (loadmaster.dev/v1alpha1)")),
    (GOOD + "---\n" + minimal_pool("p").replace("karpenter.sh/v1", "karpenter.sh/v2"),
     (2, "apiVersion", "unsupported apiVersion 'karpenter.sh/v2' for NodePool; expected karpenter.sh/v1")),
    (GOOD + "---\n" + minimal_pool("p").replace("apiVersion: karpenter.sh/v1", "apiVersion: karpenter.sh/v1beta1"),
     (2, "apiVersion", "unsupported apiVersion 'karpenter.sh/v1beta1' for NodePool; expected karpenter.sh/v1 "
                       "(a legacy Karpenter object: import with conversion (?convert=1")),
    (GOOD + "---\n" + minimal_nodeclass().replace("karpenter.k8s.aws/v1", "karpenter.k8s.aws/v1beta1"),
     (2, "apiVersion", "unsupported apiVersion 'karpenter.k8s.aws/v1beta1' for EC2NodeClass; expected karpenter.k8s.aws/v1 "
                       "(a legacy Karpenter object: import with conversion (?convert=1")),
    (GOOD + "---\n" + minimal_pool("p").replace("operator: In", "operator: Equals"),
     (2, "spec.template.spec.requirements[0].operator",
      "'Equals' is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte")),
    (GOOD + "---\n" + minimal_pool("p", disruption={"consolidateAfter": "5d"}),
     (2, "spec.disruption.consolidateAfter",
      "invalid duration '5d': use whole numbers with s, m or h, e.g. '30s', '5m', '720h', '1h30m' or 'Never'")),
    (GOOD + "---\n" + minimal_pool("p", template={"metadata": {"labels": {"kubernetes.io/hostname": "x"}}}),
     (2, "spec.template.spec", "template spec is required")),
    (GOOD + "---\n" + minimal_pool("p").replace("requirements:", "requirement:"),
     (2, "spec.template.spec.requirements", "requirements is required (use [] to allow any instance type)")),
    (GOOD + "---\n" + minimal_pool("p", disruption={"consolidateAfter": "0s", "consolidateAftr": "5m"}),
     (2, "spec.disruption.consolidateAftr", "unknown field (not in the Karpenter v1 schema)")),
    (GOOD + "---\n" + minimal_pool("p", replicas=-1),
     (2, "spec.replicas", "-1 must be an integer from 0 to 9223372036854775807")),
    (GOOD + "---\n" + minimal_pool("p", replicas="3"),
     (2, "spec.replicas", "must be an integer from 0 to 9223372036854775807, got '3'")),
    (GOOD + "---\n" + minimal_pool("p", replicas=2, weight=5),
     (2, "spec.weight", "'weight' is not supported on static NodePools")),
    (GOOD + "---\n" + minimal_pool("p", replicas=2, limits={"cpu": "10", "nodes": "4"}),
     (2, "spec.limits", "only 'limits.nodes' is supported on static NodePools")),
    (GOOD + "---\n" + minimal_pool("p").replace("requirements:", "kubelet: {maxPods: 10}\n      requirements:"),
     (2, "spec.template.spec.kubelet", "kubelet moved to the EC2NodeClass (spec.kubelet) in Karpenter v1")),
    (GOOD + "---\n" + minimal_pool("p").replace("group: karpenter.k8s.aws", "apiVersion: karpenter.k8s.aws/v1beta1"),
     (2, "spec.template.spec.nodeClassRef.apiVersion", "unknown field (v1 uses group instead of apiVersion)")),
    (GOOD + "---\n" + minimal_pool("p").replace("kind: EC2NodeClass", "kind: AKSNodeClass"),
     (2, "spec.template.spec.nodeClassRef.kind", "must be EC2NodeClass (got 'AKSNodeClass')")),
    (GOOD + "---\n" + minimal_pool("p").replace("name: p", "name: 123"),
     (2, "metadata.name", "must be a string, got 123")),
    (GOOD + "---\n" + minimal_pool("p").replace("  name: p\n", "  namespace: x\n"),
     (2, "metadata.name", "name is required")),
    (GOOD + "---\n" + minimal_pool("p", weight=7).replace("weight: 7", "weight: 7\n  weight: 8"),
     (2, "", "malformed YAML at line")),
    (GOOD + "---\n" + minimal_nodeclass("nc", amiFamily="Ubuntu"),
     (2, "spec.amiFamily", "'Ubuntu' is not one of AL2, AL2023, Bottlerocket, Windows2019, Windows2022, Windows2025, Custom")),
    (GOOD + "---\n" + minimal_nodeclass("nc", kubelet={"maxPods": -1}),
     (2, "spec.kubelet.maxPods", "must be a non-negative integer")),
    (GOOD + "---\n" + minimal_nodeclass("nc", tags={"kubernetes.io/cluster/demo": "owned"}),
     (2, "spec.tags[kubernetes.io/cluster/demo]", "tag 'kubernetes.io/cluster/demo' is set by Karpenter and may not be overridden")),
    (GOOD + "---\n" + minimal_nodeclass("nc", instanceProfile="Profile"),
     (2, "spec.role", "set exactly one of role or instanceProfile (not both)")),
    (GOOD + "---\n" + minimal_nodeclass("nc").replace("securityGroupSelectorTerms", "securityGroupSelector"),
     (2, "spec.securityGroupSelectorTerms", "securityGroupSelectorTerms is required")),
])
def test_bad_input_is_reported_and_nothing_is_saved(importer: User, existing: tuple[int, int, int],
                                                    text: str, expected: tuple[int, str, str]) -> None:
    result = run_import(importer, ("fleet.yaml", text))
    assert not result.ok
    found = problems(result)
    document, path, message = expected
    assert any(d == document and p == path and m.startswith(message) for d, p, m in found), found
    assert all(p.source == "fleet.yaml" for p in result.problems)
    assert str(result.problems[0]).startswith(f"fleet.yaml: document {document}:")
    assert counts() == existing
    assert not NodePool.objects.filter(name="good").exists()
    assert NodePool.objects.get(name="existing").weight == 5


def test_unknown_field_is_reported_alongside_others(importer: User) -> None:
    text = minimal_pool("p").replace("requirements:", "requirments: []\n      requirements:")
    assert problems(run_import(importer, text)) == [
        (1, "spec.template.spec.requirments", "unknown field (not in the Karpenter v1 schema)")]


def test_several_invalid_fields_are_all_reported(importer: User) -> None:
    text = minimal_pool("p", weight=0, limits={"cpu": "lots"}).replace("values:\n        - spot", "values: []")
    assert sorted(problems(run_import(importer, ("a.yaml", text)))) == [
        (1, "spec.limits.cpu", "'lots' is not a quantity (e.g. '500m', '4', '16Gi')"),
        (1, "spec.template.spec.requirements[0].values", "operator 'In' needs at least one value"),
        (1, "spec.weight", "0 must be an integer from 1 to 100"),
    ]


def test_label_error_path_names_the_key(importer: User) -> None:
    text = minimal_pool("p", template={"metadata": {"labels": {"karpenter.sh/nodepool": "x"}},
                                       "spec": yaml.safe_load(minimal_pool())["spec"]["template"]["spec"]})
    assert problems(run_import(importer, text)) == [
        (1, "spec.template.metadata.labels[karpenter.sh/nodepool]",
         'label "karpenter.sh/nodepool" is restricted (Karpenter sets it)')]


def test_duplicate_names_in_one_batch(importer: User, existing: tuple[int, int, int]) -> None:
    result = run_import(importer, ("a.yaml", minimal_pool("twice")), ("b.yaml", GOOD + "---\n" + minimal_pool("twice")))
    assert [(p.source, p.document, p.path, p.message) for p in result.problems] == [
        ("b.yaml", 2, "metadata.name", "NodePool 'twice' appears twice in this import (also in a.yaml document 1)")]
    assert counts() == existing


def test_same_name_for_different_kinds_is_fine(importer: User) -> None:
    assert problems(run_import(importer, minimal_pool("default") + "---\n" + minimal_nodeclass("default"))) == []


@pytest.mark.parametrize("texts, expected", [
    ([("empty.yaml", "")], ("empty.yaml", 1, "", "no documents found")),
    ([("blank.yaml", "\n# only a comment\n---\n")], ("blank.yaml", 1, "", "no documents found")),
    ([], ("", 1, "", "no YAML given: paste or upload NodePool / EC2NodeClass documents")),
])
def test_empty_input(importer: User, existing: tuple[int, int, int], texts: list[tuple[str, str]],
                     expected: tuple[str, int, str, str]) -> None:
    result = services.karpenter_import(texts=texts, user=importer)
    assert [(p.source, p.document, p.path, p.message) for p in result.problems] == [expected]
    assert counts() == existing


def test_problems_in_several_files_are_all_reported(importer: User, existing: tuple[int, int, int]) -> None:
    result = run_import(importer, ("a.yaml", "key: [oops"), ("b.yaml", GOOD), ("c.yaml", minimal_pool("c", weight=0)))
    assert [(p.source, p.document, p.path) for p in result.problems] == [("a.yaml", 1, ""), ("c.yaml", 1, "spec.weight")]
    assert counts() == existing


# --- re-import, history, dry run --------------------------------------------------------------------------

def test_import_records_history_with_source_import(importer: User) -> None:
    result = run_import(importer, DOC_NODEPOOL)
    assert result.created == ["NodePool/default"]
    record = ChangeRecord.objects.get()
    assert (record.object_type, record.object_name, record.action, record.source, record.user, record.username) == (
        ChangeRecord.NODEPOOL, "default", "created", "import", importer, "ida-importer")


def test_reimport_updates_and_records_history(importer: User) -> None:
    run_import(importer, DOC_NODEPOOL)
    pool = NodePool.objects.get(name="default")
    revision = pool.revision
    changed = DOC_NODEPOOL.replace("weight: 10", "weight: 20").replace('cpu: "1000"', 'cpu: "2000"')
    result = run_import(importer, changed)
    assert (result.created, result.updated, result.unchanged) == ([], ["NodePool/default"], [])
    pool.refresh_from_db()
    assert (pool.weight, pool.limits, pool.revision) == (20, {"cpu": "2000", "memory": "1000Gi"}, revision + 1)
    record = ChangeRecord.objects.filter(action="updated").get()
    assert (record.source, record.user, record.object_name) == ("import", importer, "default")
    assert record.changes == {"spec.weight": [10, 20], "spec.limits.cpu": ["1000", "2000"]}


def test_reimport_of_the_same_yaml_is_unchanged(importer: User) -> None:
    run_import(importer, DOC_NODEPOOL + "---\n" + DOC_NODECLASS)
    before = counts()
    result = run_import(importer, DOC_NODEPOOL + "---\n" + DOC_NODECLASS)
    assert (result.created, result.updated, sorted(result.unchanged)) == (
        [], [], ["EC2NodeClass/default", "NodePool/default"])
    assert counts() == before


def test_dry_run_writes_nothing(importer: User, existing: tuple[int, int, int]) -> None:
    text = DOC_NODEPOOL + "---\n" + minimal_pool("existing", weight=6) + "---\n" + minimal_nodeclass("existing")
    result = run_import(importer, text, dry_run=True)
    assert problems(result) == []
    assert (result.created, result.updated, result.unchanged) == (
        ["NodePool/default"], ["NodePool/existing"], ["EC2NodeClass/existing"])
    assert counts() == existing
    assert NodePool.objects.get(name="existing").weight == 5


def test_dry_run_reports_problems_too(importer: User, existing: tuple[int, int, int]) -> None:
    result = run_import(importer, minimal_pool("p", weight=0), dry_run=True)
    assert problems(result) == [(1, "spec.weight", "0 must be an integer from 1 to 100")]
    assert (result.created, result.updated) == ([], [])
    assert counts() == existing


def test_one_bad_document_saves_nothing_from_the_batch(importer: User, existing: tuple[int, int, int]) -> None:
    text = (DOC_NODEPOOL + "---\n" + minimal_pool("existing", weight=9) + "---\n" + minimal_nodeclass("nc2")
            + "---\n" + minimal_pool("bad", weight=0))
    result = run_import(importer, text)
    assert problems(result) == [(4, "spec.weight", "0 must be an integer from 1 to 100")]
    assert counts() == existing
    assert NodePool.objects.get(name="existing").weight == 5


def test_yaml_dialect_matches_kubectl() -> None:
    (doc,) = manifests.load_yaml_documents("a: 2024-02-02T19:54:34Z\n1: x\ntrue: y\n")
    assert doc == {"a": "2024-02-02T19:54:34Z", "1": "x", "true": "y"}
    with pytest.raises(yaml.YAMLError, match="key 'a' is given twice"):
        manifests.load_yaml_documents("a: 1\na: 2\n")


# --- hostile YAML (issue 14, items 17 and 19): bounded, an input error everywhere the console reads YAML -----------

def _bomb(levels: int = 6, field: str = "metadata") -> str:
    """A 'billion laughs': 9**levels strings from a few hundred bytes (about 500 bytes for 6 levels)."""
    lines = ["apiVersion: karpenter.sh/v1", "kind: NodePool", "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, levels)]
    lines.append(f"{field}: {{name: *a{levels - 1}}}")
    return "\n".join(lines) + "\n"


TAGGED = [("!!int x", "invalid integer 'x'"), ("!!timestamp x", "invalid timestamp 'x'"),
          ("!!float x", "invalid number 'x'"), ("!!bool x", "invalid boolean 'x'")]


def test_alias_bomb_import_is_refused_briefly(importer: User, operator_client: Any) -> None:
    text = _bomb()
    assert len(text) < 600
    [problem] = run_import(importer, ("bomb.yaml", text)).problems
    assert problem.document == 1 and "aliases expand the document by more than 10000 nodes" in problem.message
    for body in ({"yaml": text}, text):
        response = (operator_client.post("/api/import/", body, format="json") if isinstance(body, dict)
                    else operator_client.post("/api/import/", body, content_type="application/yaml"))
        assert response.status_code == 400 and len(response.content) < 2000, len(response.content)
    page = operator_client.post("/import/", {"text": text})
    assert page.status_code == 400 and len(page.content) < 200_000 and b"aliases expand" in page.content
    assert counts() == (0, 0, 0)


def test_a_small_alias_is_still_fine(importer: User) -> None:
    text = minimal_pool("aliased").replace("requirements:", "taints: &t [{key: a, effect: NoSchedule}]\n"
                                                           "      startupTaints: *t\n      requirements:")
    assert problems(run_import(importer, text)) == []
    assert NodePool.objects.get(name="aliased").startup_taints == [{"key": "a", "effect": "NoSchedule"}]


def test_values_quoted_in_errors_are_cut() -> None:
    doc = yaml.safe_load(minimal_pool("x"))
    doc["metadata"]["name"] = ["y" * 10_000] * 50
    _, found = manifests.fields_from_manifest(doc)
    [(path, message)] = [p for p in found if p[0] == "metadata.name"]
    assert message.startswith("must be a string, got [") and len(message) < 100 and "…" in message


@pytest.mark.parametrize(("tagged", "message"), TAGGED)
def test_explicit_tags_are_input_errors_on_import(importer: User, operator_client: Any, tagged: str,
                                                  message: str) -> None:
    text = minimal_pool("p").replace("name: p", f"name: {tagged}")
    [problem] = run_import(importer, ("t.yaml", text)).problems
    assert problem.message.startswith("malformed YAML at line 4, column 9") and message in problem.message
    response = operator_client.post("/api/import/", text, content_type="application/yaml")
    assert response.status_code == 400 and message in response.json()["problems"][0]["message"]
    assert operator_client.post("/import/", {"text": text}).status_code == 400
    assert counts() == (0, 0, 0)


@pytest.mark.parametrize(("tagged", "message"), TAGGED)
def test_explicit_tags_are_field_errors_in_the_nodeclass_form_and_preview(
        operator_client: Any, viewer_client: Any, tagged: str, message: str) -> None:
    data = {"name": "edited", "ami_family": "", "ami_selector_terms": f"- alias: {tagged}",
            "subnet_selector_terms": "- tags: {karpenter.sh/discovery: test}",
            "security_group_selector_terms": "- tags: {karpenter.sh/discovery: test}",
            "role": "KarpenterNodeRole-test", "instance_profile": "", "tags": "", "block_device_mappings": "",
            "kubelet_system_reserved": "", "kubelet_kube_reserved": "", "kubelet_eviction_hard": "",
            "user_data": "", "detailed_monitoring": "unknown", "associate_public_ip_address": "unknown"}
    saved = operator_client.post("/nodeclasses/new/", data)
    assert saved.status_code == 400
    [error] = saved.context["form"].errors["ami_selector_terms"]
    assert error.startswith("not valid YAML at line 1") and message in error
    preview = viewer_client.post("/whatif/nodeclasses/preview/", data, HTTP_X_REQUESTED_WITH="fetch")
    assert preview.status_code == 400
    assert any(e.startswith("ami_selector_terms: not valid YAML at line 1") and message in e
               for e in preview.context["errors"])
    assert not EC2NodeClass.objects.exists()


@pytest.mark.parametrize("text", [_bomb(6, "spec"), "apiVersion: v1\nkind: Pod\nmetadata: {name: !!int x}\n",
                                  "apiVersion: v1\nkind: Pod\nmetadata: {name: x, creationTimestamp: !!timestamp x}\n"])
def test_snapshot_paste_of_hostile_yaml_is_a_short_400(operator_client: Any, text: str) -> None:
    from console.whatif.models import Snapshot

    response = operator_client.post("/whatif/snapshots/", {"name": "s", "text": text})
    assert response.status_code == 400 and len(response.content) < 200_000
    assert b"pasted YAML: document 1: invalid YAML" in response.content
    assert not Snapshot.objects.exists()


def test_snapshot_with_too_many_replicas_is_refused_on_upload(operator_client: Any) -> None:
    from console.whatif.models import Snapshot

    deployments = "---\n".join(
        f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: w{i}}}\n"
        "spec: {replicas: 10000, template: {spec: {containers: [{name: c}]}}}\n" for i in range(11))
    response = operator_client.post("/whatif/snapshots/", {"name": "s", "text": deployments})
    assert response.status_code == 400 and b"more than 100000 pending pods" in response.content
    one = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w}\nspec: {replicas: 100000}\n"
    response = operator_client.post("/whatif/snapshots/", {"name": "s", "text": one})
    assert response.status_code == 400 and b"is more than the maximum 10000 pods per workload" in response.content
    assert not Snapshot.objects.exists()


def test_balanced_policy_imports_and_round_trips(importer: User) -> None:
    # Karpenter v1.14's third consolidationPolicy
    text = minimal_pool(disruption={"consolidationPolicy": "Balanced", "consolidateAfter": "30s"})
    result = run_import(importer, text)
    assert problems(result) == []
    pool = NodePool.objects.get(name="general")
    assert pool.consolidation_policy == "Balanced"
    exported = services.karpenter_export([pool])
    assert "consolidationPolicy: Balanced" in exported
    again = run_import(importer, exported)
    assert problems(again) == [] and again.unchanged == ["NodePool/general"]


def test_unknown_policy_is_refused_naming_the_three_policies(importer: User) -> None:
    result = run_import(importer, minimal_pool(disruption={"consolidationPolicy": "Always", "consolidateAfter": "0s"}))
    assert (1, "spec.disruption.consolidationPolicy",
            "'Always' is not one of WhenEmpty, WhenEmptyOrUnderutilized, Balanced") in problems(result)
    assert {p[1] for p in problems(result)} == {"spec.disruption.consolidationPolicy"}
    assert counts() == (0, 0, 0)
