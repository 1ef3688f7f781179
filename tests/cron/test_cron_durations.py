"""Budget schedules and durations, parsed as Karpenter parses them."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packing.cron import CronError, CronSchedule
from packing.durations import DurationError, format_duration, parse_duration


@pytest.mark.parametrize("text, seconds", [("30s", 30), ("5m", 300), ("720h", 2592000), ("1h30m", 5400), ("0s", 0)])
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)
    assert parse_duration(format_duration(timedelta(seconds=seconds))) == timedelta(seconds=seconds)


def test_never_and_bad_durations() -> None:
    assert parse_duration("Never") is None
    assert format_duration(None) == "Never"
    with pytest.raises(DurationError, match="not allowed"):
        parse_duration("Never", allow_never=False)
    for bad in ("1d", "1.5h", "10", "h", "5 m", "-5m", "", "never"):
        with pytest.raises(DurationError, match=repr(bad)):
            parse_duration(bad)


@pytest.mark.parametrize("text, message", [
    ("0 9 * *", "must have 5 fields"), ("60 * * * *", "minute: '60' is outside 0-59"),
    ("* 24 * * *", "hour"), ("* * 0 * *", "day of month"), ("* * * 13 *", "month"),
    ("* * * * 7", "day of week"), ("*/0 * * * *", "bad step"), ("5-1 * * * *", "runs backwards"),
    ("@every 1h", "unknown macro"), ("a * * * *", "not a number"), ("", "empty"),
])
def test_bad_schedules(text: str, message: str) -> None:
    with pytest.raises(CronError, match=message):
        CronSchedule.parse(text)


def test_weekday_business_hours_window() -> None:
    schedule = CronSchedule.parse("0 9 * * mon-fri")
    monday_noon = datetime(2026, 11, 30, 12, 0)            # 2026-11-30 is a Monday
    assert schedule.active_window(monday_noon, timedelta(hours=8)) == (datetime(2026, 11, 30, 9), datetime(2026, 11, 30, 17))
    assert schedule.active_window(datetime(2026, 11, 30, 17, 0), timedelta(hours=8)) is None
    saturday = datetime(2026, 12, 5, 10, 0)
    assert schedule.last_fire_at_or_before(saturday) == datetime(2026, 12, 4, 9, 0)
    assert schedule.next_fire_after(saturday) == datetime(2026, 12, 7, 9, 0)


def test_day_of_month_or_weekday_rule() -> None:
    # Both day fields restricted: a day matching either fires (Vixie cron, robfig/cron).
    schedule = CronSchedule.parse("0 0 1 * mon")
    assert schedule.matches(datetime(2026, 12, 1, 0, 0))      # the 1st, a Tuesday
    assert schedule.matches(datetime(2026, 12, 7, 0, 0))      # a Monday
    assert not schedule.matches(datetime(2026, 12, 8, 0, 0))


def test_impossible_schedule_ends() -> None:
    schedule = CronSchedule.parse("0 0 31 2 *")
    assert schedule.last_fire_at_or_before(datetime(2026, 6, 1)) is None
    assert schedule.next_fire_after(datetime(2026, 6, 1)) is None


SCHEDULES = ["*/15 * * * *", "0 9 * * mon-fri", "30 2 * * *", "@hourly", "@weekly", "0 0 1,15 * *", "5 4 * * sun"]


@given(st.sampled_from(SCHEDULES),
       st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2027, 12, 31)))
def test_last_and_next_fire_bracket_the_moment(text: str, moment: datetime) -> None:
    schedule = CronSchedule.parse(text)
    last = schedule.last_fire_at_or_before(moment)
    nxt = schedule.next_fire_after(moment)
    assert last is not None and nxt is not None
    assert last <= moment < nxt and schedule.matches(last) and schedule.matches(nxt)
    # No fire strictly between them, checked minute by minute near both ends.
    for probe in (last + timedelta(minutes=1), nxt - timedelta(minutes=1)):
        if last < probe < nxt:
            assert not schedule.matches(probe)
