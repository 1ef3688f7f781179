"""Writes to the fleet: every create, update, delete and import goes through here, so validation,
the revision counter and the change history can never be skipped by a view, the API or a command.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

import yaml
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from console.buffers import manifests as buffer_manifests
from console.buffers import services as buffer_services
from console.fleet import manifests
from console.fleet.models import ChangeRecord, Decision, EC2NodeClass, NodeClaim, NodePool
from console.fleet.selectors import nodepool_deletion_impact, nodepool_live_claims

_KINDS: dict[str, tuple[type[NodePool] | type[EC2NodeClass], str]] = {
    manifests.NODEPOOL_KIND: (NodePool, ChangeRecord.NODEPOOL),
    manifests.NODECLASS_KIND: (EC2NodeClass, ChangeRecord.NODECLASS),
}


class StaleRevision(ValidationError):
    """Someone else saved the object since it was loaded; saving now would silently undo their change."""


def _manifest(obj: NodePool | EC2NodeClass | None) -> dict[str, Any] | None:
    if obj is None:
        return None
    if isinstance(obj, NodePool):
        return manifests.nodepool_to_manifest(obj.field_values())
    return manifests.nodeclass_to_manifest(obj.field_values())


def _record(obj: NodePool | EC2NodeClass, *, action: str, before: Mapping[str, Any] | None,
            user: Any, source: str) -> ChangeRecord | None:
    after = None if action == "deleted" else _manifest(obj)
    changes = manifests.diff_manifests(before, after)
    if action == "updated" and not changes:
        return None
    return ChangeRecord.objects.create(
        object_type=ChangeRecord.NODEPOOL if isinstance(obj, NodePool) else ChangeRecord.NODECLASS,
        object_name=obj.name, action=action, source=source,
        user=user if getattr(user, "pk", None) else None,
        username=getattr(user, "username", "") or "",
        changes=changes,
    )


def _save(obj: NodePool | EC2NodeClass, *, values: Mapping[str, Any], user: Any, source: str,
          expected_revision: int | None = None) -> NodePool | EC2NodeClass:
    creating = obj.pk is None
    before = None if creating else _manifest(type(obj).objects.get(pk=obj.pk))
    for name, value in values.items():
        setattr(obj, name, value)
    obj.full_clean()
    if not creating:
        current = type(obj).objects.select_for_update().only("revision").get(pk=obj.pk).revision
        if expected_revision is not None and current != expected_revision:
            raise StaleRevision(
                f"{obj.name} was changed by someone else (revision {current}, you edited {expected_revision}); "
                "reload it and apply your change again")
        obj.revision = current + 1
    obj.updated_at = timezone.now()
    obj.save()
    _record(obj, action="created" if creating else "updated", before=before, user=user, source=source)
    return obj


def _signalled_change_record(object_type: str, *, key: str, action: str, before: Mapping[str, Any] | None,
                             after: Mapping[str, Any] | None, user: Any, source: str) -> ChangeRecord | None:
    changes = manifests.diff_manifests(before, after)
    if action == "updated" and not changes:
        return None
    return ChangeRecord.objects.create(
        object_type=object_type, object_name=key, action=action, source=source,
        user=user if getattr(user, "pk", None) else None, username=getattr(user, "username", "") or "",
        changes=changes,
    )


def buffer_change_record(*, key: str, action: str, before: Mapping[str, Any] | None,
                         after: Mapping[str, Any] | None, user: Any, source: str, **_: Any) -> ChangeRecord | None:
    """A CapacityBuffer's change in the history NodePools have (console.buffers.signals.buffer_changed, connected
    in apps.py): who, from where, the manifest's paths that changed; an update that changes nothing leaves none."""
    return _signalled_change_record(ChangeRecord.CAPACITYBUFFER, key=key, action=action, before=before, after=after,
                                    user=user, source=source)


def overlay_change_record(*, key: str, action: str, before: Mapping[str, Any] | None,
                          after: Mapping[str, Any] | None, user: Any, source: str, **_: Any) -> ChangeRecord | None:
    """A NodeOverlay's change in the history (console.overlays.signals.overlay_changed), as a CapacityBuffer's."""
    return _signalled_change_record(ChangeRecord.NODEOVERLAY, key=key, action=action, before=before, after=after,
                                    user=user, source=source)


