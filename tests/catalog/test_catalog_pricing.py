"""Pricing: the Pricing API through botocore's Stubber (moto does not implement it), spot estimates, overrides."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from packing.catalog import PriceOverride, PricingError, load_builtin
from packing.catalog.pricing import (
    SPOT_RATIO_DEFAULT,
    apply_overrides,
    fetch_on_demand_prices,
    parse_price_list,
    pricing_filters,
    spot_estimate,
)
from packing.catalog.snapshot import load_bundled

from .conftest import NOW


def price_list_entry(instance_type: str, usd: str, *, sku: str = "FIXTURESKU0001", unit: str = "Hrs") -> str:
    """One GetProducts PriceList element, shaped like the real ones (a JSON string, with Reserved terms too)."""
    doc: dict[str, Any] = {
        "product": {
            "productFamily": "Compute Instance",
            "attributes": {
                "instanceType": instance_type,
                "instanceFamily": "General purpose",
                "vcpu": "2",
                "memory": "8 GiB",
                "operatingSystem": "Linux",
                "tenancy": "Shared",
                "capacitystatus": "Used",
                "preInstalledSw": "NA",
                "licenseModel": "No License required",
                "regionCode": "us-east-1",
                "location": "US East (N. Virginia)",
                "locationType": "AWS Region",
                "usagetype": f"BoxUsage:{instance_type}",
                "operation": "RunInstances",
                "marketoption": "OnDemand",
                "servicecode": "AmazonEC2",
                "currentGeneration": "Yes",
            },
            "sku": sku,
        },
        "serviceCode": "AmazonEC2",
        "terms": {
            "OnDemand": {
                f"{sku}.JRTCKXETXF": {
                    "priceDimensions": {
                        f"{sku}.JRTCKXETXF.6YS6EN2CT7": {
                            "unit": unit,
                            "endRange": "Inf",
                            "beginRange": "0",
                            "appliesTo": [],
                            "description": f"${usd} per On Demand Linux {instance_type} Instance Hour",
                            "rateCode": f"{sku}.JRTCKXETXF.6YS6EN2CT7",
                            "pricePerUnit": {"USD": usd},
                        }
                    },
                    "sku": sku,
                    "effectiveDate": "2026-11-01T00:00:00Z",
                    "offerTermCode": "JRTCKXETXF",
                    "termAttributes": {},
                }
            },
            "Reserved": {
                f"{sku}.4NA7Y494T4": {
                    "priceDimensions": {
                        f"{sku}.4NA7Y494T4.6YS6EN2CT7": {
                            "unit": "Hrs",
                            "pricePerUnit": {"USD": "0.0100000000"},
                            "description": "reserved",
                            "appliesTo": [],
                            "rateCode": "x",
                        },
                    },
                    "sku": sku,
                    "offerTermCode": "4NA7Y494T4",
                    "termAttributes": {
                        "LeaseContractLength": "1yr",
                        "OfferingClass": "standard",
                        "PurchaseOption": "No Upfront",
                    },
                }
            },
        },
        "version": "20261101000000",
        "publicationDate": "2026-11-01T00:00:00Z",
    }
    return json.dumps(doc)


EXPECTED = {"ServiceCode": "AmazonEC2", "Filters": pricing_filters("us-east-1"), "FormatVersion": "aws_v1"}


def test_pricing_filters_are_linux_shared_used_na() -> None:
    fields = {f["Field"]: f["Value"] for f in pricing_filters("eu-west-1")}
    assert fields == {
        "regionCode": "eu-west-1",
        "operatingSystem": "Linux",
        "tenancy": "Shared",
        "capacitystatus": "Used",
        "preInstalledSw": "NA",
    }
    assert all(f["Type"] == "TERM_MATCH" for f in pricing_filters("eu-west-1"))


def test_get_products_paginated_through_stubber() -> None:
    client = boto3.client("pricing", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_response(
            "get_products",
            {
                "FormatVersion": "aws_v1",
                "PriceList": [
                    price_list_entry("m5.large", "0.0960000000"),
                    price_list_entry("m5.xlarge", "0.1920000000", sku="SKU2"),
                ],
                "NextToken": "page-2",
            },
            EXPECTED,
        )
        stub.add_response(
            "get_products",
            {
                "FormatVersion": "aws_v1",
                "PriceList": [
                    price_list_entry("c7g.large", "0.0725000000", sku="SKU3"),
                    price_list_entry("x9.fake", "0.0000000000", sku="SKU4"),
                ],
            },
            {**EXPECTED, "NextToken": "page-2"},
        )
        prices = fetch_on_demand_prices(client, "us-east-1", now=NOW)
        stub.assert_no_pending_responses()
    assert dict(prices.prices) == {"m5.large": 0.096, "m5.xlarge": 0.192, "c7g.large": 0.0725}
    assert prices.source == "live 2026-11-30T10:00Z"


def test_get_products_error_and_empty() -> None:
    client = boto3.client("pricing", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_client_error("get_products", "ThrottlingException", "Rate exceeded")
        with pytest.raises(Exception, match="Rate exceeded"):
            fetch_on_demand_prices(client, "us-east-1", now=NOW)
        stub.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": []}, EXPECTED)
        with pytest.raises(PricingError, match="no Linux on-demand prices"):
            fetch_on_demand_prices(client, "us-east-1", now=NOW)


def test_parse_price_list_skips_non_hourly_and_garbage() -> None:
    items = [
        price_list_entry("m5.large", "0.096"),
        price_list_entry("m5.large", "0.5", unit="Quantity", sku="Q"),
        json.dumps({"product": {"attributes": {}}}),
        price_list_entry("m5.xlarge", "n/a", sku="NA"),
    ]
    assert parse_price_list(items) == {"m5.large": 0.096}


def test_spot_estimate_model_is_documented_and_deterministic() -> None:
    spec = load_bundled("us-east-1").specs["m5.large"]
    a = spot_estimate(spec, "us-east-1a", 0.096)
    assert a == spot_estimate(spec, "us-east-1a", 0.096)
    assert a is not None and 0.096 * SPOT_RATIO_DEFAULT * 0.95 <= a <= 0.096 * SPOT_RATIO_DEFAULT * 1.05
    assert spot_estimate(spec, "us-east-1a", None) is None
    t = next(t for t in load_builtin("us-east-1") if t.name == "m5.large")
    spots = [o for o in t.offerings if o.capacity_type == "spot"]
    assert spots and all(
        o.price_source == "estimate" and o.price is not None and o.price < 0.096 for o in spots
    )
    assert len({o.price for o in spots}) > 1  # zones differ


def test_unknown_price_is_never_guessed() -> None:
    types = {t.name: t for t in load_builtin("us-east-1")}
    unknown = [
        t
        for t in types.values()
        if all(o.price is None for o in t.offerings if o.capacity_type == "on-demand")
    ]
    assert unknown, "the snapshot should leave some newer types unpriced"
    for t in unknown:
        assert all(o.price is None and o.price_source == "price unknown" for o in t.offerings)


def test_overrides_in_order_and_shown() -> None:
    rules = [
        PriceOverride.parse("m5=0.09"),
        PriceOverride.parse("*=-10%"),
        PriceOverride.parse("spot:m5.large=-50%"),
    ]
    types = {t.name: t for t in load_builtin("us-east-1", overrides=rules)}
    od = next(o for o in types["m5.large"].offerings if o.capacity_type == "on-demand")
    assert od.price == pytest.approx(0.081)
    assert od.price_source == "snapshot 2026-01-19; override m5=0.09; override *=-10%"
    sp = next(o for o in types["m5.large"].offerings if o.capacity_type == "spot")
    assert sp.price_source == "estimate; override m5.large=-50%"
    c5 = next(o for o in types["c5.large"].offerings if o.capacity_type == "on-demand")
    assert c5.price == pytest.approx(0.0765)
    # a percentage cannot invent a price; a stated price can
    assert apply_overrides(
        "x9.large", "on-demand", None, "price unknown", [PriceOverride.parse("*=-10%")]
    ) == (None, "price unknown")
    assert apply_overrides("x9.large", "on-demand", None, "", [PriceOverride.parse("x9=1.5")]) == (
        1.5,
        "override x9=1.5",
    )


@pytest.mark.parametrize(
    "bad", ["m5", "m5=", "m5=-0.1", "=0.1", "M5=0.1", "m5=-100%", "weird:m5=1", "m5=1%%"]
)
def test_bad_override_rejected(bad: str) -> None:
    with pytest.raises(PricingError):
        PriceOverride.parse(bad)


def test_override_on_spot_and_capacity_type_scope() -> None:
    o = PriceOverride.parse("*:c7g=-5%")
    assert (
        o.matches("c7g.large", "spot")
        and o.matches("c7g.large", "on-demand")
        and not o.matches("c7gd.large", "spot")
    )
    assert PriceOverride.parse("m5=-20%").capacity_type == "on-demand"
