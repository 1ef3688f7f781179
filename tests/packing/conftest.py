"""Test setup for the provisioning engine: import path and hypothesis profiles."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

# "default" keeps the whole tests/packing run within a few minutes on two cores; "thorough" is for soaking.
settings.register_profile(
    "packing-default", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("packing-thorough", max_examples=500, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("PACKING_HYPOTHESIS_PROFILE", "packing-default"))
