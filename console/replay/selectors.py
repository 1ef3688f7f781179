"""Reads of the replay pages and API: the replays, one replay's status, the default window of a history, the
current fleet's manifests to start a change from, and the rows and series of a result page."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import Max, Min, QuerySet
from django.utils import timezone

from console.fleet import manifests
from console.fleet.models import EC2NodeClass, NodePool
from console.history.models import HistoryEvent, HistoryImport
from console.replay.models import Replay

DEFAULT_DAYS = 7  # the window a replay starts with: the last week of the history


def replay_list(*, limit: int | None = None) -> QuerySet[Replay]:
    rows = Replay.objects.select_related("created_by", "imported").defer("result")
    return rows[:limit] if limit else rows


def replay_get(*, pk: int) -> Replay | None:
    return Replay.objects.select_related("created_by", "imported").filter(pk=pk).first()


def replay_status(*, run: Replay) -> dict[str, Any]:
    """What the progress bar polls: small, no result."""
    return {"id": run.pk, "status": run.status, "progress": round(run.progress, 4), "error": run.error,
            "cancel_requested": run.cancel_requested, "finished": run.finished}


def _iso(t: datetime | None) -> str | None:
    return None if t is None else t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def replay_json(*, run: Replay, with_result: bool = True) -> dict[str, Any]:
    """A replay as the API gives it: its settings and status, and (when done) the CLI's JSON document."""
    doc = {
        **replay_status(run=run),
        "created_at": _iso(run.created_at), "created_by": run.created_by.get_username() if run.created_by else None,
        "started_at": _iso(run.started_at), "finished_at": _iso(run.finished_at),
        "from": _iso(run.start), "to": _iso(run.end), "seed": run.seed,
        "import": run.imported.pk if run.imported else None, "source": run.source,
        "change": list(run.change_names),
    }
    if with_result:
        doc["result"] = run.result
    return doc


def default_window(*, imported: HistoryImport | None = None, now: datetime | None = None) -> tuple[datetime, datetime]:
    """The last DEFAULT_DAYS of a history, in whole seconds: up to now for the recorded one, to its end (its
    header's, else just after its last event) for an import; from no earlier than its first event."""
    now = now or timezone.now()
    span = HistoryEvent.objects.filter(imported=imported).aggregate(first=Min("at"), last=Max("at"))
    first, last = span["first"], span["last"]
    if imported is None:
        end = now
    else:
        first = imported.start or first
        end = imported.end or (last + timedelta(seconds=1) if last is not None else now)
    end = end.replace(microsecond=0)
    start = end - timedelta(days=DEFAULT_DAYS)
    if first is not None and first > start:
        start = first.replace(microsecond=0)
    if start >= end:
        start = end - timedelta(hours=1)
    return start, end


def history_imports() -> QuerySet[HistoryImport]:
    return HistoryImport.objects.all()


def fleet_choices() -> list[tuple[str, str]]:
    """The current fleet's objects a change can start from: ("NodePool/general", label)."""
    out = [(f"NodePool/{n}", f"NodePool {n}") for n in NodePool.objects.order_by("name").values_list("name", flat=True)]
    out += [(f"EC2NodeClass/{n}", f"EC2NodeClass {n}")
            for n in EC2NodeClass.objects.order_by("name").values_list("name", flat=True)]
    return out


def fleet_manifest_yaml(*, pick: str) -> str:
    """The Karpenter YAML of one object of the current fleet ("NodePool/general"), to edit into a change; ""
    when there is no such object."""
    kind, _, name = pick.partition("/")
    if kind == "NodePool":
        pool = NodePool.objects.filter(name=name).first()
        return manifests.dump_yaml([manifests.nodepool_to_manifest(pool.field_values())]) if pool else ""
    if kind == "EC2NodeClass":
        nc = EC2NodeClass.objects.filter(name=name).first()
        return manifests.dump_yaml([manifests.nodeclass_to_manifest(nc.field_values())]) if nc else ""
    return ""


# ---------------------------------------------------------------- the result page
RUNS = ("actual", "current", "changed")


@dataclass(frozen=True)
class Row:
    label: str
    cells: list[str]


def _num(v: float | None, fmt: str = "{:.1f}") -> str:
    return "—" if v is None else fmt.format(v)


def result_rows(doc: dict[str, Any]) -> tuple[list[str], list[Row]]:
    """The totals of each run of a result, one row per measure (the CLI's text table, as cells)."""
    runs = [r for r in RUNS if doc.get(r) is not None]
    measures: list[tuple[str, Any]] = [
        ("cost ($)", lambda r: f"{r['cost']:.2f}"),
        ("node-hours on-demand", lambda r: f"{r['node_hours'].get('on-demand', 0):.1f}"),
        ("node-hours spot", lambda r: f"{r['node_hours'].get('spot', 0):.1f}"),
        ("node-hours reserved", lambda r: f"{r['node_hours'].get('reserved', 0):.1f}"),
        ("unpriced node-hours", lambda r: f"{r['unpriced_node_hours']:.1f}"),
        ("nodes launched", lambda r: str(r["nodes_launched"])),
        ("nodes disrupted", lambda r: ", ".join(f"{k} {v}" for k, v in sorted(r["nodes_disrupted"].items())) or "0"),
        ("evictions", lambda r: ", ".join(f"{k} {v}" for k, v in sorted(r["evictions"].items())) or "0"),
        ("pending p50 (s)", lambda r: _num(r["pending_seconds"]["p50"])),
        ("pending p95 (s)", lambda r: _num(r["pending_seconds"]["p95"])),
        ("pending max (s)", lambda r: _num(r["pending_seconds"]["max"])),
        ("pending episodes", lambda r: str(r["pending_seconds"]["episodes"])),
        ("never scheduled", lambda r: str(r["never_scheduled"])),
        ("interruptions absorbed", lambda r: f"{r['interruptions']['absorbed']} of {r['interruptions']['seen']}"),
    ]
    return runs, [Row(label, [cell(doc[r]) for r in runs]) for label, cell in measures]


def result_days(doc: dict[str, Any]) -> list[tuple[str, float]]:
    """The difference's cost by UTC day, in day order (PostgreSQL's jsonb does not keep the stored order)."""
    diff = doc.get("difference") or {}
    return sorted((diff.get("cost_by_day") or {}).items())


def result_series(doc: dict[str, Any], key: str) -> tuple[list[datetime], dict[str, list[float | None]]]:
    """One measure of the runs' samples (`cost_per_hour`, `pending_pods`) on one time axis: the union of the
    runs' sample times, None where a run has no sample."""
    by_run: dict[str, dict[str, float]] = {}
    for r in RUNS:
        if doc.get(r) is not None:
            by_run[r] = {s["at"]: s[key] for s in doc[r].get("series", [])}
    times = sorted({t for values in by_run.values() for t in values})
    x = [datetime.strptime(t, "%Y-%m-%dT%H:%M:%SZ") for t in times]
    return x, {r: [values.get(t) for t in times] for r, values in by_run.items()}


__all__ = ["default_window", "fleet_choices", "fleet_manifest_yaml", "history_imports", "replay_get", "replay_json",
           "replay_list", "replay_status", "result_days", "result_rows", "result_series"]
