"""What-if previews and explanations: the provisioning and disruption engines run over documents in
memory, never over the database.

Everything goes through one representation — the list of Kubernetes/Karpenter documents that
`python -m packing plan/consolidate` read — so a preview, a live explanation and a snapshot replay
all see exactly what the CLI would see. Nothing here writes a row: edited NodePools/NodeClasses are
unsaved model instances, turned into manifests like the saved ones.
"""

from __future__ import annotations

import copy
import dataclasses
import io
import logging
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import yaml
from django.conf import settings
from django.utils import timezone

from console import adapters
from console.backends.base import ClusterBackend
from console.backends.factory import cluster_backend
from console.control.models import UnavailableOffering
from console.fleet import manifests
from console.fleet.models import EC2NodeClass, NodeClaim, NodePool
from packing import kubeobjects, plan_cli
from packing.disruption import output as disruption_output
from packing.disruption.engine import consolidate
from packing.disruption.inputs import Extras, _Bad, _extra, build_cluster
from packing.instancetype import InstanceType
from packing.kubeobjects import InputError, Inputs

log = logging.getLogger(__name__)

Doc = dict[str, Any]
MAX_SNAPSHOT_BYTES = 20 * 1024 * 1024


class NotFound(LookupError):
    pass


# --- documents ---------------------------------------------------------------------------------------

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
    parsed: tuple[Inputs, Extras] | None = field(default=None, repr=False, compare=False)

    def docs(self) -> list[Doc]:
        return [*self.workload,
                *(manifests.nodepool_to_manifest(p.field_values()) for p in self.pools),
                *(manifests.nodeclass_to_manifest(c.field_values()) for c in self.classes)]

    def replaced(self, *, pool: NodePool | None = None, nodeclass: EC2NodeClass | None = None,
                 workload: list[Doc] | None = None) -> World:
        pools = [p for p in self.pools if pool is None or p.name != pool.name] + ([pool] if pool else [])
        classes = [c for c in self.classes if nodeclass is None or c.name != nodeclass.name]
        classes += [nodeclass] if nodeclass else []
        if workload is None and self.parsed is None:
            self.parsed = _parse(self.workload)  # parse once, share with the copy
        return World(workload if workload is not None else self.workload, pools, classes, self.pending_keys, self.now,
                     self.parsed if workload is None else None)

    def fleet_docs(self) -> list[Doc]:
        return [*(manifests.nodepool_to_manifest(p.field_values()) for p in self.pools),
                *(manifests.nodeclass_to_manifest(c.field_values()) for c in self.classes)]

    def inputs(self) -> tuple[Inputs, Extras]:
        """Fresh engine inputs: the cached workload (containers copied, objects shared) plus the fleet."""
        if self.parsed is None:
            self.parsed = _parse(self.workload)
        base, base_ex = self.parsed
        inputs = Inputs(**{f.name: copy.copy(getattr(base, f.name)) for f in dataclasses.fields(Inputs)})
        extras = Extras()
        for name, value in vars(base_ex).items():
            setattr(extras, name, copy.copy(value))
        _parse(self.fleet_docs(), inputs, extras)
        return inputs, extras


def _key(doc: Mapping[str, Any]) -> str:
    meta = doc.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def live_world(*, cluster: ClusterBackend | None = None, now: datetime | None = None) -> World:
    """The live cluster and the saved fleet, read (never written) the way the provision loop reads them."""
    cluster = cluster or cluster_backend()
    pods, _ = cluster.list_pods()
    nodes, _ = cluster.list_nodes()
    inflight = NodeClaim.objects.active().filter(registered_at__isnull=True)
    workload: list[Doc] = [*pods, *nodes, *cluster.list_pdbs(), *cluster.list_daemonsets()]
    workload += [adapters.nodeclaim_object(c) for c in inflight]
    # The provision loop only plans for pods the scheduler gave up on; a preview must agree with it.
    pending = {_key(p) for p in cluster.pending_pods()}
    return World(workload, list(NodePool.objects.all()), list(EC2NodeClass.objects.all()), pending, now or timezone.now())


def _parse(docs: Sequence[Mapping[str, Any]], inputs: Inputs | None = None,
           extras: Extras | None = None) -> tuple[Inputs, Extras]:
    inputs = inputs if inputs is not None else Inputs()
    extras = extras if extras is not None else Extras()
    for doc in docs:
        try:
            kubeobjects._add_object(doc, inputs)
            _extra(doc, "", extras)
        except Exception:  # noqa: BLE001 - like the loops: one malformed live object must not stop the preview
            kind = f"invalid {doc.get('kind')}"
            inputs.skipped[kind] = inputs.skipped.get(kind, 0) + 1
    return inputs, extras


