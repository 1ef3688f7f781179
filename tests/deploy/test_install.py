"""The production install (`pip install .` without dev extras, what the Dockerfile does): the wheel
carries the templates and static files, the settings find them there, every module imported at run
time comes from a declared runtime dependency, and the deploy checks pass with documented settings.

The full path — wheel, clean virtualenv, gunicorn, every page — is `scripts/smoke_install.py`, a step
of `.ci/run`."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNTIME_PACKAGES = ("console", "packing")
_IGNORE = shutil.ignore_patterns(".git", ".venv", "var", "build", "dist", "staticfiles", "*.egg-info",
                                 "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis",
                                 "test-artifacts", ".notes", "tests")


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_names(requirements: list[str]) -> set[str]:
    return {_normalize(re.split(r"[\s\[<>=!~;(]", req, maxsplit=1)[0]) for req in requirements}


def _pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `pip wheel --no-deps` builds from (a copy of) the working tree."""
    tmp = tmp_path_factory.mktemp("wheel")
    shutil.copytree(ROOT, tmp / "src", ignore=_IGNORE)
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--disable-pip-version-check",
                             "-w", str(tmp / "dist"), str(tmp / "src")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    (built,) = (tmp / "dist").glob("loadmaster-*.whl")
    return built


def test_wheel_carries_templates_static_and_catalog(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("templates", "static"):
        files = [p.relative_to(ROOT).as_posix() for p in (ROOT / folder).rglob("*")
                 if p.is_file() and not any(part.startswith(".") or part == "__pycache__" for part in p.parts)]
        assert files, folder
        missing = [f for f in files if f"console/assets/{f}" not in names]
        assert not missing, f"the wheel lacks {missing[:5]}"
    assert "console/assets/static/console/favicon.ico" in names
    assert "packing/catalog/data/instance-types.json.gz" in names
    assert not [n for n in names if n.startswith(("tests/", "scripts/"))]


def test_wheel_requires_no_dev_extra_at_run_time(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read("loadmaster-0.1.0.dist-info/METADATA").decode()
    unconditional = [line.split(":", 1)[1].strip() for line in metadata.splitlines()
                     if line.startswith("Requires-Dist:") and "extra ==" not in line]
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    assert _requirement_names(unconditional) == _requirement_names(project["dependencies"])
    dev_only = _requirement_names(project["optional-dependencies"]["dev"]) - _requirement_names(project["dependencies"])
    assert not dev_only & _requirement_names(unconditional)


def test_installed_wheel_finds_its_templates_and_static(wheel: Path, tmp_path: Path) -> None:
    """Unpacked as site-packages would hold it, away from the checkout: the settings read the
    templates and static files from console/assets/ and keep state in the working directory."""
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    work = tmp_path / "work"
    work.mkdir()
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import django; django.setup()\n"
        "from django.conf import settings\n"
        "from django.contrib.staticfiles import finders\n"
        "from django.template.loader import get_template\n"
        "print(settings.INSTALLED_FROM_WHEEL)\n"
        "print(get_template('base.html').origin.name)\n"
        "print(finders.find('console/favicon.ico'))\n"
        "print(settings.VAR_DIR)\n"
        "print(settings.STATIC_ROOT)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOADMASTER_", "DATABASE_URL", "PYTHONPATH"))}
    env.update(DJANGO_SETTINGS_MODULE="console.settings", DEBUG="0", SECRET_KEY="x" * 60)
    result = subprocess.run([sys.executable, "-c", probe, str(site)], cwd=work, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    installed, template, favicon, var_dir, static_root = result.stdout.split()
    assert installed == "True"
    assert Path(template) == site / "console/assets/templates/base.html"
    assert Path(favicon) == site / "console/assets/static/console/favicon.ico"
    assert Path(var_dir) == work / "var"
    assert Path(static_root) == work / "staticfiles"


def _imports(tree: ast.AST) -> Iterator[str]:
    """Top-level names of absolute imports, leaving out `if TYPE_CHECKING:` blocks."""
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", "")) == "TYPE_CHECKING":
            node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]


def _settings_modules() -> set[str]:
    from django.conf import settings

    dotted = [*settings.INSTALLED_APPS, *settings.MIDDLEWARE,
              *(s["BACKEND"] for s in settings.STORAGES.values()), settings.DATABASES["default"]["ENGINE"]]
    return {name.split(".")[0] for name in dotted}


