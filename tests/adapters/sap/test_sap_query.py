"""OData literals, key predicates, the delta filter and $select/$expand, and the stream catalog."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from connector.adapters.sap.catalog import load_catalog, parse_catalog
from connector.adapters.sap.query import (
    date_literal,
    datetimeoffset_literal,
    delta_filter,
    expand_option,
    key_predicate,
    select_fields,
    string_literal,
)
from connector.errors import ConfigError


def test_string_literals_double_their_quotes() -> None:
    assert string_literal("O'Brien & Sons") == "'O''Brien & Sons'"
    assert string_literal("' or 1 eq 1 or '") == "''' or 1 eq 1 or '''"


def test_key_predicates_escape_every_value() -> None:
    assert key_predicate({"BusinessPartner": "17'1"}) == "('17''1')"
    assert key_predicate({"Customer": "1", "CompanyCode": "10'10"}) == "(Customer='1',CompanyCode='10''10')"


def test_date_literals_per_version() -> None:
    assert date_literal(date(2024, 5, 1), "v2") == "datetime'2024-05-01T00:00:00'"
    assert date_literal(date(2024, 5, 1), "v4") == "2024-05-01"


def test_timestamp_literals_are_utc_per_version() -> None:
    moment = datetime(2024, 5, 1, 12, 30, 5, 250000, tzinfo=timezone(timedelta(hours=2)))
    assert datetimeoffset_literal(moment, "v2") == "datetimeoffset'2024-05-01T10:30:05.250Z'"
    assert datetimeoffset_literal(moment, "v4") == "2024-05-01T10:30:05.250Z"


def test_a_naive_timestamp_is_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        datetimeoffset_literal(datetime(2024, 5, 1), "v2")


def test_partner_delta_reads_changed_or_created_from_the_start_of_the_day() -> None:
    stream = load_catalog().streams["BusinessPartner"]
    since = datetime(2024, 5, 1, 17, 45, tzinfo=UTC)
    assert delta_filter(stream, since, "v2") == (
        "(LastChangeDate ge datetime'2024-05-01T00:00:00' or CreationDate ge datetime'2024-05-01T00:00:00')"
    )
    assert delta_filter(stream, since, "v4") == "(LastChangeDate ge 2024-05-01 or CreationDate ge 2024-05-01)"


def test_the_filter_day_is_the_utc_day() -> None:
    stream = load_catalog().streams["BusinessPartner"]
    since = datetime(2024, 5, 2, 1, 0, tzinfo=timezone(timedelta(hours=3)))  # 2024-05-01 22:00 UTC
    assert "2024-05-01" in delta_filter(stream, since, "v4")


def test_the_filter_day_is_the_sap_systems_local_day() -> None:
    stream = load_catalog().streams["BusinessPartner"]
    since = datetime(2024, 5, 1, 22, 30, tzinfo=UTC)  # already 2 May in Berlin
    assert "2024-05-02" in delta_filter(stream, since, "v4", ZoneInfo("Europe/Berlin"))


def test_sales_order_delta_uses_the_change_timestamp() -> None:
    stream = load_catalog().streams["SalesOrder"]
    since = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    assert delta_filter(stream, since, "v2") == (
        "(LastChangeDateTime ge datetimeoffset'2024-05-01T10:00:00Z'"
        " or CreationDate ge datetime'2024-05-01T00:00:00')"
    )


def test_v2_select_lists_expanded_navigations_and_v4_nests_expansions() -> None:
    catalog = load_catalog()
    stream = catalog.streams["BusinessPartner"]
    v2 = select_fields(stream, catalog, "v2").split(",")
    assert "BusinessPartner" in v2 and "to_Customer/CustomerName" in v2
    assert "to_BusinessPartnerAddress/to_EmailAddress/EmailAddress" in v2 and "to_Customer" not in v2
    assert "to_Customer" not in select_fields(stream, catalog, "v4").split(",")
    assert expand_option(stream.expand, "v2") == ",".join(stream.expand)
    assert expand_option(stream.expand, "v4") == (
        "to_BusinessPartnerAddress($expand=to_EmailAddress,to_PhoneNumber,to_MobilePhoneNumber),"
        "to_Customer($expand=to_CustomerCompany,to_CustomerSalesArea),"
        "to_Supplier($expand=to_SupplierCompany)"
    )
    orders = catalog.stream_for("SalesOrder", "v4")
    assert expand_option(orders.expand, "v4", catalog, orders) == (
        "_Item($select=SalesOrder,SalesOrderItem,Product,SalesOrderItemText,RequestedQuantity,"
        "RequestedQuantitySAPUnit,NetAmount,TransactionCurrency)"
    )


def test_the_shipped_catalog_declares_the_four_streams() -> None:
    catalog = load_catalog()
    assert set(catalog.streams) == {"BusinessPartner", "SalesOrder", "BillingDocument", "OpenItem"}
    assert catalog.streams["BusinessPartner"].day_granular
    assert not catalog.streams["SalesOrder"].day_granular
    items = catalog.streams["OpenItem"]
    assert items.keys == ("CompanyCode", "FiscalYear", "AccountingDocument", "AccountingDocumentItem")
    assert items.key_values("1010/2026/1800000001/1")["AccountingDocument"] == "1800000001"


def test_a_catalog_file_can_replace_the_shipped_one(tmp_path: Path) -> None:
    path = tmp_path / "sap.toml"
    path.write_text(
        '[services.S]\nv2 = "/s"\n[entities.E.fields]\nK = "string"\nD = "date"\n'
        '[streams.X]\nservice = "S"\nentity_set = "E"\nrecord_type = "document"\nkey = "K"\n'
        'changed = { date = "D" }\n'
    )
    catalog = load_catalog(path)
    assert catalog.streams["X"].day_granular and catalog.service_path("S", "v2") == "/s"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"entities": {"E": {"fields": {"K": "money"}}}}, "unknown.*type|expected one of"),
        ({"streams": {"X": {"service": "nope"}}}, "unknown service"),
        ({"streams": {"X": {"expand": ["to_Nowhere"]}}}, "no navigation 'to_Nowhere'"),
        ({"streams": {"X": {"changed": {"datetime": "Missing"}}}}, "not a field"),
    ],
)
def test_a_bad_catalog_is_a_config_error_naming_the_entry(
    change: dict[str, dict[str, object]], message: str
) -> None:
    raw: dict[str, dict[str, object]] = {
        "services": {"S": {"v2": "/s"}},
        "entities": {"E": {"fields": {"K": "string", "D": "datetime"}}},
        "streams": {
            "X": {
                "service": "S",
                "entity_set": "E",
                "record_type": "document",
                "key": "K",
                "changed": {"datetime": "D"},
            }
        },
    }
    for section, entries in change.items():
        for name, values in entries.items():
            raw[section][name] = {**raw[section][name], **values}  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match=message):
        parse_catalog(raw)
