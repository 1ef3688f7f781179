"""With CI set, every folder of the suite runs under Hypothesis' `ci` profile, as the README says: only the root
conftest registers and loads profiles, and no conftest or test module loaded after it switches to another.

A profile loaded while one folder is collected stays loaded for the rest of the run (every test runs after the
whole collection), so the check collects the whole suite in a fresh interpreter and records the loaded profile as
each test module is collected."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
PROFILE_CALLS = {"register_profile", "load_profile"}


class ProfileRecorder:
    """A pytest plugin: the Hypothesis profile loaded when each test module has been collected."""

    def __init__(self) -> None:
        self.profiles: dict[str, str] = {}

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.nodeid.endswith(".py"):
            self.profiles[report.nodeid] = settings._current_profile or ""


def record_profiles(out: str) -> None:
    """Collect the whole suite (run in a subprocess) and write {test module: loaded profile} to `out`."""
    recorder = ProfileRecorder()
    code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", str(TESTS)], plugins=[recorder])
    Path(out).write_text(json.dumps({"exit": int(code), "profiles": recorder.profiles}))


def test_only_the_root_conftest_registers_or_loads_profiles() -> None:
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in PROFILE_CALLS and path != TESTS / "conftest.py":
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.attr}")
    assert not offenders, offenders


def test_with_ci_set_every_folder_runs_the_ci_profile(tmp_path: Path) -> None:
    out = tmp_path / "profiles.json"
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_PROFILE" and not k.startswith("PYTEST_")}
    env["CI"] = "1"
    script = f"from tests.test_hypothesis_profiles import record_profiles; record_profiles({str(out)!r})"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert out.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.read_text())
    assert result["exit"] == 0, done.stdout[-3000:]
    profiles: dict[str, str] = result["profiles"]
    folders = {str(p.parent.relative_to(ROOT)) for p in TESTS.rglob("test_*.py")}
    assert {str(Path(m).parent) for m in profiles} == folders
    assert {m: p for m, p in profiles.items() if p != "ci"} == {}
