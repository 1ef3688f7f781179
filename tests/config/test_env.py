"""Settings from the environment: strict helpers and the settings module's own rules."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from console.env import database_from_url, env_bool, env_choice, env_int, env_list, local_secret_key

ROOT = Path(__file__).resolve().parents[2]


def test_env_bool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X_FLAG", "yes")
    assert env_bool("X_FLAG", False) is True
    monkeypatch.setenv("X_FLAG", "0")
    assert env_bool("X_FLAG", True) is False
    monkeypatch.setenv("X_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="X_FLAG='maybe' is not a boolean"):
        env_bool("X_FLAG", False)
    monkeypatch.delenv("X_FLAG")
    assert env_bool("X_FLAG", True) is True


def test_env_int_list_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X_N", "12")
    assert env_int("X_N", 1) == 12
    monkeypatch.setenv("X_N", "twelve")
    with pytest.raises(ImproperlyConfigured, match="X_N='twelve' is not an integer"):
        env_int("X_N", 1)
    monkeypatch.setenv("X_N", "0")
    with pytest.raises(ImproperlyConfigured, match="X_N=0 must be at least 1"):
        env_int("X_N", 1, minimum=1)
    monkeypatch.setenv("X_HOSTS", "a.example, b.example ,")
    assert env_list("X_HOSTS", []) == ["a.example", "b.example"]
    monkeypatch.setenv("X_HOSTS", " , ")
    with pytest.raises(ImproperlyConfigured, match="X_HOSTS is set but empty"):
        env_list("X_HOSTS", [])
    monkeypatch.setenv("X_MODE", "aws")
    assert env_choice("X_MODE", "simulated", ("simulated", "aws")) == "aws"
    monkeypatch.setenv("X_MODE", "gcp")
    with pytest.raises(ImproperlyConfigured, match="X_MODE='gcp' must be one of simulated, aws"):
        env_choice("X_MODE", "simulated", ("simulated", "aws"))


def test_database_urls() -> None:
    pg = database_from_url("DATABASE_URL", "postgres://lm:p%40ss@db.internal:6432/fleet?sslmode=require")
    assert pg["ENGINE"] == "django.db.backends.postgresql"
    assert (pg["NAME"], pg["USER"], pg["PASSWORD"], pg["HOST"], pg["PORT"]) == ("fleet", "lm", "p@ss", "db.internal", "6432")
    assert pg["OPTIONS"] == {"sslmode": "require"}
    lite = database_from_url("DATABASE_URL", "sqlite:////var/lib/lm/db.sqlite3")
    assert lite["ENGINE"] == "django.db.backends.sqlite3" and lite["NAME"] == "/var/lib/lm/db.sqlite3"
    for bad, message in (("mysql://x/y", "unsupported scheme 'mysql'"), ("postgres://host:5432/", "names no database"),
                         ("postgres://host:port/db", "invalid port"), ("sqlite://", "no database file path")):
        with pytest.raises(ImproperlyConfigured, match=message):
            database_from_url("DATABASE_URL", bad)


def test_local_secret_key_is_generated_once(tmp_path: Path) -> None:
    key = local_secret_key(tmp_path / "secret_key")
    assert len(key) >= 50
    assert local_secret_key(tmp_path / "secret_key") == key
    assert oct((tmp_path / "secret_key").stat().st_mode & 0o777) == "0o600"


def _settings_process(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG", "DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    base.update(env)
    return subprocess.run([sys.executable, "-c", "import django; from django.conf import settings; "
                           "print(settings.DATABASES['default']['ENGINE'], settings.DEBUG)"],
                          env=base, cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_secret_key_required_when_debug_off(tmp_path: Path) -> None:
    result = _settings_process({"DJANGO_SETTINGS_MODULE": "console.settings", "LOADMASTER_VAR_DIR": str(tmp_path)})
    assert result.returncode != 0 and "SECRET_KEY must be set when DEBUG is off" in result.stderr
    ok = _settings_process({"DJANGO_SETTINGS_MODULE": "console.settings", "LOADMASTER_VAR_DIR": str(tmp_path),
                            "SECRET_KEY": "x" * 50})
    assert ok.returncode == 0 and "sqlite3 False" in ok.stdout
    demo = _settings_process({"DJANGO_SETTINGS_MODULE": "console.settings", "LOADMASTER_VAR_DIR": str(tmp_path),
                              "DEBUG": "1"})
    assert demo.returncode == 0 and (tmp_path / "secret_key").exists()


def test_bad_setting_names_the_variable(tmp_path: Path) -> None:
    result = _settings_process({"DJANGO_SETTINGS_MODULE": "console.settings", "LOADMASTER_VAR_DIR": str(tmp_path),
                                "SECRET_KEY": "x" * 50, "DEBUG": "sometimes"})
    assert result.returncode != 0 and "DEBUG='sometimes' is not a boolean" in result.stderr
    result = _settings_process({"DJANGO_SETTINGS_MODULE": "console.settings", "LOADMASTER_VAR_DIR": str(tmp_path),
                                "SECRET_KEY": "x" * 50, "DATABASE_URL": "oracle://db/x"})
    assert result.returncode != 0 and "DATABASE_URL='oracle://db/x'" in result.stderr
