"""packing.replay's progress hook (what the console's bar and Cancel use): a run reports its share of the window
from inside its event loop, the reports only go up, and whatever the callback raises stops the replay."""

from __future__ import annotations

from datetime import timedelta

import pytest

from packing.history.events import ManifestKind
from packing.replay import ReplayCancelled, Timing, replay
from tests.packing.test_replay import history, pool

# a sample every 2 s: enough timers in four hours for a run to report from inside its loop
FINE = Timing(sample_every=timedelta(seconds=2))
CHANGE = {(ManifestKind.NODEPOOL, "default"): pool(["on-demand"])}


def test_progress_goes_up_and_is_reported_from_inside_each_run() -> None:
    seen: list[float] = []
    replay(history(), change=CHANGE, timing=FINE, progress=seen.append, parallel=False)
    assert seen == sorted(seen) and seen[0] == 0.05 and seen[-1] == 1.0
    assert any(0.05 < s < 0.5 for s in seen) and any(0.5 < s < 0.95 for s in seen)


def test_a_callback_that_raises_stops_the_replay_inside_a_run() -> None:
    seen: list[float] = []

    def cancel_after_the_first_report_inside_a_run(share: float) -> None:
        seen.append(share)
        if 0.05 < share < 0.5:
            raise ReplayCancelled()

    with pytest.raises(ReplayCancelled):
        replay(history(), change=CHANGE, timing=FINE, progress=cancel_after_the_first_report_inside_a_run,
               parallel=False)
    assert len([s for s in seen if 0.05 < s < 0.5]) == 1 and max(seen) < 0.5