def commitment_change_record(*, key: str, action: str, before: Mapping[str, Any] | None,
                             after: Mapping[str, Any] | None, user: Any, source: str, **_: Any) -> ChangeRecord | None:
    """A Commitment's change in the history (console.commitments.signals.commitment_changed), as a CapacityBuffer's."""
    return _signalled_change_record(ChangeRecord.COMMITMENT, key=key, action=action, before=before, after=after,
                                    user=user, source=source)


@transaction.atomic
def nodepool_create(*, values: Mapping[str, Any], user: Any, source: str = "form") -> NodePool:
    pool = _save(NodePool(), values=values, user=user, source=source)
    assert isinstance(pool, NodePool)
    return pool


@transaction.atomic
def nodepool_update(*, nodepool: NodePool, values: Mapping[str, Any], user: Any, source: str = "form",
                    expected_revision: int | None = None) -> NodePool:
    pool = _save(nodepool, values=values, user=user, source=source, expected_revision=expected_revision)
    assert isinstance(pool, NodePool)
    return pool


@transaction.atomic
def nodepool_scale(*, nodepool: NodePool, replicas: Any, user: Any, source: str = "form",
                   expected_revision: int | None = None) -> NodePool:
    """Set a static NodePool's spec.replicas (kubectl scale nodepool): the static-pool loop then launches or
    removes nodes to match. A dynamic pool is refused at the field, as Karpenter's CRD refuses adding replicas."""
    return nodepool_update(nodepool=nodepool, values={"replicas": replicas}, user=user, source=source,
                           expected_revision=expected_revision)


def nodeclaims_mark_for_deletion(*, claims: QuerySet[NodeClaim], reason: str, now: datetime | None = None) -> int:
    """Ask for these NodeClaims to be removed: the lifecycle loop's termination step cordons, drains
    (evictions, PodDisruptionBudgets respected) and terminates them. Claims already on their way out
    keep their first reason. Returns how many were marked."""
    now = now or timezone.now()
    marked = 0
    # One UPDATE per claim: each gets its NodePool's terminationGracePeriod deadline (read now, before a
    # deleted pool's row goes). Conditional, so a claim marked meanwhile keeps its first reason and deadline.
    for claim in claims.filter(terminated_at__isnull=True, deletion_requested_at__isnull=True).select_related("nodepool"):
        grace = claim.nodepool.termination_grace() if claim.nodepool else None
        marked += NodeClaim.objects.filter(pk=claim.pk, deletion_requested_at__isnull=True).update(
            deletion_requested_at=now, deletion_reason=reason[:255],
            termination_deadline=now + grace if grace is not None else None)
    return marked


@transaction.atomic
def nodepool_delete(*, nodepool: NodePool, user: Any, source: str = "form") -> int:
    """Delete the NodePool; as in Karpenter (NodeClaims are owned by their NodePool), its NodeClaims
    are then cordoned, drained and terminated by the lifecycle loop. They survive the pool's row
    (``nodepool`` becomes null, ``nodepool_name`` stays) until they are gone. Returns how many
    NodeClaims are to be removed."""
    before = _manifest(nodepool)
    _record(nodepool, action="deleted", before=before, user=user, source=source)
    now = timezone.now()
    impact = nodepool_deletion_impact(nodepool=nodepool)
    marked = nodeclaims_mark_for_deletion(claims=nodepool_live_claims(nodepool=nodepool),
                                          reason=f"nodepool {nodepool.name} deleted", now=now)
    if impact.nodes:
        who = getattr(user, "username", "") or "system"
        Decision.objects.create(
            at=now, kind=Decision.DISRUPTION, nodepool_name=nodepool.name, nodes=impact.names,
            cost_before=impact.cost_per_hour, cost_after=Decimal(0),
            why=f"nodepool {nodepool.name} deleted by {who} ({source}): its {impact.nodes} NodeClaim(s) "
                f"(${impact.cost_per_hour:.4f}/h{', some unpriced' if impact.unpriced else ''}) are cordoned, "
                "drained through evictions (PodDisruptionBudgets respected) and terminated",
            details={"nodepool_deleted": nodepool.name, "nodeclaims": impact.names})
    nodepool.delete()
    return marked


