"""Batching of pending pods for the watch command (Karpenter: 1 s idle, 10 s at most)."""

from __future__ import annotations

from console.control.batching import PendingBatcher, is_unschedulable


def test_batch_closes_after_idle_or_max_wait() -> None:
    b = PendingBatcher(idle=1.0, max_wait=10.0)
    assert not b.due(0.0)
    b.add(0.0)
    assert not b.due(0.5)
    b.add(0.9)
    assert not b.due(1.5)          # the burst is still arriving
    assert b.due(2.0)              # quiet for 1 s
    b.reset()
    for t in range(0, 12):         # a steady trickle never goes quiet: 10 s cap
        b.add(t * 0.5)
        if b.due(t * 0.5):
            assert t * 0.5 >= 10.0
    assert b.due(10.0)


def test_only_unschedulable_unbound_pods_count() -> None:
    unsched = {"spec": {}, "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}
    assert is_unschedulable(unsched)
    assert not is_unschedulable({"spec": {"nodeName": "n1"}, "status": unsched["status"]})
    assert not is_unschedulable({"spec": {}, "status": {"phase": "Pending"}})
    assert not is_unschedulable({"spec": {}, "status": {"conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulerError"}]}})
