"""Node repair's policies and its settings: the AWS provider's defaults, the operator's
LOADMASTER_NODE_REPAIR_POLICIES read strictly, and the node conditions both backends hand over."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from console.backends.kubernetes import node_conditions
from console.repair_policy import (
    DEFAULT_POLICIES,
    ConditionStatus,
    RepairPolicy,
    condition_parse,
    duration_parse,
    duration_text,
    policies_parse,
)

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_are_the_aws_providers_policies() -> None:
    got = {(p.condition_type, p.condition_status.value): p.toleration for p in DEFAULT_POLICIES}
    assert got == {("Ready", "False"): timedelta(minutes=30), ("Ready", "Unknown"): timedelta(minutes=30),
                   ("AcceleratedHardwareReady", "False"): timedelta(minutes=10),
                   ("StorageReady", "False"): timedelta(minutes=30), ("NetworkingReady", "False"): timedelta(minutes=30),
                   ("KernelReady", "False"): timedelta(minutes=30),
                   ("ContainerRuntimeReady", "False"): timedelta(minutes=30)}


def test_operator_policies_add_to_and_override_the_defaults() -> None:
    policies = policies_parse("DiskPressure=True:10m, Ready=False:1h30m,example.com/GPUHealthy=False:90s")
    by_key = {p.key: p.toleration for p in policies}
    assert by_key[("DiskPressure", ConditionStatus.TRUE)] == timedelta(minutes=10)
    assert by_key[("Ready", ConditionStatus.FALSE)] == timedelta(minutes=90)          # replaced, not added
    assert by_key[("Ready", ConditionStatus.UNKNOWN)] == timedelta(minutes=30)        # untouched default
    assert by_key[("example.com/GPUHealthy", ConditionStatus.FALSE)] == timedelta(seconds=90)
    assert len(policies) == len(DEFAULT_POLICIES) + 2
    assert policies[0] == RepairPolicy("Ready", ConditionStatus.FALSE, timedelta(minutes=90))   # keeps its place


@pytest.mark.parametrize(("text", "message"), [
    ("", "is set but empty"),
    ("DiskPressure=True", "is not Type=Status:duration"),
    ("DiskPressure:10m", "is not Type=Status:duration"),
    ("DiskPressure=true:10m", "status 'true' must be True, False or Unknown"),
    ("Disk Pressure=True:10m", "is not a condition name"),
    ("DiskPressure=True:10", "is not like 30m"),
    ("DiskPressure=True:0m", "must be more than zero"),
    ("DiskPressure=True:1.5h", "is not like 30m"),
    ("DiskPressure=True:10m,", "empty entry"),
    ("DiskPressure=True:10m,DiskPressure=True:5m", "DiskPressure=True is given twice"),
])
def test_bad_policies_are_refused_naming_the_entry(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        policies_parse(text)


def test_durations_and_conditions() -> None:
    assert duration_parse("1h30m") == timedelta(minutes=90) and duration_text(timedelta(minutes=90)) == "1h30m"
    assert duration_text(timedelta(minutes=30)) == "30m" and duration_text(timedelta(seconds=45)) == "45s"
    assert condition_parse("Ready=Unknown") == ("Ready", ConditionStatus.UNKNOWN)
    with pytest.raises(ValueError, match="is not Type=Status"):
        condition_parse("Ready")


def _settings_process(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("LOADMASTER_NODE_REPAIR")
            and k not in ("DEBUG", "DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    base.update({"DJANGO_SETTINGS_MODULE": "console.settings", "LOADMASTER_VAR_DIR": str(tmp_path),
                 "SECRET_KEY": "x" * 50, **env})
    return subprocess.run([sys.executable, "-c", "import django; from django.conf import settings; "
                           "print(settings.LOADMASTER_NODE_REPAIR, len(settings.LOADMASTER_NODE_REPAIR_POLICIES))"],
                          env=base, cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_settings_off_by_default_and_strict_at_start(tmp_path: Path) -> None:
    default = _settings_process({}, tmp_path)
    assert default.returncode == 0 and default.stdout.split() == ["False", str(len(DEFAULT_POLICIES))]
    on = _settings_process({"LOADMASTER_NODE_REPAIR": "1", "LOADMASTER_NODE_REPAIR_POLICIES": "DiskPressure=True:10m"},
                           tmp_path)
    assert on.returncode == 0 and on.stdout.split() == ["True", str(len(DEFAULT_POLICIES) + 1)]
    bad = _settings_process({"LOADMASTER_NODE_REPAIR_POLICIES": "DiskPressure=yes:10m"}, tmp_path)
    assert bad.returncode != 0
    assert "LOADMASTER_NODE_REPAIR_POLICIES='DiskPressure=yes:10m' entry 'DiskPressure=yes:10m': status 'yes'" in bad.stderr
    bad_flag = _settings_process({"LOADMASTER_NODE_REPAIR": "maybe"}, tmp_path)
    assert bad_flag.returncode != 0 and "LOADMASTER_NODE_REPAIR='maybe' is not a boolean" in bad_flag.stderr


def test_node_conditions_read_the_transition_time() -> None:
    node = {"status": {"conditions": [
        {"type": "Ready", "status": "False", "reason": "KubeletNotReady", "lastTransitionTime": "2026-01-05T12:00:00Z"},
        {"type": "DiskPressure", "status": "True", "lastTransitionTime": "not a time"},
        {"status": "True"},                                   # no type: ignored
    ]}}
    got = node_conditions(node)
    assert set(got) == {"Ready", "DiskPressure"}
    assert got["Ready"].since == datetime(2026, 1, 5, 12, 0, tzinfo=UTC) and got["Ready"].reason == "KubeletNotReady"
    assert got["DiskPressure"].since is None
    assert node_conditions({}) == {}
