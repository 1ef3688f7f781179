#!/usr/bin/env python3
"""Smoke test of the production install: the wheel, without dev extras, in a clean virtualenv.

    python3.11 scripts/smoke_install.py [--keep]

What .ci/run and the Dockerfile do, outside Docker:

1. copy the working tree to a temporary directory and build a wheel from it (`pip wheel --no-deps`;
   an in-tree build would leave build/ and stale copies of modules in the checkout);
2. create a clean virtualenv and `pip install` the wheel into it (runtime dependencies only);
3. run this script again with that virtualenv's python (`--check`), from a directory that holds
   nothing but a copy of manage.py (as the image's /app), so nothing is imported from the checkout:
   `migrate` on a fresh SQLite database, `check --deploy --fail-level WARNING` with production
   settings (DEBUG off, a generated SECRET_KEY, Secure cookies, HTTPS redirect behind a
   TLS-terminating proxy, HSTS), `collectstatic`, `demo_setup` and a few simulation ticks; then
   gunicorn on 127.0.0.1 serves, to the demo operator, every page and API endpoint of the URL conf
   (parameters filled from the demo's objects), every static asset those pages reference,
   `/favicon.ico`, the 404 page, and `/metrics` with the bearer token.

Any failure exits 1 with what failed; `--keep` leaves the temporary directory for a look.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

REPO = Path(__file__).resolve().parent.parent
# Not part of what a wheel is built from (and large, or another process's state).
_COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "var", "build", "dist", "staticfiles", "*.egg-info", "__pycache__", ".pytest_cache",
    ".mypy_cache", ".ruff_cache", ".hypothesis", "test-artifacts", ".notes", "node_modules",
)
HOST = "127.0.0.1"
_STARTED = time.monotonic()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--check", metavar="WORKDIR", help=argparse.SUPPRESS)  # inner run, clean venv
    parser.add_argument("--t0", type=float, help=argparse.SUPPRESS)  # the outer run's start (time.time())
    args = parser.parse_args()
    if args.t0:
        global _STARTED
        _STARTED -= time.time() - args.t0
    if args.check:
        return check_install(Path(args.check))
    return build_and_check(keep=args.keep)


# --- outer run: build, install, hand over -------------------------------------------------------------


def build_and_check(*, keep: bool) -> int:
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="loadmaster-smoke-"))
    try:
        src, dist, env_dir, work = tmp / "src", tmp / "dist", tmp / "venv", tmp / "work"
        shutil.copytree(REPO, src, ignore=_COPY_IGNORE)
        _step(f"clean virtualenv in {env_dir}")
        _run([sys.executable, "-m", "venv", str(env_dir)])
        pip = [str(env_dir / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
        _step("pip wheel --no-deps (the wheel the Dockerfile builds)")
        _run([*pip, "wheel", "--no-deps", "-w", str(dist), str(src)], quiet_warnings=True)
        wheels = sorted(dist.glob("loadmaster-*.whl"))
        if len(wheels) != 1:
            return _fail(f"expected one loadmaster wheel in {dist}, found {[w.name for w in wheels]}")
        _step(f"pip install {wheels[0].name} (runtime dependencies only, no dev extras)")
        # --no-compile: bytecode only for what runs (half the files, and removing them takes a while).
        _run([*pip, "install", "--no-compile", str(wheels[0])], quiet_warnings=True)
        work.mkdir()
        shutil.copy2(src / "manage.py", work / "manage.py")
        script = tmp / "smoke_install.py"
        shutil.copy2(Path(__file__), script)
        # -I: neither the script's directory nor PYTHONPATH nor the user's site-packages on sys.path.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "DJANGO_", "VIRTUAL_ENV"))}
        code = subprocess.call([str(env_dir / "bin" / "python"), "-I", str(script), "--check", str(work),
                                "--t0", str(time.time() - (time.monotonic() - _STARTED))], cwd=work, env=env)
    except subprocess.CalledProcessError as exc:
        code = _fail(f"{' '.join(map(str, exc.cmd))} exited {exc.returncode}")
    finally:
        if keep:
            print(f"smoke_install: kept {tmp}")
        else:
            _step(f"removing {tmp}")
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"smoke_install: {'passed' if code == 0 else 'FAILED'} in {time.monotonic() - started:.0f} s", flush=True)
    return code


def _step(text: str) -> None:
    print(f"smoke_install [{time.monotonic() - _STARTED:5.1f} s] {text}", flush=True)


def _run(cmd: list[str], *, quiet_warnings: bool = False, **kwargs: Any) -> str:
    """Run a command; on failure print its output. pip's notes about this machine's absent local
    index folders are dropped (CONTRIBUTING: harmless)."""
    proc = subprocess.run(cmd, text=True, capture_output=True, **kwargs)
    out = f"{proc.stdout}{proc.stderr}"
    if quiet_warnings:
        out = "\n".join(line for line in out.splitlines() if "is ignored: it is neither a file nor a directory" not in line)
    if proc.returncode != 0:
        print(out, file=sys.stderr)
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return out


def _fail(text: str) -> int:
    print(f"smoke_install: FAIL {text}", file=sys.stderr, flush=True)
    return 1


# --- inner run: the installed console ----------------------------------------------------------------


def production_env(work: Path, port: int, metrics_token: str) -> dict[str, str]:
    """Production settings as docs/install.md documents them, behind a TLS proxy."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOADMASTER_", "DATABASE_URL", "CELERY_"))}
    env.update({
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": f"{HOST},localhost",
        "CSRF_TRUSTED_ORIGINS": f"https://{HOST}:{port}",
        "SECURE_COOKIES": "1",
        "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto",
        "SECURE_SSL_REDIRECT": "1",
        "SECURE_HSTS_SECONDS": "31536000",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
        "SECURE_HSTS_PRELOAD": "1",
        "DATABASE_URL": f"sqlite:///{work / 'loadmaster.sqlite3'}",
        "LOADMASTER_VAR_DIR": str(work / "var"),
        "LOADMASTER_STATIC_ROOT": str(work / "staticfiles"),
        "LOADMASTER_METRICS_TOKEN": metrics_token,
        "LOG_LEVEL": "WARNING",
    })
    return env


