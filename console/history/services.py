"""Writes to the history: recording events (the recorder that diffs the cluster, the interruption hook, the
fleet's revisions, the prices in force), importing a history file, and pruning past LOADMASTER_HISTORY_DAYS.

Every event goes through history_record, which stores templates once, keeps the `live` marks (an arrival, a
binding, a launch or a revision still in force) and never leaves a batch half-written.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from console import adapters
from console.backends.base import ClusterBackend
from console.control.locks import LockBusy, loop_lock
from console.fleet import manifests
from console.fleet.models import ChangeRecord, EC2NodeClass, NodeClaim, NodePool
from console.history.models import EventKind, HistoryCursor, HistoryEvent, HistoryImport, HistorySpec
from console.history.rows import GROUP_CLOSERS, GROUP_OPENERS, row_parts
from packing.api import InputError, history

EVENT_ORDER = history.EVENT_ORDER
Event = history.Event
Header = history.Header
HistoryError = history.HistoryError
InterruptionKind = history.InterruptionKind
ManifestKind = history.ManifestKind
NodeInterrupted = history.NodeInterrupted
NodeLaunched = history.NodeLaunched
NodeState = history.NodeState
NodeTerminated = history.NodeTerminated
OfferingPrice = history.OfferingPrice
PodArrived = history.PodArrived
PodSpec = history.PodSpec
PodState = history.PodState
Prices = history.Prices
Revision = history.Revision
Snapshot = history.Snapshot
diff = history.diff
iter_history = history.iter_history
node_state = history.node_state
pod_state = history.pod_state
spec_id = history.spec_id

log = logging.getLogger(__name__)

RECORDER = "recorder"
OBSERVE_LOCK = "history-observe"


def _sorted(events: Iterable[Event]) -> list[Event]:
    return sorted(events, key=lambda e: (e.at, EVENT_ORDER[type(e)]))


# ---------------------------------------------------------------- recording
def _specs(bodies: Mapping[str, Mapping[str, Any]]) -> dict[str, HistorySpec]:
    """The HistorySpec rows of these ids, created when missing (a template is stored once, ever)."""
    if not bodies:
        return {}
    found = {s.digest: s for s in HistorySpec.objects.filter(digest__in=list(bodies))}
    missing = [HistorySpec(digest=d, body=dict(b)) for d, b in bodies.items() if d not in found]
    if missing:
        HistorySpec.objects.bulk_create(missing, ignore_conflicts=True)
        found.update({s.digest: s for s in HistorySpec.objects.filter(digest__in=[m.digest for m in missing])})
    return found


@transaction.atomic
def history_record(*, events: Iterable[Event], templates: Mapping[str, Mapping[str, Any]] | None = None,
                   imported: HistoryImport | None = None) -> int:
    """Store events (with the templates their pods name) in the recorded history, or in an import's; the rows
    written. Marks what each event opens or closes (packing.history's identities: a pod's namespace/name, a
    node's name, a manifest's kind and name)."""
    ordered = _sorted(events)
    if not ordered:
        return 0
    needed = {e.spec for e in ordered if isinstance(e, PodArrived)}
    templates = templates or {}
    specs = _specs({d: templates[d] for d in needed if d in templates})
    missing = needed - set(specs)
    if missing:
        specs.update({s.digest: s for s in HistorySpec.objects.filter(digest__in=list(missing))})
    opened: dict[tuple[str, str], list[HistoryEvent]] = {}
    close_stored: set[tuple[str, str]] = set()
    rows = []
    for e in ordered:
        kind, subject, payload, digest = row_parts(e)
        row = HistoryEvent(at=e.at, kind=kind, subject=subject, payload=payload,
                           spec=specs[digest] if digest else None, imported=imported)
        group = GROUP_CLOSERS.get(kind)
        if group is not None:
            key = (group, subject)
            before = opened.pop(key, None)
            if before is None:
                close_stored.add(key)
            else:
                for r in before:
                    r.live = False
        group = GROUP_OPENERS.get(kind)
        if group is not None and not (kind == EventKind.REVISION and payload.get("manifest") is None):
            row.live = True
            opened.setdefault((group, subject), []).append(row)
        rows.append(row)
    for group in sorted({g for g, _ in close_stored}):
        kinds = [k for k, g in GROUP_OPENERS.items() if g == group]
        subjects = sorted(s for g, s in close_stored if g == group)
        for i in range(0, len(subjects), 500):  # one UPDATE per group (and per 500 subjects), not one per subject
            HistoryEvent.objects.filter(imported=imported, kind__in=kinds, subject__in=subjects[i:i + 500],
                                        live=True).update(live=False)
    HistoryEvent.objects.bulk_create(rows, batch_size=1000)
    return len(rows)


# ---------------------------------------------------------------- the recorder
def _previous(now: datetime) -> Snapshot | None:
    """What the history says is alive (its live rows), as the snapshot the cluster is diffed against; None when
    nothing was ever recorded (the first look records the cluster as it is)."""
    cursor = HistoryCursor.objects.filter(name=RECORDER).first()
    if cursor is None or cursor.observed_at is None:
        return None
    snap = Snapshot(cursor.observed_at)
    live = HistoryEvent.objects.filter(imported=None, live=True,
                                       kind__in=[EventKind.POD_ARRIVED, EventKind.POD_BOUND, EventKind.NODE_LAUNCHED])
    for kind, subject, payload, digest in live.order_by("at", "kind", "id").values_list(
            "kind", "subject", "payload", "spec__digest"):
        if kind == EventKind.NODE_LAUNCHED:
            snap.nodes[subject] = NodeState(NodeLaunched(cursor.observed_at, subject, "", "", ""))
            continue
        ns, _, name = subject.partition("/")
        if kind == EventKind.POD_ARRIVED:
            snap.pods[subject] = PodState(ns, name, digest or "", uid=str(payload.get("uid", "")),
                                          node=str(payload.get("node", "")))
        elif subject in snap.pods:
            snap.pods[subject].node = str(payload.get("node", ""))
    return snap


def _claims_by_node(names: Iterable[str]) -> dict[str, NodeClaim]:
    wanted = [n for n in names if n]
    return {c.node_name: c for c in NodeClaim.objects.filter(node_name__in=wanted).order_by("created_at")}


def _prices_of(region: str) -> Callable[[str, str, str], float | None]:
    table: dict[tuple[str, str, str], float | None] | None = None

    def price_of(it: str, zone: str, ct: str) -> float | None:
        nonlocal table
        if table is None:
            table = {(t.name, o.zone, o.capacity_type): o.price
                     for t in adapters.instance_types(region) for o in t.offerings}
        return table.get((it, zone, ct))

    return price_of


@dataclass
class ObserveOutcome:
    recorded: int = 0
    skipped: int = 0  # objects the engine cannot read (left out, logged)
    busy: bool = False  # another look was under way: this one did nothing


def history_observe(*, cluster: ClusterBackend, now: datetime | None = None) -> ObserveOutcome:
    """Look at the cluster's pods and nodes and record what changed since the last look (packing.history.dumps'
    diff): arrivals, bindings, departures, launches (priced by their NodeClaim, else the catalog) and
    terminations (dated and explained by their NodeClaim when it has ended)."""
    now = now or timezone.now()
    try:
        # one look at a time: two looks diffing against the same state would record every change twice
        with loop_lock(OBSERVE_LOCK):
            return _observe(cluster, now)
    except LockBusy:
        return ObserveOutcome(busy=True)


def _observe(cluster: ClusterBackend, now: datetime) -> ObserveOutcome:
    outcome = ObserveOutcome()
    pods, _ = cluster.list_pods()
    nodes, _ = cluster.list_nodes()
    prev = _previous(now)
    lo = prev.at if prev is not None else None
    cur = Snapshot(now)
    before = prev.pods if prev is not None else {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        old = before.get(key)
        phase = (pod.get("status") or {}).get("phase")
        on = str((pod.get("spec") or {}).get("nodeName") or "")
        if old is not None and old.uid == str(meta.get("uid") or "") and old.node and phase not in ("Succeeded", "Failed"):
            cur.pods[key] = PodState(old.namespace, old.name, old.spec, old.uid, node=on or old.node)
            continue  # nothing of it that matters can have changed: not parsed again
        try:
            state, template = pod_state(pod)
        except InputError as e:
            outcome.skipped += 1
            log.warning("history: pod %s left out: %s", key, e)
            continue
        cur.pods[key] = state
        cur.templates.setdefault(state.spec, template)
    claims = _claims_by_node(str((n.get("metadata") or {}).get("name") or "") for n in nodes)
    price_of = _prices_of(settings.LOADMASTER_AWS_REGION)
    for node in nodes:
        name = str((node.get("metadata") or {}).get("name") or "")
        if prev is not None and name in prev.nodes:
            cur.nodes[name] = prev.nodes[name]
            continue
        claim = claims.get(name)
        try:
            state_n = node_state(node, now, None if claim is not None and claim.price_per_hour is not None else price_of)
        except InputError as e:
            outcome.skipped += 1
            log.warning("history: node %s left out: %s", name, e)
            continue
        if claim is not None:
            state_n = _with_claim(state_n, claim)
        cur.nodes[name] = state_n
    events = _claim_times(diff(prev, cur), claims, lo, now)
    with transaction.atomic():
        outcome.recorded = history_record(events=events, templates=cur.templates)
        HistoryCursor.objects.update_or_create(name=RECORDER, defaults={"observed_at": now})
    return outcome


def _claim_times(events: list[Event], claims: Mapping[str, NodeClaim], lo: datetime | None,
                 now: datetime) -> list[Event]:
    """Launches and terminations at their NodeClaim's times, which the claim knows better than a look every
    10 s: billing starts at the launch (before the node registers) and stops at the termination. Not on the
    first look (lo None), where everything alive is recorded as of that look. Earlier than the last look is
    fine: exports sort by time."""
    ended = _claims_by_node(e.name for e in events if isinstance(e, NodeTerminated))
    launched = dict(HistoryEvent.objects.filter(imported=None, kind=EventKind.NODE_LAUNCHED, live=True,
                                                subject__in=list(ended)).values_list("subject", "at"))
    out: list[Event] = []
    for ev in events:
        if isinstance(ev, NodeLaunched) and lo is not None:
            claim = claims.get(ev.name)
            if claim is not None and claim.launched_at is not None and claim.launched_at <= now:
                ev = dataclasses.replace(ev, at=claim.launched_at)
        elif isinstance(ev, NodeTerminated):
            ended_claim = ended.get(ev.name)
            if ended_claim is not None and ended_claim.terminated_at is not None:
                at = min(ended_claim.terminated_at, now)
                start = launched.get(ev.name)
                ev = NodeTerminated(max(at, start) if start is not None else at, ev.name,
                                    ended_claim.termination_reason or ended_claim.deletion_reason)
        out.append(ev)
    return _sorted(out)


def _with_claim(state: NodeState, claim: NodeClaim) -> NodeState:
    """A node launched by a NodeClaim: its recorded price, capacity type, zone and pool, launched when the
    claim's instance was (billing starts there, before the node registers)."""
    n = state.launch
    price = float(claim.price_per_hour) if claim.price_per_hour is not None else n.price
    launch = NodeLaunched(n.at, n.name, claim.instance_type or n.instance_type, claim.zone or n.zone,
                          claim.capacity_type or n.capacity_type, price, claim.nodepool_name or n.nodepool,
                          n.provider_id or claim.provider_id, n.labels, n.taints, n.allocatable, n.capacity)
    return NodeState(launch, claim.launched_at or state.created)


