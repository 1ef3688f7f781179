"""Standard five-field cron schedules, as used by Karpenter disruption budgets (always in UTC).

Karpenter parses budget schedules with robfig/cron's standard parser: minute, hour, day of month,
month, day of week, plus the macros ``@yearly``/``@annually``, ``@monthly``, ``@weekly``,
``@daily``/``@midnight`` and ``@hourly``. Names for months and weekdays (``jan``, ``mon``) are
accepted as they are there. A budget is active from a fire time for its duration, so the question
the disruption engine asks is "when did this schedule last fire at or before t?".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTHS = {m: i for i, m in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1)}
_DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (  # name, low, high, names
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 6, _DAYS),   # robfig/cron refuses 7
)
# Searching minute by minute is fine for schedules that fire at least yearly; bound it so a
# schedule that can never fire (e.g. "0 0 31 2 *") ends the search instead of looping forever.
_SEARCH_LIMIT = timedelta(days=366 * 5)


class CronError(ValueError):
    """A schedule Karpenter would refuse; the message names the field and the value."""


def _q(text: str) -> str:
    quoted = repr(text)
    return quoted if len(quoted) <= 60 else quoted[:59] + "…"


def _number(text: str) -> bool:
    # ASCII digits only: str.isdigit() says yes to "²", which int() refuses
    return 0 < len(text) <= 4 and text.isascii() and text.isdigit()


def _parse_value(text: str, field: str, names: dict[str, int]) -> int:
    lowered = text.lower()
    if lowered in names:
        return names[lowered]
    if not _number(text):
        raise CronError(f"{field}: {_q(text)} is not a number")
    return int(text)


def _parse_field(text: str, field: str, low: int, high: int, names: dict[str, int]) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        if not part:
            raise CronError(f"{field}: empty list element in {_q(text)}")
        step = 1
        if "/" in part:
            part, step_text = part.split("/", 1)
            if not _number(step_text) or int(step_text) == 0:
                raise CronError(f"{field}: bad step {_q(step_text)}")
            step = int(step_text)
        if part in ("*", "?"):
            start, end = low, high
        elif "-" in part:
            a, b = part.split("-", 1)
            start, end = _parse_value(a, field, names), _parse_value(b, field, names)
        else:
            start = _parse_value(part, field, names)
            end = high if step > 1 else start
        if not (low <= start <= high and low <= end <= high):
            raise CronError(f"{field}: {_q(part)} is outside {low}-{high}")
        if start > end:
            raise CronError(f"{field}: range {_q(part)} runs backwards")
        values.update(range(start, end + 1, step))
    return frozenset(values)


@dataclass(frozen=True)
class CronSchedule:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    day_restricted: bool
    weekday_restricted: bool
    text: str

    @classmethod
    def parse(cls, text: str) -> CronSchedule:
        if not isinstance(text, str) or not text.strip():
            raise CronError("schedule is empty")
        spec = MACROS.get(text.strip(), text.strip())  # macros are case-sensitive in robfig/cron
        if spec.startswith("@"):
            raise CronError(f"unknown macro {_q(text)}; use one of {', '.join(sorted(MACROS))}")
        parts = spec.split()
        if len(parts) != 5:
            raise CronError(f"schedule {_q(text)} must have 5 fields (minute hour day-of-month month day-of-week), got {len(parts)}")
        parsed = [_parse_field(p, name, lo, hi, names) for p, (name, lo, hi, names) in zip(parts, _FIELDS, strict=True)]
        return cls(parsed[0], parsed[1], parsed[2], parsed[3], parsed[4],
                   day_restricted=not parts[2].startswith(("*", "?")),
                   weekday_restricted=not parts[4].startswith(("*", "?")),
                   text=text)

    def _day_matches(self, moment: datetime) -> bool:
        dom = moment.day in self.days
        dow = (moment.isoweekday() % 7) in self.weekdays
        # Vixie-cron rule, which robfig/cron follows: when both day fields are restricted a day
        # matching either one fires.
        if self.day_restricted and self.weekday_restricted:
            return dom or dow
        return dom and dow

    def matches(self, moment: datetime) -> bool:
        return (moment.minute in self.minutes and moment.hour in self.hours
                and moment.month in self.months and self._day_matches(moment))

    def last_fire_at_or_before(self, moment: datetime) -> datetime | None:
        """The latest fire time <= moment, or None if it did not fire in the search window."""
        t = moment.replace(second=0, microsecond=0)
        floor = t - _SEARCH_LIMIT
        while t >= floor:
            if not (t.month in self.months and self._day_matches(t)):
                t = t.replace(hour=23, minute=59) - timedelta(days=1)
                continue
            if t.hour not in self.hours:
                t = t.replace(minute=59) - timedelta(hours=1)
                continue
            if t.minute in self.minutes:
                return t
            t -= timedelta(minutes=1)
        return None

    def next_fire_after(self, moment: datetime) -> datetime | None:
        """The earliest fire time > moment, or None if none in the search window."""
        t = moment.replace(second=0, microsecond=0) + timedelta(minutes=1)
        ceiling = t + _SEARCH_LIMIT
        while t <= ceiling:
            if not (t.month in self.months and self._day_matches(t)):
                t = t.replace(hour=0, minute=0) + timedelta(days=1)
                continue
            if t.hour not in self.hours:
                t = t.replace(minute=0) + timedelta(hours=1)
                continue
            if t.minute in self.minutes:
                return t
            t += timedelta(minutes=1)
        return None

    def active_window(self, moment: datetime, duration: timedelta) -> tuple[datetime, datetime] | None:
        """The [start, end) window containing moment if the schedule is active then, else None."""
        start = self.last_fire_at_or_before(moment)
        if start is None or moment >= start + duration:
            return None
        return start, start + duration
