"""Reads of the advisor: the findings over the live cluster and saved fleet, one finding by its key, and the
unsaved NodePool a fix makes (what the fix form shows)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from console.advisor.adapter import advice_from_world
from console.advisor.models import AlertedFinding
from console.backends.base import ClusterBackend
from console.fleet import manifests
from console.fleet.models import NodePool
from console.whatif.world import edited_instance, live_world
from packing import api


def current_advice(*, cluster: ClusterBackend | None = None) -> api.Advice:
    return advice_from_world(live_world(cluster=cluster))


def advice_document(advice: api.Advice) -> dict[str, Any]:
    """The JSON of `python -m packing advise` (GET /api/advisor/ answers it)."""
    return api.advice_json(advice)


def finding_for(advice: api.Advice, *, code: str, kind: str, name: str) -> api.Finding | None:
    """The finding `code` whose fix patches the object `kind`/`name`."""
    return next(
        (f for f in advice.findings if f.code == code and f.fix is not None and f.fix.kind == kind
         and f.fix.name == name),
        None,
    )


def nodepool_with_fix(*, nodepool: NodePool, patch: Mapping[str, Any]) -> tuple[NodePool, list[tuple[str, str]]]:
    """The saved pool with the fix's merge patch applied to its manifest, as an unsaved row (its id and revision
    kept, so the form saves it as an edit of that pool), and the manifest's structural problems, if any."""
    doc = api.merge_patch(manifests.nodepool_to_manifest(nodepool.field_values()), patch)
    values, problems = manifests.fields_from_manifest(doc)
    fixed: NodePool = edited_instance(NodePool, values, nodepool)
    fixed.pk, fixed.revision = nodepool.pk, nodepool.revision
    return fixed, problems


def alerted_keys(*, rule_id: int) -> set[str]:
    return set(AlertedFinding.objects.filter(rule_id=rule_id).values_list("key", flat=True))

