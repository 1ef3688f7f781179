"""Live refresh against moto (in-process and server), faults injected through botocore event hooks."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from packing.catalog import load_builtin
from packing.catalog.live import CatalogCache, fetch_region_data, have_credentials, refresh, refresh_spot
from packing.catalog.pricing import fetch_spot_prices, pricing_filters
from packing.catalog.snapshot import load_bundled

from .conftest import NOW, replay
from .test_catalog_pricing import price_list_entry


def fail(code: str, operation: str) -> Any:
    def handler(**_: Any) -> None:
        raise ClientError({"Error": {"Code": code, "Message": f"injected {code}"}}, operation)

    return handler


def stubbed_pricing(prices: dict[str, str]) -> tuple[Any, Stubber]:
    client = boto3.client("pricing", region_name="us-east-1")
    stub = Stubber(client)
    stub.add_response(
        "get_products",
        {
            "FormatVersion": "aws_v1",
            "PriceList": [price_list_entry(t, p, sku=f"S{i}") for i, (t, p) in enumerate(prices.items())],
        },
        {"ServiceCode": "AmazonEC2", "Filters": pricing_filters("us-east-1"), "FormatVersion": "aws_v1"},
    )
    stub.activate()
    return client, stub


def test_fetch_region_data_matches_the_bundled_snapshot(moto_ec2: Any) -> None:
    live = fetch_region_data(moto_ec2, "us-east-1", now=NOW)
    bundled = load_bundled("us-east-1")
    # the bundled snapshot is generated from the same moto data: identical specs and zones
    assert set(live.specs) == set(bundled.specs)
    assert live.specs["m5.large"] == bundled.specs["m5.large"]
    assert live.zones["m5.large"] == bundled.zones["m5.large"]
    assert live.source == "live 2026-11-30T10:00Z"


def test_spot_price_history_from_moto(moto_ec2: Any) -> None:
    prices = fetch_spot_prices(moto_ec2, now=NOW)
    assert ("m5.large", "us-east-1a") in prices
    price, source = prices[("m5.large", "us-east-1a")]
    assert price == pytest.approx(0.00001)  # moto's fake price: parsed, whatever its value
    assert source == "live 2026-11-30T10:00Z"


def test_spot_history_keeps_the_latest_row_per_zone() -> None:
    client = boto3.client("ec2", region_name="us-east-1")
    rows = [
        {
            "AvailabilityZone": "us-east-1a",
            "InstanceType": "m5.large",
            "ProductDescription": "Linux/UNIX",
            "SpotPrice": "0.0400",
            "Timestamp": NOW - dt.timedelta(hours=2),
        },
        {
            "AvailabilityZone": "us-east-1a",
            "InstanceType": "m5.large",
            "ProductDescription": "Linux/UNIX",
            "SpotPrice": "0.0350",
            "Timestamp": NOW - dt.timedelta(minutes=5),
        },
        {
            "AvailabilityZone": "us-east-1b",
            "InstanceType": "m5.large",
            "ProductDescription": "Linux/UNIX",
            "SpotPrice": "0.0380",
            "Timestamp": NOW - dt.timedelta(minutes=30),
        },
    ]
    with Stubber(client) as stub:
        stub.add_response("describe_spot_price_history", {"SpotPriceHistory": rows[:1], "NextToken": "n"})
        stub.add_response("describe_spot_price_history", {"SpotPriceHistory": rows[1:]})
        prices = fetch_spot_prices(client, now=NOW)
    assert {k: v[0] for k, v in prices.items()} == {
        ("m5.large", "us-east-1a"): 0.035,
        ("m5.large", "us-east-1b"): 0.038,
    }


def test_refresh_reports_changes_and_feeds_load_builtin(moto_ec2: Any, tmp_path: Path) -> None:
    pricing, stub = stubbed_pricing({"m5.large": "0.0990000000", "c7g.large": "0.0725000000"})
    previous = load_bundled("us-east-1")
    report = refresh("us-east-1", tmp_path, previous=previous, ec2=moto_ec2, pricing=pricing, now=NOW)
    stub.assert_no_pending_responses()
    assert report.ok, report.errors
    assert report.types_added == [] and report.types_removed == []
    assert report.prices_fetched == 2
    # compared with the bundled snapshot: m5.large moved, c7g.large did not, the rest vanished from this tiny list
    assert report.prices_changed["m5.large"] == (0.096, 0.099)
    assert "c7g.large" not in report.prices_changed
    assert report.prices_changed["m5.xlarge"] == (0.192, None)
    assert report.spot_prices_fetched > 1000
    assert (tmp_path / "us-east-1" / "ec2.json").is_file()
    types = {
        t.name: t for t in load_builtin("us-east-1", cache_dir=tmp_path, now=NOW + dt.timedelta(minutes=30))
    }
    od = next(o for o in types["m5.large"].offerings if o.capacity_type == "on-demand")
    assert (od.price, od.price_source) == (0.099, "live 2026-11-30T10:00Z")
    sp = next(o for o in types["m5.large"].offerings if o.capacity_type == "spot")
    assert sp.price_source == "live 2026-11-30T10:00Z"
    # a type the live price list lacks keeps its dated snapshot price, labelled as such
    od = next(o for o in types["m5.xlarge"].offerings if o.capacity_type == "on-demand")
    assert (od.price, od.price_source) == (0.192, "snapshot 2026-01-19")
    # and a type nobody prices stays unknown
    assert all(o.price is None for o in types["m9g.large"].offerings if o.capacity_type == "on-demand")
    # stale spot data falls back to the estimate
    types = {
        t.name: t for t in load_builtin("us-east-1", cache_dir=tmp_path, now=NOW + dt.timedelta(hours=4))
    }
    sp = next(o for o in types["m5.large"].offerings if o.capacity_type == "spot")
    assert sp.price_source == "estimate"
    # a second refresh compares with the cache
    pricing, _ = stubbed_pricing({"m5.large": "0.0960000000", "c7g.large": "0.0725000000"})
    report = refresh("us-east-1", tmp_path, ec2=moto_ec2, pricing=pricing, now=NOW, spot=False)
    assert report.ok and report.prices_changed == {"m5.large": (0.099, 0.096)}
    assert any("m5.large: 0.099 -> 0.096" in line for line in report.lines())


def test_failed_refresh_keeps_last_good_data(moto_ec2: Any, tmp_path: Path) -> None:
    pricing, _ = stubbed_pricing({"m5.large": "0.0990000000"})
    assert refresh("us-east-1", tmp_path, ec2=moto_ec2, pricing=pricing, now=NOW).ok
    before = {p.name: p.read_text() for p in (tmp_path / "us-east-1").iterdir()}
    # every step fails: EC2 through event hooks on the moto client, the Pricing API through the Stubber
    # (register_first: these two operations already have the session-replay hook, which would answer first)
    moto_ec2.meta.events.register_first(
        "before-call.ec2.DescribeInstanceTypes", fail("RequestLimitExceeded", "DescribeInstanceTypes")
    )
    moto_ec2.meta.events.register_first(
        "before-call.ec2.DescribeSpotPriceHistory", fail("UnauthorizedOperation", "DescribeSpotPriceHistory")
    )
    pricing = boto3.client("pricing", region_name="us-east-1")
    with Stubber(pricing) as stub:
        stub.add_client_error("get_products", "AccessDeniedException", "not allowed")
        report = refresh(
            "us-east-1", tmp_path, ec2=moto_ec2, pricing=pricing, now=NOW + dt.timedelta(hours=12)
        )
    assert not report.ok
    assert set(report.errors) == {"instance types", "on-demand prices", "spot prices"}
    assert "RequestLimitExceeded" in report.errors["instance types"]
    assert "AccessDenied" in report.errors["on-demand prices"]
    assert any(line.startswith("  FAILED") for line in report.lines())
    after = {p.name: p.read_text() for p in (tmp_path / "us-east-1").iterdir()}
    assert after == before
    t = next(t for t in load_builtin("us-east-1", cache_dir=tmp_path, now=NOW) if t.name == "m5.large")
    assert t.offerings[0].price == 0.099


def test_offerings_fault_only_fails_that_step(moto_ec2: Any, tmp_path: Path) -> None:
    moto_ec2.meta.events.register(
        "before-call.ec2.DescribeInstanceTypeOfferings",
        fail("InternalError", "DescribeInstanceTypeOfferings"),
    )
    pricing, _ = stubbed_pricing({"m5.large": "0.0960000000"})
    report = refresh("us-east-1", tmp_path, ec2=moto_ec2, pricing=pricing, now=NOW)
    assert list(report.errors) == ["instance types"]
    assert CatalogCache(tmp_path).region_data("us-east-1") is None
    assert CatalogCache(tmp_path).on_demand("us-east-1") is not None
    # with no cached types the bundled snapshot is used
    assert len(load_builtin("us-east-1", cache_dir=tmp_path)) == len(load_bundled("us-east-1").specs)


def test_refresh_spot_hourly_entry_point(moto_ec2: Any, tmp_path: Path) -> None:
    assert refresh_spot("us-east-1", tmp_path, moto_ec2, now=NOW) > 1000
    data = json.loads((tmp_path / "us-east-1" / "spot.json").read_text())
    assert data["fetched_at"] == "2026-11-30T10:00Z"


def test_have_credentials_uses_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert have_credentials()
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert not have_credentials()


def test_against_threaded_moto_server(moto_recordings: dict[str, Any], tmp_path: Path) -> None:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    try:
        host, port = server.get_host_and_port()
        ec2 = boto3.client("ec2", region_name="us-east-1", endpoint_url=f"http://{host}:{port}")
        replay(ec2, moto_recordings, "DescribeInstanceTypes", "DescribeSpotPriceHistory")
        throttle = fail("Throttling", "DescribeInstanceTypeOfferings")
        ec2.meta.events.register("before-call.ec2.DescribeInstanceTypeOfferings", throttle)
        pricing, _ = stubbed_pricing({"m5.large": "0.0960000000"})
        report = refresh("us-east-1", tmp_path, ec2=ec2, pricing=pricing, now=NOW)
        assert "Throttling" in report.errors["instance types"]
        ec2.meta.events.unregister("before-call.ec2.DescribeInstanceTypeOfferings", throttle)
        # offerings really come over HTTP from the server this time
        rows = ec2.describe_instance_type_offerings(LocationType="availability-zone")["InstanceTypeOfferings"]
        assert {
            "InstanceType": "m5.large",
            "Location": "us-east-1a",
            "LocationType": "availability-zone",
        } in rows
        data = fetch_region_data(ec2, "us-east-1", now=NOW)
        assert data.zones["m5.large"] == load_bundled("us-east-1").zones["m5.large"]
    finally:
        server.stop()


def test_corrupt_cache_falls_back_to_the_snapshot(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    region_dir = tmp_path / "us-east-1"
    region_dir.mkdir()
    (region_dir / "ec2.json").write_text("{not json")
    (region_dir / "ondemand.json").write_text('{"fetched_at": "2026-11-30T10:00Z"}')
    (region_dir / "spot.json").write_text('{"fetched_at": "2026-11-30T10:00Z", "prices": [["m5.large"]]}')
    with pytest.raises(Exception, match="unreadable catalog cache"):
        CatalogCache(tmp_path).region_data("us-east-1")
    with pytest.raises(Exception, match="corrupt catalog cache"):
        CatalogCache(tmp_path).on_demand("us-east-1")
    types = {t.name: t for t in load_builtin("us-east-1", cache_dir=tmp_path, now=NOW)}
    od = next(o for o in types["m5.large"].offerings if o.capacity_type == "on-demand")
    assert (od.price, od.price_source) == (0.096, "snapshot 2026-01-19")
    assert "using the bundled snapshot instead" in caplog.text


def test_refresh_overwrites_a_corrupt_cache(moto_ec2: Any, tmp_path: Path) -> None:
    region_dir = tmp_path / "us-east-1"
    region_dir.mkdir()
    for kind in ("ec2", "ondemand", "spot"):
        (region_dir / f"{kind}.json").write_text("[]")
    pricing, _ = stubbed_pricing({"m5.large": "0.0960000000"})
    report = refresh("us-east-1", tmp_path, ec2=moto_ec2, pricing=pricing, now=NOW)
    assert report.ok, report.errors
    assert report.types_added == []  # compared with the bundled snapshot
    assert CatalogCache(tmp_path).on_demand("us-east-1") is not None
