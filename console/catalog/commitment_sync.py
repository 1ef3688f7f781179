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
    """Store what AWS returned: one commitment_upsert per commitment, keyed by its source and AWS id, so a refresh
    updates the rows it wrote before and leaves the operator's own alone; then each AWS source's rows it no longer
    returned (expired, sold) are pruned. A commitment the console's rules refuse is logged and left out."""
    from django.core.exceptions import ValidationError

    from console.backends.aws_commitments import SOURCE_RI, SOURCE_SP
    from console.commitments.services import commitment_prune, commitment_upsert

    seen: dict[str, list[str]] = {SOURCE_RI: [], SOURCE_SP: []}
    for c in commitments:
        source = c.source or SOURCE_RI
        values = {
            "type": c.kind.value, "instance_type": c.instance_type or "", "instance_family": c.instance_family or "",
            "zone": c.zone or "", "region": c.region or "", "count": c.count or None,
            "hourly_commitment": None if c.hourly_commitment is None else str(c.hourly_commitment),
            "rates": {k: str(v) for k, v in c.rates.items()}, "starts": c.starts, "ends": c.ends,
        }
        try:
            commitment_upsert(source=source, external_id=c.name, values=values)
        except ValidationError as exc:
            log.warning("commitment %s from %s not stored: %s", c.name, source, exc)
            continue
        seen.setdefault(source, []).append(c.name)
    for source, keep in seen.items():
        commitment_prune(source=source, keep=keep)


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