@transaction.atomic
def nodeclass_create(*, values: Mapping[str, Any], user: Any, source: str = "form") -> EC2NodeClass:
    nodeclass = _save(EC2NodeClass(), values=values, user=user, source=source)
    assert isinstance(nodeclass, EC2NodeClass)
    return nodeclass


@transaction.atomic
def nodeclass_update(*, nodeclass: EC2NodeClass, values: Mapping[str, Any], user: Any, source: str = "form",
                     expected_revision: int | None = None) -> EC2NodeClass:
    updated = _save(nodeclass, values=values, user=user, source=source, expected_revision=expected_revision)
    assert isinstance(updated, EC2NodeClass)
    return updated


class NodeClassInUse(ValidationError):
    pass


@transaction.atomic
def nodeclass_delete(*, nodeclass: EC2NodeClass, user: Any, source: str = "form") -> None:
    users = list(NodePool.objects.filter(node_class_name=nodeclass.name).values_list("name", flat=True))
    if users:
        # Karpenter keeps a NodeClass while NodePools reference it (finalizer); so do we.
        raise NodeClassInUse(f"EC2NodeClass {nodeclass.name} is referenced by NodePool(s) {', '.join(users)}")
    _record(nodeclass, action="deleted", before=_manifest(nodeclass), user=user, source=source)
    nodeclass.delete()


# --- Karpenter YAML import ------------------------------------------------------------------------

@dataclass(frozen=True)
class OtherKind:
    """A kind another app keeps, imported and exported with the NodePools: how to read, check, write and export
    it. The apps that keep one (console/overlays, console/commitments) register it from their AppConfig.ready, so
    the fleet imports none of them (they build on the fleet)."""

    api_version: str
    read: Any  # (document) -> (values, [(path, message)])
    check: Any  # (*, values) -> (action, [(path, message)])
    apply: Any  # (*, values, user) -> None
    export: Any  # (rows) -> [manifest]
    rows: Any  # () -> every stored row, for the export of everything


# NodeOverlays and Commitments, by kind, in the order their apps register; CapacityBuffers come below
OTHER_KINDS: dict[str, OtherKind] = {}


def import_kind_register(*, kind: str, other: OtherKind) -> None:
    OTHER_KINDS[kind] = other

@dataclass(frozen=True)
class ImportProblem:
    document: int          # 1-based index of the YAML document in the upload
    path: str              # Karpenter YAML path, e.g. spec.template.spec.requirements[0].operator
    message: str
    source: str = ""       # file name, when known

    def __str__(self) -> str:
        where = f"{self.source}: " if self.source else ""
        field = f" {self.path}:" if self.path else ""
        return f"{where}document {self.document}:{field} {self.message}"


@dataclass
class ImportResult:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    problems: list[ImportProblem] = field(default_factory=list)
    # with convert: what the conversion of legacy objects moved, changed, defaulted or dropped (packing.legacy)
    conversion: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


