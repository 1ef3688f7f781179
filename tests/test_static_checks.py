"""ruff over the repository and mypy (strict) over the engine and the console's services, selectors and
adapters (pyproject.toml [tool.mypy]): part of the suite so a lint or type error fails CI like any other test."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_is_clean() -> None:
    result = run("ruff", "check", "--output-format", "concise", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_on_the_engine_and_console_services() -> None:
    result = run("mypy")   # files and strictness come from [tool.mypy] in pyproject.toml
    assert result.returncode == 0, result.stdout + result.stderr