# --- running the engines ---------------------------------------------------------------------------

@dataclass
class Outcome:
    plan: dict[str, Any]          # plan_cli.render_json
    consolidation: dict[str, Any]  # disruption.output.render_json
    seconds: float = 0.0


def _catalog(world: World) -> list[InstanceType]:
    """engine_catalog without its housekeeping: it deletes expired UnavailableOffering rows, and a
    preview must not write. Same kubelet choice (highest-weight pool's NodeClass) and same overrides."""
    by_name = {c.name: c for c in world.classes}
    kubelet = None
    for pool in sorted(world.pools, key=lambda p: (-(p.weight or 0), p.name)):
        nodeclass = by_name.get(pool.node_class_name)
        if nodeclass is not None:
            kubelet = nodeclass.kubelet or None
            break
    types = adapters.instance_types(settings.LOADMASTER_AWS_REGION, kubelet=kubelet)
    unavailable = set(UnavailableOffering.objects.filter(expires_at__gt=world.now)
                      .values_list("instance_type", "zone", "capacity_type"))
    return adapters.with_unavailable(types, unavailable)


def run_plan(world: World, catalog: Sequence[InstanceType] | None = None) -> dict[str, Any]:
    inputs, _ = world.inputs()
    if world.pending_keys is not None:
        inputs.pending = [p for p in inputs.pending if p.key in world.pending_keys]
    return plan_cli.render_json(plan_cli.plan_from_inputs(inputs, catalog if catalog is not None else _catalog(world)))


def run_world(world: World) -> Outcome:
    started = time.perf_counter()
    catalog = _catalog(world)
    plan = run_plan(world, catalog)
    inputs, extras = world.inputs()
    # the preview's summary never shows what blocked moves would save, so the engine skips pricing them
    report = consolidate(build_cluster(inputs, extras, catalog), world.now, price_blocked=False,
                         repack=settings.LOADMASTER_CONSOLIDATION_REPACK)
    return Outcome(plan, disruption_output.render_json(report), time.perf_counter() - started)


# --- preview -----------------------------------------------------------------------------------------

def edited_instance(model: type[NodePool] | type[EC2NodeClass], values: Mapping[str, Any], base: Any) -> Any:
    """The unsaved object a preview runs with: `base` (the saved row, or None) overlaid with `values`."""
    return _model_instance(model, values, base)


def _model_instance(model: type[NodePool] | type[EC2NodeClass], values: Mapping[str, Any], base: Any) -> Any:
    # An unsaved instance: the saved row's fields overlaid with the edit, so the manifest is built by
    # the same code path as for saved rows. It is never saved (pk stays whatever, save() not called).
    names = {f.name for f in model._meta.concrete_fields} - {"id", "created_at", "updated_at", "revision"}
    fields = {k: v for k, v in (base.field_values() if base else {}).items() if k in names}
    fields.update({k: v for k, v in values.items() if k in names})
    return model(**fields)


def _summary(out: Outcome) -> dict[str, Any]:
    """One side of a preview. Launches are of two kinds: NodeClaims for pending pods (the plan) and the
    replacements disruption launches for the nodes it removes (drift, expiry, consolidation); every removal
    carries its reason and what replaces it. Cost changes are signed: positive costs more."""
    plan, cons = out.plan, out.consolidation
    launch_cost = float(plan["summary"]["cost_per_hour"] or 0.0)
    existing = float(cons["summary"]["cost_per_hour_before"])
    savings = sum(float(a["savings_per_hour"]) for a in cons["actions"])
    bound = plan["summary"]["lower_bound_per_hour"]
    replacements = [{"instance_type": c["instance_type"], "nodepool": c.get("nodepool", ""), "zone": c["zone"],
                     "capacity_type": c["capacity_type"], "price_per_hour": c["price_per_hour"],
                     "replaces": list(a["nodes"]), "reason": a["reason"]}
                    for a in cons["actions"] for c in a["replacements"]]
    removals = [{"node": n, "type": a["type"], "reason": a["reason"], "why": a["why"],
                 "replaced_by": [c["instance_type"] for c in a["replacements"]],
                 "action_savings_per_hour": a["savings_per_hour"]}
                for a in cons["actions"] for n in a["nodes"]]
    # Nodes the engine would disrupt but a budget holds back for now: they go in later rounds.
    held_back = [{"node": n["node"], "reason": n["reason"]} for n in cons["not_disrupted"]
                 if n.get("blocked_by") == "budget"]
    return {
        "launch": [{"instance_type": c["instance_type"], "nodepool": c["nodepool"], "zone": c["zone"],
                    "capacity_type": c["capacity_type"], "price_per_hour": c["price_per_hour"],
                    "pods": len(c["pods"])} for c in plan["nodeclaims"]],
        "replacements": replacements,
        "remove": sorted({r["node"] for r in removals}),
        "removals": sorted(removals, key=lambda r: r["node"]),
        "held_back": held_back,
        "cost_per_hour_existing": round(existing, 6),
        "cost_per_hour_launch": round(launch_cost, 6),
        "cost_per_hour_replacements": round(sum(float(r["price_per_hour"]) for r in replacements), 6),
        "cost_per_hour_consolidation_savings": round(savings, 6),
        # Signed: what the disruption actions add to the fleet's cost (their replacements minus the nodes
        # they remove); negative when they save. A drift to a dearer capacity type is positive.
        "cost_per_hour_disruption_change": round(-savings, 6),
        # What the fleet costs once the plan is launched and the disruption actions are carried out.
        "cost_per_hour_after": round(existing + launch_cost - savings, 6),
        "lower_bound_per_hour": bound,
        "distance_from_lower_bound": None if bound is None else round(launch_cost - float(bound), 6),
        "ratio_to_lower_bound": None if not bound else round(launch_cost / float(bound), 4),
        "unschedulable": {u["pod"]: u["reasons"] for u in plan["unschedulable"]},
        "seconds": round(out.seconds, 3),
    }