class ImportFailed(Exception):
    def __init__(self, problems: Sequence[ImportProblem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = list(problems)


_DOC_SEPARATOR = re.compile(r"^---(\s|$)")


def _documents(text: str, source: str) -> list[tuple[int, str, Any]]:
    """(document number, path prefix, document) for every document; the items of a ``kind: List``
    keep their document's number and get the prefix ``items[i].`` so errors name the item."""
    try:
        raw = manifests.load_yaml_documents(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        # Count which document the error is in, so the message can name it like the others.
        lines = text.splitlines()[: mark.line if mark else 0]
        doc_index = 1 + sum(1 for ln in lines if _DOC_SEPARATOR.match(ln))
        first = next((ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")), "")
        if _DOC_SEPARATOR.match(first) and doc_index > 1:
            doc_index -= 1  # a leading '---' opens document 1, it does not end one
        problem = getattr(exc, "problem", None) or str(exc)
        raise ImportFailed([ImportProblem(doc_index, "", f"malformed YAML{where}: {problem}", source)]) from None
    docs: list[tuple[int, str, Any]] = []
    for index, doc in enumerate(raw, start=1):
        if doc is None:
            continue
        if isinstance(doc, Mapping) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            docs.extend((index, f"items[{i}].", item) for i, item in enumerate(doc["items"]))
        else:
            docs.append((index, "", doc))
    return docs


def _error_path(kind: str, field_name: str, located: str) -> tuple[str, str]:
    """Turn a model error ('[0].values: msg' on field requirements) into (yaml path, msg)."""
    base = manifests.field_path(kind, field_name) if field_name != "__all__" else ""
    sub, sep, message = located.partition(": ")
    if sep and (sub.startswith("[") or "." in sub or sub.replace("_", "").isalnum()) and " " not in sub:
        joiner = "" if sub.startswith("[") else "."
        return f"{base}{joiner}{sub}" if base else sub, message
    return base, located


def karpenter_import(*, texts: Sequence[tuple[str, str]], user: Any, dry_run: bool = False,
                     convert: bool = False) -> ImportResult:
    """Import NodePool, EC2NodeClass and CapacityBuffer documents from (source name, YAML text) pairs.

    With ``convert``, legacy Karpenter objects (v1alpha5 Provisioner, v1alpha1 AWSNodeTemplate, v1beta1
    NodePool and EC2NodeClass) are converted to v1 first (their report in ``conversion``); without it they are
    refused with a message pointing at the conversion.

    All or nothing: every document is checked first; if any has a problem nothing is written and
    every problem is reported. Existing objects with the same name are updated (like kubectl apply).
    A dry run checks everything and reports what would be created, updated or left unchanged.
    """
    result = ImportResult()
    parsed: list[tuple[str, int, str, str, dict[str, Any]]] = []
    seen: dict[tuple[str, str], str] = {}
    if not texts:
        result.problems.append(ImportProblem(1, "", "no YAML given: paste or upload NodePool / EC2NodeClass documents"))
    for source, text in texts:
        try:
            documents = _documents(text, source)
        except ImportFailed as failed:
            result.problems.extend(failed.problems)
            continue
        if not documents:
            result.problems.append(ImportProblem(1, "", "no documents found", source))
        if convert and any(manifests.is_legacy(doc) for _, _, doc in documents):
            tagged, report, failures = manifests.convert_documents(
                [((index, prefix, n), doc) for n, (index, prefix, doc) in enumerate(documents)])
            result.conversion.extend(report)
            for (index, prefix, _), path, message in failures:
                result.problems.append(ImportProblem(index, f"{prefix}{path}", message, source))
            documents = [(index, prefix, doc) for (index, prefix, _), doc in tagged]
        for index, prefix, doc in documents:
            def problem(path: str, message: str, index: int = index, source: str = source,
                        prefix: str = prefix) -> None:
                where = f"{prefix}{path}" if path else prefix.rstrip(".")
                result.problems.append(ImportProblem(index, where, message, source))
            if not isinstance(doc, Mapping):
                problem("", f"expected a mapping with apiVersion and kind, got {type(doc).__name__}")
                continue
            api_version, kind = doc.get("apiVersion"), doc.get("kind")
            if manifests.is_legacy(doc):
                problem("apiVersion", manifests.legacy_problem(doc))
                continue
            expected = {manifests.NODEPOOL_KIND: manifests.NODEPOOL_API_VERSION,
                        manifests.NODECLASS_KIND: manifests.NODECLASS_API_VERSION,
                        buffer_manifests.KIND: buffer_manifests.API_VERSION,
                        **{k: other.api_version for k, other in OTHER_KINDS.items()}}
            if kind not in expected:
                what = "kind is missing" if kind in (None, "") else f"unsupported kind {kind!r}"
                kinds = [f"CapacityBuffer ({buffer_manifests.API_VERSION})",
                         *(f"{k} ({o.api_version})" for k, o in OTHER_KINDS.items())]
                problem("kind", f"{what}; expected NodePool (karpenter.sh/v1), EC2NodeClass (karpenter.k8s.aws/v1), "
                                f"{', '.join(kinds[:-1])} or {kinds[-1]}")
                continue
            if api_version != expected[kind]:
                what = "apiVersion is missing" if api_version in (None, "") else f"unsupported apiVersion {api_version!r}"
                problem("apiVersion", f"{what} for {kind}; expected {expected[kind]}"
                        + (" (v1beta1 objects must be migrated to v1 first)" if "v1beta1" in str(api_version) else ""))
                continue
            if kind == buffer_manifests.KIND:  # console/buffers reads it; its name is namespaced
                values, structural = buffer_manifests.fields_from_manifest(doc)
            elif kind in OTHER_KINDS:
                values, structural = OTHER_KINDS[str(kind)].read(doc)
            else:
                values, structural = manifests.fields_from_manifest(doc)
            for path, message in structural:
                problem(path, message)
            if structural:
                continue
            name = values.get("name")
            if kind == buffer_manifests.KIND:
                name = f"{values.get('namespace')}/{name}"
            where = f"{source} document {index}" if source else f"document {index}"
            if prefix:
                where += f" {prefix.rstrip('.')}"
            if (kind, str(name)) in seen:
                problem("metadata.name", f"{kind} {name!r} appears twice in this import (also in {seen[(kind, str(name))]})")
                continue
            seen[(kind, str(name))] = where
            parsed.append((source, index, prefix, kind, values))

    # Validate every document against the model before writing anything.
    plan: list[tuple[str, str, dict[str, Any]]] = []  # (action, kind, values)
    for source, index, prefix, kind, values in parsed:
        if kind == buffer_manifests.KIND or kind in OTHER_KINDS:
            check = OTHER_KINDS[kind].check if kind in OTHER_KINDS else buffer_services.buffer_import_check
            action, problems = check(values=values)
            for path, text in problems:
                result.problems.append(ImportProblem(index, f"{prefix}{path}", text, source))
            if not problems:
                plan.append((action, kind, values))
            continue
        model, _ = _KINDS[kind]
        existing = model.objects.filter(name=values.get("name")).first()
        unchanged = existing is not None and all(getattr(existing, k) == v for k, v in values.items())
        candidate = existing or model()
        for name, value in values.items():
            setattr(candidate, name, value)
        try:
            candidate.full_clean(validate_unique=existing is None)
        except ValidationError as exc:
            for field_name, messages in exc.message_dict.items():
                for message in messages:
                    path, text = _error_path(kind, field_name, message)
                    result.problems.append(ImportProblem(index, f"{prefix}{path}" if path else prefix.rstrip("."),
                                                         text, source))
            continue
        plan.append(("created" if existing is None else "unchanged" if unchanged else "updated", kind, values))
    if result.problems:
        return result
    for action, kind, values in plan:
        named = f"{values['namespace']}/{values['name']}" if kind == buffer_manifests.KIND else values["name"]
        getattr(result, action).append(f"{kind}/{named}")
    if dry_run:
        return result

    with transaction.atomic():
        for action, kind, values in plan:
            if kind == buffer_manifests.KIND or kind in OTHER_KINDS:
                if action != "unchanged":
                    write = OTHER_KINDS[kind].apply if kind in OTHER_KINDS else buffer_services.buffer_import_apply
                    write(values=values, user=user)
                continue
            model, _ = _KINDS[kind]
            if action == "created" and kind == manifests.NODEPOOL_KIND:
                nodepool_create(values=values, user=user, source="import")
            elif action == "created":
                nodeclass_create(values=values, user=user, source="import")
            elif action == "updated":
                existing = model.objects.select_for_update().get(name=values["name"])
                if isinstance(existing, NodePool):
                    nodepool_update(nodepool=existing, values=values, user=user, source="import")
                else:
                    nodeclass_update(nodeclass=existing, values=values, user=user, source="import")
    return result


def karpenter_export(objects: Sequence[NodePool | EC2NodeClass], *, buffers: Sequence[Any] = (),
                     others: Mapping[str, Sequence[Any]] | None = None) -> str:
    """Multi-document YAML that Karpenter accepts and that imports back to the same objects (`buffers`:
    CapacityBuffer rows, after them; `others`: rows of the registered kinds, by kind — NodeOverlays, Commitments —
    in their registration order)."""
    docs = [doc for doc in (_manifest(obj) for obj in objects) if doc is not None]
    docs += buffer_services.buffers_export(list(buffers))
    for kind, other in OTHER_KINDS.items():
        rows = (others or {}).get(kind)
        if rows:
            docs += other.export(list(rows))
    return manifests.dump_yaml(docs)


def everything_export() -> str:
    """The whole fleet as one file: EC2NodeClasses, NodePools, CapacityBuffers and every registered kind."""
    from console.buffers.selectors import buffer_list

    objects: list[Any] = [*EC2NodeClass.objects.all(), *NodePool.objects.order_by("name")]
    return karpenter_export(objects, buffers=list(buffer_list()),
                            others={kind: list(other.rows()) for kind, other in OTHER_KINDS.items()})
