"""No module of packing/ or console/ uses another module's `_private` name.

A name that crosses a module boundary is part of that module's interface and is public: it drops its
underscore. The test walks the AST of every module and fails on `from x import _y` and on `m._y` where `m`
is a module bound by an import (`import x.y as m`, `from x import y` when x.y is a module), so a refactor
that renames a private helper cannot silently break another module.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("packing", "console")

# Known uses in files other helpers of issue 15 are rewriting (the scheduler split, the dashboards); the lead
# empties this list at merge. Each entry is a line of violations(); the test fails when one no longer occurs, so
# that the list only shrinks.


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_project_module(name: str, root: Path) -> bool:
    rel = Path(*name.split("."))
    return (root / rel.with_suffix(".py")).is_file() or (root / rel / "__init__.py").is_file()


def _is_module(name: str, root: Path, packages: tuple[str, ...]) -> bool:
    if name.split(".")[0] in packages:
        return _is_project_module(name, root)
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _absolute(module: str | None, level: int, here: str, is_package: bool) -> str:
    if level == 0:
        return module or ""
    base = here.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _dotted(node: ast.expr) -> list[str] | None:
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    names.append(node.id)
    return names[::-1]


def _file_violations(path: Path, root: Path, packages: tuple[str, ...]) -> Iterator[str]:
    here = _module_name(path, root)
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    rel = path.relative_to(root).as_posix()
    modules: dict[str, str] = {}  # a name bound to a module -> the module's full name
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    modules[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    modules[top] = top
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node.module, node.level, here, path.name == "__init__.py")
            if source == "__future__":
                continue
            for alias in node.names:
                if _private(alias.name):
                    yield f"{rel}: {alias.name} (from {source})"
                elif source.split(".")[0] in packages and _is_module(f"{source}.{alias.name}", root, packages):
                    modules[alias.asname or alias.name] = f"{source}.{alias.name}"
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not _private(node.attr):
            continue
        chain = _dotted(node.value)
        if chain is None or chain[0] not in modules:
            continue
        target = ".".join([modules[chain[0]], *chain[1:]])
        if target != here and _is_module(target, root, packages):
            yield f"{rel}: {node.attr} (attribute of {target})"


def violations(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    found: set[str] = set()
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            found.update(_file_violations(path, root, packages))
    return sorted(found)


def test_no_module_uses_another_modules_private_names() -> None:
    found = set(violations())
    new = sorted(found)
    assert not new, "private names used across modules (make them public):\n" + "\n".join(new)


def test_the_walk_sees_each_way_of_reaching_a_private_name(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    for path in ("__init__.py", "sub/__init__.py", "sub/mod.py"):
        (pkg / path).write_text("_hidden = 1\nshown = 2\n")
    (pkg / "a.py").write_text(
        "from pkg.sub.mod import _hidden, shown\n"          # a private name imported
        "from .sub import mod\n"                            # a module bound by a relative import...
        "import pkg.sub.mod as alias\n"
        "import pkg.sub.mod\n"
        "def f(self):\n"
        "    from pkg.sub import _hidden as h\n"           # ... inside a function too
        "    return mod._hidden, alias._hidden, pkg.sub.mod._hidden, self._hidden, shown, mod.shown, _local\n"
        "_local = 3\n"
    )
    (pkg / "sub" / "mod.py").write_text("_hidden = 1\nimport pkg.sub.mod as me\nx = me._hidden\n")  # its own: fine
    assert violations(tmp_path, ("pkg",)) == [
        "pkg/a.py: _hidden (attribute of pkg.sub.mod)",
        "pkg/a.py: _hidden (from pkg.sub)",
        "pkg/a.py: _hidden (from pkg.sub.mod)",
    ]
