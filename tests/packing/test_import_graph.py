"""The engine's modules import one another in one direction only, and the scheduling modules and the bound do so
at the top of the module.

An import cycle between modules can be hidden by moving one of its imports into a function (the bound, the
scheduler, the packer and the reasons were tied that way): the program runs, but which module may be imported
first depends on luck, and the cycle is invisible to a reader. The graph here is built from the source (AST):
top-level imports only (an `if TYPE_CHECKING:` block is for annotations and is left out), and importing
`packing.a.b` counts as importing the package `packing.a` too, since its __init__ runs first.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKING = ROOT / "packing"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(package: Path) -> dict[str, Path]:
    return {module_name(p, package.parent): p for p in sorted(package.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def top_level_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Import statements that run when the module is imported: at module level, or in a module-level `if`
    (other than `if TYPE_CHECKING:`), `try` or `with`; never those inside functions or classes."""
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                todo.extend(node.body)
            todo.extend(node.orelse)
        elif isinstance(node, ast.Try):
            todo.extend([*node.body, *node.orelse, *node.finalbody])
            for h in node.handlers:
                todo.extend(h.body)
        elif isinstance(node, ast.With):
            todo.extend(node.body)


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def import_graph(package: Path) -> dict[str, set[str]]:
    """module -> the modules of `package` its top-level imports run (with the packages they sit in)."""
    mods = modules(package)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in top_level_imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            else:
                base = _absolute(mod, is_package, node)
                targets.add(base)
                # `from packing.scheduling import reasons` imports the module packing.scheduling.reasons
                targets.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in mods)
        for t in targets:
            parts = t.split(".")
            for i in range(1, len(parts) + 1):
                dep = ".".join(parts[:i])
                # a module's own packages are already imported (or being imported) before it runs
                if dep in mods and dep != mod and not mod.startswith(dep + "."):
                    graph[mod].add(dep)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path (first node repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        path.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return path[path.index(m) :] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        path.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def test_the_engine_import_graph_has_no_cycle() -> None:
    graph = import_graph(PACKING)
    assert "packing.scheduling.solve" in graph["packing.scheduling.scheduler"]  # the graph is really built
    assert "packing.scheduling.vectors" in graph["packing.bound"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_scheduling_modules_and_the_bound_import_the_engine_at_module_level_only() -> None:
    files = [*sorted((PACKING / "scheduling").glob("*.py")), PACKING / "bound.py"]
    late: list[str] = []
    for path in files:
        tree = ast.parse(path.read_text(), str(path))
        top = {id(n) for n in top_level_imports(tree)}
        type_checking = {
            id(n)
            for node in tree.body
            if isinstance(node, ast.If) and _is_type_checking(node.test)
            for n in ast.walk(node)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in top | type_checking:
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if any(n == "packing" or n.startswith("packing.") or not n for n in names):
                    late.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert late == [], f"imports inside functions or classes: {late}"


def test_the_cycle_check_sees_a_cycle_hidden_behind_a_package_init(tmp_path: Path) -> None:
    # a imports pkg.sub.c, which runs pkg/sub/__init__ first; that imports b, and b imports a
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub.c import x\n")
    (pkg / "sub" / "__init__.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("import pkg.a\n")
    (pkg / "sub" / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.a\nx = 1\n")
    cycle = find_cycle(import_graph(pkg))
    assert cycle is not None and set(cycle) == {"pkg.a", "pkg.sub", "pkg.sub.b"}
    (pkg / "sub" / "__init__.py").write_text("")
    assert find_cycle(import_graph(pkg)) is None
