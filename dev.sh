#!/usr/bin/env bash
# Loadmaster developer entry point. The README's two commands:
#   ./dev.sh run    install into .venv, migrate, create the demo, start web + worker + beat
#   ./dev.sh test   install into .venv and run the whole test suite
#   ./dev.sh smoke  the production install: build the wheel, install it without dev extras into a clean
#                   virtualenv and serve every page from it with gunicorn (scripts/smoke_install.py)
set -euo pipefail
cd "$(dirname "$0")"

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3

ensure_venv() {
  if [ ! -x .venv/bin/python ]; then
    if ! "$PY" -m venv .venv 2>/dev/null; then
      # Debian's python3 ships venv separately.
      if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
        apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
        "$PY" -m venv .venv
      else
        echo "python3 -m venv failed: install python3-venv (sudo apt-get install python3-venv)" >&2; exit 1
      fi
    fi
  fi
  # Reinstall only when the dependency list changed since the last install.
  local stamp=.venv/.loadmaster-installed
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    echo "Installing Loadmaster and its dependencies into .venv (first run takes about a minute)…"
    .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
    .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'
    touch "$stamp"
  fi
}

ensure_chromium() {
  # The browser tests drive Debian's Chromium; install it if missing and we are allowed to.
  if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then return; fi
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "Installing chromium and chromium-driver for the browser tests…"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
      || echo "warning: could not install chromium; browser tests will be skipped" >&2
  else
    echo "warning: chromium not installed; browser tests will be skipped (apt-get install chromium chromium-driver)" >&2
  fi
}

case "${1:-}" in
  run)
    ensure_venv
    export DEBUG=${DEBUG:-1}
    .venv/bin/python manage.py migrate --noinput
    .venv/bin/python manage.py demo_setup
    exec .venv/bin/python manage.py runstack
    ;;
  test)
    shift
    ensure_venv
    ensure_chromium
    exec .venv/bin/python -m pytest "$@"
    ;;
  smoke)
    shift
    exec "$PY" scripts/smoke_install.py "$@"
    ;;
  *)
    echo "usage: ./dev.sh run | ./dev.sh test [pytest args] | ./dev.sh smoke [--keep]" >&2
    exit 2
    ;;
esac
