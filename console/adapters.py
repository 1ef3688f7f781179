"""The one place where Django rows and live Kubernetes objects become engine inputs (the engine never imports
Django): objects → `packing.api.Inputs` / `Extras` (read_objects) and NodePools, NodeClasses and the catalog
→ the engine's catalog (engine_catalog). The loops, the what-if pages and the dashboards all come through here,
so they read the cluster exactly as `python -m packing plan/consolidate` read an export of it."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from django.conf import settings

from console.backends.base import ClusterBackend, KubeObject
from console.commitments.models import Commitment
from console.fleet import manifests
from console.overlays.models import NodeOverlay
from packing import api

log = logging.getLogger(__name__)

# (instance type, zone, capacity type) of an offering that recently failed to launch
OfferingKey = tuple[str, str, str]


# --- NodePools, NodeClasses and the catalog -> the engine's catalog -------------------------------------

def node_overlays() -> list[api.NodeOverlay]:
    """The NodeOverlay rows (console/overlays) as the engine's; a row the engine cannot read is logged and left
    out (its form and import refuse such rows, so only a hand-edited database has one)."""
    out = []
    for row in NodeOverlay.objects.all():
        try:
            out.append(row.to_packing())
        except api.InputError as exc:
            log.warning("nodeoverlay %s left out: %s", row.name, exc)
    return out


def commitments() -> list[api.Commitment]:
    """The Commitment rows (console/commitments) as the engine's packing.commitments.Commitment; a row the
    engine cannot read is logged and left out."""
    out = []
    for row in Commitment.objects.all():
        try:
            out.append(row.to_packing())
        except api.InputError as exc:
            log.warning("commitment %s left out: %s", row.name, exc)
    return out


@lru_cache(maxsize=8)
def _base_catalog(region: str, kubelet_json: str) -> tuple[api.InstanceType, ...]:
    # Live data refreshed by the catalog tasks wins over the bundled snapshot when present.
    return tuple(api.load_builtin(region, kubelet=json.loads(kubelet_json) or None,
                                  cache_dir=settings.LOADMASTER_CATALOG_CACHE))


@lru_cache(maxsize=8)
def _catalog(region: str, overlays: tuple[api.NodeOverlay, ...], kubelet_json: str) -> tuple[api.InstanceType, ...]:
    return tuple(api.apply_overlays(_base_catalog(region, kubelet_json), overlays))


def clear_catalog_cache() -> None:
    """Forget the cached catalogs: a NodeOverlay (or a price override) or a catalog refresh changes what the
    engine pays."""
    _base_catalog.cache_clear()
    _catalog.cache_clear()


def instance_types(region: str = "us-east-1", *, kubelet: Mapping[str, Any] | None = None,
                   overlays: Sequence[api.NodeOverlay] | None = None) -> tuple[api.InstanceType, ...]:
    """The region's catalog with the NodeOverlays applied (the stored ones unless given; cached per inputs)."""
    chosen = tuple(node_overlays() if overlays is None else overlays)
    return _catalog(region, chosen, json.dumps(dict(kubelet or {}), sort_keys=True))


def overlay_result(region: str = "us-east-1") -> api.OverlayResult:
    """What the stored NodeOverlays do to the region's catalog: the offerings and types each one changes, and the
    conflicts that keep some out (the NodeOverlay list page)."""
    return api.resolve_overlays(_base_catalog(region, "{}"), node_overlays())


def with_unavailable(types: Sequence[api.InstanceType], unavailable: Collection[OfferingKey]) -> list[api.InstanceType]:
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


def nodeclass_kubelet(pools: Sequence[Any], nodeclasses: Sequence[Any]) -> Mapping[str, Any] | None:
    """The kubelet settings the catalog's allocatable is computed with: those of the NodeClass of the
    highest-weight NodePool that has one (one catalog per run)."""
    by_name = {c.name: c for c in nodeclasses}
    for pool in sorted(pools, key=lambda p: (-(p.weight or 0), p.name)):
        nodeclass = by_name.get(pool.node_class_name)
        if nodeclass is not None:
            return nodeclass.kubelet or None
    return None


def engine_catalog(*, pools: Sequence[Any], nodeclasses: Sequence[Any],
                   unavailable: Collection[OfferingKey] = ()) -> list[api.InstanceType]:
    """The catalog a run of the engine uses: the region's (NodeOverlays applied) for the fleet's kubelet,
    with the offerings in `unavailable` marked so."""
    types = instance_types(settings.LOADMASTER_AWS_REGION, kubelet=nodeclass_kubelet(pools, nodeclasses))
    return with_unavailable(types, unavailable)


# --- rows and live objects -> engine inputs -----------------------------------------------------------

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
    docs = []
    for pool in nodepools:
        try:
            doc = manifests.nodepool_to_manifest(pool.field_values())
            api.check_object(doc)   # parsed here once, so a refusal is the pool's own
        except Exception as exc:
            what = str(exc) if isinstance(exc, api.InputError) else f"{type(exc).__name__}: {exc}"
            reason = f"its spec cannot be read by the engine ({what})"[:500]
            log.warning("nodepool %s left out: %s", getattr(pool, "name", "?"), reason)
            if problems is not None:
                problems[str(getattr(pool, "name", "?"))] = reason
            continue
        docs.append(doc)
    return docs


def nodeclass_documents(nodeclasses: Sequence[Any]) -> list[dict[str, Any]]:
    """The manifests of the EC2NodeClass rows that convert; a broken row is logged and left out."""
    docs = []
    for nodeclass in nodeclasses:
        try:
            docs.append(manifests.nodeclass_to_manifest(nodeclass.field_values()))
        except Exception as exc:
            log.warning("ec2nodeclass %s left out: %s: %s", getattr(nodeclass, "name", "?"), type(exc).__name__, exc)
    return docs


