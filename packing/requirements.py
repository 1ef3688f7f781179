"""Label requirements as sets of allowed values, modelled on Karpenter's pkg/scheduling Requirements.

A Requirement is the set of label values a key may take, plus whether the label may be absent.
Intersection narrows a set; an empty intersection means two parties can never agree on a node.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["OPERATORS", "MinValuesPolicy", "Requirement", "RequirementError", "Requirements"]

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")


class RequirementError(ValueError):
    pass


class MinValuesPolicy(StrEnum):
    """What a solve does when a NodeClaim cannot keep a requirement's minValues (Karpenter's MinValuesPolicy)."""

    STRICT = "Strict"  # the pods it would hold are unschedulable on that pool
    BEST_EFFORT = "BestEffort"  # relax the minimum as far as needed, and say so on the NodeClaim


def _as_int(value: str) -> int | None:
    """Go's strconv.Atoi: ASCII digits with an optional sign, no spaces or underscores (int() takes both,
    and other scripts' digits); None otherwise."""
    if len(value) > 19 or not value.isascii() or "_" in value or value != value.strip():
        return None
    try:
        return int(value)
    except ValueError:
        return None


def _k(key: str) -> str:
    return key if len(key) <= 60 else key[:59] + "…"


@dataclass(frozen=True, slots=True)
class Requirement:
    """complement=False: value must be in `values`; complement=True: value must not be in `values`.

    Bounds (gt < value < lt, integers) apply to present values only. `allow_absent` says whether a node
    that lacks the label satisfies it (NotIn and DoesNotExist do, as in Kubernetes).
    """

    key: str
    complement: bool
    values: frozenset[str]
    allow_absent: bool
    gt: int | None = None
    lt: int | None = None
    operator: str = ""  # the operator it was written with, for messages only
    # a NodePool requirement's minValues: a NodeClaim must keep at least this many distinct values of the key
    # among its instance type options (None: no minimum). Intersection keeps the larger minimum.
    min_values: int | None = None

    @classmethod
    def new(cls, key: str, operator: str, values: Iterable[str] = ()) -> Requirement:
        vals = [str(v) for v in values]
        if operator == "In":
            if not vals:
                raise RequirementError(f"operator In on {_k(key)} needs at least one value")
            return cls(key, False, frozenset(vals), False, operator=operator)
        if operator == "NotIn":
            return cls(key, True, frozenset(vals), True, operator=operator)
        if operator == "Exists":
            return cls(key, True, frozenset(), False, operator=operator)
        if operator == "DoesNotExist":
            return cls(key, False, frozenset(), True, operator=operator)
        if operator in ("Gt", "Lt", "Gte", "Lte"):
            if len(vals) != 1 or _as_int(vals[0]) is None:
                raise RequirementError(f"operator {operator} on {_k(key)} needs exactly one integer value")
            n = int(vals[0])
            # Gte/Lte become open bounds so that all four share one representation
            if operator == "Gt":
                return cls(key, True, frozenset(), False, gt=n, operator=operator)
            if operator == "Gte":
                return cls(key, True, frozenset(), False, gt=n - 1, operator=operator)
            if operator == "Lt":
                return cls(key, True, frozenset(), False, lt=n, operator=operator)
            return cls(key, True, frozenset(), False, lt=n + 1, operator=operator)
        raise RequirementError(f"unknown operator {_k(repr(operator))} on {_k(key)}")

    def _in_bounds(self, value: str) -> bool:
        if self.gt is None and self.lt is None:
            return True
        n = _as_int(value)
        if n is None:
            return False
        return (self.gt is None or n > self.gt) and (self.lt is None or n < self.lt)

    def has(self, value: str | None) -> bool:
        """Does a node whose label is `value` (None = label absent) satisfy this requirement?"""
        if value is None:
            return self.allow_absent
        if self.complement:
            if value in self.values:
                return False
        elif value not in self.values:
            return False
        return self._in_bounds(value)

    def intersect(self, other: Requirement) -> Requirement:
        gt = self.gt if other.gt is None else other.gt if self.gt is None else max(self.gt, other.gt)
        lt = self.lt if other.lt is None else other.lt if self.lt is None else min(self.lt, other.lt)
        if self.complement and other.complement:
            complement, values = True, self.values | other.values
        elif self.complement:
            complement, values = False, other.values - self.values
        elif other.complement:
            complement, values = False, self.values - other.values
        else:
            complement, values = False, self.values & other.values
        mv = self.min_values if other.min_values is None else other.min_values if self.min_values is None else max(
            self.min_values, other.min_values
        )
        r = Requirement(self.key, complement, values, self.allow_absent and other.allow_absent, gt, lt, "", mv)
        if not complement and (gt is not None or lt is not None):
            r = Requirement(
                self.key, False, frozenset(v for v in values if r._in_bounds(v)), r.allow_absent, gt, lt, "", mv
            )
        return r

    def is_empty(self) -> bool:
        """True when no node at all (labelled or not) can satisfy it."""
        if self.allow_absent:
            return False
        if not self.complement:
            return not self.values
        if self.gt is not None and self.lt is not None and self.lt - self.gt <= 1:
            return True
        return False

    def single_value(self) -> str | None:
        if not self.complement and len(self.values) == 1 and not self.allow_absent:
            return next(iter(self.values))
        return None

    def __str__(self) -> str:
        if self.operator in ("In", "NotIn"):
            return f"{self.key} {self.operator} [{', '.join(sorted(self.values))}]"
        if self.operator in ("Exists", "DoesNotExist"):
            return f"{self.key} {self.operator}"
        if self.operator == "Gt":
            return f"{self.key} Gt {self.gt}"
        if self.operator == "Gte":
            return f"{self.key} Gte {(self.gt or 0) + 1}"
        if self.operator == "Lt":
            return f"{self.key} Lt {self.lt}"
        if self.operator == "Lte":
            return f"{self.key} Lte {(self.lt or 0) - 1}"
        # a derived (intersected) requirement: describe it by its set
        parts: list[str] = []
        if not self.complement:
            parts.append(f"In [{', '.join(sorted(self.values))}]" if self.values else "DoesNotExist")
        elif self.values:
            parts.append(f"NotIn [{', '.join(sorted(self.values))}]")
        elif not self.allow_absent and self.gt is None and self.lt is None:
            parts.append("Exists")
        if self.gt is not None:
            parts.append(f"Gt {self.gt}")
        if self.lt is not None:
            parts.append(f"Lt {self.lt}")
        return f"{self.key} {' '.join(parts) or 'Exists'}"