_DELTAS = ("cost_per_hour_existing", "cost_per_hour_launch", "cost_per_hour_replacements",
           "cost_per_hour_disruption_change", "cost_per_hour_after")
_COUNTS = ("launch", "replacements", "remove", "held_back", "unschedulable")


def preview_world(before: World, after: World) -> dict[str, Any]:
    b, a = _summary(run_world(before)), _summary(run_world(after))
    newly = sorted(set(a["unschedulable"]) - set(b["unschedulable"]))
    fixed = sorted(set(b["unschedulable"]) - set(a["unschedulable"]))
    deltas: dict[str, float] = {k: round(a[k] - b[k], 6) for k in _DELTAS}
    deltas.update({f"{k}_count": len(a[k]) - len(b[k]) for k in _COUNTS})
    return {
        "before": b, "after": a, "deltas": deltas,
        "becomes_unschedulable": [{"pod": p, "reasons": a["unschedulable"][p]} for p in newly],
        "becomes_schedulable": [{"pod": p, "was": b["unschedulable"][p]} for p in fixed],
        "cost_per_hour_delta": round(a["cost_per_hour_after"] - b["cost_per_hour_after"], 6),
    }


def preview_nodepool_change(*, values: Mapping[str, Any], name: str | None = None, kind: str = "nodepool",
                            cluster: ClusterBackend | None = None, now: datetime | None = None,
                            world: World | None = None) -> dict[str, Any]:
    """Provisioning and consolidation with the edited NodePool (or EC2NodeClass) in place of the saved one.

    `name` is the saved object being edited (None for a new one). Read-only: nothing is saved.
    """
    before = world or live_world(cluster=cluster, now=now)
    if kind == "nodeclass":
        base = next((c for c in before.classes if c.name == (name or values.get("name"))), None)
        edited = _model_instance(EC2NodeClass, values, base)
        after = before.replaced(nodeclass=edited)
        if name and edited.name != name:
            after.classes = [c for c in after.classes if c.name != name]
    else:
        base = next((p for p in before.pools if p.name == (name or values.get("name"))), None)
        edited = _model_instance(NodePool, values, base)
        after = before.replaced(pool=edited)
        if name and edited.name != name:
            after.pools = [p for p in after.pools if p.name != name]
    result = preview_world(before, after)
    result.update({"kind": kind, "name": edited.name})
    return result


# --- why pending -------------------------------------------------------------------------------------

def _find(docs: Sequence[Doc], kind: str, key: str) -> Doc | None:
    for d in docs:
        if d.get("kind") == kind and (_key(d) == key if kind == "Pod" else (d.get("metadata") or {}).get("name") == key):
            return d
    return None


_TAINT = re.compile(r"taint (?P<key>[^=:\s]+)(?:=(?P<value>[^:\s]*))?:(?P<effect>\w+) not tolerated")
_LIMIT = re.compile(r"limit (?P<res>[\w./-]+)=(?P<limit>\S+) would be exceeded \(in use (?P<used>\S+)\)")


