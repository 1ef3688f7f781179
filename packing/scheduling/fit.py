"""The answer of an existing node or a NodeClaim asked to take a pod: it fits, or it refuses with a Reason.

Karpenter's ExistingNode.Add and NodeClaim.Add answer with an error; here both can_add methods answer with
Fit or Refusal, so callers test one type whichever kind of node they asked.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from packing.requirements import Requirements
from packing.scheduling.reasons import Reason

__all__ = ["FITS", "Admission", "Fit", "Refusal"]


@dataclass(frozen=True, slots=True, eq=False)
class Fit:
    """The pod fits. A NodeClaim also says what taking it narrows the claim to: its requirements and the
    indices (into its pool's options) of the types that still hold everything; None for an existing node."""

    reqs: Requirements | None = None
    types: npt.NDArray[np.int64] | None = None


@dataclass(frozen=True, slots=True)
class Refusal:
    reason: Reason


Admission = Fit | Refusal

FITS = Fit()  # an existing node's yes: nothing to narrow
