"""A guaranteed on-demand share, spot first (packing.ondemandshare): the annotations, whom they bind, and plans
that keep the contract counting the pods already running on on-demand nodes."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from packing.fields import InputError
from packing.kubeobjects import Inputs, parse_documents
from packing.ondemandshare import OnDemandShare
from packing.plan_cli import main
from packing.planning import plan
from packing.scheduling.reasons import ReasonKind
from packing.scheduling.results import Results
from tests.engine_builders import catalog

CT = "karpenter.sh/capacity-type"


def _pool(name: str = "default", capacity: str = "[spot, on-demand]", annotations: str = "{}", weight: int = 0) -> str:
    w = f"\n  weight: {weight}" if weight else ""
    return f"""---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: {name}, annotations: {annotations}}}
spec:{w}
  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
      requirements:
      - {{key: {CT}, operator: In, values: {capacity}}}
"""


def _deployment(name: str = "web", replicas: int = 10, annotations: str = "{}", template: str = "{}") -> str:
    return f"""---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, annotations: {annotations}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}, annotations: {template}}}
    spec:
      containers: [{{name: c, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}]
"""


SHARE = '{"loadmaster.dev/on-demand-base": "2", "loadmaster.dev/on-demand-percentage": "20"}'


def _plan(text: str) -> Results:
    inp = Inputs()
    parse_documents(text, "in.yaml", inp)
    return plan(inp, catalog())


def _split(res: Results, workload: str = "web") -> dict[str, int]:
    out: dict[str, int] = {}
    for c in res.nodeclaims:
        n = sum(1 for p in c.pods if p.name.startswith(f"{workload}-"))
        out[c.capacity_type] = out.get(c.capacity_type, 0) + n
    return out


@pytest.mark.parametrize(
    ("base", "pct", "replicas", "required"),
    [(2, 20, 0, 0), (2, 20, 1, 1), (2, 20, 2, 2), (2, 20, 3, 3), (2, 20, 10, 4), (2, 20, 12, 4), (0, 50, 3, 2),
     (0, 0, 7, 0), (0, 100, 7, 7), (5, 0, 3, 3)],
)
def test_required_is_base_then_percentage_of_the_rest_rounded_up(base: int, pct: int, replicas: int, required: int) -> None:
    assert OnDemandShare(base, pct).required(replicas) == required


def test_a_deployments_share_puts_base_plus_percentage_on_on_demand_and_the_rest_on_spot() -> None:
    res = _plan(_pool() + _deployment(annotations=SHARE))
    assert not res.unschedulable
    assert _split(res) == {"on-demand": 4, "spot": 6}
    [row] = [r.json() for r in res.on_demand_share]
    assert row == {"workload": "Deployment default/web", "source": "Deployment default/web", "nodepool": "default",
                   "base": 2, "percentage": 20, "replicas": 10, "required": 4, "on_demand": 4, "spot": 6,
                   "unschedulable": 0}


def test_without_annotations_the_plan_is_all_spot_and_has_no_share_key(tmp_path: Path) -> None:
    res = _plan(_pool() + _deployment())
    assert _split(res) == {"spot": 10} and res.on_demand_share == []
    f = tmp_path / "in.yaml"
    f.write_text(_pool() + _deployment())
    out = io.StringIO()
    assert main([str(f), "--output", "json"], stdout=out, stderr=io.StringIO()) == 0
    assert "on_demand_share" not in json.loads(out.getvalue())


def test_the_pod_templates_annotations_bind_like_the_workloads() -> None:
    res = _plan(_pool() + _deployment(template=SHARE))
    assert _split(res) == {"on-demand": 4, "spot": 6}


def test_a_pools_share_binds_the_workloads_it_admits_and_the_workloads_own_wins() -> None:
    pool_share = '{"loadmaster.dev/on-demand-percentage": "50"}'
    res = _plan(_pool(annotations=pool_share) + _deployment("web", 4) + _deployment("api", 10, annotations=SHARE))
    assert _split(res, "web") == {"on-demand": 2, "spot": 2}
    assert _split(res, "api") == {"on-demand": 4, "spot": 6}
    rows = {r.workload: r for r in res.on_demand_share}
    assert rows["Deployment default/web"].source == "nodepool default"
    assert rows["Deployment default/api"].source == "Deployment default/api"


def test_only_the_first_admitting_pools_share_applies() -> None:
    heavy = _pool("heavy", weight=50)  # no share; admits every pod, and is tried first
    light = _pool("light", annotations='{"loadmaster.dev/on-demand-base": "3"}')
    res = _plan(heavy + light + _deployment())
    assert res.on_demand_share == [] and _split(res) == {"spot": 10}


RUNNING = """---
apiVersion: v1
kind: Node
metadata:
  name: od-1
  labels: {{karpenter.sh/capacity-type: on-demand, karpenter.sh/nodepool: default, karpenter.sh/initialized: "true",
           node.kubernetes.io/instance-type: m5.large, topology.kubernetes.io/zone: us-east-1a,
           kubernetes.io/hostname: od-1}}
status: {{allocatable: {{cpu: "1", memory: 2Gi, pods: "110"}}}}
{pods}"""


def _running_pod(name: str, node: str = "od-1") -> str:
    return f"""---
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {{app: web, pod-template-hash: 5d8f9}}
  annotations: {SHARE}
  ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d8f9}}]
