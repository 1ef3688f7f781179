"""Strict readers for settings that come from the environment.

A typo in production configuration must stop the process at start-up with the variable's name,
not surface hours later as a confusing connection error, so every helper raises
ImproperlyConfigured on a value it cannot read instead of falling back silently.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return default if value is None else value


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean; use one of 1/0, true/false, yes/no, on/off")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number} must be at least {minimum}")
    return number


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None:
        return default
    items = [item.strip() for item in value.split(",") if item.strip()]
    if not items:
        raise ImproperlyConfigured(f"{name} is set but empty; give a comma-separated list")
    return items


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name, default)
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} must be one of {', '.join(choices)}")
    return value


def database_from_url(name: str, url: str) -> dict[str, object]:
    """Turn ``sqlite:///path`` or ``postgres://user:pass@host:port/db`` into a DATABASES entry."""
    parts = urlsplit(url)
    scheme = parts.scheme
    if scheme == "sqlite":
        # sqlite:////abs/path and sqlite:///relative/path, as dj-database-url spells them
        path = parts.path[1:] if parts.path.startswith("/") else parts.path
        if not path:
            raise ImproperlyConfigured(f"{name}={url!r} has no database file path")
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": path,
                "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE",
                            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"}}
    if scheme in ("postgres", "postgresql", "pgsql"):
        database = unquote(parts.path.lstrip("/"))
        if not database:
            raise ImproperlyConfigured(f"{name}={url!r} names no database (postgres://host:5432/DBNAME)")
        try:
            port = parts.port
        except ValueError:
            raise ImproperlyConfigured(f"{name}={url!r} has an invalid port") from None
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": database,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(port or ""),
            "OPTIONS": dict(parse_qsl(parts.query)),
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
        }
    raise ImproperlyConfigured(f"{name}={url!r}: unsupported scheme {scheme!r}; use sqlite:/// or postgres://")


def local_secret_key(path: Path) -> str:
    """A key generated on first use and kept beside the SQLite file, so sessions survive restarts."""
    if path.exists():
        key = path.read_text().strip()
        if key:
            return key
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    path.write_text(key)
    path.chmod(0o600)
    return key
