"""What a replay runs under: the loops' timing, and the NodePools / EC2NodeClasses in force over time (the
history's revisions, with a proposed change laid over them)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from packing.disruption.inputs import Extras, read_extras
from packing.disruption.model import DisruptionSettings
from packing.fields import FieldError, InputError
from packing.history.events import ManifestKind
from packing.instancetype import InstanceType, Offering
from packing.kubeobjects import Inputs, add_object
from packing.nodepool import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL, NodePool
from packing.planning import builtin_catalog

__all__ = ["Configuration", "Timing", "change_manifests"]


@dataclass(frozen=True)
class Timing:
    """The loops' timing in event time. The defaults are Karpenter's batching (1 s idle, 10 s at most) and the
    simulated cloud's delays (console.simulation.config: 15 s pending -> running, 30 s to register; 10 s to
    terminate). Disruption is evaluated at most every `disruption_interval` and only when the cluster changed
    since its last evaluation found nothing (Karpenter polls every 10 s; a replay of days cannot afford that)."""

    batch_idle: timedelta = timedelta(seconds=1)
    batch_max: timedelta = timedelta(seconds=10)
    launch_to_ready: timedelta = timedelta(seconds=45)
    drain: timedelta = timedelta(seconds=30)
    terminate: timedelta = timedelta(seconds=10)
    spot_notice: timedelta = timedelta(seconds=120)
    disruption_interval: timedelta = timedelta(minutes=5)
    retry_unschedulable: timedelta = timedelta(minutes=5)
    sample_every: timedelta = timedelta(minutes=10)


_KINDS = {"NodePool": ManifestKind.NODEPOOL, "EC2NodeClass": ManifestKind.NODECLASS}
_GROUPS = {"NodePool": "karpenter.sh", "EC2NodeClass": "karpenter.k8s.aws"}


def change_manifests(docs: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[tuple[ManifestKind, str], Mapping[str, Any]]:
    """The NodePools and EC2NodeClasses of a change, by (kind, name), from (place, document) pairs; InputError
    naming the place for a document the engine cannot read, or for one of another kind."""
    out: dict[tuple[ManifestKind, str], Mapping[str, Any]] = {}
    for where, doc in docs:
        kind = doc.get("kind")
        api = str(doc.get("apiVersion", ""))
        if kind not in _KINDS or not api.startswith(_GROUPS[str(kind)] + "/"):
            raise InputError(f"{where}: kind: a change holds NodePools and EC2NodeClasses, got {kind!r}")
        name = str((doc.get("metadata") or {}).get("name", ""))
        try:
            add_object(doc, Inputs())
            read_extras(doc, Extras())
        except FieldError as e:
            raise InputError(f"{where}: {e}") from None
        key = (_KINDS[str(kind)], name)
        if key in out:
            raise InputError(f"{where}: metadata.name: {kind} {name} is in the change twice")
        out[key] = doc
    return out


@dataclass
class Configuration:
    """The manifests in force, the engine objects read from them, and the catalog priced as the history says.

    `version` changes whenever a manifest or a price changes, so the engine objects and the catalog are read
    again only then."""

    region: str
    overrides: Mapping[tuple[ManifestKind, str], Mapping[str, Any]] = field(default_factory=dict)
    manifests: dict[tuple[ManifestKind, str], Mapping[str, Any]] = field(default_factory=dict)
    prices: dict[tuple[str, str, str], float | None] = field(default_factory=dict)
    unoffered: set[tuple[str, str, str]] = field(default_factory=set)
    version: int = 0
    _read: tuple[int, list[NodePool], dict[str, DisruptionSettings]] | None = None
    _catalog: tuple[int, list[InstanceType]] | None = None
    _base_catalog: tuple[str, list[InstanceType]] | None = None
    _inputs: Inputs = field(default_factory=Inputs)
    # instance types kept in the catalog whatever the pools say: those of the nodes running (their prices)
    keep_types: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.manifests.update(self.overrides)

    def revise(self, kind: ManifestKind, name: str, manifest: Mapping[str, Any] | None) -> None:
        """A history revision; one the change overrides is not taken (the change holds for the whole replay)."""
        key = (kind, name)
        if key in self.overrides:
            return
        if manifest is None:
            self.manifests.pop(key, None)
        else:
            self.manifests[key] = manifest
        self.version += 1

    def set_prices(self, items: Iterable[tuple[tuple[str, str, str], float | None]],
                   unset: Iterable[tuple[str, str, str]]) -> None:
        for key, price in items:
            self.prices[key] = price
            self.unoffered.discard(key)
        for key in unset:
            self.prices.pop(key, None)
            self.unoffered.add(key)
        self.version += 1

    def objects(self) -> tuple[list[NodePool], dict[str, DisruptionSettings]]:
        """The NodePools (as the engine reads them) and their disruption settings. A manifest the engine cannot
        read was refused when it was recorded or given; should one slip through, its pool is left out."""
        if self._read is None or self._read[0] != self.version:
            inp, ex = Inputs(), Extras()
            for key in sorted(self.manifests, key=lambda k: (k[0].value, k[1])):
                doc = self.manifests[key]
                try:
                    add_object(doc, inp)
                    read_extras(doc, ex)
                except FieldError:
                    continue
            self._read = (self.version, list(inp.nodepools), dict(ex.settings))
            self._inputs = inp
        return self._read[1], self._read[2]

    def catalog(self) -> list[InstanceType]:
        """The built-in catalog of the region (allocatable from the NodeClasses' kubelet, as `plan` does) with
        the history's prices in force: an offering the history prices takes that price, one it unset is not
        offered."""
        self.objects()
        if self._catalog is not None and self._catalog[0] == self.version:
            return self._catalog[1]
        kubelets = tuple(sorted((k, repr(v)) for k, v in self._inputs.nodeclasses.items()))
        if self._base_catalog is None or self._base_catalog[0] != repr(kubelets):
            self._base_catalog = (repr(kubelets), builtin_catalog(self._inputs, self.region))
        out = []
        for it in self._base_catalog[1]:
            offerings = []
            changed = False
            for o in it.offerings:
                key = (it.name, o.zone, o.capacity_type)
                if key in self.unoffered:
                    changed = True
                    offerings.append(Offering(o.zone, o.capacity_type, o.price, False, o.price_source))
                elif key in self.prices and self.prices[key] != o.price:
                    changed = True
                    offerings.append(Offering(o.zone, o.capacity_type, self.prices[key], o.available, "history"))
                else:
                    offerings.append(o)
            out.append(InstanceType(it.name, it.capacity, it.overhead, it.labels, tuple(offerings)) if changed else it)
        pools, _ = self.objects()
        out = [it for it in out if it.name in self.keep_types or any(_admits(p, it) for p in pools)]
        self._catalog = (self.version, out)
        return out


def _admits(pool: NodePool, it: InstanceType) -> bool:
    """Could `pool` launch `it` at all: its requirements allow the type's labels, and some offering's zone and
    capacity type. A key the type does not label is not decided here (the solve decides it): the catalog a replay
    keeps is a superset of what any pool can launch, which spares every solve the types none can."""
    for key, req in pool.requirements.items():
        if key == INSTANCE_TYPE_LABEL:
            if not req.has(it.name):
                return False
        elif key in (ZONE_LABEL, CAPACITY_TYPE_LABEL):
            continue
        elif key in it.labels and not req.has(it.labels[key]):
            return False
    zones, cts = pool.requirements.get(ZONE_LABEL), pool.requirements.get(CAPACITY_TYPE_LABEL)
    return any((zones is None or zones.has(o.zone)) and (cts is None or cts.has(o.capacity_type))
               for o in it.offerings)


def price_of(catalog: Sequence[InstanceType], instance_type: str, zone: str, capacity_type: str) -> float | None:
    for it in catalog:
        if it.name == instance_type:
            for o in it.offerings:
                if o.zone == zone and o.capacity_type == capacity_type:
                    return o.price
    return None
