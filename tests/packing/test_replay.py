"""`python -m packing replay` and packing.replay: a history replayed through the real engines with the configuration
in force and with a change, beside what actually happened; deterministic; bad input exits 2."""

from __future__ import annotations

import copy
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from packing.history.events import (
    InterruptionKind,
    ManifestKind,
    NodeInterrupted,
    NodeLaunched,
    NodeTerminated,
    PodArrived,
    PodBound,
    PodDeparted,
    Revision,
)
from packing.history.jsonl import Header, History, HistoryWriter
from packing.history.podspecs import spec_id
from packing.kubeobjects import Inputs
from packing.planning import builtin_catalog
from packing.replay import Timing, replay
from packing.replay.cli import main
from packing.replay.metrics import percentile

T0 = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def pool(capacity_types: list[str], consolidate_after: str = "0s") -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
        "spec": {
            "template": {"spec": {
                "requirements": [
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": capacity_types},
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]},
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]},
                ],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            }},
            "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": consolidate_after},
        },
    }


TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "800m", "memory": "1Gi"}}}]}}
SID = spec_id(TEMPLATE)


def price(capacity_type: str) -> float:
    (m5,) = [t for t in builtin_catalog(Inputs(), "us-east-1") if t.name == "m5.large"]
    found = next(o.price for o in m5.offerings if o.zone == "us-east-1a" and o.capacity_type == capacity_type)
    assert found is not None
    return found


def history(*, interrupt: bool = False, consolidate_after: str = "0s") -> History:
    """One recorded on-demand m5.large (1930m allocatable) holding one 800m pod from 08:00; three more arrive at
    09:00 (one fits there, two need a new node) and leave at 11:00; the recorded cluster launched n2 for them and
    ended it at 11:05."""
    h = History(Header(source="test", start=T0, end=T0 + 4 * HOUR), templates={SID: TEMPLATE})
    od = price("on-demand")
    h.events = [
        Revision(T0, ManifestKind.NODEPOOL, "default", pool(["spot", "on-demand"], consolidate_after)),
        NodeLaunched(T0, "n1", "m5.large", "us-east-1a", "on-demand", od, "default"),
        PodArrived(T0, "shop", "web-0", SID, owner_kind="ReplicaSet", owner_name="web-rs", node="n1"),
        *(PodArrived(T0 + HOUR, "shop", f"web-{i}", SID, owner_kind="ReplicaSet", owner_name="web-rs")
          for i in (1, 2, 3)),
        PodBound(T0 + HOUR + timedelta(seconds=1), "shop", "web-1", "n1"),
        NodeLaunched(T0 + HOUR + timedelta(seconds=5), "n2", "m5.large", "us-east-1a", "on-demand", od, "default"),
        PodBound(T0 + HOUR + timedelta(seconds=50), "shop", "web-2", "n2"),
        PodBound(T0 + HOUR + timedelta(seconds=50), "shop", "web-3", "n2"),
    ]
    if interrupt:
        h.events.append(NodeInterrupted(T0 + 2 * HOUR, "n2", InterruptionKind.SPOT_INTERRUPTION))
    h.events += [
        *(PodDeparted(T0 + 3 * HOUR, "shop", f"web-{i}") for i in (1, 2, 3)),
        NodeTerminated(T0 + 3 * HOUR + timedelta(minutes=5), "n2", "consolidation: empty"),
    ]
    return h


def test_what_actually_happened_adds_up() -> None:
    r = replay(history())
    od = price("on-demand")
    # n1 for 4 h, n2 from 09:00:05 to 11:05
    assert r.actual.cost == pytest.approx(od * 4 + od * (2 * 3600 - 5 + 300) / 3600)
    assert r.actual.node_hours["on-demand"] == pytest.approx(4 + (2 * 3600 - 5 + 300) / 3600)
    assert sorted(r.actual.pending_seconds) == [1.0, 50.0, 50.0]
    assert r.actual.nodes_launched == 1 and r.actual.never_scheduled == 0


