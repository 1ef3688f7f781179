"""A snapshot replay lists the pods the plan is not made for (`ignored`, issue 16 item 5) exactly as the CLI does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from console.whatif import selectors, services
from packing import plan_cli
from tests.whatif.test_snapshots import AT, cli, strip_timing


def test_replay_lists_ignored_pods_as_the_cli(world: Any, tmp_path: Path) -> None:
    gated = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "held", "namespace": "ml"},
             "spec": {"schedulingGates": [{"name": "example.com/quota"}],
                      "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    text = selectors.live_snapshot_yaml(cluster=world.cluster) + "---\n" + yaml.safe_dump(gated)
    path = tmp_path / "live.yaml"
    path.write_text(text)
    snap = services.snapshot_create(name="gated", files=[("live.yaml", text)], taken_at=AT)
    replay = selectors.replay_files(selectors.snapshot_files(snap), at=AT)
    expected = cli(plan_cli, [str(path)])
    assert strip_timing(replay["plan"]) == strip_timing(expected)
    assert replay["plan"]["ignored"] == [{"pod": "ml/held", "why": "scheduling gate example.com/quota"}]
    assert replay["plan"]["summary"]["ignored"] == 1
