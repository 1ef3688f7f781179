"""Settings shared by the whole suite: hypothesis profiles sized for the 2-core CI machine; fixtures used by
the engine tests of more than one folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from packing.nodepool import NodePool
from packing.scheduling import templates as templates_module

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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
