from __future__ import annotations

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_alerts_migrations_match_models() -> None:
    # Fails (SystemExit) when a model change lacks its migration.
    call_command("makemigrations", "alerts", "--check", "--dry-run", verbosity=0)