# ---------------------------------------------------------------- hooks
_INTERRUPTIONS = {
    "spot_interruption": InterruptionKind.SPOT_INTERRUPTION,
    "scheduled_change": InterruptionKind.SCHEDULED_CHANGE,
    "state_change": InterruptionKind.STATE_CHANGE,
    "rebalance": InterruptionKind.REBALANCE,
}


def history_node_interrupted(*, node_name: str, event_kind: str, now: datetime | None = None) -> bool:
    """The interruption loop's notice about a node (console.control.lifecycle): recorded when the history has
    the node (its launch is live); False otherwise (a claim without a node yet has nothing to interrupt)."""
    kind = _INTERRUPTIONS.get(event_kind)
    if kind is None or not node_name:
        return False
    if not HistoryEvent.objects.filter(imported=None, kind=EventKind.NODE_LAUNCHED, subject=node_name,
                                       live=True).exists():
        return False
    history_record(events=[NodeInterrupted(now or timezone.now(), node_name, kind)])
    return True


def interruption_heard(sender: Any, node_name: str, event_kind: str, now: datetime | None = None,
                       **_: Any) -> None:
    """console.control.signals.node_interrupted: the interruption loop's notice, recorded."""
    history_node_interrupted(node_name=node_name, event_kind=event_kind, now=now)


