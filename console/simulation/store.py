"""The object store under the simulated cluster: JSON objects with etcd-like resourceVersions.

Writes go through a Store obtained from ``writing()``: one transaction holding the SimState row lock,
so resourceVersions are strictly increasing and two writers (two workers, beat and the web process)
never interleave. Reads need no lock.
"""

from __future__ import annotations

import copy
import hashlib
import random
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from console.backends.base import KubeObject, ResourceExpired, WatchEvent
from console.simulation.models import SimObject, SimState, SimTombstone

API_VERSIONS = {"Pod": "v1", "Node": "v1", "PodDisruptionBudget": "policy/v1", "DaemonSet": "apps/v1",
                "PodTemplate": "v1"}
CLUSTER_SCOPED = {"Node"}
_UID_NAMESPACE = uuid.UUID("6f1c2a3e-7d4b-4c1a-9a55-2f0e8b1d3c77")
# Kubernetes' alphabet for generated name suffixes (no vowels, no look-alikes).
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def rfc3339(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def digest(*parts: Any, length: int = 16) -> str:
    return hashlib.sha256(":".join(str(p) for p in parts).encode()).hexdigest()[:length]


def seeded_random(*parts: Any) -> random.Random:
    """A generator determined by its key alone: the same seed and key give the same draws, whatever
    order ticks and calls come in (a shared generator would depend on how often the tick ran)."""
    return random.Random(int(digest(*parts, length=32), 16))


def suffix(*parts: Any, length: int = 5) -> str:
    rng = seeded_random(*parts)
    return "".join(rng.choice(_SUFFIX_ALPHABET) for _ in range(length))


def load_state(now: datetime | None = None, seed: int = 0) -> SimState:
    """The state row, created on first use (origin = now)."""
    state = SimState.objects.filter(pk=1).first()
    if state is not None:
        return state
    try:
        with transaction.atomic():
            return SimState.objects.create(pk=1, seed=seed, origin=now or timezone.now())
    except IntegrityError:      # another process created it first
        return SimState.objects.get(pk=1)


class Store:
    """Writes within one locked transaction. ``now`` stamps creation times and conditions."""

    def __init__(self, state: SimState, now: datetime) -> None:
        self.state = state
        self.now = now

    # -- ids -----------------------------------------------------------------------------------------

    def _bump(self) -> int:
        self.state.resource_version += 1
        return self.state.resource_version

    def next_counter(self) -> int:
        self.state.object_counter += 1
        return self.state.object_counter

    def new_uid(self) -> str:
        return str(uuid.uuid5(_UID_NAMESPACE, f"{self.state.seed}:{self.state.epoch}:{self.next_counter()}"))

    def new_suffix(self, base: str) -> str:
        return suffix(self.state.seed, self.state.epoch, base, self.next_counter())

    # -- objects -------------------------------------------------------------------------------------

    def get(self, kind: str, name: str, namespace: str = "") -> SimObject | None:
        return SimObject.objects.filter(kind=kind, namespace=_ns(kind, namespace), name=name).first()

    def create(self, body: Mapping[str, Any]) -> KubeObject:
        """Create an object (its kind from body["kind"]); an existing one of that name is an error."""
        obj = copy.deepcopy(dict(body))
        kind = obj["kind"]
        meta = obj.setdefault("metadata", {})
        namespace = _ns(kind, meta.get("namespace") or "")
        if kind not in CLUSTER_SCOPED:
            meta["namespace"] = namespace
        obj["apiVersion"] = API_VERSIONS.get(kind, obj.get("apiVersion", "v1"))
        meta.setdefault("uid", self.new_uid())
        meta.setdefault("creationTimestamp", rfc3339(self.now))
        rv = self._bump()
        meta["resourceVersion"] = str(rv)
        SimObject.objects.create(
            kind=kind, namespace=namespace, name=meta["name"], uid=meta["uid"], resource_version=rv,
            created_version=rv, node_name=_node_name(obj), provider_id=_provider_id(obj), body=obj)
        return obj

    def update(self, row: SimObject, body: Mapping[str, Any]) -> KubeObject:
        """Replace a stored object's body; a body equal to the stored one writes nothing (no event)."""
        obj = copy.deepcopy(dict(body))
        meta = obj.setdefault("metadata", {})
        meta["resourceVersion"] = row.body["metadata"]["resourceVersion"]
        if obj == row.body:
            return obj
        rv = self._bump()
        meta["resourceVersion"] = str(rv)
        row.body = obj
        row.resource_version = rv
        row.node_name = _node_name(obj)
        row.provider_id = _provider_id(obj)
        row.save(update_fields=["body", "resource_version", "node_name", "provider_id"])
        return obj

    def delete(self, row: SimObject) -> KubeObject:
        """Delete, leaving a tombstone with the object's last state at the deletion's version."""
        rv = self._bump()
        body = copy.deepcopy(row.body)
        body["metadata"]["resourceVersion"] = str(rv)
        SimTombstone.objects.create(kind=row.kind, namespace=row.namespace, name=row.name,
                                    resource_version=rv, body=body)
        row.delete()
        return body

    def compact(self, retain: int) -> int:
        """Keep the newest `retain` tombstones; later watches from before the cut get ResourceExpired."""
        cut = SimTombstone.objects.order_by("-resource_version").values_list("resource_version", flat=True)[retain:retain + 1]
        if not cut:
            return 0
        newest_pruned = cut[0]
        pruned, _ = SimTombstone.objects.filter(resource_version__lte=newest_pruned).delete()
        self.state.compacted_version = max(self.state.compacted_version, newest_pruned)
        return pruned

    def expire_history(self) -> None:
        """Forget all history (a reset, or a test simulating etcd compaction): every watch relists."""
        SimTombstone.objects.all().delete()
        self._bump()
        self.state.compacted_version = self.state.resource_version


@contextmanager
def writing(now: datetime | None = None, *, seed: int = 0) -> Iterator[Store]:
    """A Store in a transaction holding the state row lock; the state is saved on success."""
    when = now or timezone.now()
    load_state(when, seed)
    with transaction.atomic():
        # select_for_update blocks other writers on PostgreSQL; SQLite's IMMEDIATE transactions
        # (console.env) already serialise writers.
        state = SimState.objects.select_for_update().get(pk=1)
        store = Store(state, when)
        yield store
        state.save()


# --- reads -----------------------------------------------------------------------------------------

def list_objects(kind: str) -> tuple[list[KubeObject], str]:
    """All live objects of a kind and the version the list is consistent with."""
    with transaction.atomic():
        # One transaction, so the version read matches the objects listed.
        version = SimState.objects.filter(pk=1).values_list("resource_version", flat=True).first() or 0
        # the bodies alone: no model instance per row (a 10,000-pod list is on the cold /metrics path)
        items = list(SimObject.objects.filter(kind=kind).order_by("namespace", "name").values_list("body", flat=True))
    return items, str(version)


def changes(kind: str, resource_version: str) -> list[WatchEvent]:
    """What a watch from `resource_version` reports: every change after it, oldest first.

    An object changed several times since then is reported once, in its latest state (ADDED when it
    was created after the version, else MODIFIED), as a watch that coalesced its events would; a
    deletion is DELETED with the object's last state. "" or "0" means "from now, starting with every
    existing object as ADDED", as the API server does.
    """
    if resource_version in ("", "0"):
        return [WatchEvent("ADDED", row.body)
                for row in SimObject.objects.filter(kind=kind).order_by("resource_version")]
    try:
        since = int(resource_version)
    except ValueError:
        raise ResourceExpired(f"resourceVersion {resource_version!r} is not one of ours") from None
    live = list(SimObject.objects.filter(kind=kind, resource_version__gt=since))
    dead = list(SimTombstone.objects.filter(kind=kind, resource_version__gt=since))
    # Read the compaction mark after the tombstones: a prune racing with us then shows up here.
    compacted = SimState.objects.filter(pk=1).values_list("compacted_version", flat=True).first() or 0
    if since < compacted:
        raise ResourceExpired(f"resourceVersion {since} is older than the retained history ({compacted})")
    events: list[tuple[int, WatchEvent]] = [
        (row.resource_version, WatchEvent("ADDED" if row.created_version > since else "MODIFIED", row.body))
        for row in live
    ]
    events += [(t.resource_version, WatchEvent("DELETED", t.body)) for t in dead]
    events.sort(key=lambda e: e[0])
    return [e for _, e in events]


def _ns(kind: str, namespace: str) -> str:
    return "" if kind in CLUSTER_SCOPED else (namespace or "default")


def _node_name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("spec") or {}).get("nodeName") or "") if obj.get("kind") == "Pod" else ""


def _provider_id(obj: Mapping[str, Any]) -> str:
    return str((obj.get("spec") or {}).get("providerID") or "") if obj.get("kind") == "Node" else ""