def test_the_engines_launch_for_the_pods_that_do_not_fit_and_consolidate_after() -> None:
    r = replay(history())
    m = r.current
    assert m.nodes_launched >= 1
    # web-1 binds at once to the free cpu of n1 (or of its spot replacement: web-0's move is an episode of 0 s too);
    # the other two wait for a new node: the batch's idle second and the launch-to-ready delay
    ready = Timing().launch_to_ready.total_seconds()
    waits = sorted(m.pending_seconds)
    assert waits[:-2] == [0.0] * (len(waits) - 2) and waits[-2:] == [ready + 1, ready + 1]
    assert m.never_scheduled == 0
    # the spot-allowed pool launches spot; once the pods leave the new node is empty and goes
    assert m.node_hours["spot"] > 0 and m.nodes_disrupted["empty"] >= 1
    assert sum(m.node_hours.values()) < sum(r.actual.node_hours.values())
    assert m.cost < r.actual.cost  # spot instead of on-demand, and removed sooner


def test_consolidate_after_counts_from_the_node_s_last_pod_event() -> None:
    """The run's new node empties when its pods leave at 11:00. With consolidateAfter 0s emptiness takes it at the
    next evaluation; with 30m it stays until 11:30 (its last pod event, not its launch at 09:00, starts the wait),
    and goes at the evaluation then, though nothing else changed in the cluster by that time."""
    def nodes_at(r: Any, hh: int, mm: int) -> int:
        at = T0.replace(hour=hh, minute=mm)
        return int(next(s.nodes for s in r.current.samples if s.at == at))

    eager = replay(history())
    patient = replay(history(consolidate_after="30m"))
    assert nodes_at(eager, 10, 50) == nodes_at(patient, 10, 50) == 2
    assert nodes_at(eager, 11, 10) == 1
    assert nodes_at(patient, 11, 10) == nodes_at(patient, 11, 20) == 2
    assert nodes_at(patient, 11, 40) == 1
    assert patient.current.nodes_disrupted["empty"] == eager.current.nodes_disrupted["empty"] >= 1


def test_a_change_is_replayed_beside_the_current_configuration() -> None:
    change = {(ManifestKind.NODEPOOL, "default"): pool(["on-demand"])}
    r = replay(history(), change=change)
    assert r.changed is not None
    assert r.changed.node_hours["spot"] == 0 and r.changed.node_hours["on-demand"] > r.current.node_hours["on-demand"]
    doc = r.as_json()
    assert doc["change"] == ["NodePool/default"]
    assert doc["difference"]["cost"] == pytest.approx(r.changed.cost - r.current.cost, abs=1e-4)
    assert doc["difference"]["cost_by_day"] == {"2026-11-23": pytest.approx(doc["difference"]["cost"], abs=1e-3)}
    assert set(doc) == {"window", "change", "actual", "current", "changed", "difference", "replay_seconds"}
    assert set(doc["current"]) >= {"cost", "cost_by_day", "node_hours", "nodes_launched", "nodes_disrupted",
                                   "evictions", "pending_seconds", "never_scheduled", "interruptions", "series"}


def test_the_same_history_change_and_seed_give_the_same_numbers() -> None:
    change = {(ManifestKind.NODEPOOL, "default"): pool(["on-demand"])}
    first = replay(history(interrupt=True), change=change, seed=3).as_json()
    again = replay(history(interrupt=True), change=change, seed=3, parallel=False).as_json()
    first.pop("replay_seconds"), again.pop("replay_seconds")
    assert first == again


