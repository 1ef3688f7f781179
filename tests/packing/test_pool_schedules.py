"""NodePool clock policies (annotation loadmaster.dev/schedules): windows that change limits, the consolidation
policy or static replicas while open, honoured by `plan --at` and `consolidate --at`, and refused at the field
when malformed."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from packing.disruption.cli import main as consolidate_main
from packing.fields import FieldError
from packing.kubeobjects import Inputs, parse_documents
from packing.plan_cli import main as plan_main
from packing.poolschedule import open_windows, parse_windows, pools_at
from tests.disruption.test_cli import CATALOG, node_doc, pod_doc

MONDAY_NOON = "2026-11-30T12:00:00Z"  # a Monday
MONDAY_NIGHT = "2026-11-30T22:00:00Z"
SATURDAY_NOON = "2026-12-05T12:00:00Z"


def pool_doc(schedules: str, *, replicas: str = "", policy: str = "WhenEmptyOrUnderutilized") -> str:
    indented = "\n".join(f"        {line}" for line in schedules.strip().splitlines())
    return f"""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
  annotations:
    loadmaster.dev/schedules: |
{indented}
spec:
{replicas}
  template:
    spec:
      requirements:
      - {{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}}
      nodeClassRef: {{name: default}}
      expireAfter: 720h
  disruption:
    consolidationPolicy: {policy}
    consolidateAfter: 1m
    budgets:
    - nodes: "100%"
"""


BUSINESS_HOURS = """
- name: business-hours
  schedule: "0 8 * * mon-fri"
  duration: 10h
  consolidationPolicy: WhenEmpty
- name: night-cap
  schedule: "0 20 * * *"
  duration: 4h
  limits: {cpu: "2"}
"""


def pending_pod(name: str, cpu: str) -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  containers:
  - name: c
    resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}
"""


