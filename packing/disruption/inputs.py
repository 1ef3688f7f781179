"""Reading the consolidate CLI's files: the plan CLI's parser for the model, plus the fields disruption needs.

The provisioning parser (packing.kubeobjects.parse_documents) builds pods, nodes, pools, PDBs and the catalog and
reports bad input as one InputError naming file, document and field. Disruption also reads timestamps,
annotations, node health, each NodePool's spec.disruption and expireAfter, and PDB status; those are read here
from the same documents, and their errors use the same message shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from packing.disruption.model import (
    DEFAULT_EXPIRE_AFTER,
    DEFAULT_POLICY,
    DISRUPTED_TAINT,
    Budget,
    Cluster,
    DisruptionSettings,
    NodeInfo,
    PodMeta,
)
from packing.durations import DurationError, parse_duration
from packing.instancetype import InstanceType
from packing.kubeobjects import (
    ByteBudget,
    InputError,
    Inputs,
    documents,
    expand_workloads,
    inflight_claims,
    parse_documents,
)
from packing.yamlinput import brief

__all__ = ["Extras", "build_cluster", "read_files"]

POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized")


class _Bad(Exception):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


class Extras:
    """What the provisioning model leaves out, keyed like the model's objects."""

    def __init__(self) -> None:
        self.node_created: dict[str, datetime | None] = {}
        self.node_annotations: dict[str, dict[str, str]] = {}
        self.node_deleting: dict[str, bool] = {}
        self.node_ready: dict[str, bool] = {}
        self.pods: dict[str, tuple[dict[str, str], datetime | None, int]] = {}
        self.settings: dict[str, DisruptionSettings] = {}
        self.pdb_status: dict[str, int] = {}
        self.pdb_null: set[str] = set()


# ---------------------------------------------------------------- documents (as packing.kubeobjects numbers them)
def _time(v: Any, path: str) -> datetime | None:
    if v is None:
        return None
    if isinstance(v, datetime):  # YAML reads an unquoted timestamp as one
        return v.replace(tzinfo=UTC) if v.tzinfo is None else v.astimezone(UTC)
    if isinstance(v, str):
        try:
            t = datetime.fromisoformat(v.strip())
        except ValueError:
            raise _Bad(path, f"invalid timestamp {brief(v)} (expected RFC 3339, e.g. 2026-11-30T05:00:00Z)") from None
        return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
    raise _Bad(path, f"must be a timestamp, got {type(v).__name__}")


def _obj(v: Any, path: str) -> Mapping[str, Any]:
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise _Bad(path, f"must be an object, got {type(v).__name__}")
    return v


def _annotations(meta: Mapping[str, Any], path: str) -> dict[str, str]:
    out = {}
    for k, v in _obj(meta.get("annotations"), f"{path}metadata.annotations").items():
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            key = str(k) if len(str(k)) <= 60 else str(k)[:59] + "…"
            raise _Bad(f"{path}metadata.annotations.{key}", f"must be a string, got {type(v).__name__}")
        out[str(k)] = str(v)
    return out


def _duration(v: Any, path: str, default: Any) -> Any:
    if v is None:
        return default
    try:
        return parse_duration(str(v) if not isinstance(v, str) else v)
    except DurationError as e:
        raise _Bad(path, str(e)) from None


def _settings(spec: Mapping[str, Any], path: str) -> DisruptionSettings:
    d = _obj(spec.get("disruption"), f"{path}spec.disruption")
    policy = d.get("consolidationPolicy", DEFAULT_POLICY)
    if policy == "WhenUnderutilized":  # Karpenter v1beta1's name for the same policy
        policy = "WhenEmptyOrUnderutilized"
    if policy not in POLICIES:
        raise _Bad(f"{path}spec.disruption.consolidationPolicy", f"must be one of {', '.join(POLICIES)}, got {brief(policy)}")
    after = _duration(d.get("consolidateAfter"), f"{path}spec.disruption.consolidateAfter", parse_duration("0s"))
    tspec = _obj(_obj(spec.get("template"), f"{path}spec.template").get("spec"), f"{path}spec.template.spec")
    if "expireAfter" in tspec:
        expire = _duration(tspec.get("expireAfter"), f"{path}spec.template.spec.expireAfter", DEFAULT_EXPIRE_AFTER)
    else:  # v1beta1 kept it under spec.disruption
        expire = _duration(d.get("expireAfter"), f"{path}spec.disruption.expireAfter", DEFAULT_EXPIRE_AFTER)
    budgets: tuple[Budget, ...] = (Budget(),)
    if "budgets" in d:
        raw = d.get("budgets")
        if raw is None:
            raw = []
        if not isinstance(raw, list):
            # not refused outright: a budget that fails to parse allows nothing, which is the safe reading
            budgets = (Budget(error="budgets must be a list"),)
        else:
            out = []
            for i, b in enumerate(raw):
                out.append(_budget(b, i))
            budgets = tuple(out)
    return DisruptionSettings(policy=policy, consolidate_after=after, expire_after=expire, budgets=budgets)


def _budget(b: Any, i: int) -> Budget:
    if not isinstance(b, Mapping):
        return Budget(index=i, error=f"must be an object, got {type(b).__name__}")
    nodes = b.get("nodes", "10%")
    if isinstance(nodes, bool) or not isinstance(nodes, str | int) or len(str(nodes)) > 12:
        return Budget(index=i, error=f"nodes {brief(nodes)} must be a count or a percent")
    reasons = b.get("reasons")
    if reasons is not None and (
        not isinstance(reasons, list) or not all(isinstance(r, str) and len(r) <= 40 for r in reasons)
    ):
        return Budget(index=i, error="reasons must be a list of Empty, Underutilized or Drifted")
    sched = b.get("schedule")
    dur = b.get("duration")
    if sched is not None and (not isinstance(sched, str) or len(sched) > 100):
        return Budget(index=i, error=f"schedule {brief(sched)} must be a cron schedule such as '0 9 * * mon-fri'")
    if dur is not None and (not isinstance(dur, str) or len(dur) > 40):
        return Budget(index=i, error=f"duration {brief(dur)} must be a duration such as '8h'")
    return Budget(
        nodes=str(nodes),
        schedule=None if sched is None else str(sched),
        duration=None if dur is None else str(dur),
        reasons=None if reasons is None else tuple(reasons),
        index=i,
    )


