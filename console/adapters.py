"""The one place where Django rows become `packing` objects (the engine never imports Django)."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from packing import kubeobjects
from packing.catalog import PriceOverride, load_builtin
from packing.instancetype import InstanceType
from packing.kubeobjects import Inputs

log = logging.getLogger(__name__)


def price_overrides() -> list[PriceOverride]:
    from console.catalog.models import PriceOverrideRule

    return [rule.to_packing() for rule in PriceOverrideRule.objects.all()]


@lru_cache(maxsize=8)
def _catalog(region: str, overrides: tuple[PriceOverride, ...], kubelet_json: str) -> tuple[InstanceType, ...]:
    from django.conf import settings

    # Live data refreshed by the catalog tasks wins over the bundled snapshot when present.
    return tuple(load_builtin(region, overrides=overrides, kubelet=json.loads(kubelet_json) or None,
                              cache_dir=settings.LOADMASTER_CATALOG_CACHE))


def instance_types(region: str = "us-east-1", *, kubelet: Mapping[str, Any] | None = None,
                   overrides: Sequence[PriceOverride] | None = None) -> tuple[InstanceType, ...]:
    """The region's catalog with the operator's price overrides applied (cached per inputs)."""
    rules = tuple(price_overrides() if overrides is None else overrides)
    return _catalog(region, rules, json.dumps(dict(kubelet or {}), sort_keys=True))


# --- cluster state -> engine inputs ---------------------------------------------------------------

def nodeclaim_object(claim: Any) -> dict[str, Any]:
    """An in-flight NodeClaim row as the karpenter.sh/v1 object the engine's parser reads."""
    return {
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": claim.name, "labels": dict(claim.labels or {})},
        "spec": {"requirements": [], "taints": list(claim.taints or [])},
        "status": {"allocatable": dict(claim.allocatable or {}), "capacity": dict(claim.capacity or {}),
                   "nodeName": claim.node_name or "", "providerID": claim.provider_id or ""},
    }


def nodepool_documents(nodepools: Sequence[Any], problems: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The Karpenter manifests of the NodePool rows that the engine's parser accepts. A row that cannot
    be turned into a manifest, or whose manifest the parser refuses, is left out — one broken pool
    must not stop the others — and named in ``problems`` (pool name -> why)."""
    from console.fleet import manifests

    docs = []
    for pool in nodepools:
        try:
            doc = manifests.nodepool_to_manifest(pool.field_values())
            kubeobjects._add_object(doc, Inputs())   # parsed here once, so a refusal is the pool's own
        except Exception as exc:
            what = str(exc) if isinstance(exc, kubeobjects.InputError) else f"{type(exc).__name__}: {exc}"
            reason = f"its spec cannot be read by the engine ({what})"[:500]
            log.warning("nodepool %s left out: %s", getattr(pool, "name", "?"), reason)
            if problems is not None:
                problems[str(getattr(pool, "name", "?"))] = reason
            continue
        docs.append(doc)
    return docs


def nodeclass_documents(nodeclasses: Sequence[Any]) -> list[dict[str, Any]]:
    """The manifests of the EC2NodeClass rows that convert; a broken row is logged and left out."""
    from console.fleet import manifests

    docs = []
    for nodeclass in nodeclasses:
        try:
            docs.append(manifests.nodeclass_to_manifest(nodeclass.field_values()))
        except Exception as exc:
            log.warning("ec2nodeclass %s left out: %s: %s", getattr(nodeclass, "name", "?"), type(exc).__name__, exc)
    return docs


def cluster_inputs(*, pods: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]],
                   pdbs: Sequence[Mapping[str, Any]] = (), daemonsets: Sequence[Mapping[str, Any]] = (),
                   nodepools: Sequence[Any] = (), nodeclasses: Sequence[Any] = (),
                   nodeclaims: Sequence[Any] = (), problems: dict[str, str] | None = None) -> Inputs:
    """Everything the provisioning engine needs, read by the same parser as `python -m packing plan`.

    NodePools and EC2NodeClasses go through their Karpenter manifests, so the loops see exactly what
    an export would show; NodeClaims that have no Node yet count as in-flight capacity. A NodePool
    that cannot be converted is left out and named in ``problems`` (see nodepool_documents).
    """
    inputs = Inputs()
    docs: list[Mapping[str, Any]] = [*pods, *nodes, *pdbs, *daemonsets]
    docs += nodepool_documents(nodepools, problems)
    docs += nodeclass_documents(nodeclasses)
    docs += [nodeclaim_object(c) for c in nodeclaims]
    for doc in docs:
        try:
            kubeobjects._add_object(doc, inputs)
        except Exception as exc:  # one malformed object in a live cluster must not stop provisioning
            meta = doc.get("metadata") or {}
            log.warning("skipping %s %s/%s: %s", doc.get("kind"), meta.get("namespace", ""), meta.get("name"), exc)
            inputs.skipped[f"invalid {doc.get('kind')}"] = inputs.skipped.get(f"invalid {doc.get('kind')}", 0) + 1
    return inputs


def with_unavailable(types: Sequence[InstanceType], unavailable: set[tuple[str, str, str]]) -> list[InstanceType]:
    """The catalog with offerings that recently failed for capacity marked unavailable."""
    if not unavailable:
        return list(types)
    out = []
    for itype in types:
        if any((itype.name, o.zone, o.capacity_type) in unavailable for o in itype.offerings):
            offerings = tuple(dataclasses.replace(o, available=False)
                              if (itype.name, o.zone, o.capacity_type) in unavailable else o
                              for o in itype.offerings)
            itype = dataclasses.replace(itype, offerings=offerings)
        out.append(itype)
    return out
