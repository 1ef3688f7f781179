"""Reading what disruption needs from Kubernetes objects, beyond what the provisioning model holds.

The provisioning parser (packing.kubeobjects) builds pods, nodes, pools, PDBs and the catalog. Disruption also
reads timestamps, annotations, node health, each NodePool's spec.disruption and expireAfter, and PDB status:
read_extras reads those from the same objects, with the same field readers (packing.fields) and the same
error type, and read_files reads both in one pass over each file (packing.kubeobjects.parse_documents).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from packing.buffers import resolve_buffers
from packing.disruption.model import (
    DEFAULT_CONSOLIDATE_AFTER,
    DEFAULT_EXPIRE_AFTER,
    DEFAULT_POLICY,
    DISRUPTED_TAINT,
    Budget,
    Cluster,
    DisruptionSettings,
    NodeInfo,
    PodMeta,
)
from packing.fields import FieldError, as_object, duration, string_values, timestamp
from packing.instancetype import InstanceType
from packing.kubeobjects import (
    ByteBudget,
    Inputs,
    expand_workloads,
    inflight_claims,
    load_files,
    parse_documents,
)
from packing.nodepool import BUDGET_NODES_DEFAULT, CONSOLIDATION_POLICIES
from packing.yamlinput import brief

__all__ = ["Extras", "build_cluster", "parse_texts", "read_extras", "read_files"]

POLICIES = CONSOLIDATION_POLICIES


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


# ---------------------------------------------------------------- the fields disruption reads
def _settings(spec: Mapping[str, Any], path: str) -> DisruptionSettings:
    d = as_object(spec.get("disruption"), f"{path}spec.disruption")
    policy = d.get("consolidationPolicy", DEFAULT_POLICY)
    if policy == "WhenUnderutilized":  # Karpenter v1beta1's name for the same policy
        policy = "WhenEmptyOrUnderutilized"
    if policy not in POLICIES:
        raise FieldError(f"{path}spec.disruption.consolidationPolicy", f"must be one of {', '.join(POLICIES)}, got {brief(policy)}")
    after = duration(d.get("consolidateAfter"), f"{path}spec.disruption.consolidateAfter", DEFAULT_CONSOLIDATE_AFTER)
    tspec = as_object(as_object(spec.get("template"), f"{path}spec.template").get("spec"), f"{path}spec.template.spec")
    if "expireAfter" in tspec:
        expire = duration(tspec.get("expireAfter"), f"{path}spec.template.spec.expireAfter", DEFAULT_EXPIRE_AFTER)
    else:  # v1beta1 kept it under spec.disruption
        expire = duration(d.get("expireAfter"), f"{path}spec.disruption.expireAfter", DEFAULT_EXPIRE_AFTER)
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
    # Karpenter's CRD allows no Never here; "Never" would read as None, which is "not set" all the same.
    grace = duration(tspec.get("terminationGracePeriod"), f"{path}spec.template.spec.terminationGracePeriod", None)
    return DisruptionSettings(policy=policy, consolidate_after=after, expire_after=expire, budgets=budgets,
                              termination_grace_period=grace)


def _budget(b: Any, i: int) -> Budget:
    if not isinstance(b, Mapping):
        return Budget(index=i, error=f"must be an object, got {type(b).__name__}")
    nodes = b.get("nodes", BUDGET_NODES_DEFAULT)
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


def read_extras(doc: Mapping[str, Any], ex: Extras, prefix: str = "") -> None:
    """What disruption reads from one object into `ex`; FieldError naming the field (after `prefix`, the
    item's place inside a List) when it is bad. Kinds disruption reads nothing more from are ignored."""
    kind = doc.get("kind")
    api = str(doc.get("apiVersion", ""))
    group = api.rsplit("/", 1)[0] if "/" in api else ""
    meta = as_object(doc.get("metadata"), f"{prefix}metadata")
    name = str(meta.get("name", ""))
    ns = str(meta.get("namespace") or "default")
    if kind == "Node" and group == "":
        ex.node_created[name] = timestamp(meta.get("creationTimestamp"), f"{prefix}metadata.creationTimestamp")
        ex.node_annotations[name] = string_values(meta.get("annotations"), f"{prefix}metadata.annotations")
        spec = as_object(doc.get("spec"), f"{prefix}spec")
        taints = spec.get("taints") or []
        disrupted = any(isinstance(t, Mapping) and t.get("key") == DISRUPTED_TAINT for t in taints)
        ex.node_deleting[name] = meta.get("deletionTimestamp") is not None or disrupted
        ready = True
        conds = as_object(doc.get("status"), f"{prefix}status").get("conditions") or []
        for c in conds if isinstance(conds, list) else []:
            if isinstance(c, Mapping) and c.get("type") == "Ready":
                ready = str(c.get("status")) == "True"
        ex.node_ready[name] = ready
    elif kind == "Pod" and group == "":
        spec = as_object(doc.get("spec"), f"{prefix}spec")
        prio = spec.get("priority", 0)
        if isinstance(prio, bool) or not isinstance(prio, int) or not -(2**31) <= prio < 2**31:
            raise FieldError(f"{prefix}spec.priority", f"must be an integer (32 bits), got {brief(prio)}")
        ex.pods[f"{ns}/{name}"] = (
            string_values(meta.get("annotations"), f"{prefix}metadata.annotations"),
            timestamp(meta.get("creationTimestamp"), f"{prefix}metadata.creationTimestamp"),
            prio,
        )
    elif kind == "NodePool" and group == "karpenter.sh":
        ex.settings[name] = _settings(as_object(doc.get("spec"), f"{prefix}spec"), prefix)
    elif kind == "PodDisruptionBudget" and group == "policy":
        spec = as_object(doc.get("spec"), f"{prefix}spec")
        if spec.get("selector") is None:
            ex.pdb_null.add(f"{ns}/{name}")
        st = as_object(doc.get("status"), f"{prefix}status").get("disruptionsAllowed")
        if st is not None:
            if isinstance(st, bool) or not isinstance(st, int) or not 0 <= st < 2**31:
                raise FieldError(f"{prefix}status.disruptionsAllowed", f"must be a non-negative integer, got {brief(st)}")
            ex.pdb_status[f"{ns}/{name}"] = st


def read_files(
    paths: Sequence[str], inp: Inputs | None = None, ex: Extras | None = None, *, budget: ByteBudget | None = None
) -> tuple[Inputs, Extras]:
    """Parse files into the provisioning model and the disruption extras; InputError on bad input (also past
    the run's byte budget, when one is given)."""
    inp = inp or Inputs()
    extras = ex or Extras()
    load_files(paths, inp, budget, also=lambda item, prefix: read_extras(item, extras, prefix))
    return inp, extras


def parse_texts(
    files: Iterable[tuple[str, str]], inp: Inputs | None = None, ex: Extras | None = None
) -> tuple[Inputs, Extras]:
    """read_files over texts held in memory, as (filename, text) pairs: the same objects and the same errors."""
    inp = inp or Inputs()
    extras = ex or Extras()
    for filename, text in files:
        parse_documents(text, filename, inp, also=lambda item, prefix: read_extras(item, extras, prefix))
    return inp, extras


def build_cluster(inp: Inputs, ex: Extras, catalog: Sequence[InstanceType]) -> Cluster:
    """What one consolidation run looks at (workloads without pods expanded into `inp` first). The virtual pods
    of the input's CapacityBuffers join the pending pods, whose room every move keeps (packing.buffers); they
    are never evicted, having no node."""
    expand_workloads(inp)
    pods = [*inp.running, *inp.pending]
    resolved = resolve_buffers(inp.buffers, inp.pod_templates, inp.workloads, pods)
    virtual = [p for r in resolved for p in r.pods]
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
        pending=[*inp.pending, *virtual],
        daemonsets=list(inp.daemonsets),
        pdbs=list(inp.pdbs),
        settings=dict(ex.settings),
        pod_meta={k: PodMeta(a, c, pr) for k, (a, c, pr) in ex.pods.items()},
        pdb_status=dict(ex.pdb_status),
        pdb_null_selector=set(ex.pdb_null),
        inflight=inflight,
        buffers=resolved,
    )
