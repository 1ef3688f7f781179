"""The commitment rules (issue 19): "commitment under-utilized" and "reservation idle", evaluated over the metrics
loop's per-minute CommitmentSample rows (console/control/commitment_metrics.py). Both are the whole cluster's (a
commitment is not a NodePool's) and keep the other rules' lifecycle (services.process_rule: fire, repeat after the
cooldown, resolve).

Under-utilized: the Reserved Instances', Savings Plans' and reservations' unused $/h, summed over those whose price
is known, is above the threshold in every minute recorded over the window, and the window is covered (the samples
go back to its start). An unused part whose price is unknown is named in the alert, never counted as $0 or as more.

Reservation idle: a capacity reservation (an ODCR or a Capacity Block) has had more free instances than the
threshold (0: any) in every minute over the window, the window covered.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from decimal import Decimal

from console.alerts import units
from console.alerts.selectors import Evaluation
from console.telemetry.models import CommitmentSample

RESERVATION_KINDS = (CommitmentSample.RESERVATION, CommitmentSample.CAPACITY_BLOCK)
# A minute's slack on "the samples go back to the window's start": the loop writes one sample a minute.
_SLACK = timedelta(minutes=1)


def samples_in_window(*, now: datetime, minutes: int) -> list[CommitmentSample]:
    return list(CommitmentSample.objects.filter(at__gte=now - timedelta(minutes=minutes), at__lte=now)
                .order_by("at", "kind", "name"))


def _covered(times: Sequence[datetime], now: datetime, minutes: int) -> bool:
    return bool(times) and min(times) <= now - timedelta(minutes=minutes) + _SLACK


def evaluate_under_utilized(samples: Sequence[CommitmentSample], *, threshold: Decimal, minutes: int,
                            now: datetime) -> Evaluation:
    by_minute: dict[datetime, list[CommitmentSample]] = defaultdict(list)
    for s in samples:
        by_minute[s.at].append(s)
    totals = {at: sum((Decimal(r.unused_per_hour) for r in rows if r.unused_per_hour is not None), Decimal(0))
              for at, rows in by_minute.items()}
    covered = _covered(list(by_minute), now, minutes)
    lowest = min(totals.values(), default=Decimal(0))
    last = by_minute[max(by_minute)] if by_minute else []
    details = [f"{r.name} ({r.get_kind_display()}): {units.money(r.unused_per_hour, '/h')} unused, "
               f"{units.number(r.used, 2)} of {units.number(r.total, 2)} {r.unit} used"
               for r in sorted(last, key=lambda r: -(r.unused_per_hour or 0)) if r.unused_per_hour]
    unknown = [r.name for r in last if r.unused_per_hour is None and r.left > 0]
    if unknown:
        details.append(f"price of the unused part unknown (not counted): {', '.join(unknown)[:200]}")
    if not covered:
        details.append("the samples do not cover the window yet")
    return Evaluation(
        scope="cluster", firing=covered and lowest > threshold, title="Commitments under-utilized on cluster",
        value=f"{units.money(totals[max(totals)], '/h')} unused now, at least {units.money(lowest, '/h')} "
              f"in the window" if totals else "no commitment samples in the window",
        threshold=f"> {units.money(threshold, '/h')} unused", window=units.minutes(minutes),
        change=", ".join(r.name for r in last if r.unused_per_hour)[:200] or "—", details=details[:10])


def evaluate_reservation_idle(samples: Sequence[CommitmentSample], *, threshold: Decimal, minutes: int,
                              now: datetime) -> Evaluation:
    by_reservation: dict[str, list[CommitmentSample]] = defaultdict(list)
    for s in samples:
        if s.kind in RESERVATION_KINDS:
            by_reservation[s.name].append(s)
    idle = []
    for name, rows in sorted(by_reservation.items()):
        least_free = min(r.left for r in rows)
        if _covered([r.at for r in rows], now, minutes) and least_free > threshold:
            last = rows[-1]
            cost = "price unknown" if last.unused_per_hour is None else units.money(last.unused_per_hour, "/h")
            idle.append((name, f"{name} ({last.get_kind_display()}): {units.count(last.left, 'instance')} free of "
                               f"{units.number(last.total, 0)} for the whole window, at least "
                               f"{units.count(least_free, 'instance')}; {cost}"))
    return Evaluation(
        scope="cluster", firing=bool(idle), title="Capacity reservations idle on cluster",
        value=f"{units.count(len(idle), 'reservation')} idle of {len(by_reservation)}",
        threshold=f"> {units.count(threshold, 'free instance')} for the window", window=units.minutes(minutes),
        change=", ".join(n for n, _ in idle)[:200] or "—", details=[d for _, d in idle][:10])
