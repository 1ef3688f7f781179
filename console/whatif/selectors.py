"""Reads for the what-if pages: previews of an edit, why a pod is pending, why a node is still here, and
snapshots (their files, their replays, two replays compared). The engines run over documents in memory
(console.whatif.world); nothing here writes a row."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import yaml
from django.conf import settings

from console.backends.base import ClusterBackend
from console.fleet.models import EC2NodeClass, NodeClaim, NodePool
from console.overlays.models import NodeOverlay
from console.whatif.models import Snapshot
from console.whatif.suggestions import (
    CHANGE_KINDS,
    Candidate,
    SearchCandidate,
    candidates,
    placed,
    schedulable,
    search,
)
from console.whatif.world import (
    NotFound,
    Outcome,
    World,
    catalog,
    edited_instance,
    live_world,
    run_plan,
    run_world,
)
from packing import api

__all__ = [
    "CHANGE_KINDS",
    "SEPARATOR",
    "NotFound",
    "apply_suggestion",
    "edited_instance",
    "live_snapshot_yaml",
    "parse_snapshot",
    "preview_nodepool_change",
    "preview_world",
    "replay_files",
    "snapshot_compare",
    "snapshot_files",
    "snapshot_list",
    "snapshot_replay",
    "split_files",
    "node_health",
    "why_node",
    "why_pending",
]

# between the uploaded files of a snapshot in its one stored text
SEPARATOR = "\n---\n"


# --- preview -----------------------------------------------------------------------------------------

def _summary(out: Outcome) -> dict[str, Any]:
    """One side of a preview. Launches are of two kinds: NodeClaims for pending pods (the plan) and the
    replacements disruption launches for the nodes it removes (drift, expiry, consolidation); every removal
    carries its reason and what replaces it. Cost changes are signed: positive costs more.
    Figures are rounded as the CLI documents round them (the preview equals the CLI on the same snapshot)."""
    plan, cons = out.plan, out.consolidation
    launch_cost = float(plan.cost_per_hour or 0.0)
    existing = round(cons.cost_before, 6)
    savings = sum(round(a.savings_per_hour, 6) for a in cons.actions)
    bound = None if plan.lower_bound is None else round(plan.lower_bound, 6)
    replacements = [{"instance_type": c["instance_type"], "nodepool": c.get("nodepool", ""), "zone": c["zone"],
                     "capacity_type": c["capacity_type"], "price_per_hour": c["price_per_hour"],
                     "replaces": list(a.nodes), "reason": a.reason}
                    for a in cons.actions for c in a.replacements]
    removals = [{"node": n, "type": a.type, "reason": a.reason, "why": a.why,
                 "replaced_by": [c["instance_type"] for c in a.replacements],
                 "action_savings_per_hour": round(a.savings_per_hour, 6),
                 # consolidationPolicy Balanced: the move's score (None when it was not scored)
                 "score": None if a.score is None else round(a.score, 6)}
                for a in cons.actions for n in a.nodes]
    # Nodes the engine would disrupt but a budget holds back for now: they go in later rounds.
    held_back = [{"node": n.node, "reason": n.reason} for n in cons.not_disrupted if n.blocked_by == "budget"]
    return {
        "launch": [{"instance_type": c.instance_type, "nodepool": c.nodepool, "zone": c.zone,
                    "capacity_type": c.capacity_type, "price_per_hour": round(c.price_per_hour, 6),
                    "pods": len(c.pods),
                    # what the bill sees under the commitments (None without any) and which one covers it
                    "effective_price_per_hour": None if c.effective_price_per_hour is None
                    else round(c.effective_price_per_hour, 6), "covered_by": list(c.covered_by or [])}
                   for c in plan.nodeclaims],
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
        "unschedulable": {pod: api.unschedulable_json(pod, reasons)["reasons"]
                          for pod, reasons in sorted(plan.unschedulable_reasons.items())},
        "seconds": round(out.seconds, 3),
        # each Reserved Instance's and Savings Plan's use (Results.commitments): by the running nodes, by the plan
        "commitments": [{"name": u.name, "kind": u.kind, "unit": u.unit, "total": round(u.total, 6),
                         "used_by_existing": round(u.used_by_existing, 6), "used_by_plan": round(u.used_by_plan, 6),
                         "left": round(u.left, 6)} for u in plan.commitments],
    }


def commitments_change(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per commitment: used and left before and after the edit, and the change in use (a commitment on one side
    only, added or gone with the edit, has None on the other)."""
    b, a = {c["name"]: c for c in before}, {c["name"]: c for c in after}
    rows = []
    for name in sorted(set(b) | set(a)):
        x, y = b.get(name), a.get(name)
        ub = None if x is None else round(x["used_by_existing"] + x["used_by_plan"], 6)
        ua = None if y is None else round(y["used_by_existing"] + y["used_by_plan"], 6)
        either = y or x or {}
        rows.append({"name": name, "kind": either.get("kind"), "unit": either.get("unit"), "total": either.get("total"),
                     "used_before": ub, "used_after": ua,
                     "left_before": None if x is None else x["left"], "left_after": None if y is None else y["left"],
                     "used_change": None if ub is None or ua is None else round(ua - ub, 6)})
    return rows


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
        "commitments": commitments_change(b["commitments"], a["commitments"]),
    }