# How small and targeted a change is, smallest first: the order the why-pod page recommends them in
# (then by what the launch that places the pod costs). Removing a requirement opens a pool to every value.
CHANGE_KINDS = {"toleration": (0, "add a toleration to the pod"),
                "limit": (1, "raise a NodePool limit"),
                "allow": (2, "allow one more value in a NodePool requirement"),
                "stop-excluding": (2, "stop excluding one value in a NodePool requirement"),
                "remove-requirement": (4, "remove a NodePool requirement: a broad change, every value is allowed")}


@dataclass
class Candidate:
    text: str
    apply: Callable[[World], World]
    kind: str = "remove-requirement"


def _with_pod(world: World, key: str, change: Callable[[Doc], None]) -> World:
    workload = []
    for d in world.workload:
        if d.get("kind") == "Pod" and _key(d) == key:
            d = copy.deepcopy(d)
            change(d)
        workload.append(d)
    return world.replaced(workload=workload)


def _with_pool(world: World, pool: NodePool, change: Callable[[dict[str, Any]], None]) -> World:
    values = copy.deepcopy(pool.field_values())
    change(values)
    return world.replaced(pool=_model_instance(NodePool, values, None))


def _pod_wants(pod: Doc) -> dict[str, set[str]]:
    """Label values the pod asks for: nodeSelector and required node-affinity `In` terms."""
    spec = pod.get("spec") or {}
    wants: dict[str, set[str]] = {k: {str(v)} for k, v in (spec.get("nodeSelector") or {}).items()}
    terms = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    for term in terms[:1]:
        for expr in term.get("matchExpressions") or []:
            if expr.get("operator") == "In":
                wants.setdefault(expr["key"], set()).update(str(v) for v in expr.get("values") or [])
    return wants


def _parse_quantity(text: str) -> float:
    from packing.quantity import parse_quantity

    return parse_quantity(text) / 1000  # milli-units -> units (cores, bytes)


def _candidates(world: World, pod: Doc, key: str, pool: NodePool, reason: str) -> list[Candidate]:
    out: list[Candidate] = []
    m = _TAINT.search(reason)
    if m:
        tol = {"key": m["key"], "operator": "Exists", "effect": m["effect"]}
        out.append(Candidate(f"tolerate {m['key']}", lambda w, t=tol: _with_pod(  # type: ignore[misc]
            w, key, lambda d: d.setdefault("spec", {}).setdefault("tolerations", []).append(t)), "toleration"))
        return out
    m = _LIMIT.search(reason)
    if m:
        res = m["res"]
        try:
            limit, used = _parse_quantity(m["limit"]), _parse_quantity(m["used"])
        except Exception:  # noqa: BLE001 - an unparsable figure only loses this suggestion
            return out

        def raise_to(value: float) -> Candidate:
            shown = str(int(value)) if res != "memory" else f"{int(math.ceil(value / 2**30))}Gi"
            return Candidate(f"raise {res} limit of pool {pool.name} from {m['limit']} to {shown}",
                             lambda w: _with_pool(w, pool, lambda v: v.setdefault("limits", {}).__setitem__(res, shown)),
                             "limit")

        # Smallest limit that works: search upwards from what is in use (each probe re-runs the engine).
        step = 1.0 if res != "memory" else float(2**30)
        lo, hi = max(limit, used) + step, max(limit, used) * 2 + 64 * step
        out.append(_SearchCandidate(raise_to, lo, hi, step))  # type: ignore[arg-type]
        return out
    wants = _pod_wants(pod)
    for i, req in enumerate(pool.requirements or []):
        rkey, op, vals = req.get("key"), req.get("operator"), list(req.get("values") or [])
        if rkey in wants and op == "In" and not wants[rkey] & set(vals):
            value = sorted(wants[rkey])[0]
            label = rkey.split("/")[-1] if rkey.startswith("karpenter.k8s.aws/") else rkey
            out.append(Candidate(f"allow {label} {value} in pool {pool.name}", lambda w, i=i, value=value: _with_pool(
                w, pool, lambda v: v["requirements"][i].__setitem__("values", [*v["requirements"][i]["values"], value])),
                "allow"))
        elif rkey in wants and op == "NotIn" and wants[rkey] & set(vals):
            bad = sorted(wants[rkey] & set(vals))[0]
            out.append(Candidate(f"stop excluding {rkey} {bad} in pool {pool.name}", lambda w, i=i, bad=bad: _with_pool(
                w, pool, lambda v: v["requirements"][i].__setitem__(
                    "values", [x for x in v["requirements"][i]["values"] if x != bad] or ["__none__"])),
                "stop-excluding"))
    # Fallback: drop one requirement of the pool at a time (verified like the rest).
    for i, req in enumerate(pool.requirements or []):
        out.append(Candidate(f"remove requirement {req.get('key')} {req.get('operator')} from pool {pool.name}",
                             lambda w, i=i: _with_pool(w, pool, lambda v: v["requirements"].pop(i)),
                             "remove-requirement"))
    return out


