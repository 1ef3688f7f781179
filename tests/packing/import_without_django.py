"""Imports every module of packing/ in an interpreter where Django, its ecosystem and `console` cannot be
imported, and prints a JSON report: the modules that failed to import, and every attempt to import a blocked
package, keyed by the module whose import made it (an attempt counts even when packing catches the
ImportError). tests/packing/test_imports.py runs it as `python -m tests.packing.import_without_django`."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import json
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
# Django, the Django packages the console depends on, and the console itself
BLOCKED = frozenset({
    "console", "django", "django_filters", "drf_spectacular", "drf_spectacular_sidecar", "rest_framework", "whitenoise",
})


class Blocker(importlib.abc.MetaPathFinder):
    """First on sys.meta_path: refuses any blocked package and remembers who asked."""

    def __init__(self) -> None:
        self.attempts: list[str] = []

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.split(".")[0] in BLOCKED:
            self.attempts.append(fullname)
            raise ModuleNotFoundError(f"{fullname} is blocked: packing must not import it", name=fullname)
        return None


def packing_modules() -> list[str]:
    names = []
    for path in sorted((ROOT / "packing").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


def main() -> int:
    blocker = Blocker()
    sys.meta_path.insert(0, blocker)
    already = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    failed: dict[str, str] = {}
    attempts: dict[str, list[str]] = {}
    modules = packing_modules()
    for name in modules:
        before = len(blocker.attempts)
        try:
            importlib.import_module(name)
        except Exception:  # every failure is reported, whatever it is
            failed[name] = traceback.format_exc(limit=3)
        if len(blocker.attempts) > before:
            attempts[name] = blocker.attempts[before:]
    print(json.dumps({"modules": modules, "failed": failed, "attempts": attempts, "preloaded": already}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