def buffer_documents(buffers: Sequence[Any]) -> list[dict[str, Any]]:
    """The manifests of the CapacityBuffer rows (console/buffers): the engine makes their virtual pods."""
    return [b.manifest() for b in buffers]


def buffer_pod_templates(*, cluster: ClusterBackend, buffers: Sequence[Any]) -> list[KubeObject]:
    """The live PodTemplates the CapacityBuffer rows name (`podTemplateRef`, in the buffer's namespace): the shape
    of their chunks. The cluster is asked only when a buffer names one, and only the named ones are handed on, so
    the PodTemplates nothing refers to cost no parsing (nor a refusal in the log)."""
    wanted = {(b.namespace, b.pod_template_ref) for b in buffers if b.pod_template_ref}
    if not wanted:
        return []
    named = []
    for template in cluster.list_pod_templates():
        meta = template.get("metadata")
        if isinstance(meta, Mapping) and (meta.get("namespace") or "default", meta.get("name")) in wanted:
            named.append(template)
    return named


def _named(doc: Mapping[str, Any]) -> str:
    """`Kind namespace/name` of a refused object for the log, whatever its metadata holds (the object is refused
    for a reason: its metadata may be a string, a list, or missing)."""
    meta = doc.get("metadata")
    if not isinstance(meta, Mapping):
        return f"{str(doc.get('kind'))[:60]} (metadata {'missing' if meta is None else type(meta).__name__})"
    return f"{str(doc.get('kind'))[:60]} {str(meta.get('namespace') or '')[:60]}/{str(meta.get('name'))[:60]}"


def _refused(doc: Mapping[str, Any], exc: Exception) -> None:
    log.warning("skipping %s: %s", _named(doc), exc)


def read_objects(docs: Iterable[Mapping[str, Any]], inputs: api.Inputs, extras: api.Extras | None = None) -> None:
    """Live objects into engine inputs, by the parser of `python -m packing plan/consolidate`: what
    provisioning reads into ``inputs`` and, when ``extras`` is given, what disruption reads besides. An
    object the engine cannot read is logged, counted in ``inputs.skipped`` and left out: one malformed
    object in a live cluster must not stop the loops."""
    api.add_objects(docs, inputs, extras, on_refused=_refused)


def _cluster_documents(*, pods: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]],
                       pdbs: Sequence[Mapping[str, Any]], daemonsets: Sequence[Mapping[str, Any]],
                       nodepools: Sequence[Any], nodeclasses: Sequence[Any], nodeclaims: Sequence[Any],
                       problems: dict[str, str] | None, buffers: Sequence[Any] = (),
                       pod_templates: Sequence[Mapping[str, Any]] = ()) -> list[Mapping[str, Any]]:
    docs: list[Mapping[str, Any]] = [*pods, *nodes, *pdbs, *daemonsets]
    docs += buffer_documents(buffers)
    docs += pod_templates
    docs += nodepool_documents(nodepools, problems)
    docs += nodeclass_documents(nodeclasses)
    docs += [nodeclaim_object(c) for c in nodeclaims]
    return docs


def cluster_inputs(*, pods: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]],
                   pdbs: Sequence[Mapping[str, Any]] = (), daemonsets: Sequence[Mapping[str, Any]] = (),
                   nodepools: Sequence[Any] = (), nodeclasses: Sequence[Any] = (),
                   nodeclaims: Sequence[Any] = (), problems: dict[str, str] | None = None,
                   buffers: Sequence[Any] = (), pod_templates: Sequence[Mapping[str, Any]] = ()) -> api.Inputs:
    """Everything the provisioning engine needs, read by the same parser as `python -m packing plan`.

    NodePools and EC2NodeClasses go through their Karpenter manifests, so the loops see exactly what
    an export would show; NodeClaims that have no Node yet count as in-flight capacity. A NodePool
    that cannot be converted is left out and named in ``problems`` (see nodepool_documents). CapacityBuffer
    rows (``buffers``) go through their manifests too, with the live PodTemplates they name (``pod_templates``,
    see buffer_pod_templates).
    """
    inputs = api.Inputs()
    read_objects(_cluster_documents(pods=pods, nodes=nodes, pdbs=pdbs, daemonsets=daemonsets, nodepools=nodepools,
                                    nodeclasses=nodeclasses, nodeclaims=nodeclaims, problems=problems,
                                    buffers=buffers, pod_templates=pod_templates), inputs)
    return inputs


def cluster_objects(*, pods: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]],
                    pdbs: Sequence[Mapping[str, Any]] = (), daemonsets: Sequence[Mapping[str, Any]] = (),
                    nodepools: Sequence[Any] = (), nodeclasses: Sequence[Any] = (),
                    problems: dict[str, str] | None = None, buffers: Sequence[Any] = (),
                    pod_templates: Sequence[Mapping[str, Any]] = ()) -> tuple[api.Inputs, api.Extras]:
    """cluster_inputs with what disruption reads besides (the disrupt loop's view of the cluster)."""
    inputs, extras = api.Inputs(), api.Extras()
    read_objects(_cluster_documents(pods=pods, nodes=nodes, pdbs=pdbs, daemonsets=daemonsets, nodepools=nodepools,
                                    nodeclasses=nodeclasses, nodeclaims=(), problems=problems, buffers=buffers,
                                    pod_templates=pod_templates),
                 inputs, extras)
    return inputs, extras
