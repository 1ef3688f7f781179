"""A pod's template in a history: the parts of a Kubernetes Pod the engines read, in Kubernetes' own spelling.

Kept in the file as a pod template (`{"metadata": {...}, "spec": {...}}`), the same encoding packing.podspec
parses, so a pod rebuilt from a history is the Pod the engine would have read from the cluster: requests
(containers, init containers, overhead, pod-level resources), node selector, node and pod (anti-)affinity,
tolerations, topology spreads, host ports, scheduling gates, priority, the termination grace period, the labels
and the annotations disruption reads. Nothing a pod holds alone (name, uid, owner, node, status) is in it, so the
replicas of one ReplicaSet share one template, stored once under its id (a hash of its content).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from packing.pods import Pod
from packing.podspec import parse_pod_spec

__all__ = [
    "KEPT_ANNOTATIONS",
    "KEPT_CONTAINER_FIELDS",
    "KEPT_SPEC_FIELDS",
    "engine_pod",
    "pod_object",
    "spec_id",
    "template_of",
]

# spec fields the engines read (packing.podspec, packing.kubeobjects, packing.disruption.inputs) or a replay's
# drain needs; the rest (volumes, env, images, probes...) never changes a placement
KEPT_SPEC_FIELDS = (
    "affinity",
    "initContainers",
    "containers",
    "nodeSelector",
    "overhead",
    "preemptionPolicy",
    "priority",
    "priorityClassName",
    "resources",
    "schedulingGates",
    "terminationGracePeriodSeconds",
    "tolerations",
    "topologySpreadConstraints",
)
KEPT_CONTAINER_FIELDS = ("name", "resources", "restartPolicy")
# the annotations disruption reads (do-not-disrupt, the deletion cost, a static pod's mirror mark); others vary
# pod by pod (network status, checksums) and would give every replica its own template
KEPT_ANNOTATIONS = (
    "karpenter.sh/do-not-disrupt",
    "controller.kubernetes.io/pod-deletion-cost",
    "kubernetes.io/config.mirror",
    "cluster-autoscaler.kubernetes.io/safe-to-evict",
)
# the labels are kept whole, those a controller sets on one pod alone too (a StatefulSet's pod-name): a spread's
# matchLabelKeys may read them; they only give that pod a template of its own
ID_LENGTH = 16  # hex digits of the SHA-256 of the template's canonical JSON


def _container(c: Any) -> Any:
    if not isinstance(c, Mapping):
        return c  # left for the parser to refuse, naming the field
    out = {k: c[k] for k in KEPT_CONTAINER_FIELDS if k in c}
    ports = c.get("ports")
    if isinstance(ports, list):
        # only host ports constrain a placement
        kept = [p for p in ports if not isinstance(p, Mapping) or p.get("hostPort")]
        if kept:
            out["ports"] = kept
    elif ports is not None:
        out["ports"] = ports
    return out


def template_of(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The template of a Kubernetes Pod object (or of a workload's `spec.template`)."""
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    spec = pod.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    out_meta: dict[str, Any] = {}
    labels = meta.get("labels")
    if labels:
        out_meta["labels"] = labels
    annotations = meta.get("annotations")
    if isinstance(annotations, Mapping):
        kept = {k: annotations[k] for k in KEPT_ANNOTATIONS if k in annotations}
        if kept:
            out_meta["annotations"] = kept
    out_spec: dict[str, Any] = {}
    for key in KEPT_SPEC_FIELDS:
        value = spec.get(key)
        if value is None or value == [] or value == {}:
            continue
        if key in ("containers", "initContainers") and isinstance(value, list):
            value = [_container(c) for c in value]
        out_spec[key] = value
    out: dict[str, Any] = {}
    if out_meta:
        out["metadata"] = out_meta
    out["spec"] = out_spec
    return out


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def spec_id(template: Mapping[str, Any]) -> str:
    """The id Loadmaster's writers give a template: the first 16 hex digits of the SHA-256 of its canonical JSON
    (keys sorted), so equal templates get one id wherever they are written."""
    return hashlib.sha256(canonical_json(template).encode("utf-8")).hexdigest()[:ID_LENGTH]


def pod_object(
    template: Mapping[str, Any],
    *,
    namespace: str,
    name: str,
    uid: str = "",
    owner_kind: str = "",
    owner_name: str = "",
    node: str = "",
) -> dict[str, Any]:
    """The Kubernetes Pod a history's pod stands for (what packing.kubeobjects and packing.disruption.inputs read)."""
    meta: dict[str, Any] = dict(template.get("metadata") or {})
    meta["name"] = name
    meta["namespace"] = namespace
    if uid:
        meta["uid"] = uid
    if owner_kind:
        meta["ownerReferences"] = [{"kind": owner_kind, "name": owner_name, "controller": True}]
    spec: dict[str, Any] = dict(template.get("spec") or {})
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def engine_pod(
    template: Mapping[str, Any],
    *,
    namespace: str,
    name: str,
    uid: str = "",
    owner_kind: str = "",
    owner_name: str = "",
    node: str = "",
    path: str = "",
) -> Pod:
    """The engine's Pod of a history's pod; FieldError naming the field (after `path`) when the template is bad."""
    obj = pod_object(
        template, namespace=namespace, name=name, uid=uid, owner_kind=owner_kind, owner_name=owner_name, node=node
    )
    return parse_pod_spec(obj["metadata"], obj["spec"], path, name=name, namespace=namespace)
