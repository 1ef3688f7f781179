"""The advisor's inputs: what `plan` reads (packing.kubeobjects), what `consolidate` reads besides
(packing.disruption.inputs) and each object's manifest as written, in one pass over the files."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from packing.advisor.context import DO_NOT_DISRUPT_SHARE, Context, Manifests, manifest_key
from packing.disruption.inputs import Extras, read_extras
from packing.documents import ByteBudget
from packing.instancetype import InstanceType
from packing.kubeobjects import Inputs, load_files

__all__ = ["context_from_objects", "manifests_of", "read_advisor_files"]

# the kinds a fix may patch: the others' manifests are not kept (a dump holds thousands of pods)
PATCHED_KINDS = frozenset({"NodePool", "EC2NodeClass", "PodDisruptionBudget"})


def manifests_of(objects: Iterable[Mapping[str, Any]]) -> Manifests:
    out: Manifests = {}
    for doc in objects:
        if doc.get("kind") in PATCHED_KINDS:
            key = manifest_key(doc)
            if key is not None:
                out.setdefault(key, doc)
    return out


def read_advisor_files(
    paths: Sequence[str], budget: ByteBudget | None = None
) -> tuple[Inputs, Extras, Manifests]:
    """The files' objects; InputError naming file, document and field at the first bad one."""
    inp, extras, kept = Inputs(), Extras(), []

    def also(item: Mapping[str, Any], prefix: str) -> None:
        read_extras(item, extras, prefix)
        if item.get("kind") in PATCHED_KINDS:
            kept.append(item)

    load_files(paths, inp, budget, also=also)
    return inp, extras, manifests_of(kept)


def context_from_objects(
    objects: Sequence[Mapping[str, Any]],
    inputs: Inputs,
    extras: Extras,
    catalog: Sequence[InstanceType],
    *,
    do_not_disrupt_share: float = DO_NOT_DISRUPT_SHARE,
) -> Context:
    """A Context over objects already read into `inputs` and `extras` (a live cluster, the console's rows)."""
    return Context(inputs, extras, catalog, manifests_of(objects), do_not_disrupt_share=do_not_disrupt_share)