@dataclass
class _SearchCandidate:
    make: Callable[[float], Candidate]
    lo: float
    hi: float
    step: float


def _schedulable(world: World, key: str, catalog: Sequence[InstanceType]) -> bool:
    return _placed(world, key, catalog) is not None


def _placed(world: World, key: str, catalog: Sequence[InstanceType]) -> dict[str, Any] | None:
    """The plan when it places the pod, else None."""
    plan = run_plan(world, catalog)
    return None if any(u["pod"] == key for u in plan["unschedulable"]) else plan


def why_pending(namespace: str, name: str, *, cluster: ClusterBackend | None = None, now: datetime | None = None,
                world: World | None = None, max_probes: int = 24) -> dict[str, Any]:
    """For each NodePool the constraint that rules the pod out, and the smallest verified change that would
    let it schedule. Every suggestion has been applied in memory and the engine re-run."""
    world = world or live_world(cluster=cluster, now=now)
    key = f"{namespace}/{name}"
    pod = _find(world.workload, "Pod", key)
    if pod is None:
        raise NotFound(f"pod {key} not found")
    if (pod.get("spec") or {}).get("nodeName"):
        return {"pod": key, "pending": False, "node": pod["spec"]["nodeName"], "pools": []}
    # Ask about this pod even if the scheduler has not marked it Unschedulable yet.
    world = World(world.workload, world.pools, world.classes,
                  None if world.pending_keys is None else world.pending_keys | {key}, world.now, world.parsed)
    catalog = _catalog(world)
    plan = run_plan(world, catalog)
    entry = next((u for u in plan["unschedulable"] if u["pod"] == key), None)
    if entry is None:
        where = [c for c in plan["nodeclaims"] if key in c["pods"]] + [e for e in plan["existing_nodes"] if key in e["pods"]]
        target = where[0] if where else None
        return {"pod": key, "pending": True, "schedulable": True,
                "placement": target and {"name": target["name"], "instance_type": target.get("instance_type")},
                "pools": []}
    pools_by_name = {p.name: p for p in world.pools}
    base_cost = float(plan["summary"]["cost_per_hour"] or 0.0)
    probes = 0
    rows = []
    for r in entry["reasons"]:
        pool = pools_by_name.get(r["nodepool"])
        found: Candidate | None = None
        if pool is not None:
            for cand in _candidates(world, pod, key, pool, r["reason"]):
                if probes >= max_probes:
                    break
                if isinstance(cand, _SearchCandidate):
                    found, probes = _search(cand, world, key, catalog, probes, max_probes)
                    if found:
                        break
                    continue
                probes += 1
                if _schedulable(cand.apply(world), key, catalog):
                    found = cand
                    break
        row: dict[str, Any] = {"nodepool": r["nodepool"], "reason": r["reason"],
                               "suggestion": found and found.text, "verified": found is not None,
                               "change_kind": found and found.kind, "change": None, "cost_per_hour": None,
                               "recommended": False}
        if found is not None:
            row["change"] = CHANGE_KINDS[found.kind][1]
            placed = _placed(found.apply(world), key, catalog)  # the plan with the change, for its cost
            if placed is not None:
                # what the change adds to the launches of this provisioning run (this pod's node, mostly)
                row["cost_per_hour"] = round(float(placed["summary"]["cost_per_hour"] or 0.0) - base_cost, 6)
        rows.append(row)
    # Smallest, most targeted change first, then the cheapest; pools with no suggestion last.
    rows.sort(key=lambda row: (row["change_kind"] is None, CHANGE_KINDS.get(row["change_kind"] or "", (9, ""))[0],
                               row["cost_per_hour"] if row["cost_per_hour"] is not None else math.inf))
    if rows and rows[0]["change_kind"] is not None:
        rows[0]["recommended"] = True
    return {"pod": key, "pending": True, "schedulable": False, "requests": _requests(pod), "pools": rows}


