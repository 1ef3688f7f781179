"""Build hook (the project's metadata is in pyproject.toml).

The console's templates/ and static/ live at the repository root, beside the `console` and `packing`
packages rather than inside them. A wheel carries them as `console/assets/templates/` and
`console/assets/static/`, where console/settings.py looks first, so `pip install .` (no checkout at run
time) serves every page. An editable install (`pip install -e .`) reads them from the checkout instead.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# Repository-root directory → where the wheel carries it, relative to the build's package root.
ASSETS = {"templates": "console/assets/templates", "static": "console/assets/static"}


class BuildPyWithAssets(build_py):
    """build_py that also copies the root-level assets into the built `console` package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for source, target in ASSETS.items():
            root = ROOT / source
            if not root.is_dir():
                raise SystemExit(f"setup.py: {root} is missing; the wheel would have no {source}")
            for path in sorted(root.rglob("*")):
                relative = path.relative_to(root)
                if path.is_dir() or any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
                    continue
                destination = Path(self.build_lib) / target / relative
                self.mkpath(str(destination.parent))
                self.copy_file(str(path), str(destination), preserve_mode=False)


setup(cmdclass={"build_py": BuildPyWithAssets})
