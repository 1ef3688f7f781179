"""The pricing refresh's commitments from AWS stored through the console's commitment service: created, updated in
place on the next refresh, pruned when AWS no longer returns them; operator rows and refused ones left alone."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from console.backends.aws_commitments import SOURCE_RI, SOURCE_SP
from console.catalog.commitment_sync import sync_commitments
from console.commitments.models import Commitment as Row
from packing.api import Commitment, CommitmentKind

pytestmark = pytest.mark.django_db

RI = Commitment("ri-0abc", CommitmentKind.RESERVED_INSTANCES, instance_type="m5.large", zone="us-east-1a", count=3,
                ends=datetime(2027, 6, 1, tzinfo=UTC), source=SOURCE_RI)
SP = Commitment("sp-0def", CommitmentKind.COMPUTE_SAVINGS_PLAN, region="us-east-1", hourly_commitment=2.5,
                rates={"m5": 0.28}, source=SOURCE_SP)


def test_a_refresh_stores_updates_and_prunes() -> None:
    sync_commitments([RI, SP])
    ri = Row.objects.get(source=SOURCE_RI, external_id="ri-0abc")
    assert (ri.type, ri.instance_type, ri.zone, ri.count) == ("ReservedInstances", "m5.large", "us-east-1a", 3)
    sp = Row.objects.get(source=SOURCE_SP, external_id="sp-0def")
    assert sp.hourly_commitment == Decimal("2.5") and sp.rates == {"m5": "0.28"}
    sync_commitments([Commitment("ri-0abc", CommitmentKind.RESERVED_INSTANCES, instance_type="m5.large",
                                 zone="us-east-1a", count=2, source=SOURCE_RI)])
    assert Row.objects.get(pk=ri.pk).count == 2  # the same row, updated
    assert not Row.objects.filter(source=SOURCE_SP).exists()  # the plan AWS no longer returned


def test_a_commitment_the_rules_refuse_is_left_out_and_the_rest_stored(caplog: pytest.LogCaptureFixture) -> None:
    bad = Commitment("sp-bad", CommitmentKind.COMPUTE_SAVINGS_PLAN, region="us-east-1", hourly_commitment=1.0,
                     rates={"m5": 1.5}, source=SOURCE_SP)
    sync_commitments([RI, bad])
    assert Row.objects.filter(source=SOURCE_RI).count() == 1 and not Row.objects.filter(external_id="sp-bad").exists()
    assert "sp-bad" in caplog.text