def _requests(pod: Doc) -> dict[str, str]:
    """The pod's requests (its containers' sum, or its largest init container's if larger) as Kubernetes
    quantities, the way they are written in a manifest: cpu "1500m", memory "3Gi"."""
    from packing.quantity import format_quantity, parse_quantity

    spec = pod.get("spec") or {}

    def total(containers: Any) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in containers or []:
            for res, q in (((c or {}).get("resources") or {}).get("requests") or {}).items():
                try:
                    out[res] = out.get(res, 0) + parse_quantity(str(q))
                except Exception:  # noqa: BLE001 - a value the engine refused is not shown
                    continue
        return out

    sums = total(spec.get("containers"))
    for init in spec.get("initContainers") or []:
        for res, milli in total([init]).items():
            sums[res] = max(sums.get(res, 0), milli)
    return {res: format_quantity(milli, res) for res, milli in sorted(sums.items())}


def _search(c: _SearchCandidate, world: World, key: str, catalog: Sequence[InstanceType], probes: int,
            max_probes: int) -> tuple[Candidate | None, int]:
    # Binary search for the smallest limit (in whole steps) that lets the pod schedule.
    lo, hi = int(c.lo / c.step), int(math.ceil(c.hi / c.step))
    probes += 1
    if not _schedulable(c.make(hi * c.step).apply(world), key, catalog):
        return None, probes
    while lo < hi and probes < max_probes:
        mid = (lo + hi) // 2
        probes += 1
        if _schedulable(c.make(mid * c.step).apply(world), key, catalog):
            hi = mid
        else:
            lo = mid + 1
    return c.make(hi * c.step), probes


def apply_suggestion(world: World, namespace: str, name: str, suggestion: str) -> World:
    """The world with a why_pending suggestion applied (for tests and callers that want to re-check)."""
    key = f"{namespace}/{name}"
    pod = _find(world.workload, "Pod", key)
    assert pod is not None
    world = World(world.workload, world.pools, world.classes,
                  None if world.pending_keys is None else world.pending_keys | {key}, world.now, world.parsed)
    catalog = _catalog(world)
    plan = run_plan(world, catalog)
    entry = next(u for u in plan["unschedulable"] if u["pod"] == key)
    pools = {p.name: p for p in world.pools}
    for r in entry["reasons"]:
        pool = pools.get(r["nodepool"])
        if pool is None:
            continue
        for cand in _candidates(world, pod, key, pool, r["reason"]):
            if isinstance(cand, _SearchCandidate):
                lo, hi = int(cand.lo / cand.step), int(math.ceil(cand.hi / cand.step))
                for n in range(lo, hi + 1):
                    made = cand.make(n * cand.step)
                    if made.text == suggestion:
                        return made.apply(world)
            elif cand.text == suggestion:
                return cand.apply(world)
    raise LookupError(suggestion)


# --- why is this node still here --------------------------------------------------------------------

def why_node(name: str, *, cluster: ClusterBackend | None = None, now: datetime | None = None,
             world: World | None = None) -> dict[str, Any]:
    """Whether the node is a consolidation candidate now, what blocks it, and what the move would save."""
    world = world or live_world(cluster=cluster, now=now)
    if _find(world.workload, "Node", name) is None:
        raise NotFound(f"node {name} not found")
    orphan = _deleted_pool_claim(name, world)
    if orphan is not None:
        return _being_removed(name, orphan)
    catalog = _catalog(world)
    inputs, extras = world.inputs()
    engine_report = consolidate(build_cluster(inputs, extras, catalog), world.now,
                                repack=settings.LOADMASTER_CONSOLIDATION_REPACK)
    report = disruption_output.render_json(engine_report)
    for order, action in enumerate(report["actions"], 1):
        if name in action["nodes"]:
            cheapest = min(action["replacements"], key=lambda c: c["price_per_hour"], default=None)
            return {"node": name, "candidate": True, "order": order, "action": action,
                    "savings_per_hour": action["savings_per_hour"], "blocked_by": None, "blocked_kind": None,
                    "cheapest_replacement": cheapest and {"instance_type": cheapest["instance_type"],
                                                          "price_per_hour": cheapest["price_per_hour"]}}
    spared = next((n for n in report["not_disrupted"] if n["node"] == name), None)
    reason = spared["reason"] if spared else None
    # savings_per_hour: for a node a PDB, do-not-disrupt or a budget blocks, what the move would save were the
    # block lifted (the engine simulates it); None when no saving move exists or it was not evaluated
    return {"node": name, "candidate": False, "blocked_by": reason, "category": _category(reason or ""),
            "blocked_kind": spared["blocked_by"] if spared else None,
            "action": None, "savings_per_hour": spared["savings_per_hour"] if spared else None,
            "cheapest_replacement": _cheapest(reason or "")}


def _deleted_pool_claim(node: str, world: World) -> NodeClaim | None:
    """The node's live NodeClaim when its NodePool no longer exists (deleted since the launch)."""
    claim = NodeClaim.objects.active().filter(node_name=node).exclude(nodepool_name="").first()
    if claim is None or claim.nodepool_name in {p.name for p in world.pools}:
        return None
    return claim