spec:
  nodeName: {node}
  containers: [{{name: c, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}]
"""


def _pending_pod(name: str) -> str:
    return _running_pod(name).replace("  nodeName: od-1\n", "")


def test_pods_already_on_on_demand_count_and_live_pods_carry_their_templates_share() -> None:
    # 1 of 6 replicas runs on on-demand; the share needs 2 + ceil(4 * 20%) = 3: two more of the five pending
    text = _pool() + RUNNING.format(pods=_running_pod("web-5d8f9-a")) + "".join(
        _pending_pod(f"web-5d8f9-{c}") for c in "bcdef"
    )
    res = _plan(text)
    assert not res.unschedulable
    assert _split(res) == {"on-demand": 2, "spot": 3}
    [row] = res.on_demand_share
    assert (row.workload, row.replicas, row.required, row.on_demand, row.spot) == ("Deployment default/web", 6, 3, 3, 3)


def test_a_pool_that_forbids_on_demand_leaves_the_pods_the_share_needs_unschedulable_naming_the_contract() -> None:
    res = _plan(_pool(capacity="[spot]") + _deployment(annotations=SHARE))
    assert len(res.unschedulable_reasons) == 4 and _split(res) == {"spot": 6}
    reason = next(iter(res.unschedulable_reasons.values()))[0]
    assert reason.kind is ReasonKind.ON_DEMAND_SHARE
    assert "on-demand share of Deployment default/web" in reason.text
    assert "4 of its 10 replicas" in reason.text and "nodepool default does not allow" in reason.text
    assert res.on_demand_share[0].unschedulable == 4


@pytest.mark.parametrize(
    ("value", "message"),
    [('"two"', "must be an integer"), ('"-1"', "must not be negative"), ('"2.5"', "must be an integer")],
)
def test_bad_base_is_refused_naming_the_annotation(value: str, message: str) -> None:
    ann = f'{{"loadmaster.dev/on-demand-base": {value}}}'
    with pytest.raises(InputError) as e:
        _plan(_pool() + _deployment(annotations=ann))
    assert f"document 2 (Deployment web): metadata.annotations.loadmaster.dev/on-demand-base: {message}" in str(e.value)


def test_a_percentage_above_100_exits_2_naming_file_document_and_field(tmp_path: Path) -> None:
    f = tmp_path / "in.yaml"
    f.write_text(_pool(annotations='{"loadmaster.dev/on-demand-percentage": "101"}') + _deployment())
    out, err = io.StringIO(), io.StringIO()
    assert main([str(f)], stdout=out, stderr=err) == 2
    assert err.getvalue().strip() == (
        f"error: {f}: document 1 (NodePool default): metadata.annotations.loadmaster.dev/on-demand-percentage: "
        "must be a percentage: at most 100, got 101"
    )


def _json(res: Results) -> dict[str, Any]:
    from packing.plan_output import render_json

    return render_json(res)


def test_plan_json_has_the_share_rows_at_top_level() -> None:
    doc = _json(_plan(_pool() + _deployment(annotations=SHARE)))
    assert [(r["workload"], r["required"], r["on_demand"], r["spot"]) for r in doc["on_demand_share"]] == [
        ("Deployment default/web", 4, 4, 6)
    ]


def test_plan_text_lists_each_workloads_share(tmp_path: Path) -> None:
    f = tmp_path / "in.yaml"
    f.write_text(_pool() + _deployment(annotations=SHARE))
    out = io.StringIO()
    assert main([str(f), "--output", "text"], stdout=out, stderr=io.StringIO()) == 0
    assert ("On-demand share:\n  Deployment default/web (Deployment default/web: base 2, 20%): 4 of 10 required on "
            "on-demand; 4 on-demand, 6 spot\n") in out.getvalue()
