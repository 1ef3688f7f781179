"""Snapshot replay equals the CLI; bad snapshots are refused with file, document and field; nothing saved."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.apps import apps

from console.whatif import selectors, services
from console.whatif import world as world_
from console.whatif.models import Snapshot
from packing import api, plan_cli
from packing.api import InputError
from packing.disruption import cli as consolidate_cli
from tests.whatif.conftest import add_pod

AT = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)


def cli(module: Any, args: list[str]) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    assert module.main(args, stdout=out, stderr=err) == 0, err.getvalue()
    return json.loads(out.getvalue())


def strip_timing(d: dict[str, Any]) -> dict[str, Any]:
    d = json.loads(json.dumps(d))
    d["summary"].pop("solve_seconds", None)
    return d


def test_replay_equals_the_cli(world: Any, tmp_path: Path) -> None:
    add_pod(world, "trainer", namespace="ml", cpu="2", memory="4Gi",
            node_selector={"karpenter.k8s.aws/instance-category": "g"})
    text = selectors.live_snapshot_yaml(cluster=world.cluster)
    path = tmp_path / "live.yaml"
    path.write_text(text)
    snap = services.snapshot_create(name="now", files=[("live.yaml", text)], taken_at=AT)
    replay = selectors.replay_files(selectors.snapshot_files(snap), at=AT)
    assert strip_timing(replay["plan"]) == strip_timing(cli(plan_cli, [str(path)]))
    assert strip_timing(replay["consolidate"]) == strip_timing(
        cli(consolidate_cli, [str(path), "--at", "2026-11-30T06:00:00Z"]))
    assert replay["plan"]["unschedulable"][0]["pod"] == "ml/trainer"


def test_preview_equals_the_cli_for_the_same_snapshot(world: Any, tmp_path: Path) -> None:
    """The preview's "after" is what the CLI prints for the snapshot holding the edited NodePool."""
    live = world_.live_world(cluster=world.cluster, now=AT)
    live.pending_keys = None  # the CLI plans for every unbound pod
    values = {"limits": {"cpu": "3"}}
    result = selectors.preview_nodepool_change(values=values, name="general", world=live)
    edited = next(p for p in live.pools if p.name == "general")
    after = live.replaced(pool=world_.edited_instance(type(edited), values, edited))
    path = tmp_path / "after.yaml"
    path.write_text(yaml.safe_dump_all(after.docs()))
    expected = cli(plan_cli, [str(path)])
    assert strip_timing(api.plan_json(world_.run_world(after).plan)) == strip_timing(expected)
    assert result["after"]["cost_per_hour_launch"] == expected["summary"]["cost_per_hour"]
    assert set(result["after"]["unschedulable"]) == {u["pod"] for u in expected["unschedulable"]}
    assert len(result["after"]["launch"]) == len(expected["nodeclaims"])
    cons = cli(consolidate_cli, [str(path), "--at", AT.isoformat()])
    assert result["after"]["remove"] == sorted({n for a in cons["actions"] for n in a["nodes"]})


BAD_POD = """apiVersion: v1
kind: Pod
metadata: {name: ok, namespace: default}
spec: {containers: [{name: c, resources: {requests: {cpu: 1}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: bad, namespace: default}
spec: {containers: [{name: c, resources: {requests: {cpu: lots}}}]}
"""


@pytest.mark.parametrize(("files", "needle"), [
    ([("pods.yaml", BAD_POD)], "pods.yaml: document 2 (Pod bad): spec.containers[0].resources.requests"),
    ([("ok.yaml", "apiVersion: v1\nkind: List\nitems: []\n"), ("broken.yaml", "a: [1, 2\n")],
     "broken.yaml: document 1: invalid YAML"),
    ([("x.yaml", "just: a map\n")], "x.yaml: document 1: apiVersion"),
])
def test_bad_snapshots_are_refused_and_nothing_saved(db: Any, files: list[tuple[str, str]], needle: str) -> None:
    with pytest.raises(InputError) as err:
        services.snapshot_create(name="bad", files=files)
    assert needle in str(err.value)
    assert Snapshot.objects.count() == 0