def _being_removed(node: str, claim: NodeClaim) -> dict[str, Any]:
    # As Karpenter: deleting a NodePool deletes its NodeClaims, and each is drained and terminated; the
    # disruption engine does not consider it (there is no pool to plan under), so nothing here blocks it.
    requested = getattr(claim, "deletion_requested_at", None)
    price = None if claim.price_per_hour is None else float(claim.price_per_hour)
    return {"node": node, "candidate": False, "nodepool_deleted": True, "nodepool": claim.nodepool_name,
            "claim": claim.name, "removal_requested_at": requested and requested.isoformat(),
            "blocked_by": f"NodePool {claim.nodepool_name} was deleted: the node is being removed (cordoned, "
                          "drained through evictions that respect PodDisruptionBudgets, then terminated)",
            "category": "NodePool deleted", "blocked_kind": None, "action": None,
            # what its removal saves: the node's own price (nothing replaces it)
            "savings_per_hour": price, "cheapest_replacement": None}


def _category(reason: str) -> str:
    for needle, label in (("pdb", "PodDisruptionBudget"), ("do-not-disrupt", "do-not-disrupt"),
                          ("budget", "budget window"), ("consolidateAfter", "consolidateAfter"),
                          ("no cheaper replacement", "no cheaper replacement")):
        if needle in reason:
            return label
    return "other" if reason else "not considered"


def _cheapest(reason: str) -> dict[str, Any] | None:
    # The engine's wording: "no cheaper replacement: cheapest fitting option m5.large on-demand at $0.096/h ≥ …"
    m = re.search(r"cheapest fitting option (?P<type>[\w.-]+)[^$]*\$(?P<price>[\d.]+)", reason)
    return {"instance_type": m["type"], "price_per_hour": float(m["price"])} if m else None


# --- snapshots ---------------------------------------------------------------------------------------

def snapshot_create(*, name: str, files: Sequence[tuple[str, str]], user: Any = None,
                    taken_at: datetime | None = None, source: str = "upload", replay: bool = True) -> Any:
    """Validate every file with the CLI's parser, then store them as one text; nothing saved on error.
    With `replay` (the pages' default) the replay is computed now and stored with it."""
    from console.whatif.models import Snapshot

    snapshot_validate(files)
    text = SEPARATOR.join(t for _, t in files)
    snap = Snapshot.objects.create(name=name, source=source, filenames=[f for f, _ in files],
                                   lengths=[len(t) for _, t in files], yaml=text,
                                   size=len(text.encode("utf-8")), taken_at=taken_at or timezone.now(),
                                   created_by=user if getattr(user, "is_authenticated", False) else None)
    if replay:
        snapshot_replay_store(snapshot=snap)
    return snap


def snapshot_replay_store(*, snapshot: Any) -> Any:
    """Replay a stored snapshot (at its own clock, on today's catalog) and store the result on it: the
    pages read the stored replay and never recompute it. A replay the engine cannot finish stores its
    error instead (shown on the page), never a traceback."""
    started = timezone.now()
    try:
        result: dict[str, Any] | None = snapshot_replay(
            snapshot_files(snapshot.yaml, snapshot.filenames, snapshot.lengths), at=snapshot.taken_at)
        error = ""
    except InputError as exc:
        result, error = None, str(exc)
    except Exception as exc:  # noqa: BLE001 - an engine failure on one snapshot is reported on its page
        log.warning("snapshot %s: replay failed: %r", snapshot.pk, exc)
        result, error = None, f"the engines could not replay this snapshot: {type(exc).__name__}: {exc}"[:2000]
    snapshot.replay, snapshot.replay_error, snapshot.replayed_at = result, error, started
    snapshot.save(update_fields=["replay", "replay_error", "replayed_at"])
    return snapshot


def parse_snapshot(files: Sequence[tuple[str, str]], inputs: Inputs | None = None,
                   extras: Extras | None = None) -> tuple[Inputs, Extras]:
    """What `kubeobjects.parse_documents` + `inputs.parse_extras` do for each file, with the YAML loaded
    once instead of twice (a 20 MB snapshot spends most of its time in the YAML loader). The error
    messages are the CLI's: `file: document N (Kind name): field.path: message`."""
    inputs = inputs if inputs is not None else Inputs()
    extras = extras if extras is not None else Extras()
    for filename, text in files:
        # The CLI reads a file's objects first and its disruption extras second: an extras error is
        # reported only if the whole file parsed, so hold it until the end of the file.
        extras_error: InputError | None = None
        for where, prefix, item in kubeobjects.kubernetes_objects(text, filename):
            label = kubeobjects.object_label(item)
            try:
                kubeobjects.add_object(item, inputs, f"{where}{label}: {prefix}")  # as parse_documents does
            except kubeobjects._FieldError as e:
                raise InputError(f"{where}{label}: {prefix}{e.path}: {e.message}") from None
            try:
                _extra(item, prefix, extras)
            except _Bad as e:
                extras_error = extras_error or InputError(f"{where}{label}: {e.path}: {e.message}")
        if extras_error is not None:
            raise extras_error
    return inputs, extras