def _extra(doc: Mapping[str, Any], prefix: str, ex: Extras) -> None:
    kind = doc.get("kind")
    api = str(doc.get("apiVersion", ""))
    group = api.rsplit("/", 1)[0] if "/" in api else ""
    meta = _obj(doc.get("metadata"), f"{prefix}metadata")
    name = str(meta.get("name", ""))
    ns = str(meta.get("namespace") or "default")
    if kind == "Node" and group == "":
        ex.node_created[name] = _time(meta.get("creationTimestamp"), f"{prefix}metadata.creationTimestamp")
        ex.node_annotations[name] = _annotations(meta, prefix)
        spec = _obj(doc.get("spec"), f"{prefix}spec")
        taints = spec.get("taints") or []
        disrupted = any(isinstance(t, Mapping) and t.get("key") == DISRUPTED_TAINT for t in taints)
        ex.node_deleting[name] = meta.get("deletionTimestamp") is not None or disrupted
        ready = True
        conds = _obj(doc.get("status"), f"{prefix}status").get("conditions") or []
        for c in conds if isinstance(conds, list) else []:
            if isinstance(c, Mapping) and c.get("type") == "Ready":
                ready = str(c.get("status")) == "True"
        ex.node_ready[name] = ready
    elif kind == "Pod" and group == "":
        spec = _obj(doc.get("spec"), f"{prefix}spec")
        prio = spec.get("priority", 0)
        if isinstance(prio, bool) or not isinstance(prio, int) or not -(2**31) <= prio < 2**31:
            raise _Bad(f"{prefix}spec.priority", f"must be an integer (32 bits), got {brief(prio)}")
        ex.pods[f"{ns}/{name}"] = (
            _annotations(meta, prefix),
            _time(meta.get("creationTimestamp"), f"{prefix}metadata.creationTimestamp"),
            prio,
        )
    elif kind == "NodePool" and group == "karpenter.sh":
        ex.settings[name] = _settings(_obj(doc.get("spec"), f"{prefix}spec"), prefix)
    elif kind == "PodDisruptionBudget" and group == "policy":
        spec = _obj(doc.get("spec"), f"{prefix}spec")
        if spec.get("selector") is None:
            ex.pdb_null.add(f"{ns}/{name}")
        st = _obj(doc.get("status"), f"{prefix}status").get("disruptionsAllowed")
        if st is not None:
            if isinstance(st, bool) or not isinstance(st, int) or not 0 <= st < 2**31:
                raise _Bad(f"{prefix}status.disruptionsAllowed", f"must be a non-negative integer, got {brief(st)}")
            ex.pdb_status[f"{ns}/{name}"] = st


def parse_extras(text: str, filename: str, ex: Extras) -> None:
    for index, doc in documents(text, filename):
        if not isinstance(doc, Mapping):
            continue
        items: Sequence[tuple[str, Any]]
        if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
            items = [(f"items[{i}].", it) for i, it in enumerate(doc["items"])]
        else:
            items = [("", doc)]
        for prefix, item in items:
            if not isinstance(item, Mapping):
                continue
            try:
                _extra(item, prefix, ex)
            except _Bad as e:
                meta = item.get("metadata")
                nm = meta.get("name") if isinstance(meta, Mapping) else None
                label = f" ({item.get('kind')} {nm})" if nm else f" ({item.get('kind')})"
                raise InputError(f"{filename}: document {index}{label}: {e.path}: {e.message}") from None


def read_files(
    paths: Sequence[str], inp: Inputs | None = None, ex: Extras | None = None, *, budget: ByteBudget | None = None
) -> tuple[Inputs, Extras]:
    """Parse files into the provisioning model and the disruption extras; InputError on bad input (also past
    the run's byte budget, when one is given)."""
    inp = inp or Inputs()
    ex = ex or Extras()
    budget = budget or ByteBudget(None)
    for path in paths:
        text = budget.read(path)
        parse_documents(text, path, inp)  # the plan CLI's parser: its errors name file, document and field
        parse_extras(text, path, ex)
    return inp, ex


def build_cluster(inp: Inputs, ex: Extras, catalog: Sequence[InstanceType]) -> Cluster:
    expand_workloads(inp)
    inflight = inflight_claims(inp, catalog)
    nodes = [
        NodeInfo(
            spec=n,
            created=ex.node_created.get(n.name),
            annotations=ex.node_annotations.get(n.name, {}),
            deleting=ex.node_deleting.get(n.name, False),
            ready=ex.node_ready.get(n.name, True),
        )
        for n in inp.nodes
    ]
    return Cluster(
        nodepools=list(inp.nodepools),
        catalog=list(catalog),
        nodes=nodes,
        running=list(inp.running),
        pending=list(inp.pending),
        daemonsets=list(inp.daemonsets),
        pdbs=list(inp.pdbs),
        settings=dict(ex.settings),
        pod_meta={k: PodMeta(a, c, pr) for k, (a, c, pr) in ex.pods.items()},
        pdb_status=dict(ex.pdb_status),
        pdb_null_selector=set(ex.pdb_null),
        inflight=inflight,
    )
