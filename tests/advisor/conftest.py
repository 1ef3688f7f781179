"""Advisor console fixtures: the what-if tests' simulated cluster (pool general on-demand only with a cpu
limit, pool gpu tainted, four pending web pods) and the alerts tests' Slack double."""

from __future__ import annotations

from tests.alerts.conftest import channel, slack  # noqa: F401
from tests.console_pages import operator, operator_client, viewer, viewer_client  # noqa: F401
from tests.whatif.conftest import world  # noqa: F401
