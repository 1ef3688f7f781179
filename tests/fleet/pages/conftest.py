"""The fleet's page tests sign in with page clients (django.test.Client), not the API clients that
tests/fleet/conftest.py gives its API tests under the same names: the shared page fixtures override them
here. `browser` is the shared headless Chromium."""

from __future__ import annotations

from tests.chromium import browser  # noqa: F401 - a fixture
from tests.console_pages import (  # noqa: F401 - fixtures, used by name
    nodeclass,
    operator,
    operator_client,
    pool,
    viewer,
    viewer_client,
)
