"""Why a method passed a node over: a Refusal (the words, and the closed category behind them), and the log of them.

A Refusal becomes the node's NotDisrupted when no later action takes the node. Texts several places give are built
here, once; the others are written where the engine decides them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from packing.disruption.formatting import money
from packing.disruption.model import BlockedBy, CheapestOption, MinSavings, NotDisruptedCategory

__all__ = [
    "Refusal",
    "SpareLog",
    "below_min_savings",
    "budget_refusal",
    "needs_several_nodes",
    "no_cheaper_replacement",
    "no_launchable_type",
    "no_room",
]

Category = NotDisruptedCategory


@dataclass(frozen=True, slots=True)
class Refusal:
    text: str
    category: NotDisruptedCategory
    cheapest: CheapestOption | None = None  # with NO_CHEAPER_REPLACEMENT
    score: float | None = None  # with BELOW_SCORE_THRESHOLD: the Balanced score that failed

    @property
    def blocked_by(self) -> BlockedBy | None:
        return self.category.blocked_by

    def after(self, what: str) -> Refusal:
        """"<what>, but <this refusal>": a method found the node (drifted, expired) and could not act on it."""
        return Refusal(f"{what}, but {self.text}", self.category, self.cheapest, self.score)


def no_launchable_type() -> Refusal:
    """What a move that needs a new node is told when no nodepool can launch any instance type."""
    return Refusal(
        "no nodepool can launch a replacement (no instance type of the catalog satisfies any nodepool)",
        Category.NO_LAUNCHABLE_TYPE,
    )


def needs_several_nodes(count: int | None = None) -> Refusal:
    """count: how many new nodes the simulation planned (None: more than one, found without simulating)."""
    many = "more than one new node" if count is None else f"{count} new nodes"
    return Refusal(f"its pods would need {many} (consolidation launches at most one)", Category.NEEDS_SEVERAL_NODES)


def no_cheaper_replacement(cheapest: CheapestOption, cost: float) -> Refusal:
    return Refusal(
        f"no cheaper replacement: cheapest fitting option {cheapest.instance_type} {cheapest.capacity_type} at "
        f"{money(cheapest.price_per_hour)} ≥ current {money(cost)}",
        Category.NO_CHEAPER_REPLACEMENT,
        cheapest,
    )


def no_room() -> Refusal:
    return Refusal(
        "its pods do not fit in the free room of the other nodes plus one cheaper node", Category.PODS_DO_NOT_FIT
    )


def budget_refusal(text: str) -> Refusal:
    """A node its pool's budget spares: `text` is the binding budget's (RunState.budget_room)."""
    return Refusal(text, Category.BUDGET)


def below_min_savings(savings: float, min_savings: MinSavings) -> Refusal:
    return Refusal(f"saving {money(savings)} is below --min-savings {min_savings}", Category.BELOW_MIN_SAVINGS)


class SpareLog:
    """The latest refusal per node, of the consolidation methods and (said first) of drift and expiration, which
    found the node but could not act on it. An action forgets its nodes' refusals."""

    __slots__ = ("found", "passed")

    def __init__(self) -> None:
        self.passed: dict[str, Refusal] = {}
        self.found: dict[str, Refusal] = {}

    def pass_over(self, node: str, why: Refusal) -> None:
        self.passed[node] = why

    def found_but(self, node: str, why: Refusal) -> None:
        self.found[node] = why

    def forget(self, nodes: Iterable[str]) -> None:
        for n in nodes:
            self.passed.pop(n, None)
            self.found.pop(n, None)