def preview_nodepool_change(*, values: Mapping[str, Any], name: str | None = None, kind: str = "nodepool",
                            cluster: ClusterBackend | None = None, now: datetime | None = None,
                            world: World | None = None) -> dict[str, Any]:
    """Provisioning and consolidation with the edited NodePool (or EC2NodeClass) in place of the saved one.

    `name` is the saved object being edited (None for a new one). Read-only: nothing is saved.
    """
    before = world or live_world(cluster=cluster, now=now)
    if kind == "nodeclass":
        saved_class = next((c for c in before.classes if c.name == (name or values.get("name"))), None)
        edited = edited_instance(EC2NodeClass, values, saved_class)
        after = before.replaced(nodeclass=edited)
        if name and edited.name != name:
            after.classes = [c for c in after.classes if c.name != name]
    else:
        saved_pool = next((p for p in before.pools if p.name == (name or values.get("name"))), None)
        edited = edited_instance(NodePool, values, saved_pool)
        after = before.replaced(pool=edited)
        if name and edited.name != name:
            after.pools = [p for p in after.pools if p.name != name]
    result = preview_world(before, after)
    result.update({"kind": kind, "name": edited.name})
    return result


# --- why pending -------------------------------------------------------------------------------------

def why_pending(namespace: str, name: str, *, cluster: ClusterBackend | None = None, now: datetime | None = None,
                world: World | None = None, max_probes: int = 24) -> dict[str, Any]:
    """For each NodePool the constraint that rules the pod out, and the smallest verified change that would
    let it schedule. Every suggestion has been applied in memory and the engine re-run."""
    world = world or live_world(cluster=cluster, now=now)
    key = f"{namespace}/{name}"
    pod = world.find("Pod", key)
    if pod is None:
        raise NotFound(f"pod {key} not found")
    if (pod.get("spec") or {}).get("nodeName"):
        return {"pod": key, "pending": False, "node": pod["spec"]["nodeName"], "pools": []}
    # Ask about this pod even if the scheduler has not marked it Unschedulable yet.
    world = world.with_pending(key)
    types = catalog(world)
    plan = run_plan(world, types)
    answer = api.explain_pod(plan, key)
    if not answer.unschedulable:
        target = answer.placed_on
        return {"pod": key, "pending": True, "schedulable": True,
                "placement": target and {"name": target.name,
                                         "instance_type": getattr(target, "instance_type", None)},
                "pools": []}
    pools_by_name = {p.name: p for p in world.pools}
    base_cost = float(plan.cost_per_hour or 0.0)
    probes = 0
    rows = []
    for why in answer.reasons:
        nodepool, reason = why.nodepool, why.text
        pool = pools_by_name.get(nodepool)
        found: Candidate | None = None
        if pool is not None:
            for cand in candidates(world, pod, key, pool, why):
                if probes >= max_probes:
                    break
                if isinstance(cand, SearchCandidate):
                    found, probes = search(cand, world, key, types, probes, max_probes)
                    if found:
                        break
                    continue
                probes += 1
                if schedulable(cand.apply(world), key, types):
                    found = cand
                    break
        row: dict[str, Any] = {"nodepool": nodepool, "reason": reason, "kind": why.kind.value,
                               "suggestion": found and found.text, "verified": found is not None,
                               "change_kind": found and found.kind, "change": None, "cost_per_hour": None,
                               "recommended": False}
        if found is not None:
            row["change"] = CHANGE_KINDS[found.kind][1]
            with_change = placed(found.apply(world), key, types)  # the plan with the change, for its cost
            if with_change is not None:
                # what the change adds to the launches of this provisioning run (this pod's node, mostly)
                row["cost_per_hour"] = round(float(with_change.cost_per_hour or 0.0) - base_cost, 6)
        rows.append(row)
    # Smallest, most targeted change first, then the cheapest; pools with no suggestion last.
    rows.sort(key=lambda row: (row["change_kind"] is None, CHANGE_KINDS.get(row["change_kind"] or "", (9, ""))[0],
                               row["cost_per_hour"] if row["cost_per_hour"] is not None else math.inf))
    if rows and rows[0]["change_kind"] is not None:
        rows[0]["recommended"] = True
    return {"pod": key, "pending": True, "schedulable": False, "requests": _requests(pod), "pools": rows}