def snapshot_validate(files: Sequence[tuple[str, str]]) -> None:
    """InputError naming file, document and field (the CLI's parser and message) when a file is bad."""
    total = sum(len(t.encode("utf-8")) for _, t in files)
    if total > MAX_SNAPSHOT_BYTES:
        raise InputError(f"{files[-1][0]}: snapshot is {total} bytes; the limit is {MAX_SNAPSHOT_BYTES}")
    inputs, _ = parse_snapshot(files)
    kubeobjects.expansion_plan(inputs)  # workloads past MAX_EXPANDED_PODS: refused here, as the CLI refuses them


SEPARATOR = "\n---\n"


def snapshot_files(text: str, filenames: Sequence[str], lengths: Sequence[int]) -> list[tuple[str, str]]:
    """The stored text split back into its uploaded files (each is parsed on its own, as the CLI does)."""
    out, pos = [], 0
    for name, length in zip(filenames, lengths, strict=True):
        out.append((name, text[pos:pos + length]))
        pos += length + len(SEPARATOR)
    return out


def snapshot_replay(files: Sequence[tuple[str, str]], *, at: datetime, region: str | None = None) -> dict[str, Any]:
    """Exactly what `python -m packing plan FILES` and `python -m packing consolidate FILES --at AT` print."""
    region = region or settings.LOADMASTER_AWS_REGION
    started = time.perf_counter()
    base, ex = parse_snapshot(files)
    # plan_from_inputs and build_cluster each extend the lists they get (expand_workloads): give each
    # its own containers over the same parsed objects, as two CLI runs would have.
    inp = Inputs(**{f.name: copy.copy(getattr(base, f.name)) for f in dataclasses.fields(Inputs)})
    inp2 = Inputs(**{f.name: copy.copy(getattr(base, f.name)) for f in dataclasses.fields(Inputs)})
    catalog = plan_cli.resolve_catalog(inp, Inputs(), region, io.StringIO())
    if catalog is None:
        raise InputError(f"no instance catalog for region {region}")
    plan = plan_cli.render_json(plan_cli.plan_from_inputs(inp, catalog))
    report = consolidate(build_cluster(inp2, ex, catalog), at, repack=settings.LOADMASTER_CONSOLIDATION_REPACK)
    return {"plan": plan, "consolidate": disruption_output.render_json(report),
            "seconds": round(time.perf_counter() - started, 3)}


def live_snapshot_yaml(*, cluster: ClusterBackend | None = None) -> str:
    """The live cluster and the saved fleet as one multi-document YAML (what an upload would hold)."""
    world = live_world(cluster=cluster)
    docs = [d for d in world.docs() if d.get("kind") != "NodeClaim"] + \
        [d for d in world.workload if d.get("kind") == "NodeClaim"]
    return yaml.safe_dump_all(docs, sort_keys=False)


def snapshot_compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """Two replays side by side: cost, launches, actions and pods that changed status."""
    def summary(r: Mapping[str, Any]) -> dict[str, Any]:
        p, c = r["plan"], r["consolidate"]
        return {"pending_pods": p["summary"]["pending_pods"], "unschedulable": p["summary"]["unschedulable"],
                "new_nodeclaims": p["summary"]["new_nodeclaims"], "launch_cost_per_hour": p["summary"]["cost_per_hour"],
                "lower_bound_per_hour": p["summary"]["lower_bound_per_hour"], "nodes": c["summary"]["nodes"],
                "cost_per_hour_before": c["summary"]["cost_per_hour_before"],
                "cost_per_hour_after": c["summary"]["cost_per_hour_after"], "actions": len(c["actions"])}

    ua = {u["pod"] for u in a["plan"]["unschedulable"]}
    ub = {u["pod"] for u in b["plan"]["unschedulable"]}
    return {"a": summary(a), "b": summary(b), "unschedulable_only_in_a": sorted(ua - ub),
            "unschedulable_only_in_b": sorted(ub - ua)}