class Requirements(Mapping[str, Requirement]):
    """An immutable conjunction of requirements, at most one per key (repeated keys are intersected)."""

    __slots__ = ("_d", "_hash")

    def __init__(self, reqs: Iterable[Requirement] = ()) -> None:
        d: dict[str, Requirement] = {}
        for r in reqs:
            prev = d.get(r.key)
            d[r.key] = r if prev is None else prev.intersect(r)
        self._d = d
        self._hash: int | None = None

    @classmethod
    def from_labels(cls, labels: Mapping[str, str]) -> Requirements:
        return cls(Requirement.new(k, "In", [v]) for k, v in labels.items())

    def __getitem__(self, key: str) -> Requirement:
        return self._d[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._d.values()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Requirements) and self._d == other._d

    def __repr__(self) -> str:
        return f"Requirements({'; '.join(str(r) for r in self._d.values())})"

    def intersect(self, other: Requirements) -> Requirements:
        if not other._d:
            return self
        if not self._d:
            return other
        return Requirements([*self._d.values(), *other._d.values()])

    def conflict(self, other: Requirements) -> tuple[Requirement, Requirement] | None:
        """The first pair of requirements (self's, other's) on the same key that no node can satisfy both of."""
        small, big = (self._d, other._d) if len(self._d) <= len(other._d) else (other._d, self._d)
        for key in sorted(small):
            b = big.get(key)
            if b is not None and small[key].intersect(b).is_empty():
                return (self._d[key], other._d[key])
        return None

    def compatible(self, other: Requirements) -> bool:
        return self.conflict(other) is None

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Does a node with exactly these labels satisfy every requirement?"""
        for key, r in self._d.items():
            if not r.has(labels.get(key)):
                return False
        return True

    def first_unmatched(self, labels: Mapping[str, str]) -> Requirement | None:
        for key in sorted(self._d):
            if not self._d[key].has(labels.get(key)):
                return self._d[key]
        return None

    def pinned_labels(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, r in self._d.items():
            v = r.single_value()
            if v is not None:
                out[key] = v
        return out

    def without(self, keys: Iterable[str]) -> Requirements:
        drop = set(keys)
        return Requirements(r for k, r in self._d.items() if k not in drop)

    def min_values(self) -> dict[str, int]:
        """Per key with a minValues: the minimum number of distinct values its NodeClaim's types must keep."""
        return {k: r.min_values for k, r in self._d.items() if r.min_values is not None}

    def restricted(self, keys: Iterable[str]) -> Requirements:
        keep = set(keys)
        return Requirements(r for k, r in self._d.items() if k in keep)