def _requests(pod: dict[str, Any]) -> dict[str, str]:
    """The pod's requests (its containers' sum, or its largest init container's if larger) as Kubernetes
    quantities, the way they are written in a manifest: cpu "1500m", memory "3Gi"."""
    spec = pod.get("spec") or {}

    def total(containers: Any) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in containers or []:
            for res, q in (((c or {}).get("resources") or {}).get("requests") or {}).items():
                try:
                    out[res] = out.get(res, 0) + api.parse_quantity(str(q))
                except Exception:  # noqa: BLE001 - a value the engine refused is not shown
                    continue
        return out

    sums = total(spec.get("containers"))
    for init in spec.get("initContainers") or []:
        for res, milli in total([init]).items():
            sums[res] = max(sums.get(res, 0), milli)
    return {res: api.format_quantity(milli, res) for res, milli in sorted(sums.items())}


def apply_suggestion(world: World, namespace: str, name: str, suggestion: str) -> World:
    """The world with a why_pending suggestion applied (for tests and callers that want to re-check)."""
    key = f"{namespace}/{name}"
    pod = world.find("Pod", key)
    assert pod is not None
    world = world.with_pending(key)
    types = catalog(world)
    reasons = run_plan(world, types).unschedulable_reasons.get(key)
    if reasons is None:
        raise LookupError(suggestion)
    pools = {p.name: p for p in world.pools}
    for why in reasons:
        pool = pools.get(why.nodepool)
        if pool is None:
            continue
        for cand in candidates(world, pod, key, pool, why):
            if isinstance(cand, SearchCandidate):
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
    if world.find("Node", name) is None:
        raise NotFound(f"node {name} not found")
    orphan = _deleted_pool_claim(name, world)
    if orphan is not None:
        return _being_removed(name, orphan)
    inputs, extras = world.inputs()
    report = api.consolidate(api.with_min_values_policy(api.build_cluster(inputs, extras, catalog(world)),
                                                settings.LOADMASTER_MIN_VALUES_POLICY),
                             world.now, repack=settings.LOADMASTER_CONSOLIDATION_REPACK)
    verdict = api.explain_node(report, name)
    if verdict.action is not None:
        action = api.action_json(verdict.action)
        cheapest = min(action["replacements"], key=lambda c: c["price_per_hour"], default=None)
        return {"node": name, "candidate": True, "order": verdict.order, "action": action,
                "savings_per_hour": action["savings_per_hour"], "blocked_by": None, "blocked_kind": None,
                # consolidationPolicy Balanced: the move's score and the threshold it met (None: not scored)
                "score": action["score"], "score_threshold": action["score_threshold"],
                "cheapest_replacement": cheapest and {"instance_type": cheapest["instance_type"],
                                                      "price_per_hour": cheapest["price_per_hour"]}}
    spared = verdict.spared
    cheapest = spared.cheapest_replacement if spared else None
    # savings_per_hour: for a node a PDB, do-not-disrupt or a budget blocks, what the move would save were the
    # block lifted (the engine simulates it); None when no saving move exists or it was not evaluated
    return {"node": name, "candidate": False, "blocked_by": spared.text if spared else None,
            "category": _category(spared.category) if spared else "not considered",
            "blocked_kind": spared.blocked_by if spared else None,
            "action": None,
            "savings_per_hour": None if spared is None or spared.savings_per_hour is None
            else round(spared.savings_per_hour, 6),
            # consolidationPolicy Balanced: the score that fell short of the threshold (None: not that reason)
            "score": None if spared is None or spared.score is None else round(spared.score, 6),
            "score_threshold": None if spared is None or spared.score is None else api.BALANCED_THRESHOLD,
            "cheapest_replacement": cheapest and {"instance_type": cheapest.instance_type,
                                                  "price_per_hour": cheapest.price_per_hour}}


def _deleted_pool_claim(node: str, world: World) -> NodeClaim | None:
    """The node's live NodeClaim when its NodePool no longer exists (deleted since the launch)."""
    claim: NodeClaim | None = NodeClaim.objects.active().filter(node_name=node).exclude(nodepool_name="").first()
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


