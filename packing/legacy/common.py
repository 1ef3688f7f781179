"""What the converters of each legacy kind share: the result of converting one object, the v1 object's metadata,
durations from the seconds the v1alpha5 API counted in, and the annotations v1 renamed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from packing.fields import FieldError, as_int, as_object, as_str, string_values
from packing.legacy.report import Action, Change

__all__ = [
    "DO_NOT_DISRUPT",
    "NODECLASS_GROUP",
    "NODECLASS_KIND",
    "Converted",
    "KubeletMove",
    "ObjectName",
    "duration_of_seconds",
    "metadata",
    "rename_annotations",
]

NODECLASS_GROUP = "karpenter.k8s.aws"
NODECLASS_KIND = "EC2NodeClass"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
# annotations v1beta1 folded into karpenter.sh/do-not-disrupt (pods: do-not-evict; nodes: do-not-consolidate)
RENAMED_ANNOTATIONS = ("karpenter.sh/do-not-evict", "karpenter.sh/do-not-consolidate")


@dataclass(frozen=True)
class ObjectName:
    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind}/{self.name}"


@dataclass(frozen=True)
class KubeletMove:
    """A NodePool's kubelet settings, which v1 keeps in the EC2NodeClass its nodeClassRef names."""

    pool: str  # the v1 NodePool's name
    nodeclass: str  # the EC2NodeClass it references
    kubelet: Mapping[str, Any]
    source: ObjectName  # the legacy object
    field: str  # the legacy path (spec.kubeletConfiguration, spec.template.spec.kubelet)


@dataclass
class Converted:
    """The v1 objects one legacy object became, what the report says about it, and its kubelet to place."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    kubelet: KubeletMove | None = None


def duration_of_seconds(seconds: int) -> str:
    """A Go duration as Karpenter's CRDs accept it (h, m and s only): 30 -> 30s, 2592000 -> 720h, 90 -> 1m30s."""
    if seconds == 0:
        return "0s"
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return "".join(f"{n}{unit}" for n, unit in ((h, "h"), (m, "m"), (s, "s")) if n)


def seconds_field(spec: Mapping[str, Any], key: str, path: str) -> int | None:
    """A v1alpha5 ttlSeconds… field: a non-negative integer, or None when absent."""
    if spec.get(key) is None:
        return None
    return as_int(spec.get(key), path, 0, lo=0, hi=2562047 * 3600)


def rename_annotations(
    annotations: Mapping[str, str], source: ObjectName, path: str, changes: list[Change], to_path: str = ""
) -> dict[str, str]:
    """Annotations with karpenter.sh/do-not-evict and do-not-consolidate renamed karpenter.sh/do-not-disrupt."""
    out: dict[str, str] = {}
    for k, v in annotations.items():
        if k in RENAMED_ANNOTATIONS:
            changes.append(Change(str(source), f"{path}.{k}", Action.CHANGED, v, f"{to_path or path}.{DO_NOT_DISRUPT}",
                                  "v1 has one annotation that blocks every kind of disruption"))
            out.setdefault(DO_NOT_DISRUPT, v)
        else:
            out[k] = v
    return out


def metadata(doc: Mapping[str, Any], source_kind: str, changes: list[Change]) -> tuple[ObjectName, dict[str, Any]]:
    """The legacy object's name and the v1 object's metadata: name, labels and annotations (the server-set rest of
    it, like status, is not carried over)."""
    meta = as_object(doc.get("metadata"), "metadata")
    name = as_str(meta.get("name"), "metadata.name", required=True)
    if not name:
        raise FieldError("metadata.name", "is required")
    source = ObjectName(source_kind, name)
    out: dict[str, Any] = {"name": name}
    labels = string_values(meta.get("labels"), "metadata.labels")
    if labels:
        out["labels"] = labels
    annotations = {k: v for k, v in string_values(meta.get("annotations"), "metadata.annotations").items()
                   if k != "kubectl.kubernetes.io/last-applied-configuration"}
    if annotations:
        out["annotations"] = rename_annotations(annotations, source, "metadata.annotations", changes)
    return source, out


def unknown_fields(
    spec: Mapping[str, Any], known: frozenset[str], source: ObjectName, path: str, changes: list[Change]
) -> None:
    """Fields the legacy schema does not have: reported as dropped (the legacy API server would have pruned them)."""
    for key in sorted(set(map(str, spec)) - known):
        changes.append(Change(str(source), f"{path}.{key}", Action.DROPPED, spec.get(key), None,
                              "not a field of this API version"))