def test_runtime_imports_come_from_runtime_dependencies() -> None:
    """A module console/ or packing/ imports (or the settings name) must belong to a distribution
    listed in [project].dependencies itself — not one that only arrives through another package
    (numpy through highspy) or only with the dev extra (prometheus-client, once)."""
    declared = _requirement_names(_pyproject()["project"]["dependencies"])  # type: ignore[index]
    module_to_dists = packages_distributions()
    local = set(RUNTIME_PACKAGES)
    modules: dict[str, set[str]] = {}
    for package in RUNTIME_PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for module in _imports(ast.parse(path.read_text(), str(path))):
                modules.setdefault(module, set()).add(str(path.relative_to(ROOT)))
    for module in _settings_modules():
        modules.setdefault(module, set()).add("console/settings.py")
    undeclared = {}
    for module, where in sorted(modules.items()):
        if module in local or module in sys.stdlib_module_names:
            continue
        dists = {_normalize(d) for d in module_to_dists.get(module, [])}
        if not dists & declared:
            undeclared[module] = (sorted(dists) or ["(not installed)"], sorted(where)[:2])
    assert not undeclared, f"imported at run time but not a runtime dependency: {undeclared}"
    # The Dockerfile's and deploy/'s web server.
    assert "gunicorn" in declared


def test_check_deploy_passes_with_documented_production_settings(tmp_path: Path) -> None:
    """`manage.py check --deploy` behind a TLS-terminating proxy, with the variables docs/install.md lists."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOADMASTER_", "DATABASE_URL", "SECURE_"))}
    env.update({
        "DJANGO_SETTINGS_MODULE": "console.settings", "DEBUG": "0",
        "SECRET_KEY": "k3J9-production-like-secret-key-with-enough-characters-and-variety-0123",
        "ALLOWED_HOSTS": "loadmaster.example.com", "SECURE_COOKIES": "1", "SECURE_SSL_REDIRECT": "1",
        "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto", "SECURE_HSTS_SECONDS": "31536000",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1", "SECURE_HSTS_PRELOAD": "1",
        "LOADMASTER_VAR_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    })
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_proxy_ssl_header_must_be_a_header_name(tmp_path: Path) -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "console.settings", "DEBUG": "1",
           "LOADMASTER_VAR_DIR": str(tmp_path), "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto: https"}
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "configuration error: SECURE_PROXY_SSL_HEADER='X-Forwarded-Proto: https' is not a header name "
        "(e.g. X-Forwarded-Proto)"]


def test_dockerfile_installs_the_wheel_as_the_smoke_step_does() -> None:
    """The image is built the way `./dev.sh smoke` checks: a wheel from the build inputs, installed
    without extras, and no source tree in the final stage that could shadow the installed package."""
    stages = re.split(r"^FROM ", (ROOT / "Dockerfile").read_text(), flags=re.M)[1:]
    assert len(stages) == 2, "a build stage and the runtime stage"
    build, runtime = stages
    copied = set(re.findall(r"^COPY (?!--from)(.+) \S+$", build, flags=re.M))
    build_inputs = {word for line in copied for word in line.split()}
    assert {"pyproject.toml", "setup.py", "MANIFEST.in", "console", "packing", "templates", "static"} <= build_inputs
    assert "pip wheel --no-cache-dir --no-deps" in build
    runtime_copies = re.findall(r"^COPY (?!--from)(.+) \S+$", runtime, flags=re.M)
    assert runtime_copies == ["manage.py"]
    assert re.search(r"pip install --no-cache-dir /tmp/dist/\*\.whl\s", runtime)
    assert "collectstatic" in runtime and '"gunicorn", "console.wsgi:application"' in runtime


@pytest.mark.django_db
def test_favicon_is_served(client: object) -> None:
    from django.test import Client

    assert isinstance(client, Client)
    response = client.get("/favicon.ico", follow=True)
    assert response.status_code == 200
    assert response["Content-Type"] == "image/x-icon"
    body = b"".join(response.streaming_content)
    assert body[:4] == b"\x00\x00\x01\x00"  # an ICO file