def run(main: object, args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(args, stdout=out, stderr=err)  # type: ignore[operator]
    return code, out.getvalue(), err.getvalue()


def files(tmp_path: Path, *docs: str) -> list[str]:
    (tmp_path / "catalog.yaml").write_text(CATALOG)
    (tmp_path / "cluster.yaml").write_text("---".join(docs))
    return [str(tmp_path / "cluster.yaml"), "--catalog", str(tmp_path / "catalog.yaml")]


def test_windows_open_and_close_with_the_schedule() -> None:
    inp = Inputs()
    parse_documents(pool_doc(BUSINESS_HOURS), "pools.yaml", inp)
    (pool,) = inp.nodepools
    assert [w.name for w in pool.windows] == ["business-hours", "night-cap"]
    at = datetime(2026, 11, 30, 12, tzinfo=UTC)
    (opened,) = open_windows(pool, at)
    assert (opened.name, opened.start.hour, opened.end.hour) == ("business-hours", 8, 18)
    assert open_windows(pool, datetime(2026, 12, 5, 12, tzinfo=UTC)) == []  # Saturday
    night = datetime(2026, 12, 1, 23, 30, tzinfo=UTC)
    (effective,), (w,) = pools_at([pool], night)
    assert w.name == "night-cap" and effective.limits == {"cpu": 2000} and pool.limits is None
    same, none = pools_at([pool], datetime(2026, 12, 5, 12, tzinfo=UTC))
    assert same[0] is pool and none == []


def test_a_later_window_wins_where_two_set_the_same_field() -> None:
    inp = Inputs()
    parse_documents(pool_doc("""
- {schedule: "0 0 * * *", duration: 24h, limits: {cpu: "10"}}
- {schedule: "0 9 * * *", duration: 1h, limits: {cpu: "4"}}
"""), "pools.yaml", inp)
    (pool,) = inp.nodepools
    assert pools_at([pool], datetime(2026, 12, 1, 9, 30, tzinfo=UTC))[0][0].limits == {"cpu": 4000}
    assert pools_at([pool], datetime(2026, 12, 1, 11, tzinfo=UTC))[0][0].limits == {"cpu": 10000}


def test_plan_at_honours_the_window_limit(tmp_path: Path) -> None:
    args = files(tmp_path, pool_doc(BUSINESS_HOURS), pending_pod("a", "1"), pending_pod("b", "2"))
    code, out, err = run(plan_main, [*args, "--at", MONDAY_NIGHT])
    assert code == 0, err
    doc = json.loads(out)
    assert doc["summary"]["scheduled"] == 1 and doc["summary"]["unschedulable"] == 1
    (window,) = doc["schedules"]
    assert window == {"nodepool": "default", "window": "night-cap", "from": "2026-11-30T20:00:00Z",
                      "until": "2026-12-01T00:00:00Z", "limits": {"cpu": "2"}}
    assert "limit" in json.dumps(doc["unschedulable"])
    code, out, _ = run(plan_main, [*args, "--at", MONDAY_NOON])
    doc = json.loads(out)
    assert doc["summary"]["unschedulable"] == 0 and doc["schedules"][0]["window"] == "business-hours"
    code, out, _ = run(plan_main, [*args, "--at", SATURDAY_NOON, "--output", "text"])
    assert code == 0 and "Clock-policy windows" not in out
    code, out, _ = run(plan_main, [*args, "--at", MONDAY_NIGHT, "--output", "text"])
    assert "window night-cap open 2026-11-30T20:00:00Z to 2026-12-01T00:00:00Z (limits {'cpu': '2'})" in out


def test_consolidate_at_takes_the_window_policy(tmp_path: Path) -> None:
    # n1's pod fits on n2: an underutilized delete, unless a WhenEmpty window is open
    args = files(tmp_path, pool_doc(BUSINESS_HOURS), node_doc("n1"), node_doc("n2"),
                 pod_doc("web-1", "n1", "1"), pod_doc("web-2", "n2", "1"))
    code, out, err = run(consolidate_main, [*args, "--at", MONDAY_NOON])
    assert code == 0, err
    doc = json.loads(out)
    assert doc["actions"] == [] and doc["schedules"][0]["consolidationPolicy"] == "WhenEmpty"
    code, out, _ = run(consolidate_main, [*args, "--at", SATURDAY_NOON])
    doc = json.loads(out)
    assert [a["reason"] for a in doc["actions"]] == ["underutilized"] and "schedules" not in doc


def test_a_static_pools_window_changes_its_replicas() -> None:
    inp = Inputs()
    parse_documents(pool_doc("""
- {name: peak, schedule: "0 8 * * *", duration: 2h, replicas: 6, limits: {nodes: "8"}}
""", replicas="  replicas: 2"), "pools.yaml", inp)
    (pool,) = inp.nodepools
    (peak,), _ = pools_at([pool], datetime(2026, 12, 1, 9, tzinfo=UTC))
    assert (pool.replicas, peak.replicas, peak.limits) == (2, 6, {"nodes": 8000})


@pytest.mark.parametrize(("text", "static", "field", "message"), [
    ("- {schedule: '0 8 * * *'}", False, "[0].duration", "is required"),
    ("- {schedule: '0 8 * *', duration: 1h, limits: {cpu: '1'}}", False, "[0].schedule", "must have 5 fields"),
    ("- {schedule: '0 8 * * *', duration: 0s, limits: {cpu: '1'}}", False, "[0].duration", "positive"),
    ("- {schedule: '0 8 * * *', duration: 1h}", False, "[0]", "changes nothing"),
    ("- {schedule: '0 8 * * *', duration: 1h, consolidationPolicy: Sometimes}", False, "[0].consolidationPolicy",
     "must be one of"),
    ("- {schedule: '0 8 * * *', duration: 1h, replicas: 3}", False, "[0].replicas", "only a static NodePool"),
    ("- {schedule: '0 8 * * *', duration: 1h, limits: {cpu: '4'}}", True, "[0].limits", "only nodes"),
    ("- {schedule: '0 8 * * *', duration: 1h, limits: {cpu: '-4'}}", False, "[0].limits.cpu", "negative"),
    ("- {schedule: '0 8 * * *', duration: 1h, limits: {cpu: '1'}, when: now}", False, "[0].when", "unknown field"),
    ("- {name: a, schedule: '0 8 * * *', duration: 1h, limits: {cpu: '1'}}\n"
     "- {name: a, schedule: '0 9 * * *', duration: 1h, limits: {cpu: '1'}}", False, "[1].name", "earlier window"),
    ("{schedule: x}", False, "", "must be a list"),
    ("- [unclosed", False, "", "is not YAML"),
])
def test_bad_windows_are_refused_at_the_field(text: str, static: bool, field: str, message: str) -> None:
    path = "metadata.annotations[loadmaster.dev/schedules]"
    with pytest.raises(FieldError) as e:
        parse_windows(text, static=static, path=path)
    assert e.value.path == path + field and message in str(e.value)


def test_the_cli_names_file_document_and_field(tmp_path: Path) -> None:
    args = files(tmp_path, pool_doc("- {schedule: '0 8 * * *', duration: 1h, limits: {cpu: lots}}"))
    code, _, err = run(plan_main, args)
    assert code == 2
    assert "cluster.yaml" in err and "metadata.annotations[loadmaster.dev/schedules][0].limits.cpu" in err
    code, _, err = run(plan_main, [*args, "--at", "yesterday"])
    assert code == 2 and "--at: invalid time" in err
