"""Evaluators on hand-made rows: no database, no clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import SimpleNamespace as Row
from typing import Any

from console.alerts import messages, selectors
from console.alerts.services import decide
from packing import api
from packing.requirements import Requirement
from packing.scheduling import reasons
from packing.taints import Taint

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def sample(minutes_ago: int, **kw: object) -> Row:
    base = {"at": NOW - timedelta(minutes=minutes_ago), "cost_per_hour": Decimal("1"), "cpu_allocatable": 1000,
            "cpu_requested": 800, "memory_allocatable": 1000, "memory_requested": 800, "pods_pending": 0,
            "unschedulable_reasons": {}}
    return Row(**{**base, **kw})


def test_budget_cost_per_hour() -> None:
    ev = selectors.evaluate_budget([sample(0, cost_per_hour=Decimal("12.5"))], metric="cost_per_hour",
                                   threshold=Decimal(10), scope="cluster", now=NOW)
    assert ev.firing and ev.value == "$12.50/h" and "2.50 over" in ev.change
    assert not selectors.evaluate_budget([], metric="cost_per_hour", threshold=Decimal(10), scope="c", now=NOW).firing


def test_month_end_forecast_adds_spent_and_rate() -> None:
    # 60 minutes at $60/h already spent ($60) plus $60/h for the 12 h left of November.
    rows = [sample(m, cost_per_hour=Decimal(60)) for m in range(59, -1, -1)]
    forecast = selectors.month_end_forecast(rows, NOW)
    assert forecast == Decimal(60) + Decimal(60) * Decimal(12)


def test_spike_against_same_hour_baseline() -> None:
    history = [Row(at=NOW - timedelta(days=d), cost_per_hour=Decimal(10)) for d in range(1, 8)]
    history += [Row(at=NOW - timedelta(days=1, hours=3), cost_per_hour=Decimal(1000))]  # other hour: ignored
    ev = selectors.evaluate_spike(sample(0, cost_per_hour=Decimal(16)), history, threshold_pct=Decimal(50),
                                  scope="general", now=NOW)
    assert ev.firing and ev.change == "+60 %" and "$10.00" in ev.threshold
    calm = selectors.evaluate_spike(sample(0, cost_per_hour=Decimal(14)), history, threshold_pct=Decimal(50),
                                    scope="general", now=NOW)
    assert not calm.firing
    assert not selectors.evaluate_spike(sample(0), [], threshold_pct=Decimal(1), scope="x", now=NOW).firing


def test_efficiency_needs_the_whole_window_below() -> None:
    low = [sample(m, cpu_requested=300) for m in range(4, -1, -1)]
    assert selectors.evaluate_efficiency(low, resource="cpu", threshold_pct=Decimal(50), window_minutes=5,
                                         scope="c").firing
    # Not enough minutes yet, or one good minute in the window: no alert.
    assert not selectors.evaluate_efficiency(low[:3], resource="cpu", threshold_pct=Decimal(50), window_minutes=5,
                                             scope="c").firing
    mixed = [*low[:4], sample(0, cpu_requested=900)]
    assert not selectors.evaluate_efficiency(mixed, resource="cpu", threshold_pct=Decimal(50), window_minutes=5,
                                             scope="c").firing


def pending(key: str, minutes_ago: float, pinned: list[str] | None = None) -> Row:
    return Row(key=key, since=NOW - timedelta(minutes=minutes_ago), pinned_pools=pinned or [])


# Verdicts as the provisioning loop stores them: the engine's Reasons in the plan CLI's JSON shape.
LIMIT = api.reason_json(reasons.limit_exceeded("general", "cpu", 64_000, 64_000))
GPU_TAINT = api.reason_json(reasons.taint_not_tolerated("gpu", Taint("nvidia.com/gpu", "true", "NoSchedule")))
GPU_SIZE = {"nodepool": "gpu", "reason": "no instance type has 500 cpu available (largest offered: 192 cpu)",
            "kind": api.ReasonKind.RESOURCES.value, "detail": {}}
GENERAL_REQ = api.reason_json(reasons.requirement_not_in_labels(
    "general", Requirement.new("karpenter.sh/nodepool", "In", ["gpu"])))


def stuck(pods: list[Row], verdicts: dict[str, list[dict[str, Any]]], *, n: int = 10, pool: str = "",
          threshold: int = 1) -> selectors.Evaluation:
    return selectors.evaluate_stuck(pods, verdicts, min_pods=Decimal(threshold), minutes=n, nodepool=pool,
                                    scope=pool or "cluster", now=NOW)


def test_a_pod_is_stuck_by_its_own_age() -> None:
    assert not stuck([pending("shop/web-1", 9)], {}).firing
    assert not stuck([pending("shop/web-1", 10)], {}).firing               # "more than" N minutes
    ev = stuck([pending("shop/web-1", 11)], {})
    assert ev.firing and ev.value == "1 stuck of 1 pending" and ev.change == "longest 11 min"
    # Many young pods do not add up to a stuck one; the threshold counts stuck pods only.
    young = [pending(f"shop/web-{i}", 5) for i in range(50)]
    assert not stuck(young, {}).firing
    assert not stuck([*young, pending("shop/old", 30)], {}, threshold=2).firing
    assert stuck([*young, pending("shop/old", 30), pending("shop/older", 45)], {}, threshold=2).firing
    assert stuck([pending("a/b", 11)], {}, threshold=0).threshold == "≥ 1 pod pending > 10 min"


def test_stuck_message_lists_top_reasons_and_longest_stuck_pods() -> None:
    pods = [pending("shop/web-1", 12), pending("shop/web-2", 125), pending("ml/train-0", 30), pending("x/new", 1)]
    verdicts = {"shop/web-1": [LIMIT, GPU_TAINT], "shop/web-2": [LIMIT, GPU_TAINT], "ml/train-0": [GENERAL_REQ, GPU_SIZE]}
    ev = stuck(pods, verdicts)
    assert ev.firing and ev.value == "3 stuck of 4 pending"
    # Reasons: the pools that could take each pod (the gpu taint is not why web pods wait).
    assert ev.details[:2] == ["2 × nodepool general: limit cpu=64 would be exceeded (in use 64)",
                              "1 × nodepool gpu: no instance type has 500 cpu available (largest offered: 192 cpu)"]
    assert ev.details[2:] == [
        "shop/web-2 — 2 h 05 min — nodepool general: limit cpu=64 would be exceeded (in use 64)",
        "ml/train-0 — 30 min — nodepool gpu: no instance type has 500 cpu available (largest offered: 192 cpu)",
        "shop/web-1 — 12 min — nodepool general: limit cpu=64 would be exceeded (in use 64)"]
    # No verdict yet: the provisioner has not looked at it.
    assert stuck([pending("a/b", 20)], {}).details[-1] == "a/b — 20 min — waiting for the provisioner"


def test_pool_scope_by_pin_or_by_reason() -> None:
    pods = [pending("shop/web-1", 20), pending("ml/train-0", 20), pending("ml/pinned", 20, ["gpu"]),
            pending("a/unknown", 20)]
    verdicts = {"shop/web-1": [LIMIT, GPU_TAINT], "ml/train-0": [GENERAL_REQ, GPU_SIZE]}
    general = stuck(pods, verdicts, pool="general")
    assert general.value == "1 stuck of 1 pending"                          # web-1 only: the others mismatch
    assert general.details[-1].startswith("shop/web-1 — 20 min — nodepool general: limit")
    gpu = stuck(pods, verdicts, pool="gpu")
    assert gpu.value == "2 stuck of 2 pending"                              # train-0 by reason, pinned by pin
    assert "ml/pinned — 20 min — waiting for the provisioner" in gpu.details
    assert stuck(pods, verdicts).value == "4 stuck of 4 pending"            # the cluster has them all


def test_stuck_message_stays_within_block_kit_limits() -> None:
    pods = [pending(f"namespace-{i:03d}/" + "p" * 240, 100 + i) for i in range(300)]
    verdicts = {p.key: [{"nodepool": f"pool-{j}", "reason": "r" * 500 + str(j)} for j in range(8)] for p in pods}
    ev = stuck(pods, verdicts)
    assert ev.details[-1] == "and 292 more" and len(ev.details) == 5 + 8 + 1
    _, blocks = messages.build(title=ev.title, state="fired", fields={"v": ev.value}, details=ev.details,
                               nodepool="", at=NOW, link="http://x/")
    assert messages.problems(blocks) == []
    assert "and 292 more" in blocks[2]["text"]["text"]                      # nothing was cut off
    assert "(and 7 other NodePools)" in blocks[2]["text"]["text"]


def test_interruptions() -> None:
    assert selectors.evaluate_interruptions(3, threshold=Decimal(2), scope="c").firing
    assert not selectors.evaluate_interruptions(2, threshold=Decimal(2), scope="c").firing


def move(node: str, per_hour: str, blocked_minutes: int, blocked_by: str = "pdb", reason: str = "pdb x") -> Row:
    return Row(node=node, nodepool="general", blocked_by=blocked_by, reason=reason,
               savings_per_hour=Decimal(per_hour), first_seen=NOW - timedelta(minutes=blocked_minutes))


def test_stranded_needs_both_the_hold_and_the_saving() -> None:
    def ev(*moves: Row) -> selectors.Evaluation:
        return selectors.evaluate_stranded(list(moves), min_savings_per_day=Decimal(24), hold_minutes=120,
                                           scope="cluster", now=NOW)

    assert not ev(move("n1", "2", 120)).firing                              # blocked exactly 2 h
    assert not ev(move("n1", "0.99", 500)).firing                           # $23.76/day < $24
    assert ev(move("n1", "1", 121)).firing                                  # $24/day, 2 h 01 min
    both = ev(move("n1", "1", 121, "budget", "budget 0 nodes for Underutilized"),
              move("n2", "3", 600, "do-not-disrupt", "pod jobs/etl-1 has do-not-disrupt"), move("n3", "9", 5))
    assert both.value == "$96.00/day" and both.change == "2 move(s) blocked by budget, do-not-disrupt"
    assert both.details == [
        "n2 (general): pod jobs/etl-1 has do-not-disrupt — saves $72.00/day ($3.00/h), blocked 10 h",
        "n1 (general): budget 0 nodes for Underutilized — saves $24.00/day ($1.00/h), blocked 2 h 01 min"]


def test_lifecycle_decision_table() -> None:
    cd = timedelta(minutes=30)
    assert decide(firing_before=False, last_sent_at=None, condition=True, now=NOW, cooldown=cd) == "fired"
    assert decide(firing_before=True, last_sent_at=NOW - timedelta(minutes=10), condition=True, now=NOW,
                  cooldown=cd) is None
    assert decide(firing_before=True, last_sent_at=NOW - cd, condition=True, now=NOW, cooldown=cd) == "repeated"
    assert decide(firing_before=True, last_sent_at=NOW, condition=False, now=NOW, cooldown=cd) == "resolved"
    assert decide(firing_before=False, last_sent_at=None, condition=False, now=NOW, cooldown=cd) is None


def test_mismatch_is_read_from_the_reason_kind_not_its_wording() -> None:
    """The stuck-pods scope switches on the stored kind: rewording a reason cannot move a pod in or out."""
    reworded = {**GPU_TAINT, "reason": "the pool's taint is not tolerated (any wording)"}
    assert selectors.is_mismatch(reworded)
    assert not selectors.pod_in_pool("gpu", pinned=[], verdict=[reworded])
    # a verdict stored before reasons had a kind keeps the pod in the pool's scope
    legacy = {"nodepool": "gpu", "reason": GPU_TAINT["reason"]}
    assert not selectors.is_mismatch(legacy)
    assert selectors.pod_in_pool("gpu", pinned=[], verdict=[legacy])