def test_oversized_snapshot_is_refused(db: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(services, "MAX_SNAPSHOT_BYTES", 100)
    with pytest.raises(InputError, match="limit is 100"):
        services.snapshot_create(name="big", files=[("big.yaml", "apiVersion: v1\nkind: List\nitems: []\n" * 5)])
    assert Snapshot.objects.count() == 0


def test_compare(world: Any) -> None:
    a = selectors.replay_files([("a.yaml", selectors.live_snapshot_yaml(cluster=world.cluster))], at=AT)
    add_pod(world, "trainer", namespace="ml", cpu="2", memory="4Gi",
            node_selector={"karpenter.k8s.aws/instance-category": "g"})
    b = selectors.replay_files([("b.yaml", selectors.live_snapshot_yaml(cluster=world.cluster))], at=AT)
    cmp = selectors.snapshot_compare(a, b)
    assert cmp["unschedulable_only_in_b"] == ["ml/trainer"] and cmp["b"]["pending_pods"] == cmp["a"]["pending_pods"] + 1
    assert {m._meta.label for m in apps.get_models()} >= {"whatif.Snapshot"}


PRIORITY_BAD = BAD_POD.replace("cpu: lots", "cpu: 1").replace(
    "metadata: {name: bad, namespace: default}\nspec: {", "metadata: {name: bad, namespace: default}\nspec: {priority: high, ")


@pytest.mark.parametrize("text", [BAD_POD, PRIORITY_BAD, "a: [1, 2\n", "just: a map\n",
                                  "apiVersion: v1\nkind: List\nitems: {a: 1}\n"])
def test_errors_are_the_clis_messages(db: Any, tmp_path: Path, text: str) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(text)
    err = io.StringIO()
    assert consolidate_cli.main([str(path)], stdout=io.StringIO(), stderr=err) == 2
    with pytest.raises(InputError) as ours:
        services.snapshot_validate([(str(path), text)])
    assert err.getvalue().strip() == f"error: {ours.value}"


def big_snapshot(target: int) -> str:
    """About `target` bytes of kubectl-like YAML (pods carry a last-applied annotation, as kubectl's do)."""
    pad = "x" * 3000
    node = ("apiVersion: v1\nkind: Node\nmetadata:\n  name: n{i}\n  labels: {{karpenter.sh/nodepool: default, "
            "node.kubernetes.io/instance-type: m5.2xlarge, karpenter.sh/capacity-type: on-demand, "
            "topology.kubernetes.io/zone: us-east-1a, karpenter.sh/initialized: 'true'}}\n"
            "status: {{allocatable: {{cpu: 7800m, memory: 30Gi, pods: '58'}}}}\n---\n")
    pod = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p{i}\n  namespace: default\n  annotations:\n"
           "    kubectl.kubernetes.io/last-applied-configuration: '" + pad + "'\n"
           "spec:\n  nodeName: n{n}\n  containers: [{{name: c, resources: {{requests: {{cpu: 500m, memory: 1Gi}}}}}}]\n"
           "---\n")
    parts, size, i = [], 0, 0
    while size < target:
        chunk = (node.format(i=i // 10) if i % 10 == 0 else "") + pod.format(i=i, n=i // 10)
        parts.append(chunk)
        size += len(chunk)
        i += 1
    return "".join(parts)


def test_a_20_mb_snapshot_is_accepted(db: Any) -> None:
    text = big_snapshot(services.MAX_SNAPSHOT_BYTES - 200_000)
    snap = services.snapshot_create(name="big", files=[("big.yaml", text)])
    assert snap.size > 19 * 2**20 and Snapshot.objects.count() == 1
    with pytest.raises(InputError, match="the limit is"):
        services.snapshot_create(name="too big", files=[("big.yaml", text + "#" * 300_000)])
    assert Snapshot.objects.count() == 1


def test_a_live_snapshot_carries_the_nodeoverlays_and_commitments(world: Any, tmp_path: Path) -> None:
    from console.commitments import services as commitment_services
    from console.overlays import services as overlay_services

    add_pod(world, "web-big", cpu="2", memory="4Gi")
    before = selectors.replay_files([("a.yaml", selectors.live_snapshot_yaml(cluster=world.cluster))], at=AT)
    overlay_services.overlay_create(values={"name": "half-price", "price_adjustment": "-50%"})
    commitment_services.commitment_create(values={"name": "ri", "type": "ReservedInstances",
                                                  "instance_type": "m5.large", "count": 1})
    text = selectors.live_snapshot_yaml(cluster=world.cluster)
    assert "kind: NodeOverlay" in text and "kind: Commitment" in text
    path = tmp_path / "live.yaml"
    path.write_text(text)
    after = selectors.replay_files([("b.yaml", text)], at=AT)
    assert strip_timing(after["plan"]) == strip_timing(cli(plan_cli, [str(path)]))
    claims = after["plan"]["nodeclaims"]
    assert claims and all(c["overlays"] == ["half-price"] for c in claims)
    # the RI prices the plan too (as `plan FILES` does): what the bill sees is at most half the list plan's
    summary = after["plan"]["summary"]
    assert [u["name"] for u in summary["commitments"]] == ["ri"] and summary["commitments"][0]["used_by_plan"] == 1
    assert summary["effective_cost_per_hour"] <= before["plan"]["summary"]["cost_per_hour"] / 2 + 1e-6
