"""karpenter.k8s.aws/v1alpha1 AWSNodeTemplate (and a v1alpha5 Provisioner's inline spec.provider) and
karpenter.k8s.aws/v1beta1 EC2NodeClass into a karpenter.k8s.aws/v1 EC2NodeClass.

As Karpenter's upgrade guides describe: the v1alpha1 selector maps become selector terms (`aws-ids` one id term
each, `aws::name` and `aws::owners` structured fields, other keys tags), launchTemplate has no successor, an
instanceProfile stays one, and a class that names only an amiFamily (or none: v1alpha1 defaulted to AL2) gets the
alias term `<family>@latest` that v1 requires, as Karpenter's v1 conversion webhook writes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packing.fields import FieldError, as_list, as_object, as_str
from packing.legacy.common import Converted, ObjectName, metadata, unknown_fields
from packing.legacy.report import Action, Change

__all__ = ["NODECLASS_V1", "awsnodetemplate", "ec2nodeclass_v1beta1", "nodeclass_from_provider"]

NODECLASS_V1 = "karpenter.k8s.aws/v1"
# the families v1 has aliases for, by their amiFamily name
ALIASES = {"AL2": "al2", "AL2023": "al2023", "Bottlerocket": "bottlerocket", "Windows2019": "windows2019",
           "Windows2022": "windows2022"}
LEGACY_FAMILIES = (*ALIASES, "Ubuntu", "Custom")
V1ALPHA1_DEFAULT_FAMILY = "AL2"  # the family of a legacy class that names none
_IDS = ("aws-ids", "aws::ids")

_V1ALPHA1_FIELDS = frozenset({
    "subnetSelector", "securityGroupSelector", "amiSelector", "amiFamily", "instanceProfile", "launchTemplate",
    "userData", "tags", "metadataOptions", "blockDeviceMappings", "detailedMonitoring", "context",
    "apiVersion", "kind",  # an inline provider carried its own type
})
_V1BETA1_FIELDS = frozenset({
    "subnetSelectorTerms", "securityGroupSelectorTerms", "amiSelectorTerms", "amiFamily", "role", "instanceProfile",
    "userData", "tags", "metadataOptions", "blockDeviceMappings", "detailedMonitoring", "instanceStorePolicy",
    "associatePublicIPAddress", "context",
})
# carried over unchanged, in the order the v1 object lists them
_KEPT = ("role", "instanceProfile", "tags", "blockDeviceMappings", "metadataOptions", "userData", "context",
         "detailedMonitoring", "associatePublicIPAddress", "instanceStorePolicy")


def _ids(value: Any, path: str) -> list[str]:
    return [i.strip() for i in as_str(value, path).split(",") if i.strip()]


def _selector_terms(raw: Any, path: str, source: ObjectName, changes: list[Change], *, ami: bool) -> list[dict[str, Any]]:
    """A v1alpha1 selector map as v1 selector terms (the map's keys were ANDed: one term, or one per id)."""
    selector = {str(k): v for k, v in as_object(raw, path).items()}
    id_key = next((k for k in _IDS if k in selector), None)
    if id_key is not None:
        rest = sorted(k for k in selector if k != id_key)
        for k in rest:
            changes.append(Change(str(source), f"{path}.{k}", Action.DROPPED, selector[k], None,
                                  "v1 selects by id alone: a term with an id may not also filter on tags"))
        return [{"id": i} for i in _ids(selector[id_key], f"{path}.{id_key}")]
    name = owners = None
    if ami:
        name = selector.pop("aws::name", None)
        owners = selector.pop("aws::owners", None)
    tags = {k: as_str(v, f"{path}.{k}") for k, v in selector.items()}
    term: dict[str, Any] = {}
    if name is not None:
        term["name"] = as_str(name, f"{path}.aws::name")
    if tags:
        term["tags"] = tags
    if owners is not None:
        return [{**term, "owner": o} for o in _ids(owners, f"{path}.aws::owners")]
    return [term] if term else []


def _family(spec: Mapping[str, Any], path: str) -> str:
    family = as_str(spec.get("amiFamily"), f"{path}.amiFamily")
    if family and family not in LEGACY_FAMILIES:
        raise FieldError(f"{path}.amiFamily", f"must be one of {', '.join(LEGACY_FAMILIES)}, got {family[:60]!r}")
    return family


def _ami(family: str, terms: list[dict[str, Any]], legacy_default: str, path: str, source: ObjectName,
         changes: list[Change]) -> dict[str, Any]:
    """amiFamily and amiSelectorTerms of the v1 class: the alias term for a class without AMI terms."""
    if not terms:
        chosen = family or legacy_default
        if chosen == "Custom":
            raise FieldError(f"{path}.amiFamily", "Custom needs AMI selector terms to convert (v1 requires them)")
        if chosen == "Ubuntu":
            raise FieldError(f"{path}.amiFamily", "Karpenter v1 has no Ubuntu alias: select the Ubuntu AMIs "
                             "(amiSelector) and convert again")
        if not chosen:
            raise FieldError(f"{path}.amiSelectorTerms", "is required (or amiFamily)")
        alias = f"{ALIASES[chosen]}@latest"
        changes.append(Change(str(source), f"{path}.amiFamily", Action.CHANGED if family else Action.DEFAULTED,
                              family or None, f"EC2NodeClass/{source.name} spec.amiSelectorTerms = [alias: {alias}]",
                              "v1 selects a family's AMIs by alias; Karpenter advises pinning a version "
                              "(e.g. al2023@v20240807) in production" + ("" if family else
                                                                         f" (the legacy default family {chosen})")))
        return {"amiSelectorTerms": [{"alias": alias}]}
    if family == "Ubuntu":
        changes.append(Change(str(source), f"{path}.amiFamily", Action.CHANGED, "Ubuntu",
                              f"EC2NodeClass/{source.name} spec.amiFamily = AL2",
                              "v1 has no Ubuntu family: AL2's bootstrap is what Ubuntu's EKS AMIs accept; check "
                              "blockDeviceMappings, Ubuntu's root device is /dev/sda1"))
        family = "AL2"
    if not family:
        family = legacy_default
        if family:
            changes.append(Change(str(source), f"{path}.amiFamily", Action.DEFAULTED, None,
                                  f"EC2NodeClass/{source.name} spec.amiFamily = {family}",
                                  "v1 requires amiFamily with AMI terms other than an alias"))
    return {**({"amiFamily": family} if family else {}), "amiSelectorTerms": terms}


def _v1alpha1_spec(spec: Mapping[str, Any], path: str, source: ObjectName, changes: list[Change]) -> dict[str, Any]:
    unknown_fields(spec, _V1ALPHA1_FIELDS, source, path, changes)
    klass = f"EC2NodeClass/{source.name}"
    out: dict[str, Any] = {}
    ami_terms = _selector_terms(spec.get("amiSelector"), f"{path}.amiSelector", source, changes, ami=True)
    if ami_terms:
        changes.append(Change(str(source), f"{path}.amiSelector", Action.CHANGED, dict(spec["amiSelector"]),
                              f"{klass} spec.amiSelectorTerms", "selector map as selector terms"))
    out.update(_ami(_family(spec, path), ami_terms, V1ALPHA1_DEFAULT_FAMILY, path, source, changes))
    for key, to in (("subnetSelector", "subnetSelectorTerms"), ("securityGroupSelector", "securityGroupSelectorTerms")):
        terms = _selector_terms(spec.get(key), f"{path}.{key}", source, changes, ami=False)
        if not terms:
            raise FieldError(f"{path}.{key}", "is required")
        out[to] = terms
        changes.append(Change(str(source), f"{path}.{key}", Action.CHANGED, dict(spec[key]), f"{klass} spec.{to}",
                              "selector map as selector terms"))
    if spec.get("instanceProfile") is None:
        changes.append(Change(str(source), f"{path}.instanceProfile", Action.DROPPED, None, None,
                              "v1alpha5 fell back to the aws.defaultInstanceProfile setting, which v1 does not have: "
                              "set spec.role or spec.instanceProfile"))
    if spec.get("launchTemplate") is not None:
        changes.append(Change(str(source), f"{path}.launchTemplate", Action.DROPPED, spec.get("launchTemplate"), None,
                              "v1 launches from the templates it makes itself: move the template's settings into "
                              "the EC2NodeClass (userData, blockDeviceMappings, metadataOptions)"))
    for key in _KEPT:
        if spec.get(key) is not None:
            out[key] = spec[key]
    return out


def _class(meta: Mapping[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": NODECLASS_V1, "kind": "EC2NodeClass", "metadata": dict(meta), "spec": spec}


def nodeclass_from_provider(provider: Mapping[str, Any], name: str, source: ObjectName,
                            changes: list[Change]) -> dict[str, Any]:
    """A v1alpha5 Provisioner's inline spec.provider (an AWSNodeTemplate's spec) as an EC2NodeClass `name`."""
    return _class({"name": name}, _v1alpha1_spec(provider, "spec.provider", ObjectName(source.kind, name), changes))


def awsnodetemplate(doc: Mapping[str, Any]) -> Converted:
    out = Converted()
    source, meta = metadata(doc, "AWSNodeTemplate", out.changes)
    spec = as_object(doc.get("spec"), "spec")
    out.objects.append(_class(meta, _v1alpha1_spec(spec, "spec", source, out.changes)))
    return out


def ec2nodeclass_v1beta1(doc: Mapping[str, Any]) -> Converted:
    out = Converted()
    ch = out.changes
    source, meta = metadata(doc, "EC2NodeClass", ch)
    spec = as_object(doc.get("spec"), "spec")
    unknown_fields(spec, _V1BETA1_FIELDS, source, "spec", ch)
    terms = [dict(as_object(t, f"spec.amiSelectorTerms[{i}]")) for i, t in
             enumerate(as_list(spec.get("amiSelectorTerms"), "spec.amiSelectorTerms"))]
    # an unset amiFamily was AL2 in v1beta1 too
    new = _ami(_family(spec, "spec"), terms, V1ALPHA1_DEFAULT_FAMILY, "spec", source, ch)
    for key in ("subnetSelectorTerms", "securityGroupSelectorTerms"):
        if spec.get(key) is not None:
            new[key] = spec[key]
    for key in _KEPT:
        if spec.get(key) is not None:
            new[key] = spec[key]
    out.objects.append(_class(meta, new))
    return out