class Failures:
    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, text: str) -> None:
        print(f"  FAIL {text}", flush=True)
        self.items.append(text)


def check_install(work: Path) -> int:
    failures = Failures()
    python = sys.executable
    origin_of = _run([python, "-c", "import console, packing; print(console.__file__); print(packing.__file__)"],
                     cwd=work).split()
    for module_file in origin_of:
        if not Path(module_file).resolve().is_relative_to(Path(sys.prefix).resolve()):
            return _fail(f"{module_file} is not inside the clean virtualenv {sys.prefix}")
    port = _free_port()
    token = secrets.token_urlsafe(24)
    env = production_env(work, port, token)
    manage = [python, "manage.py"]
    try:
        _step("migrate (fresh SQLite database)")
        _run([*manage, "migrate", "--noinput"], cwd=work, env=env)
        _step("check --deploy --fail-level WARNING (DEBUG off, production settings)")
        print(_indent(_run([*manage, "check", "--deploy", "--fail-level", "WARNING"], cwd=work, env=env)))
        _step("collectstatic")
        _run([*manage, "collectstatic", "--noinput"], cwd=work, env=env)
        for asset in ("console/console.css", "console/favicon.ico", "admin/css/base.css",
                      "drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css"):
            if not (work / "staticfiles" / asset).is_file():
                failures.add(f"collectstatic did not write {asset}")
        _step("demo_setup and simulation ticks (objects for the detail pages)")
        _run([*manage, "demo_setup"], cwd=work, env=env)
        _run([*manage, "simulation", "tick", "--times", "12", "--step", "10"], cwd=work, env=env)
    except subprocess.CalledProcessError as exc:
        return _fail(f"{' '.join(map(str, exc.cmd))} exited {exc.returncode}")
    password = (work / "var" / "demo-password").read_text().strip()

    log = work / "gunicorn.log"
    _step(f"gunicorn console.wsgi on {HOST}:{port}")
    with log.open("w") as log_file:
        server = subprocess.Popen(
            [str(Path(python).parent / "gunicorn"), "console.wsgi:application", "--bind", f"{HOST}:{port}",
             "--workers", "2", "--timeout", "120"],  # no access log: the log holds only errors
            cwd=work, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        if not _wait_for_port(port, server):
            print(log.read_text(), file=sys.stderr)
            return _fail("gunicorn did not start")
        os.environ.update(env)
        _step("every page, API endpoint and static asset as the demo operator")
        crawl(port=port, password=password, metrics_token=token, failures=failures)
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
    if failures.items:
        errors = [line for line in log.read_text().splitlines() if " [INFO] " not in line]
        print(f"gunicorn log ({log}), last lines:\n" + _indent("\n".join(errors[-60:]) or "(empty)"),
              file=sys.stderr)
        return _fail(f"{len(failures.items)} check(s) failed:\n" + _indent("\n".join(failures.items)))
    return 0


@dataclass
class Response:
    status: int
    headers: http.client.HTTPMessage
    body: bytes
    path: str
    history: list[tuple[int, str]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def header(self, name: str) -> str:
        return self.headers.get(name, "")


class Client:
    """HTTP on loopback as a TLS-terminating proxy forwards it (X-Forwarded-Proto: https), keeping
    cookies by hand: they are Secure, which http.cookiejar would never send over plain HTTP."""

    def __init__(self, port: int, *, behind_proxy: bool = True) -> None:
        self.port = port
        self.behind_proxy = behind_proxy
        self.cookies: dict[str, str] = {}
        self.origin = f"https://{HOST}:{port}"

    def request(self, method: str, path: str, *, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> Response:
        all_headers = {"Host": f"{HOST}:{self.port}", **(headers or {})}
        if self.behind_proxy:
            all_headers["X-Forwarded-Proto"] = "https"
        if self.cookies:
            all_headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        conn = http.client.HTTPConnection(HOST, self.port, timeout=120)
        try:
            conn.request(method, path, body=body, headers=all_headers)
            raw = conn.getresponse()
            data = raw.read()
        finally:
            conn.close()
        for set_cookie in raw.headers.get_all("Set-Cookie") or []:
            for name, morsel in SimpleCookie(set_cookie).items():
                if morsel.value:
                    self.cookies[name] = morsel.value
                else:
                    self.cookies.pop(name, None)
        return Response(raw.status, raw.headers, data, path)

    def get(self, path: str, *, headers: dict[str, str] | None = None, follow: bool = True) -> Response:
        history: list[tuple[int, str]] = []
        response = self.request("GET", path, headers=headers)
        while follow and response.status in (301, 302, 303, 307, 308) and len(history) < 5:
            location = urlsplit(response.header("Location"))
            if location.netloc and location.netloc != f"{HOST}:{self.port}":
                break
            history.append((response.status, response.path))
            response = self.request("GET", location.path + (f"?{location.query}" if location.query else ""),
                                    headers=headers)
        response.history = history
        return response

    def post_form(self, path: str, data: dict[str, str]) -> Response:
        return self.request("POST", path, body=urlencode(data).encode(), headers={
            "Content-Type": "application/x-www-form-urlencoded", "Origin": self.origin,
            "Referer": self.origin + path, "X-CSRFToken": self.cookies.get("csrftoken", "")})

    def csrf_form(self, path: str) -> str:
        page = self.get(path)
        match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        return match.group(1) if match else self.cookies.get("csrftoken", "")


def crawl(*, port: int, password: str, metrics_token: str, failures: Failures) -> None:
    import django

    django.setup()
    from django.conf import settings

    if not getattr(settings, "INSTALLED_FROM_WHEEL", False):
        failures.add("console.settings did not detect the wheel install (console/assets missing)")
    browser = Client(port)
    login = browser.post_form("/accounts/login/", {"username": "demo", "password": password,
                                                   "csrfmiddlewaretoken": browser.csrf_form("/accounts/login/")})
    if login.status != 302 or "sessionid" not in browser.cookies:
        failures.add(f"login as the demo operator answered {login.status}, not a redirect with a session")
        return
    # Objects the detail pages need beyond the demo fleet: a snapshot of the live (simulated) cluster.
    taken = browser.post_form("/whatif/snapshots/live/", {"csrfmiddlewaretoken": browser.cookies.get("csrftoken", "")})
    if taken.status != 302:
        failures.add(f"POST /whatif/snapshots/live/ (take a snapshot) answered {taken.status}")
    token = _api_token(port, password, failures)
    api = {"Authorization": f"Token {token}"}
    create_alert_objects(port, api, browser, failures)

    routes, skipped = plan_routes()
    assets: set[str] = set()
    counts = {"page": 0, "api": 0}
    post_only: list[str] = []
    timings: list[tuple[float, str]] = []
    for route in routes:
        is_api = route.url.startswith("/api/")
        started = time.monotonic()
        response = (Client(port).get(route.url, headers=api) if is_api else browser.get(route.url))
        timings.append((time.monotonic() - started, route.url))
        where = f"GET {route.url} ({route.name})"
        if response.status == 405 and "GET" not in response.header("Allow"):
            post_only.append(route.name)  # a POST-only action: refusing GET is the right answer
            continue
        if response.status != 200:
            failures.add(f"{where} answered {response.status}: {_excerpt(response)}")
            continue
        if response.path.startswith("/accounts/login/") and not route.url.startswith("/accounts/login/"):
            failures.add(f"{where} ended on the login page (session lost)")
            continue
        counts["api" if is_api else "page"] += 1
        if route.name.endswith("-list") and is_api:
            try:
                json.loads(response.body)
            except ValueError:
                failures.add(f"{where} is not JSON: {_excerpt(response)}")
        if "text/html" in response.header("Content-Type"):
            assets.update(re.findall(r'(?:src|href)="(/static(?:-vendor)?/[^"?#]+)', response.text))
    for asset in sorted(assets):
        response = browser.get(asset, follow=False)
        if response.status != 200 or not response.body:
            failures.add(f"static asset {asset} answered {response.status}")
    print(f"  {counts['page']} pages and {counts['api']} API endpoints answered 200, {len(assets)} static "
          "assets served; slowest: " + ", ".join(f"{url} {seconds:.1f} s" for seconds, url in sorted(timings, reverse=True)[:3]))
    print(f"  {len(post_only)} POST-only URLs refused GET with 405: {', '.join(post_only)}")
    for name, reason in skipped:
        print(f"  skipped {name}: {reason}")
    check_edges(port=port, browser=browser, metrics_token=metrics_token, failures=failures)


def check_edges(*, port: int, browser: Client, metrics_token: str, failures: Failures) -> None:
    """favicon, the 404 page, the HTTPS redirect and HSTS, /metrics with and without its token."""
    favicon = browser.get("/favicon.ico")
    if favicon.status != 200 or "icon" not in favicon.header("Content-Type"):
        failures.add(f"/favicon.ico answered {favicon.status} {favicon.header('Content-Type')}")
    missing = browser.get("/no-such-page/")
    if missing.status != 404 or "console/console.css" not in missing.text:
        failures.add(f"/no-such-page/ answered {missing.status} without the console's 404 page")
    overview = browser.get("/dashboards/", follow=False)
    if "max-age=31536000" not in overview.header("Strict-Transport-Security"):
        failures.add("HTTPS responses carry no Strict-Transport-Security header")
    plain = Client(port, behind_proxy=False)
    redirect = plain.get("/dashboards/", follow=False)
    if redirect.status != 301 or not redirect.header("Location").startswith("https://"):
        failures.add(f"plain HTTP /dashboards/ answered {redirect.status}, not a redirect to https")
    scraped = plain.get("/metrics", headers={"Authorization": f"Bearer {metrics_token}"}, follow=False)
    if scraped.status != 200 or "loadmaster_" not in scraped.text:
        failures.add(f"/metrics with the bearer token answered {scraped.status}: {_excerpt(scraped)}")
    refused = plain.get("/metrics", headers={"Authorization": "Bearer wrong"}, follow=False)
    if refused.status not in (401, 403):
        failures.add(f"/metrics with a wrong token answered {refused.status}, not 401/403")


def create_alert_objects(port: int, api: dict[str, str], browser: Client, failures: Failures) -> None:
    """A Slack channel and a rule through the API, a price override through its form: the pages that
    show one need it. The channel is never sent to (no test message, no alert can fire on a fresh DB)."""
    def post_json(path: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        response = Client(port).request("POST", path, body=json.dumps(payload).encode(),
                                        headers={**api, "Content-Type": "application/json"})
        if response.status != 201:
            failures.add(f"POST {path} answered {response.status}: {_excerpt(response)}")
            return None
        return dict(json.loads(response.body))

    channel = post_json("/api/alerts/channels/", {
        "name": "smoke", "kind": "webhook", "secret": "https://hooks.slack.com/services/T0000/B0000/smoke"})
    if channel is not None:
        post_json("/api/alerts/rules/", {"name": "smoke budget", "kind": "budget", "metric": "cost_per_hour",
                                         "threshold": "100", "channel": channel["id"]})
    override = browser.post_form("/catalog/overrides/", {
        "selector": "m5", "capacity_type": "on-demand", "percent": "-10", "price": "", "note": "smoke",
        "position": "0", "csrfmiddlewaretoken": browser.cookies.get("csrftoken", "")})
    if override.status != 302:
        failures.add(f"POST /catalog/overrides/ answered {override.status}: {_excerpt(override)}")


def _api_token(port: int, password: str, failures: Failures) -> str:
    response = Client(port).request("POST", "/api/token/", body=urlencode({"username": "demo", "password": password}).encode(),
                                    headers={"Content-Type": "application/x-www-form-urlencoded"})
    try:
        return str(json.loads(response.body)["token"])
    except (ValueError, KeyError):
        failures.add(f"POST /api/token/ answered {response.status}: {_excerpt(response)}")
        return ""


@dataclass
class Route:
    name: str
    url: str


# Views that need objects: the literal path segment before a URL's first parameter → its values.
def _fillers() -> dict[str, Callable[[], dict[str, str] | None]]:
    import plotly

    from console.alerts.models import AlertRule, Channel
    from console.commitments.models import Commitment
    from console.fleet.models import Decision, EC2NodeClass, NodeClaim, NodePool
    from console.overlays.models import NodeOverlay
    from console.simulation.models import SimObject
    from console.whatif.models import Snapshot

    def first(queryset: Any, **fields: str) -> dict[str, str] | None:
        row = queryset.values(*fields.values()).first()
        return None if row is None else {param: str(row[column]) for param, column in fields.items()}

    return {
        "nodepools": lambda: first(NodePool.objects.order_by("name"), name="name"),
        "nodeclasses": lambda: first(EC2NodeClass.objects.order_by("name"), name="name"),
        "nodeclaims": lambda: first(NodeClaim.objects.order_by("name"), name="name"),
        "decisions": lambda: first(Decision.objects.order_by("pk"), pk="pk"),
        "snapshots": lambda: first(Snapshot.objects.order_by("pk"), pk="pk"),
        "channels": lambda: first(Channel.objects.order_by("pk"), pk="pk"),
        "rules": lambda: first(AlertRule.objects.order_by("pk"), pk="pk"),
        # the catalog page's price overrides are NodeOverlays (console/overlays)
        "overrides": lambda: first(NodeOverlay.objects.order_by("name"), name="name"),
        "nodeoverlays": lambda: first(NodeOverlay.objects.order_by("name"), name="name"),
        "commitments": lambda: first(Commitment.objects.order_by("name"), name="name"),
        "nodes": lambda: first(SimObject.objects.filter(kind="Node").order_by("name"), name="name"),
        "pods": lambda: first(SimObject.objects.filter(kind="Pod").exclude(namespace="kube-system").order_by("name"),
                              namespace="namespace", name="name"),
        "plotly-": lambda: {"version": plotly.__version__},
    }


def _compare_query(fillers: dict[str, Callable[[], dict[str, str] | None]]) -> str | None:
    snapshot = fillers["snapshots"]()
    return None if snapshot is None else f"?a={snapshot['pk']}&b={snapshot['pk']}"


# Pages that need a query string to show anything (URL name → query, from the same fillers).
_QUERIES: dict[str, Callable[[dict[str, Callable[[], dict[str, str] | None]]], str | None]] = {
    "whatif:snapshot-compare": _compare_query,
}
# Skipped on purpose: Django's admin is for staff (its index, reached as the operator, stands for it).
_SKIP_NAMESPACES = ("admin",)


def plan_routes() -> tuple[list[Route], list[tuple[str, str]]]:
    """Every GET-able URL of the URL conf, parameters filled from the database."""
    from django.urls import URLPattern, URLResolver, get_resolver, reverse

    fillers = _fillers()
    routes: list[Route] = []
    skipped: list[tuple[str, str]] = []
    seen: set[str] = set()

    def walk(patterns: list[Any], prefix: str, namespace: str, params: set[str]) -> None:
        for pattern in patterns:
            regex_params = set(pattern.pattern.regex.groupindex)
            if isinstance(pattern, URLResolver):
                ns = namespace
                if pattern.namespace:
                    ns = f"{namespace}:{pattern.namespace}" if namespace else pattern.namespace
                walk(pattern.url_patterns, prefix + str(pattern.pattern), ns, params | regex_params)
                continue
            assert isinstance(pattern, URLPattern)
            route = prefix + str(pattern.pattern)
            name = f"{namespace}:{pattern.name}" if namespace and pattern.name else (pattern.name or "")
            all_params = params | regex_params
            if namespace.split(":")[0] in _SKIP_NAMESPACES and name != "admin:index":
                continue
            if "format" in all_params:
                continue  # DRF's format-suffix twin of a route listed anyway
            label = name or f"/{route}"
            if label in seen:
                continue
            seen.add(label)
            kwargs: dict[str, str] = {}
            if all_params:
                segment = _segment_before_parameter(route)
                values = fillers[segment]() if segment in fillers else None
                if values is None or not all_params <= set(values):
                    skipped.append((label, f"no object to fill {sorted(all_params)} (segment {segment!r})"))
                    continue
                kwargs = {k: values[k] for k in all_params}
            if name:
                url = reverse(name, kwargs=kwargs)
            elif re.fullmatch(r"[\w/.-]*", route):
                url = "/" + route
            else:
                skipped.append((label, "unnamed pattern"))
                continue
            if name in _QUERIES:
                query = _QUERIES[name](fillers)
                if not query:
                    skipped.append((label, "no object for its query string"))
                    continue
                url += query
            routes.append(Route(label, url))

    walk(get_resolver().url_patterns, "", "", set())
    return routes, skipped


def _segment_before_parameter(route: str) -> str:
    head = re.split(r"<|\(\?P<", route, maxsplit=1)[0]
    return head.rstrip("/").split("/")[-1].lstrip("^")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, server: subprocess.Popen[bytes], timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            return False
        try:
            with socket.create_connection((HOST, port), timeout=1):
                return True
        except OSError:
            time.sleep(0.2)
    return False


def _excerpt(response: Response) -> str:
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.text)).strip()
    return text[:200]


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" for line in text.strip().splitlines())


if __name__ == "__main__":
    sys.exit(main())
