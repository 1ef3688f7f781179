"""karpenter.sh/v1alpha5 Provisioner and karpenter.sh/v1beta1 NodePool into a karpenter.sh/v1 NodePool.

The moves follow Karpenter's upgrade guides (v1beta1-migration, v1-migration) and its v1 conversion webhook:
node-shaping fields go under spec.template, ttlSecondsAfterEmpty becomes consolidateAfter with WhenEmpty,
consolidation.enabled becomes WhenEmptyOrUnderutilized (v1beta1's WhenUnderutilized), the expiry moves to
spec.template.spec.expireAfter, providerRef becomes nodeClassRef (group, kind, name) and the kubelet settings go
to the EC2NodeClass (placed by packing.legacy.batch, which sees every object of the input).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packing.fields import FieldError, as_list, as_object, as_str
from packing.legacy.classes import nodeclass_from_provider
from packing.legacy.common import (
    NODECLASS_GROUP,
    NODECLASS_KIND,
    Converted,
    KubeletMove,
    ObjectName,
    duration_of_seconds,
    metadata,
    rename_annotations,
    seconds_field,
    unknown_fields,
)
from packing.legacy.report import Action, Change

__all__ = ["NODEPOOL_V1", "nodepool_v1beta1", "provisioner"]

NODEPOOL_V1 = "karpenter.sh/v1"
PROVISIONER_LABEL = "karpenter.sh/provisioner-name"  # v1beta1 renamed it
NODEPOOL_LABEL = "karpenter.sh/nodepool"
NEVER = "Never"

_PROVISIONER_FIELDS = frozenset({
    "labels", "annotations", "taints", "startupTaints", "requirements", "kubeletConfiguration", "provider",
    "providerRef", "ttlSecondsAfterEmpty", "ttlSecondsUntilExpired", "limits", "weight", "consolidation",
})
_V1BETA1_SPEC = frozenset({"template", "disruption", "limits", "weight"})
_V1BETA1_TEMPLATE_SPEC = frozenset({"nodeClassRef", "taints", "startupTaints", "requirements", "kubelet", "resources"})
_V1BETA1_DISRUPTION = frozenset({"consolidationPolicy", "consolidateAfter", "expireAfter", "budgets"})
# v1alpha5 kubelet settings v1beta1 removed (containerd is the only runtime Karpenter configures)
_DROPPED_KUBELET = {"containerRuntime": "v1 configures containerd only; the runtime cannot be chosen"}


def _requirements(raw: Any, path: str, source: ObjectName, changes: list[Change]) -> list[Any]:
    out = []
    for i, r in enumerate(as_list(raw, path)):
        ro = dict(as_object(r, f"{path}[{i}]"))
        if ro.get("key") in (PROVISIONER_LABEL, NODEPOOL_LABEL):
            changes.append(Change(str(source), f"{path}[{i}]", Action.DROPPED, ro, None,
                                  f"Karpenter sets {NODEPOOL_LABEL} to the pool's own name and v1 refuses it in "
                                  "a NodePool's requirements"))
            continue
        out.append(ro)
    return out


def _labels(raw: Any, path: str, source: ObjectName, changes: list[Change]) -> dict[str, Any]:
    labels = dict(as_object(raw, path))
    for key in (PROVISIONER_LABEL, NODEPOOL_LABEL):
        if key in labels:
            changes.append(Change(str(source), f"{path}.{key}", Action.DROPPED, labels.pop(key), None,
                                  f"Karpenter sets {NODEPOOL_LABEL} to the pool's own name"))
    return labels


def _kubelet(raw: Any, path: str, source: ObjectName, changes: list[Change]) -> dict[str, Any]:
    kubelet = dict(as_object(raw, path))
    for key, note in _DROPPED_KUBELET.items():
        if key in kubelet:
            changes.append(Change(str(source), f"{path}.{key}", Action.DROPPED, kubelet.pop(key), None, note))
    return kubelet


def _node_class_ref(raw: Any, path: str) -> dict[str, str]:
    ref = as_object(raw, path)
    name = as_str(ref.get("name"), f"{path}.name", required=True)
    if not name:
        raise FieldError(f"{path}.name", "is required")
    kind = as_str(ref.get("kind"), f"{path}.kind")
    if kind not in ("", "AWSNodeTemplate", NODECLASS_KIND):
        raise FieldError(f"{path}.kind", f"must be AWSNodeTemplate or EC2NodeClass, got {kind[:60]!r}")
    api = as_str(ref.get("apiVersion"), f"{path}.apiVersion")
    group = api.rsplit("/", 1)[0] if "/" in api else NODECLASS_GROUP
    if group != NODECLASS_GROUP:
        raise FieldError(f"{path}.apiVersion", f"must be in the {NODECLASS_GROUP} group, got {api[:60]!r}")
    return {"group": NODECLASS_GROUP, "kind": NODECLASS_KIND, "name": name}


def _template_metadata(labels: dict[str, Any], annotations: Mapping[str, Any], source: ObjectName, path: str,
                       changes: list[Change]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if labels:
        out["labels"] = labels
    if annotations:
        out["annotations"] = rename_annotations({str(k): str(v) for k, v in annotations.items()}, source, path,
                                                changes, f"NodePool/{source.name} spec.template.metadata.annotations")
    return out


def _pool(meta: dict[str, Any], tmeta: dict[str, Any], tspec: dict[str, Any], disruption: dict[str, Any],
          limits: Any, weight: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {**({"metadata": tmeta} if tmeta else {}), "spec": tspec},
                            "disruption": disruption}
    if limits:
        spec["limits"] = limits
    if weight is not None:
        spec["weight"] = weight
    return {"apiVersion": NODEPOOL_V1, "kind": "NodePool", "metadata": meta, "spec": spec}


def provisioner(doc: Mapping[str, Any]) -> Converted:
    """A karpenter.sh/v1alpha5 Provisioner: a v1 NodePool (and an EC2NodeClass for an inline spec.provider)."""
    out = Converted()
    ch = out.changes
    source, meta = metadata(doc, "Provisioner", ch)
    name, pool = source.name, f"NodePool/{source.name}"
    spec = as_object(doc.get("spec"), "spec")
    unknown_fields(spec, _PROVISIONER_FIELDS, source, "spec", ch)

    def moved(field: str, to: str, value: Any) -> None:
        ch.append(Change(str(source), field, Action.MOVED, value, f"{pool} {to}"))

    tspec: dict[str, Any] = {}
    # the node class: providerRef, or an inline provider made into an EC2NodeClass of the Provisioner's name
    if spec.get("providerRef") is not None and spec.get("provider") is not None:
        raise FieldError("spec.provider", "spec.provider and spec.providerRef are mutually exclusive")
    if spec.get("providerRef") is not None:
        tspec["nodeClassRef"] = _node_class_ref(spec.get("providerRef"), "spec.providerRef")
        ch.append(Change(str(source), "spec.providerRef", Action.CHANGED, dict(spec["providerRef"]),
                         f"{pool} spec.template.spec.nodeClassRef",
                         "v1 names the group, kind EC2NodeClass and the name of the AWSNodeTemplate's successor"))
    elif spec.get("provider") is not None:
        klass = nodeclass_from_provider(as_object(spec.get("provider"), "spec.provider"), name, source, ch)
        out.objects.append(klass)
        tspec["nodeClassRef"] = {"group": NODECLASS_GROUP, "kind": NODECLASS_KIND, "name": name}
        ch.append(Change(str(source), "spec.provider", Action.MOVED, None, f"EC2NodeClass/{name}",
                         "v1 has no inline provider: its settings are an EC2NodeClass the NodePool references"))
    else:
        raise FieldError("spec.providerRef", "is required: a v1 NodePool needs a nodeClassRef (give providerRef "
                         "naming an AWSNodeTemplate, or provider)")
    for key in ("taints", "startupTaints"):
        if spec.get(key) is not None:
            tspec[key] = as_list(spec.get(key), f"spec.{key}")
            moved(f"spec.{key}", f"spec.template.spec.{key}", tspec[key])
    if spec.get("requirements") is not None:
        tspec["requirements"] = _requirements(spec.get("requirements"), "spec.requirements", source, ch)
        moved("spec.requirements", "spec.template.spec.requirements", tspec["requirements"])

    expire = seconds_field(spec, "ttlSecondsUntilExpired", "spec.ttlSecondsUntilExpired")
    if expire is not None:
        tspec["expireAfter"] = duration_of_seconds(expire)
        ch.append(Change(str(source), "spec.ttlSecondsUntilExpired", Action.MOVED, expire,
                         f"{pool} spec.template.spec.expireAfter = {tspec['expireAfter']}"))
    else:
        tspec["expireAfter"] = NEVER
        ch.append(Change(str(source), "spec.ttlSecondsUntilExpired", Action.DEFAULTED, None,
                         f"{pool} spec.template.spec.expireAfter = {NEVER}",
                         "a v1alpha5 node without ttlSecondsUntilExpired never expired; v1's default is 720h"))

    empty = seconds_field(spec, "ttlSecondsAfterEmpty", "spec.ttlSecondsAfterEmpty")
    consolidation = as_object(spec.get("consolidation"), "spec.consolidation")
    enabled = consolidation.get("enabled", False)
    if not isinstance(enabled, bool):
        raise FieldError("spec.consolidation.enabled", "must be true or false")
    if enabled and empty is not None:
        raise FieldError("spec.consolidation.enabled", "consolidation and ttlSecondsAfterEmpty are mutually exclusive")
    if enabled:
        disruption = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}
        ch.append(Change(str(source), "spec.consolidation.enabled", Action.CHANGED, True,
                         f"{pool} spec.disruption.consolidationPolicy = WhenEmptyOrUnderutilized, consolidateAfter = 0s",
                         "v1 removes empty nodes and replaces underutilized ones under this policy"))
    elif empty is not None:
        disruption = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": duration_of_seconds(empty)}
        ch.append(Change(str(source), "spec.ttlSecondsAfterEmpty", Action.CHANGED, empty,
                         f"{pool} spec.disruption.consolidationPolicy = WhenEmpty, "
                         f"consolidateAfter = {disruption['consolidateAfter']}",
                         "v1 removes a node once it has been empty that long, as the TTL did"))
    else:
        disruption = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": NEVER}
        ch.append(Change(str(source), "spec.consolidation", Action.DEFAULTED, None,
                         f"{pool} spec.disruption.consolidationPolicy = WhenEmpty, consolidateAfter = {NEVER}",
                         "this Provisioner neither consolidated nor removed empty nodes; v1 would consolidate "
                         "by default"))
    if consolidation and not enabled:
        ch.append(Change(str(source), "spec.consolidation.enabled", Action.DROPPED, False, None,
                         "disabled consolidation is the policy above"))

    labels = _labels(spec.get("labels"), "spec.labels", source, ch)
    if labels:
        moved("spec.labels", "spec.template.metadata.labels", labels)
    annotations = as_object(spec.get("annotations"), "spec.annotations")
    if annotations:
        moved("spec.annotations", "spec.template.metadata.annotations", dict(annotations))
    tmeta = _template_metadata(labels, annotations, source, "spec.annotations", ch)

    limits = None
    raw_limits = as_object(spec.get("limits"), "spec.limits")
    if raw_limits:
        for key in sorted(set(map(str, raw_limits)) - {"resources"}):
            ch.append(Change(str(source), f"spec.limits.{key}", Action.DROPPED, raw_limits[key], None,
                             "v1alpha5 limits hold only resources"))
        limits = dict(as_object(raw_limits.get("resources"), "spec.limits.resources")) or None
        if limits:
            moved("spec.limits.resources", "spec.limits", limits)
    weight = spec.get("weight")
    if weight is not None:
        moved("spec.weight", "spec.weight", weight)

    if spec.get("kubeletConfiguration") is not None:
        kubelet = _kubelet(spec.get("kubeletConfiguration"), "spec.kubeletConfiguration", source, ch)
        if kubelet:
            out.kubelet = KubeletMove(name, tspec["nodeClassRef"]["name"], kubelet, source, "spec.kubeletConfiguration")
    out.objects.insert(0, _pool(meta, tmeta, tspec, disruption, limits, weight))
    return out


def nodepool_v1beta1(doc: Mapping[str, Any]) -> Converted:
    """A karpenter.sh/v1beta1 NodePool: the same NodePool in v1."""
    out = Converted()
    ch = out.changes
    source, meta = metadata(doc, "NodePool", ch)
    name, pool = source.name, f"NodePool/{source.name}"
    spec = as_object(doc.get("spec"), "spec")
    unknown_fields(spec, _V1BETA1_SPEC, source, "spec", ch)
    template = as_object(spec.get("template"), "spec.template")
    raw_tspec = as_object(template.get("spec"), "spec.template.spec")
    unknown_fields(raw_tspec, _V1BETA1_TEMPLATE_SPEC, source, "spec.template.spec", ch)
    raw_tmeta = as_object(template.get("metadata"), "spec.template.metadata")
    tspec: dict[str, Any] = {
        "nodeClassRef": _node_class_ref(raw_tspec.get("nodeClassRef"), "spec.template.spec.nodeClassRef")}
    ref = as_object(raw_tspec.get("nodeClassRef"), "spec.template.spec.nodeClassRef")
    if "apiVersion" in ref:
        ch.append(Change(str(source), "spec.template.spec.nodeClassRef.apiVersion", Action.CHANGED, ref["apiVersion"],
                         f"{pool} spec.template.spec.nodeClassRef.group = {NODECLASS_GROUP}",
                         "v1 references the node class by group and kind"))
    for key in ("taints", "startupTaints"):
        if raw_tspec.get(key) is not None:
            tspec[key] = as_list(raw_tspec.get(key), f"spec.template.spec.{key}")
    if raw_tspec.get("requirements") is not None:
        tspec["requirements"] = _requirements(raw_tspec.get("requirements"), "spec.template.spec.requirements",
                                              source, ch)
    if raw_tspec.get("resources") is not None:
        ch.append(Change(str(source), "spec.template.spec.resources", Action.DROPPED, raw_tspec.get("resources"), None,
                         "v1 NodePools cannot set node resources"))

    raw_disruption = as_object(spec.get("disruption"), "spec.disruption")
    unknown_fields(raw_disruption, _V1BETA1_DISRUPTION, source, "spec.disruption", ch)
    if "expireAfter" in raw_disruption:
        tspec["expireAfter"] = as_str(raw_disruption.get("expireAfter"), "spec.disruption.expireAfter")
        ch.append(Change(str(source), "spec.disruption.expireAfter", Action.MOVED, tspec["expireAfter"],
                         f"{pool} spec.template.spec.expireAfter"))
    policy = as_str(raw_disruption.get("consolidationPolicy"), "spec.disruption.consolidationPolicy")
    disruption: dict[str, Any] = {}
    if policy in ("", "WhenUnderutilized"):
        disruption["consolidationPolicy"] = "WhenEmptyOrUnderutilized"
        ch.append(Change(str(source), "spec.disruption.consolidationPolicy",
                         Action.CHANGED if policy else Action.DEFAULTED, policy or None,
                         f"{pool} spec.disruption.consolidationPolicy = WhenEmptyOrUnderutilized",
                         "v1's name for WhenUnderutilized" + ("" if policy else " (v1beta1's default)")))
    elif policy == "WhenEmpty":
        disruption["consolidationPolicy"] = "WhenEmpty"
    else:
        raise FieldError("spec.disruption.consolidationPolicy", f"must be WhenEmpty or WhenUnderutilized, got {policy[:60]!r}")
    if raw_disruption.get("consolidateAfter") is not None:
        disruption["consolidateAfter"] = as_str(raw_disruption.get("consolidateAfter"), "spec.disruption.consolidateAfter")
    else:
        disruption["consolidateAfter"] = "0s"
        ch.append(Change(str(source), "spec.disruption.consolidateAfter", Action.DEFAULTED, None,
                         f"{pool} spec.disruption.consolidateAfter = 0s",
                         "v1beta1 consolidated at once; v1 asks for the delay"))
    if "budgets" in raw_disruption:
        disruption["budgets"] = as_list(raw_disruption.get("budgets"), "spec.disruption.budgets")

    labels = _labels(raw_tmeta.get("labels"), "spec.template.metadata.labels", source, ch)
    annotations = as_object(raw_tmeta.get("annotations"), "spec.template.metadata.annotations")
    tmeta = _template_metadata(labels, annotations, source, "spec.template.metadata.annotations", ch)
    limits = dict(as_object(spec.get("limits"), "spec.limits")) or None
    if raw_tspec.get("kubelet") is not None:
        kubelet = _kubelet(raw_tspec.get("kubelet"), "spec.template.spec.kubelet", source, ch)
        if kubelet:
            out.kubelet = KubeletMove(name, tspec["nodeClassRef"]["name"], kubelet, source, "spec.template.spec.kubelet")
    out.objects.append(_pool(meta, tmeta, tspec, disruption, limits, spec.get("weight")))
    return out