# The why-node page's headline per engine category; the categories not listed read "other".
_CATEGORY_LABELS = {
    api.NotDisruptedCategory.PDB: "PodDisruptionBudget",
    api.NotDisruptedCategory.DO_NOT_DISRUPT: "do-not-disrupt",
    api.NotDisruptedCategory.BUDGET: "budget window",
    api.NotDisruptedCategory.CONSOLIDATE_AFTER: "consolidateAfter",
    api.NotDisruptedCategory.NO_CHEAPER_REPLACEMENT: "no cheaper replacement",
    api.NotDisruptedCategory.BELOW_SCORE_THRESHOLD: "Balanced consolidation score",
}


def _category(category: api.NotDisruptedCategory) -> str:
    return _CATEGORY_LABELS.get(category, "other")


# --- snapshots ---------------------------------------------------------------------------------------

def split_files(text: str, filenames: Sequence[str], lengths: Sequence[int]) -> list[tuple[str, str]]:
    """A snapshot's stored text split back into its uploaded files (each is parsed on its own, as the CLI does)."""
    out, pos = [], 0
    for name, length in zip(filenames, lengths, strict=True):
        out.append((name, text[pos:pos + length]))
        pos += length + len(SEPARATOR)
    return out


def snapshot_files(snap: Snapshot) -> list[tuple[str, str]]:
    return split_files(snap.yaml, snap.filenames, snap.lengths)


def snapshot_replay(snap: Snapshot) -> dict[str, Any] | None:
    """The replay stored at upload (or by an operator's "Replay again"); None when there is none.
    Never computed here: a page view must not run the engines over a stored snapshot."""
    return snap.replay if isinstance(snap.replay, dict) else None


def snapshot_list() -> list[Snapshot]:
    return list(Snapshot.objects.defer("yaml", "replay").select_related("created_by"))


def parse_snapshot(files: Sequence[tuple[str, str]]) -> tuple[api.Inputs, api.Extras]:
    """The files' objects as `python -m packing consolidate FILES` reads them (api.parse_texts): the error
    messages are the CLI's, `file: document N (Kind name): field.path: message`."""
    return api.parse_texts(files)


def replay_files(files: Sequence[tuple[str, str]], *, at: datetime, region: str | None = None) -> dict[str, Any]:
    """Exactly what `python -m packing plan FILES` and `python -m packing consolidate FILES --at AT` print."""
    region = region or settings.LOADMASTER_AWS_REGION
    started = time.perf_counter()
    base, ex = parse_snapshot(files)
    # plan and build_cluster each extend the lists they get (expand_workloads): give each its own
    # containers over the same parsed objects, as two CLI runs would have.
    inp, inp2 = api.fresh_inputs(base), api.fresh_inputs(base)
    types = api.resolve_catalog(inp, api.Inputs(), region)
    policy = settings.LOADMASTER_MIN_VALUES_POLICY
    # the snapshot's Commitment documents price the plan, as `plan FILES` prices with them
    plan = api.plan_json(api.plan(inp, types, min_values_policy=api.MinValuesPolicy(policy),
                                  commitments=inp.commitments), inp.ignored)
    report = api.consolidate(api.with_min_values_policy(api.build_cluster(inp2, ex, types), policy), at,
                             repack=settings.LOADMASTER_CONSOLIDATION_REPACK)
    return {"plan": plan, "consolidate": api.report_json(report), "seconds": round(time.perf_counter() - started, 3)}


def live_snapshot_yaml(*, cluster: ClusterBackend | None = None) -> str:
    """The live cluster and the saved fleet as one multi-document YAML (what an upload would hold)."""
    world = live_world(cluster=cluster)
    docs = [d for d in world.docs() if d.get("kind") != "NodeClaim"] + \
        [d for d in world.workload if d.get("kind") == "NodeClaim"]
    # the stored NodeOverlays, so that a replay prices nodes as the loops do (the world carries the Commitments)
    docs += [o.manifest() for o in NodeOverlay.objects.all()]
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


# --- a node's health, as node repair sees it ----------------------------------------------------------

def node_health(name: str, *, cluster: ClusterBackend, now: datetime | None = None) -> dict[str, Any]:
    """The node's conditions, the repair policies they match, when repair is due and the NodePool's 20% gate
    (console/control/repair.py); the why-node page shows it beside the consolidation answer."""
    from django.utils import timezone

    from console.control.repair import node_health_summary

    nodes, _ = cluster.list_nodes()
    node = next((n for n in nodes if (n.get("metadata") or {}).get("name") == name), None)
    if node is None:
        raise NotFound(f"node {name} not found")
    claim = NodeClaim.objects.active().filter(node_name=name).first()
    return node_health_summary(node, claim=claim, nodes=nodes, now=now or timezone.now())
