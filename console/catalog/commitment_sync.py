"""The pricing refresh's commitments from AWS: read the account's Reserved Instances and Savings Plans
(console.backends.aws_commitments) and hand them to the commitment store.

`sync_commitments` is the one place that stores them; `commitments_refresh` takes any sink, so its tests (and a
caller with another store) pass their own."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from packing.api import Commitment, InstanceType

log = logging.getLogger(__name__)

Sink = Callable[[list[Commitment]], None]


class CommitmentReader(Protocol):
    def read(self, on_demand: Mapping[str, float]) -> list[Commitment]: ...


def sync_commitments(commitments: list[Commitment]) -> None:
    """Store what AWS returned, one commitment_upsert per commitment (the console's commitment service, keyed by
    name and source, so a refresh updates the rows it wrote before and leaves the operator's own alone)."""
    try:
        from console.commitments.services import commitment_upsert  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        log.warning("commitments from AWS: %d read, not stored (no console.commitments app)", len(commitments))
        return
    for commitment in commitments:
        commitment_upsert(commitment=commitment)


def on_demand_prices(types: Sequence[InstanceType]) -> dict[str, float]:
    """instance type → its on-demand $/h in the catalog (the lowest over the zones: AWS prices a region's zones
    alike), what a Savings Plan's rate is a discount off."""
    out: dict[str, float] = {}
    for itype in types:
        prices = [o.price for o in itype.offerings if o.capacity_type == "on-demand" and o.price]
        if prices:
            out[itype.name] = min(prices)
    return out


def commitments_refresh(*, reader: CommitmentReader, types: Sequence[InstanceType], sink: Sink = sync_commitments) -> str:
    """Read the commitments and hand them to `sink`. Returns one summary line for the refresh's record; a failure
    (missing permission, AWS unreachable) is that line, never the refresh's failure: the stored commitments stay."""
    try:
        commitments = reader.read(on_demand_prices(types))
    except Exception as exc:  # botocore raises several unrelated classes; each only means "not this time"
        log.warning("commitments from AWS not read: %s: %s", type(exc).__name__, exc)
        return f"commitments: not read ({type(exc).__name__}: {exc})"[:500]
    sink(commitments)
    ris = sum(1 for c in commitments if c.kind == "ReservedInstances")
    return f"commitments: {ris} Reserved Instances, {len(commitments) - ris} Savings Plans read from AWS"


def aws_commitments_refresh(*, region: str, types: Sequence[InstanceType], **reader_args: Any) -> str:
    """commitments_refresh with the AWS reader of `region` and the console's store."""
    from console.backends.aws_commitments import AWSCommitmentReader

    return commitments_refresh(reader=AWSCommitmentReader(region=region, **reader_args), types=types)
