"""One cluster state as the what-if pages hand it to the engines: documents in memory, never the database.

Everything goes through one representation — the list of Kubernetes/Karpenter documents that
`python -m packing plan/consolidate` read — so a preview, a live explanation and a snapshot replay
all see exactly what the CLI would see. Nothing here writes a row: edited NodePools/NodeClasses are
unsaved model instances, turned into manifests like the saved ones.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from console import adapters
from console.backends.base import ClusterBackend
from console.backends.factory import cluster_backend
from console.buffers.models import CapacityBuffer
from console.commitments.models import Commitment
from console.control.models import UnavailableOffering
from console.control.reservations import with_reservations
from console.fleet import manifests
from console.fleet.models import EC2NodeClass, NodeClaim, NodePool
from packing import api

Doc = dict[str, Any]


class NotFound(LookupError):
    pass


def object_key(doc: Mapping[str, Any]) -> str:
    """namespace/name of a namespaced object (the engine's pod key)."""
    meta = doc.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _parse(docs: list[Doc]) -> tuple[api.Inputs, api.Extras]:
    inputs, extras = api.Inputs(), api.Extras()
    adapters.read_objects(docs, inputs, extras)
    return inputs, extras


@dataclass
class World:
    """One cluster state as engine documents, plus the rows that produced the fleet part."""

    workload: list[Doc]                     # pods, nodes, pdbs, daemonsets, in-flight NodeClaims
    pools: list[NodePool]
    classes: list[EC2NodeClass]
    pending_keys: set[str] | None = None    # None: every unbound pod counts as pending (CLI semantics)
    now: datetime = field(default_factory=timezone.now)
    # The workload parsed once: before/after and plan/consolidate share it (the engines never mutate
    # parsed objects — consolidation re-solves the same ones many times), only the fleet is re-parsed.
    parsed: tuple[api.Inputs, api.Extras] | None = field(default=None, repr=False, compare=False)

    def docs(self) -> list[Doc]:
        return [*self.workload, *self.fleet_docs()]

    def replaced(self, *, pool: NodePool | None = None, nodeclass: EC2NodeClass | None = None,
                 workload: list[Doc] | None = None) -> World:
        pools = [p for p in self.pools if pool is None or p.name != pool.name] + ([pool] if pool else [])
        classes = [c for c in self.classes if nodeclass is None or c.name != nodeclass.name]
        classes += [nodeclass] if nodeclass else []
        if workload is None and self.parsed is None:
            self.parsed = _parse(self.workload)  # parse once, share with the copy
        return World(workload if workload is not None else self.workload, pools, classes, self.pending_keys, self.now,
                     self.parsed if workload is None else None)

    def with_pending(self, key: str) -> World:
        """The same state with the pod `key` counted as pending even if the scheduler has not marked it yet."""
        return World(self.workload, self.pools, self.classes,
                     None if self.pending_keys is None else self.pending_keys | {key}, self.now, self.parsed)

    def fleet_docs(self) -> list[Doc]:
        return [*(manifests.nodepool_to_manifest(p.field_values()) for p in self.pools),
                *(manifests.nodeclass_to_manifest(c.field_values()) for c in self.classes)]

    def inputs(self) -> tuple[api.Inputs, api.Extras]:
        """Fresh engine inputs: the cached workload (containers copied, objects shared) plus the fleet."""
        if self.parsed is None:
            self.parsed = _parse(self.workload)
        base, base_ex = self.parsed
        inputs, extras = api.fresh_inputs(base), api.fresh_extras(base_ex)
        adapters.read_objects(self.fleet_docs(), inputs, extras)
        return inputs, extras

    def find(self, kind: str, key: str) -> Doc | None:
        """The workload's object of `kind` named `key` (namespace/name for a Pod, the name otherwise)."""
        for d in self.workload:
            if d.get("kind") == kind and (object_key(d) == key if kind == "Pod"
                                          else (d.get("metadata") or {}).get("name") == key):
                return d
        return None


def edited_instance(model: type[NodePool] | type[EC2NodeClass], values: Mapping[str, Any], base: Any) -> Any:
    """The unsaved object a preview runs with: `base` (the saved row, or None) overlaid with `values`, so the
    manifest is built by the same code path as for saved rows. It is never saved."""
    names = {f.name for f in model._meta.concrete_fields} - {"id", "created_at", "updated_at", "revision"}
    fields = {k: v for k, v in (base.field_values() if base else {}).items() if k in names}
    fields.update({k: v for k, v in values.items() if k in names})
    return model(**fields)


def live_world(*, cluster: ClusterBackend | None = None, now: datetime | None = None) -> World:
    """The live cluster and the saved fleet, read (never written) the way the provision loop reads them."""
    cluster = cluster or cluster_backend()
    pods, _ = cluster.list_pods()
    nodes, _ = cluster.list_nodes()
    inflight = NodeClaim.objects.active().filter(registered_at__isnull=True)
    workload: list[Doc] = [*pods, *nodes, *cluster.list_pdbs(), *cluster.list_daemonsets()]
    workload += [adapters.nodeclaim_object(c) for c in inflight]
    buffers = list(CapacityBuffer.objects.all())
    workload += adapters.buffer_documents(buffers)  # as the loops read them
    workload += adapters.buffer_pod_templates(cluster=cluster, buffers=buffers)
    # the stored Reserved Instances and Savings Plans, as the provision and disrupt loops price with them
    workload += [c.manifest() for c in Commitment.objects.all()]
    # The provision loop only plans for pods the scheduler gave up on; a preview must agree with it.
    pending = {object_key(p) for p in cluster.pending_pods()}
    return World(workload, list(NodePool.objects.all()), list(EC2NodeClass.objects.all()), pending, now or timezone.now())


# --- running the engines ---------------------------------------------------------------------------

@dataclass
class Outcome:
    plan: api.Results
    consolidation: api.Report
    seconds: float = 0.0


def catalog(world: World) -> list[api.InstanceType]:
    """The loops' catalog (adapters.engine_catalog) without their housekeeping: the provision loop deletes
    expired UnavailableOffering rows, and a preview must not write; the live ones are read here."""
    unavailable = set(UnavailableOffering.objects.filter(expires_at__gt=world.now)
                      .values_list("instance_type", "zone", "capacity_type"))
    # the NodeClasses' capacity reservations as the loops offer them (console.control.reservations; reads only)
    types = with_reservations(adapters.engine_catalog(pools=world.pools, nodeclasses=world.classes), now=world.now)
    return adapters.with_unavailable(types, unavailable)


def run_plan(world: World, types: Sequence[api.InstanceType] | None = None) -> api.Results:
    """The provisioner's plan over the world (for its pending pods only, when it names them)."""
    inputs, _ = world.inputs()
    if world.pending_keys is not None:
        inputs.pending = [p for p in inputs.pending if p.key in world.pending_keys]
    # with commitments, the plan prices what they cover at its marginal cost as the provision loop does, at the
    # world's time (the commitments in force then); without, the plan is the one it always was
    committed = {"commitments": inputs.commitments, "at": world.now} if inputs.commitments else {}
    return api.plan(inputs, types if types is not None else catalog(world),
                    min_values_policy=api.MinValuesPolicy(settings.LOADMASTER_MIN_VALUES_POLICY), **committed)


def run_world(world: World) -> Outcome:
    """The plan and the consolidation report over the world, on one catalog."""
    started = time.perf_counter()
    types = catalog(world)
    plan = run_plan(world, types)
    inputs, extras = world.inputs()
    # the preview's summary never shows what blocked moves would save, so the engine skips pricing them
    report = api.consolidate(api.with_min_values_policy(api.build_cluster(inputs, extras, types),
                                                settings.LOADMASTER_MIN_VALUES_POLICY),
                             world.now, price_blocked=False, repack=settings.LOADMASTER_CONSOLIDATION_REPACK)
    return Outcome(plan, report, time.perf_counter() - started)