def revision_from_change(sender: Any, instance: ChangeRecord, created: bool = False, **_: Any) -> None:
    """A NodePool or EC2NodeClass change the fleet recorded: the manifest it leaves in force (None: deleted)."""
    if not created or instance.object_type not in (ChangeRecord.NODEPOOL, ChangeRecord.NODECLASS):
        return
    nodepool = instance.object_type == ChangeRecord.NODEPOOL
    kind = ManifestKind.NODEPOOL if nodepool else ManifestKind.NODECLASS
    manifest: dict[str, Any] | None = None
    revision = None
    if instance.action != "deleted":
        model: type[NodePool] | type[EC2NodeClass] = NodePool if nodepool else EC2NodeClass
        obj = model.objects.filter(name=instance.object_name).first()
        if obj is None:
            return
        values = obj.field_values()
        manifest = manifests.nodepool_to_manifest(values) if nodepool else manifests.nodeclass_to_manifest(values)
        revision = obj.revision
    history_record(events=[Revision(instance.at, kind, instance.object_name, manifest, revision)])


def _price_table(region: str) -> dict[str, float | None]:
    return {f"{t.name}|{o.zone}|{o.capacity_type}": o.price
            for t in adapters.instance_types(region) for o in t.offerings}


def _offering(key: str) -> tuple[str, str, str]:
    it, zone, ct = key.split("|", 2)
    return it, zone, ct


