"""Resource vectors (cpu, memory, pods, ephemeral-storage and any extended resource) in milli-units."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from packing.quantity import QuantityError, format_quantity, parse_quantity

__all__ = ["CPU", "EPHEMERAL_STORAGE", "MEMORY", "PODS", "Resources"]

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"


class Resources(Mapping[str, int]):
    """Immutable mapping resource name -> milli-units; zero entries are dropped so equality is structural."""

    __slots__ = ("_d", "_hash")

    def __init__(self, values: Mapping[str, int] | None = None) -> None:
        self._d: dict[str, int] = {k: v for k, v in (values or {}).items() if v}
        self._hash: int | None = None

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

    def as_dict(self) -> dict[str, int]:
        return dict(self._d)

    def vector(self, keys: Sequence[str]) -> tuple[int, ...]:
        """The amounts of `keys`, in that order (zero where absent)."""
        d = self._d
        return tuple([d.get(k, 0) for k in keys])
