"""Test settings: the production settings module, with the few knobs tests need fixed up front.

The database and broker still come from DATABASE_URL / CELERY_BROKER_URL, so the same suite runs
on SQLite locally and on PostgreSQL + Redis in CI."""

import os

os.environ.setdefault("SECRET_KEY", "tests-only-not-secret-" + "x" * 40)
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "1")

from console.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
WHITENOISE_AUTOREFRESH = True
