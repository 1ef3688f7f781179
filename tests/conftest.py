"""Settings shared by the whole suite: Hypothesis profiles sized for the 2-core CI machine; fixtures used by
the engine tests of more than one folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from packing.nodepool import NodePool
from packing.scheduling import templates as templates_module

# The one place that registers and loads Hypothesis profiles, so that every folder runs under the same one
# (tests/test_hypothesis_profiles.py checks it). HYPOTHESIS_PROFILE names one; otherwise `ci` when CI is set
# (100 examples a test fit the CI machine's budget), `dev` for quick local runs; `thorough` is for soaking.
settings.register_profile("ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=500, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def broken_pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A pool named "boom" whose preparation raises (standing for any bug met while building its options)."""
    real = templates_module.PoolTemplate.__init__

    def init(self: Any, p: NodePool, *args: Any, **kw: Any) -> None:
        if p.name == "boom":
            raise OverflowError("Python int too large to convert to C long")
        real(self, p, *args, **kw)

    monkeypatch.setattr(templates_module.PoolTemplate, "__init__", init)
    yield "boom"
