"""One way to write each quantity an alert shows — money, percentages, durations, counts — with its
unit, on the rules page and in Slack alike: "$12.50/h", "$1,200.00", "20 %", "+3.5 %", "15 min"."""

from __future__ import annotations

from decimal import Decimal
from typing import Any


def money(x: Decimal | float | int, per: str = "") -> str:
    """Dollars with cents; ``per`` is "/h", "/day" or ""."""
    return f"${Decimal(str(x)) if isinstance(x, float) else Decimal(x):,.2f}{per}"


def number(x: Decimal | float | int, places: int = 1) -> str:
    """At most ``places`` decimals, without trailing zeros: 20, 12.5, 0.3."""
    text = f"{Decimal(str(x)) if isinstance(x, float) else Decimal(x):,.{places}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def signed(x: Decimal | float | int, places: int = 1) -> str:
    text = number(x, places)
    return text if text.startswith("-") or text == "0" else "+" + text


def percent(x: Decimal | float | int, *, sign: bool = False) -> str:
    return f"{signed(x) if sign else number(x)} %"


def count(x: Decimal | float | int, unit: str = "", plural: str = "") -> str:
    text = number(x, places=2)
    if not unit:
        return text
    return f"{text} {unit if text == '1' else (plural or unit + 's')}"


def minutes(n: int) -> str:
    n = int(n)
    if n < 60:
        return f"{n} min"
    if n < 48 * 60:
        return f"{n // 60} h" + (f" {n % 60:02d} min" if n % 60 else "")
    return f"{n // 1440} d" + (f" {n % 1440 // 60} h" if n % 1440 // 60 else "")


def rule_threshold(rule: Any) -> str:
    """An AlertRule's threshold with its unit and meaning, as the rules page and Slack show it."""
    from console.alerts.models import AlertRule

    t = Decimal(rule.threshold)
    kind = rule.kind
    if kind == AlertRule.BUDGET:
        return f"over {money(t)} month-end forecast" if rule.metric == "forecast" else f"over {money(t, '/h')}"
    if kind == AlertRule.SPIKE:
        return f"{percent(t)} above baseline"
    if kind == AlertRule.EFFICIENCY:
        return f"{(rule.metric or 'cpu').replace('cpu', 'CPU')} below {percent(t)}"
    if kind == AlertRule.STUCK:
        return f"≥ {count(max(t, Decimal(1)), 'pod')} pending"
    if kind == AlertRule.INTERRUPTIONS:
        return f"> {count(t, 'interruption')} per hour"
    if kind == AlertRule.STRANDED:
        return f"≥ {money(t, '/day')} per move"
    if kind == AlertRule.UNUSABLE:
        return f"≥ {count(max(t, Decimal(1)), 'NodePool')} unusable"
    if kind == AlertRule.DRIFT:
        return f"> {percent(t)} of nodes drifted"
    if kind == AlertRule.LAUNCH_FAILURES:
        return f"> {count(t, 'failed launch', 'failed launches')} per hour"
    if kind == AlertRule.ADVISOR:
        return f"≥ {count(max(t, Decimal(1)), 'finding')}, each new one sent"
    if kind == AlertRule.COMMITMENT_UNDER_UTILIZED:
        return f"> {money(t, '/h')} of commitment unused"
    if kind == AlertRule.RESERVATION_IDLE:
        return f"> {count(t, 'free instance')} in a reservation"
    return number(t, places=4)
