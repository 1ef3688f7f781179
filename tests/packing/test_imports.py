"""The engine stands alone: no module of packing/ imports Django (or a Django package the console uses) or the
console — read from the source, every import statement including those inside functions and under
TYPE_CHECKING, and tried for real, importing every module with those packages made unimportable."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from tests.packing.import_without_django import BLOCKED, packing_modules

ROOT = Path(__file__).resolve().parents[2]
PACKING = ROOT / "packing"


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """Every absolute module name the tree imports: import and from-import statements anywhere, and calls of
    importlib.import_module / __import__ with a literal name."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                found.append((node.lineno, node.args[0].value))
    return found


def test_no_packing_source_imports_django_or_console() -> None:
    offenders = []
    for path in sorted(PACKING.rglob("*.py")):
        for line, module in imported_modules(ast.parse(path.read_text(), str(path))):
            if module.split(".")[0] in BLOCKED:
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not offenders, offenders


def test_the_source_check_sees_imports_inside_functions() -> None:
    tree = ast.parse(
        "import os\n"
        "def f():\n    from django.conf import settings\n"
        "if TYPE_CHECKING:\n    import console.fleet\n"
        "importlib.import_module('rest_framework')\n"
        "from . import sibling\n"
    )
    assert [m for _, m in imported_modules(tree)] == ["os", "django.conf", "console.fleet", "rest_framework"]


def test_every_packing_module_imports_with_django_unimportable() -> None:
    done = subprocess.run([sys.executable, "-m", "tests.packing.import_without_django"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["preloaded"] == []
    assert report["modules"] == packing_modules() and "packing.scheduling.scheduler" in report["modules"]
    assert report["attempts"] == {}
    assert report["failed"] == {}, "\n".join(report["failed"].values())