def test_an_interruption_hits_a_spot_node_of_the_run_and_its_pods_move() -> None:
    r = replay(history(interrupt=True))
    m = r.current
    assert (m.interruptions, m.interruptions_absorbed) == (1, 1)
    assert m.evictions["interruption"] == 2 and m.never_scheduled == 0
    changed = replay(history(interrupt=True), change={(ManifestKind.NODEPOOL, "default"): pool(["on-demand"])})
    assert changed.changed is not None and changed.changed.interruptions_absorbed == 0  # no spot node to hit


def test_percentile_is_nearest_rank() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0 and percentile([1.0, 2.0, 3.0, 4.0], 95) == 4.0


# ---------------------------------------------------------------- the command
def write(tmp_path: Path, h: History) -> str:
    path = tmp_path / "h.jsonl"
    with path.open("w", encoding="utf-8") as f:
        w = HistoryWriter(f, h.header)
        for sid, t in h.templates.items():
            w.add_template(sid, t)
        w.write_all(h.events)
    return str(path)


def run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(args, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_the_command_prints_json_and_text(tmp_path: Path) -> None:
    path = write(tmp_path, history())
    change = tmp_path / "od.yaml"
    change.write_text(json.dumps(pool(["on-demand"])))
    code, out, err = run([path, "--change", str(change), "--from", "2026-11-23T08:30:00Z"])
    assert code == 0, err
    doc = json.loads(out)
    assert doc["window"] == {"from": "2026-11-23T08:30:00Z", "until": "2026-11-23T12:00:00Z", "hours": 3.5}
    assert doc["changed"]["node_hours"].get("spot", 0) == 0
    code, out, _ = run([path, "--output", "text"])
    assert code == 0 and "pending p95 s" in out and "changed" not in out.splitlines()[1]


@pytest.mark.parametrize(("args", "message"), [
    (["--from", "soon"], "--from: invalid time"),
    (["--from", "2026-11-23T10:00:00Z", "--to", "2026-11-23T09:00:00Z"], "--to: must be after --from"),
])
def test_bad_times_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    code, _, err = run([write(tmp_path, history()), *args])
    assert code == 2 and message in err


def test_a_bad_history_line_exits_2_naming_file_line_and_field(tmp_path: Path) -> None:
    path = Path(write(tmp_path, history()))
    lines = path.read_text().splitlines()
    bad = json.loads(lines[3])
    bad["at"] = 7
    lines[3] = json.dumps(bad)
    path.write_text("\n".join(lines) + "\n")
    code, _, err = run([str(path)])
    assert code == 2 and f"{path}: line 4: at:" in err


def test_a_bad_change_exits_2_naming_the_document(tmp_path: Path) -> None:
    path = write(tmp_path, history())
    bad = copy.deepcopy(pool(["on-demand"]))
    bad["spec"]["template"]["spec"]["requirements"][0]["operator"] = "Maybe"
    change = tmp_path / "bad.yaml"
    change.write_text(json.dumps(bad))
    code, _, err = run([path, "--change", str(change)])
    assert code == 2 and "bad.yaml: document 1" in err and "requirements[0].operator" in err
    other = tmp_path / "pod.yaml"
    other.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n")
    code, _, err = run([path, "--change", str(other)])
    assert code == 2 and "a change holds NodePools and EC2NodeClasses" in err


def test_benchmark_history_is_a_valid_history_file() -> None:
    """The replay benchmark's synthetic history, written with --write, reads back through the CLI's own checks
    (a pod restarted later in the step it arrived in once left before it arrived)."""
    from packing.bench.history import iter_lines, synthetic_history
    from packing.history.jsonl import read_history

    history = synthetic_history(days=0.5, nodes=40, pods=400, seed=3)
    text = "".join(iter_lines(history))
    again = read_history(text.splitlines(keepends=True), "bench.jsonl")
    assert len(again.events) == len(history.events)
    arrivals: dict[str, datetime] = {}
    for e in history.events:
        if isinstance(e, PodArrived):
            arrivals[e.key] = e.at
        elif isinstance(e, PodDeparted):
            assert e.key in arrivals and arrivals[e.key] <= e.at
