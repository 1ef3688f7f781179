"""Test settings: the production settings module, with the few knobs tests need fixed up front.

The database and broker still come from DATABASE_URL / CELERY_BROKER_URL, so the same suite runs
on SQLite locally and on PostgreSQL + Redis in CI."""

import os

os.environ.setdefault("SECRET_KEY", "tests-only-not-secret-" + "x" * 40)
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "1")

from console.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
WHITENOISE_AUTOREFRESH = True
# One process per test run: the sign-in failure counts need no shared cache here.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "tests"}}
# The Slack double of tests/alerts runs on 127.0.0.1 (over http): the only non-Slack host allowed.
LOADMASTER_SLACK_ALLOWED_HOSTS = ["127.0.0.1"]