@transaction.atomic
def history_record_prices(*, now: datetime | None = None) -> int:
    """Record the prices in force (the catalog with its overrides) when they changed since the last record:
    one Prices event with the offerings whose price changed; the offerings recorded."""
    now = now or timezone.now()
    table = _price_table(settings.LOADMASTER_AWS_REGION)
    digest = spec_id(table)
    cursor, _ = HistoryCursor.objects.select_for_update().get_or_create(name=RECORDER)
    old: Mapping[str, Any] = cursor.prices.body if cursor.prices is not None else {}
    if cursor.prices is not None and cursor.prices.digest == digest:
        return 0
    changed = [OfferingPrice(*_offering(k), price=p) for k, p in sorted(table.items()) if k not in old or old[k] != p]
    gone = [_offering(k) for k in sorted(set(old) - set(table))]
    history_record(events=[Prices(now, tuple(changed), tuple(gone))])
    cursor.prices = _specs({digest: table})[digest]
    cursor.save(update_fields=["prices"])
    return len(changed) + len(gone)


# ---------------------------------------------------------------- retention
@dataclass
class PruneOutcome:
    events: int = 0
    specs: int = 0
    imports: int = 0


@transaction.atomic
def history_prune(*, now: datetime | None = None, days: int | None = None) -> PruneOutcome:
    """Forget what is older than LOADMASTER_HISTORY_DAYS: the recorded events before the cutoff except those
    still in force (live arrivals, bindings, launches, revisions), whose state an export needs; the prices
    before it folded into one Prices event; imports made before it; templates no event names any more."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.LOADMASTER_HISTORY_DAYS if days is None else days)
    out = PruneOutcome()
    old_prices = list(HistoryEvent.objects.filter(imported=None, kind=EventKind.PRICES, at__lt=cutoff)
                      .order_by("at", "id"))
    if len(old_prices) > 1:
        folded: dict[str, list[Any]] = {}
        for row in old_prices:
            for item in row.payload.get("set", []):
                folded["|".join(item[:3])] = item
            for item in row.payload.get("unset", []):
                folded.pop("|".join(item), None)
        last = old_prices[-1]
        last.payload = {"set": [folded[k] for k in sorted(folded)]}
        last.save(update_fields=["payload"])
        HistoryEvent.objects.filter(pk__in=[r.pk for r in old_prices[:-1]]).delete()
        out.events += len(old_prices) - 1
    deleted, _ = (HistoryEvent.objects.filter(imported=None, at__lt=cutoff, live=False)
                  .exclude(kind=EventKind.PRICES).delete())
    out.events += deleted
    imports = HistoryImport.objects.filter(imported_at__lt=cutoff)
    out.imports = imports.count()
    imports.delete()
    cursor = HistoryCursor.objects.filter(name=RECORDER).values_list("prices_id", flat=True).first()
    unused = HistorySpec.objects.exclude(pk__in=HistoryEvent.objects.filter(spec__isnull=False).values("spec_id"))
    if cursor is not None:
        unused = unused.exclude(pk=cursor)
    out.specs, _ = unused.delete()
    return out


# ---------------------------------------------------------------- import
class HistoryImportError(ValidationError):
    """A bad history file: nothing of it was saved. `line` and `field` say where (line 1 is the header)."""

    def __init__(self, message: str, *, line: int | None = None, field: str = "") -> None:
        super().__init__(message)
        self.line = line
        self.field = field


def _error_parts(message: str) -> tuple[int | None, str]:
    # "file: line N: field: message"
    parts = message.split(": ", 3)
    if len(parts) >= 3 and parts[1].startswith("line "):
        try:
            return int(parts[1][5:]), parts[2]
        except ValueError:
            pass
    return None, ""


def history_import(*, lines: Iterable[str], name: str, user: Any) -> HistoryImport:
    """Import a history file as a history of its own: read whole and strictly first (HistoryImportError naming
    the line and field, nothing saved), then saved in one transaction."""
    header: Header | None = None
    templates: dict[str, Mapping[str, Any]] = {}
    events: list[Event] = []
    try:
        for item in iter_history(lines, name or "upload"):
            if isinstance(item, Header):
                header = item
            elif isinstance(item, PodSpec):
                templates[item.id] = item.template
            else:
                events.append(item)
    except HistoryError as e:
        line, field = _error_parts(str(e))
        raise HistoryImportError(str(e), line=line, field=field) from None
    assert header is not None
    with transaction.atomic():
        record = HistoryImport.objects.create(
            name=name[:255], user=user if getattr(user, "pk", None) else None, start=header.start, end=header.end,
            events=len(events))
        history_record(events=events, templates=templates, imported=record)
    return record


__all__ = [
    "HistoryImportError",
    "ObserveOutcome",
    "PruneOutcome",
    "history_import",
    "history_node_interrupted",
    "interruption_heard",
    "history_observe",
    "history_prune",
    "history_record",
    "history_record_prices",
    "revision_from_change",
]
