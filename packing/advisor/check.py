"""The one interface every family of findings implements, and the helpers their fixes share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from packing.advisor.context import Context
from packing.advisor.finding import Finding

__all__ = ["Check", "pool_object", "requirement_patch", "template_spec"]


class Check(Protocol):
    """A family of findings (limits, diversity, PDBs, ...): the codes it may report and how it finds them."""

    @property
    def family(self) -> str: ...

    @property
    def codes(self) -> Sequence[str]: ...

    def findings(self, ctx: Context) -> list[Finding]: ...


def pool_object(name: str) -> str:
    return f"nodepool/{name}"


def template_spec(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = manifest.get("spec")
    tmpl = spec.get("template") if isinstance(spec, Mapping) else None
    tspec = tmpl.get("spec") if isinstance(tmpl, Mapping) else None
    return tspec if isinstance(tspec, Mapping) else {}


def requirement_patch(
    manifest: Mapping[str, Any], keys: Sequence[str], new: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """A merge patch of the pool's spec.template.spec.requirements (a list: RFC 7386 replaces it whole): the
    requirements on `keys` taken out, `new` put in at the place of the first one taken out (else at the end)."""
    raw = template_spec(manifest).get("requirements")
    current = [r for r in raw if isinstance(r, Mapping)] if isinstance(raw, list) else []
    out: list[Mapping[str, Any]] = []
    placed = False
    for r in current:
        if r.get("key") in keys:
            if not placed:
                out.extend(new)
                placed = True
            continue
        out.append(r)
    if not placed:
        out.extend(new)
    return {"spec": {"template": {"spec": {"requirements": [dict(r) for r in out]}}}}
