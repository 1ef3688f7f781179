"""Bounded fuzzing of `python -m packing plan` and `consolidate`: whatever the files hold, the exit contract holds.

Exit 0 (stdout is the JSON report), or exit 2 with exactly one line on stderr and no traceback; never exit 1
("planning failed"), a crash, or a run that eats memory. Each example runs both commands in-process on files in
a temporary directory, under tracemalloc (a bounded peak) and a hypothesis deadline (bounded time). Every input
that once broke the contract is kept in tests/fuzz/regressions.py and replayed here first.
"""

from __future__ import annotations

import io
import json
import tempfile
import tracemalloc
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from packing.disruption.cli import main as consolidate_main
from packing.plan_cli import main as plan_main
from tests.fuzz.documents import cluster_texts
from tests.fuzz.regressions import BASE, CASES, Case

MAX_PEAK_BYTES = 256 * 2**20  # one command on a fuzz-sized input: a few MB; an alias bomb once needed gigabytes
AT = "2026-12-01T00:00:00Z"
# A fixed catalog beside every input, so a mutation that removes the input's InstanceTypes does not switch to the
# 1,366-type built-in catalog (slow, and not what is being tested); its names differ from the input's.
CATALOG = """apiVersion: loadmaster.dev/v1alpha1
kind: InstanceType
metadata: {name: fixed-4x}
spec:
  capacity: {cpu: "4", memory: 16Gi, pods: "58"}
  labels: {kubernetes.io/arch: amd64, kubernetes.io/os: linux}
  offerings:
  - {zone: us-east-1a, capacityType: on-demand, price: 0.19}
  - {zone: us-east-1b, capacityType: spot, price: 0.07}
"""

Main = Callable[..., int]
COMMANDS: dict[str, tuple[Main, tuple[str, ...]]] = {
    "plan": (plan_main, ()),
    "consolidate": (consolidate_main, ("--at", AT)),
}


def run(command: str, files: dict[str, str], extra: tuple[str, ...] = ()) -> tuple[int, str, str, int]:
    """(exit code, stdout, stderr, peak traced bytes) of one command over `files` (name -> text)."""
    main, args = COMMANDS[command]
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, text in files.items():
            path = Path(tmp) / name
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
            paths.append(str(path))
        out, err = io.StringIO(), io.StringIO()
        tracemalloc.start()
        try:
            # the first file is the catalog
            code = main([*paths[1:], "--catalog", paths[0], *args, *extra], stdout=out, stderr=err)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    return code, out.getvalue(), err.getvalue(), peak


def check_contract(command: str, code: int, out: str, err: str, peak: int) -> None:
    assert "Traceback" not in err, err
    assert code in (0, 2), f"{command} exited {code}: {err.strip()[:500]}"
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1, f"{command}: {len(lines)} lines on stderr: {err[:500]}"
        assert len(lines[0]) < 1000, f"{command}: a {len(lines[0])}-character message"
        assert out == ""
    else:
        json.loads(out)
    assert peak < MAX_PEAK_BYTES, f"{command}: {peak / 2**20:.0f} MB at peak"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_regressions(case: Case) -> None:
    for command in case.commands:
        code, out, err, peak = run(command, {"catalog.yaml": CATALOG, "base.yaml": BASE, "case.yaml": case.text},
                                   case.args)
        check_contract(command, code, out, err, peak)
        assert code == case.code, f"{command}: {err.strip()}"
        assert case.message in err, f"{command}: {err.strip()}"


@settings(deadline=timedelta(seconds=30), suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
          max_examples=min(settings().max_examples, 40))
@given(text=cluster_texts())
def test_fuzz_plan_and_consolidate(text: str) -> None:
    for command in COMMANDS:
        check_contract(command, *run(command, {"catalog.yaml": CATALOG, "in.yaml": text}))
