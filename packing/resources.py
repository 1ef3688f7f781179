"""Resource vectors (cpu, memory, pods, ephemeral-storage and any extended resource) in milli-units."""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, Mapping, Sequence, ValuesView

from packing.quantity import QuantityError, format_quantity, parse_quantity

__all__ = ["CPU", "EPHEMERAL_STORAGE", "MAX_AMOUNT", "MEMORY", "PODS", "Resources"]

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"

# The largest amount, in milli-units, the scheduling and disruption engines work with: 2**60 (about 1.15e15
# cpus, or 1 PiB of memory; the largest EC2 type has 32 TiB). The engines hold amounts in int64 arrays, and
# a few amounts this large still add up without overflowing them. Beyond it the engines do not compute:
# a NodePool limit above it is unbounded in practice (exact: it is compared as if it were 2**63 - 1), an
# instance type with a larger capacity or overhead is left out of the catalog, a node's allocatable and the
# requests of pods already running are clamped to it, and a pending pod that requests more than it is
# unschedulable with a reason saying so.
MAX_AMOUNT = 2**60


class Resources(Mapping[str, int]):
    """Immutable mapping resource name -> milli-units; zero entries are dropped so equality is structural."""

    __slots__ = ("_d", "_hash", "_in_range", "_vec")

    def __init__(self, values: Mapping[str, int] | None = None) -> None:
        self._d: dict[str, int] = {k: v for k, v in (values or {}).items() if v}
        self._hash: int | None = None
        self._in_range: bool | None = None
        # the last vector() asked for, with its keys: pods of one template share their requests object, and the
        # engines ask for the same keys again and again
        self._vec: tuple[tuple[str, ...], tuple[int, ...]] | None = None

    @classmethod
    def parse(cls, d: Mapping[str, str | int | float]) -> Resources:
        out: dict[str, int] = {}
        for key, raw in d.items():
            try:
                out[str(key)] = parse_quantity(raw)
            except QuantityError as e:
                raise QuantityError(f"{key}: {e}") from None
        return cls(out)

    def __getitem__(self, key: str) -> int:
        return self._d[key]

    def get(self, key: str, default: int = 0) -> int:  # type: ignore[override]
        return self._d.get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __contains__(self, key: object) -> bool:
        return key in self._d

    # the dict's own views: Mapping's generic ones look every key up again, and the engines walk requests
    # millions of times a replay (the dict is never changed after construction, so its views cannot be either)
    def items(self) -> ItemsView[str, int]:
        return self._d.items()

    def keys(self) -> KeysView[str]:
        return self._d.keys()

    def values(self) -> ValuesView[int]:
        return self._d.values()

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._d.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Resources):
            return self._d == other._d
        if isinstance(other, Mapping):
            return self._d == {k: v for k, v in other.items() if v}
        return NotImplemented

    def __repr__(self) -> str:
        return f"Resources({self.to_strings()!r})"

    def __add__(self, other: Mapping[str, int]) -> Resources:
        out = dict(self._d)
        for k, v in other.items():
            out[k] = out.get(k, 0) + v
        return Resources(out)

    def __sub__(self, other: Mapping[str, int]) -> Resources:
        out = dict(self._d)
        for k, v in other.items():
            out[k] = out.get(k, 0) - v
        return Resources(out)

    def scale(self, n: int) -> Resources:
        return Resources({k: v * n for k, v in self._d.items()})

    def fits(self, other: Mapping[str, int]) -> bool:
        """True when every entry of self is <= the same entry of other (missing counts as zero)."""
        get = other.get
        for k, v in self._d.items():
            if v > get(k, 0):
                return False
        return True

    def exceeded(self, other: Mapping[str, int]) -> list[str]:
        """Names of the resources where self is larger than other, sorted."""
        return sorted(k for k, v in self._d.items() if v > other.get(k, 0))

    def clamp_nonnegative(self) -> Resources:
        return Resources({k: v for k, v in self._d.items() if v > 0})

    def to_strings(self) -> dict[str, str]:
        return {k: format_quantity(v, k) for k, v in sorted(self._d.items())}

    def in_range(self) -> bool:
        """Whether every amount is within [-MAX_AMOUNT, MAX_AMOUNT] (computed once per object)."""
        hit = self._in_range
        if hit is None:
            vals = self._d.values()
            hit = self._in_range = not vals or (max(vals) <= MAX_AMOUNT and min(vals) >= -MAX_AMOUNT)
        return hit

    def clamped(self) -> Resources:
        """The same amounts, each clamped to [-MAX_AMOUNT, MAX_AMOUNT] (self when none needs it)."""
        if self.in_range():
            return self
        return Resources({k: max(-MAX_AMOUNT, min(MAX_AMOUNT, v)) for k, v in self._d.items()})

    def as_dict(self) -> dict[str, int]:
        return dict(self._d)

    def vector(self, keys: Sequence[str]) -> tuple[int, ...]:
        """The amounts of `keys`, in that order (zero where absent)."""
        hit = self._vec
        if hit is not None and (hit[0] is keys or hit[0] == keys):
            return hit[1]
        d = self._d
        vec = tuple([d.get(k, 0) for k in keys])
        if isinstance(keys, tuple):
            self._vec = (keys, vec)
        return vec
