"""The console's apps import one way: no cycle between the Django apps of console/.

Every import counts — module level, inside functions, under ``if TYPE_CHECKING:`` — read from the
source with ast, so an import moved into a function to dodge a cycle at import time is still seen.
Shared modules that are not apps (console/adapters.py, console/backends/, console/access.py …) are
passed through: an app importing one imports whatever that module imports."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

CONSOLE = Path(__file__).resolve().parents[2] / "console"


def _component(path: Path) -> str:
    """The app package or top-level module of console/ a file belongs to."""
    rel = path.relative_to(CONSOLE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _apps() -> set[str]:
    return {p.name for p in CONSOLE.iterdir() if (p / "apps.py").is_file()}


def _imported(node: ast.AST, package: list[str]) -> list[str]:
    """The console modules an import statement names (console.x.y, relative imports resolved)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        parts = package[: len(package) - node.level + 1]
        base = ".".join([*parts, base] if base else parts)
    # `from console import adapters` imports the module console.adapters.
    return [base, *(f"{base}.{a.name}" for a in node.names)]


def import_sites() -> dict[tuple[str, str], list[str]]:
    """(importing component, imported component) -> "file:line" of every import between two."""
    sites: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(CONSOLE.rglob("*.py")):
        package = ["console", *path.relative_to(CONSOLE).parent.parts]
        source = _component(path)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for module in _imported(node, package):
                parts = module.split(".")
                if parts[0] != "console" or len(parts) < 2:
                    continue
                target = parts[1]
                where = f"{path.relative_to(CONSOLE.parent)}:{getattr(node, 'lineno', 0)}"
                known = (CONSOLE / target).is_dir() or (CONSOLE / f"{target}.py").is_file()
                if target != source and known and where not in sites[(source, target)]:
                    sites[(source, target)].append(where)
    return sites


def app_graph() -> dict[str, set[str]]:
    """App -> the apps it imports, directly or through shared modules that are not apps."""
    apps = _apps()
    direct: dict[str, set[str]] = defaultdict(set)
    for source, target in import_sites():
        direct[source].add(target)
    graph: dict[str, set[str]] = {}
    for app in apps:
        reached: set[str] = set()
        todo = list(direct[app])
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            if name in apps:
                reached.add(name)
            else:
                todo += direct[name]
        graph[app] = reached - {app}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every elementary cycle's members, one list per strongly connected component of two or more."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = []
            while True:
                w = stack.pop()
                members.append(w)
                if w == v:
                    break
            if len(members) > 1:
                out.append(sorted(members))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_console_apps_import_one_way() -> None:
    graph = app_graph()
    found = cycles(graph)
    sites = import_sites()
    detail = "\n".join(f"  {a} -> {b}: {', '.join(sites.get((a, b), ['(through a shared module)'])[:4])}"
                       for members in found for a in members for b in sorted(graph[a] & set(members)))
    assert not found, f"the console's apps import each other in a cycle: {found}\n{detail}"


def test_telemetry_imports_no_other_app() -> None:
    # Everyone reads telemetry (control, dashboards, alerts, the NodePool pages): it must not read them.
    assert app_graph()["telemetry"] == set()


def test_the_graph_sees_function_level_and_relative_imports(tmp_path: Path) -> None:
    tree = ast.parse("def f():\n    from console.fleet.models import NodePool\nfrom .models import X\nfrom console import adapters\n")
    names = [m for node in ast.walk(tree) for m in _imported(node, ["console", "alerts"])]
    assert "console.fleet.models" in names and "console.alerts.models" in names and "console.adapters" in names
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
