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


def console_engine_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """The engine modules a console module reaches: `from packing.X import …`, `import packing.X`, and the
    names of `from packing import …` (each a module of packing)."""
    found = [(line, module) for line, module in imported_modules(tree) if module.split(".")[0] == "packing"]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "packing":
            found = [f for f in found if f != (node.lineno, "packing")]
            found += [(node.lineno, f"packing.{alias.name}") for alias in node.names]
    return found


def test_the_console_reaches_the_engine_only_through_packing_api() -> None:
    """console/ and the loops call the engine's public API; its other modules may change shape freely."""
    offenders = []
    for path in sorted((ROOT / "console").rglob("*.py")):
        for line, module in console_engine_imports(ast.parse(path.read_text(), str(path))):
            if module != "packing.api":
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {module}")
    assert not offenders, "import these through packing.api:\n" + "\n".join(offenders)


def test_the_console_check_sees_each_way_of_importing(tmp_path: Path) -> None:
    source = (
        "from packing import api\nfrom packing.api import plan\nfrom packing import quantity\n"
        "import packing.scheduling.solve\ndef f():\n    from packing.taints import Taint\n"
    )
    found = sorted(m for _, m in console_engine_imports(ast.parse(source)))
    assert found == ["packing.api", "packing.api", "packing.quantity", "packing.scheduling.solve", "packing.taints"]
