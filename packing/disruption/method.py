"""The one interface every disruption method implements (Karpenter's disruption.Method), and how the loop runs them.

The loop (engine.py) tries the methods in the order given as data, a tuple of Method objects: each round takes the
first method that acts, and the round starts again; when none acts, the list is complete. A method acts by
committing one or more actions to the run's state (RunState.commit), which moves the simulated cluster forward as
if they had succeeded.

Methods that chain (repack) find actions that open room for more of their own: while they act round after
round, the methods that wait for a chain (the moves that only delete nodes) are skipped; the round after a chaining
method finds nothing starts again with them.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Method"]


class Method(Protocol):
    name: str  # Action.method of the actions it finds
    chains: bool
    waits_for_chain: bool

    def act(self) -> bool:
        """Commit the actions found now; False when there are none."""
        ...
