"""The SAP adapter against the fake SAP: streams, deltas, paging, mapping, v2/v4 equivalence."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from connector.adapters.sap import SAPAdapter
from connector.clock import FrozenClock
from connector.erp.protocol import Adapter
from connector.erp.records import DocumentRecord, Page, PartyRecord, Record
from connector.errors import ConfigError, ERPNotFound
from connector.settings import SyncSettings
from connector.testing.sap import FakeSAP

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)


def open_adapter(fake: FakeSAP, **overrides: Any) -> SAPAdapter:
    tenant = fake.tenant_settings(**overrides)
    return SAPAdapter(tenant, sync=SyncSettings(), clock=FrozenClock(NOW), transport=fake.transport())


def read_all(adapter: SAPAdapter, stream: str, since: datetime | None = None) -> list[Record]:
    return [record for page in adapter.read(stream, since) for record in page.records]


@pytest.fixture
def fake() -> FakeSAP:
    return FakeSAP(seed=7, customers=40, suppliers=15, both=5, sales_orders=60, billing_documents=25)


@pytest.fixture
def adapter(fake: FakeSAP) -> Iterator[SAPAdapter]:
    with open_adapter(fake, page_size=20) as adapter:
        yield adapter


def test_the_adapter_follows_the_protocol(adapter: SAPAdapter) -> None:
    assert isinstance(adapter, Adapter)
    specs = {s.name: s for s in adapter.streams()}
    assert set(specs) == {"BusinessPartner", "SalesOrder", "BillingDocument", "OpenItem"}
    assert specs["BusinessPartner"].cursor_granularity == timedelta(days=1)
    assert specs["OpenItem"].cursor_granularity == timedelta(days=1)
    assert specs["BusinessPartner"].record_type == "party" and specs["SalesOrder"].record_type == "document"
    assert specs["SalesOrder"].cursor_field == "LastChangeDateTime"


def test_every_stream_is_read_into_canonical_records(fake: FakeSAP, adapter: SAPAdapter) -> None:
    parties = read_all(adapter, "BusinessPartner")
    orders = read_all(adapter, "SalesOrder")
    invoices = read_all(adapter, "BillingDocument")
    assert len([p for p in parties if p.key[1] == "customer"]) == 40
    assert len([p for p in parties if p.key[1] == "vendor"]) == 15
    assert {o.external_id for o in orders} == set(fake.data.sales_orders)
    assert all(isinstance(o, DocumentRecord) and o.doc_type == "sales_order" for o in orders)
    assert {i.external_id for i in invoices} == set(fake.data.billing_documents)
    assert all(isinstance(i, DocumentRecord) and i.doc_type == "ar_invoice" for i in invoices)
    assert all(
        r.source_modified_at is not None and r.source_modified_at.tzinfo is UTC for r in parties + orders
    )


def test_a_partner_with_both_roles_is_two_parties_sharing_the_erp_key(
    fake: FakeSAP, adapter: SAPAdapter
) -> None:
    both = [bp for bp, row in fake.data.partners.items() if row["Customer"] and row["Supplier"]]
    assert len(both) == 5
    parties = [p for p in read_all(adapter, "BusinessPartner") if p.external_id == both[0]]
    assert sorted(p.key[1] for p in parties) == ["customer", "vendor"]


def test_sales_order_values_survive_as_decimal_and_utc(fake: FakeSAP, adapter: SAPAdapter) -> None:
    orders = {o.external_id: o for o in read_all(adapter, "SalesOrder") if isinstance(o, DocumentRecord)}
    number, row = next(iter(fake.data.sales_orders.items()))
    assert orders[number].amount == row["TotalNetAmount"]
    assert orders[number].source_modified_at == row["LastChangeDateTime"]
    assert orders[number].party_external_id == row["SoldToParty"]


def test_v2_and_v4_answers_of_the_same_data_map_to_equal_records() -> None:
    """Each version under its own names; only the raw payload differs, and v4's invoices lack the
    clearing status (SAP's v4 BillingDocument has none), so a paid one still counts as open."""
    records = {}
    for version in ("v2", "v4"):
        fake = FakeSAP(seed=11, customers=12, suppliers=6, sales_orders=15, odata_version=version)
        with open_adapter(fake) as adapter:
            records[version] = {
                s: [replace(r, raw={}) for r in read_all(adapter, s)]
                for s in ("BusinessPartner", "SalesOrder", "BillingDocument")
            }
    v2, v4 = records["v2"], records["v4"]
    assert v2["BusinessPartner"] == v4["BusinessPartner"] and v2["SalesOrder"] == v4["SalesOrder"]
    assert [
        replace(r, status="open", is_open=True) for r in v2["BillingDocument"] if r.status != "cancelled"
    ] == [r for r in v4["BillingDocument"] if r.status != "cancelled"]
    assert any(r.status == "cleared" for r in v2["BillingDocument"])
    assert sum(len(r) for r in v2.values()) > 30


def test_a_delta_read_on_a_day_boundary_returns_the_boundary_days_changes(
    fake: FakeSAP, adapter: SAPAdapter
) -> None:
    changed_early = next(iter(fake.data.partners))
    fake.modify("A_BusinessPartner", changed_early, at=datetime(2026, 1, 14, 0, 0, 5, tzinfo=UTC))
    since = datetime(2026, 1, 14, 23, 59, 59, tzinfo=UTC)  # the watermark sits late on the same day
    found = {p.external_id for p in read_all(adapter, "BusinessPartner", since)}
    assert changed_early in found


def test_a_delta_read_skips_partners_untouched_since_the_day(fake: FakeSAP, adapter: SAPAdapter) -> None:
    since = datetime(2026, 1, 14, tzinfo=UTC)
    expected = {
        bp
        for bp, row in fake.data.partners.items()
        if (row["LastChangeDate"] or row["CreationDate"]) >= since.date()
        and (row["Customer"] or row["Supplier"])
    }
    fresh = fake.add_partner(created=datetime(2026, 1, 14, 8, tzinfo=UTC), changed=None)
    found = {p.external_id for p in read_all(adapter, "BusinessPartner", since)}
    assert found == expected | {fresh}
    assert len(found) < len(fake.data.partners)


def test_a_never_changed_partner_is_caught_by_its_creation_date(fake: FakeSAP, adapter: SAPAdapter) -> None:
    created = datetime(2026, 1, 15, 9, 30, tzinfo=UTC)
    number = fake.add_partner(created=created, changed=None)
    assert fake.data.partners[number]["LastChangeDate"] is None
    parties = [p for p in read_all(adapter, "BusinessPartner", datetime(2026, 1, 15, tzinfo=UTC))]
    match = [p for p in parties if isinstance(p, PartyRecord) and p.external_id == number]
    assert len(match) == 1 and match[0].source_modified_at == created


def test_a_sales_order_delta_includes_the_boundary_timestamp(fake: FakeSAP, adapter: SAPAdapter) -> None:
    number = next(iter(fake.data.sales_orders))
    at = datetime(2026, 1, 15, 11, 0, 0, 250000, tzinfo=UTC)
    fake.modify("A_SalesOrder", number, at=at)
    found = read_all(adapter, "SalesOrder", at)
    assert number in {o.external_id for o in found}


def test_a_bulk_update_stamping_many_orders_alike_returns_them_all(
    fake: FakeSAP, adapter: SAPAdapter
) -> None:
    at = datetime(2026, 1, 15, 11, 30, tzinfo=UTC)
    numbers = list(fake.data.sales_orders)[:45]
    fake.bulk_stamp("A_SalesOrder", at, numbers)
    found = {o.external_id for o in read_all(adapter, "SalesOrder", at)}
    assert set(numbers) <= found


def test_every_call_carries_sap_client_select_and_expand(fake: FakeSAP, adapter: SAPAdapter) -> None:
    read_all(adapter, "BusinessPartner")
    assert fake.gate.requests_without_client == 0
    assert fake.last_request is not None
    params = fake.last_request.url.params
    assert params["sap-client"] == "100"
    assert "to_Customer/to_CustomerSalesArea" in params["$expand"]
    assert params["$select"].startswith("BusinessPartner,")
    assert params["$orderby"] == "BusinessPartner"


def test_server_paging_and_client_paging_read_the_same_records() -> None:
    results = []
    for server_page_size in (None, 7):
        fake = FakeSAP(seed=3, customers=30, suppliers=5, sales_orders=50, server_page_size=server_page_size)
        with open_adapter(fake, page_size=20) as adapter:
            results.append(read_all(adapter, "SalesOrder"))
            if server_page_size:  # 3 windows of 20, each served as pages of 7, 7 and 6 (or fewer)
                assert fake.requests_to("A_SalesOrder") == 8
    assert results[0] == results[1] and len(results[0]) == 50


def test_pages_report_requests_and_the_adapter_counts_them(adapter: SAPAdapter) -> None:
    pages: list[Page] = list(adapter.read("SalesOrder", None))
    # 60 orders, 20 a page: the third page is full, so a fourth (empty) read proves the end.
    assert [len(p.records) for p in pages] == [20, 20, 20, 0]
    assert [p.number for p in pages] == [1, 2, 3, 4]
    assert sum(p.requests for p in pages) == adapter.request_count
    assert adapter.retry_count == 0


def test_a_malformed_record_is_a_problem_and_still_counts_for_the_watermark(
    fake: FakeSAP, adapter: SAPAdapter
) -> None:
    number = list(fake.data.sales_orders)[3]
    latest = datetime(2026, 1, 15, 11, 59, tzinfo=UTC)
    fake.modify("A_SalesOrder", number, at=latest, TotalNetAmount="12,50")
    pages = list(adapter.read("SalesOrder", None))
    problems = [problem for page in pages for problem in page.problems]
    assert [(p.stream, p.key) for p in problems] == [("SalesOrder", number)]
    assert "TotalNetAmount" in problems[0].reason
    assert number not in {r.external_id for page in pages for r in page.records}
    assert max(p.max_modified for p in pages if p.max_modified) == latest
    assert sum(len(p.records) for p in pages) == 59


def test_scan_keys_lists_partners_with_a_role_and_forgets_deleted_ones(
    fake: FakeSAP, adapter: SAPAdapter
) -> None:
    keys = list(adapter.scan_keys("BusinessPartner"))
    with_role = [bp for bp, row in fake.data.partners.items() if row["Customer"] or row["Supplier"]]
    assert len(with_role) < len(fake.data.partners)  # the fake has partners without a role, as real ones
    assert sorted(keys) == sorted(with_role)
    gone = keys[0]
    fake.delete("A_BusinessPartner", gone)
    assert gone not in set(adapter.scan_keys("BusinessPartner"))
    assert set(adapter.scan_keys("SalesOrder")) == set(fake.data.sales_orders)


def test_a_deleted_customer_flag_maps_to_deleted_status(fake: FakeSAP, adapter: SAPAdapter) -> None:
    customer = next(iter(fake.data.customers))
    fake.modify("A_Customer", customer, at=NOW, DeletionIndicator=True)
    parties = [p for p in read_all(adapter, "BusinessPartner", NOW) if isinstance(p, PartyRecord)]
    assert [p.status for p in parties if p.external_id == customer and p.kind == "customer"] == ["deleted"]


def test_terms_rule_follows_the_tenant_setting(fake: FakeSAP) -> None:
    customer = next(iter(fake.data.customers))
    fake.modify("A_CustomerCompany", (customer, "1010"), at=NOW, PaymentTerms="NT30")
    fake.modify("A_CustomerSalesArea", (customer, "1010"), at=NOW, CustomerPaymentTerms="0001")
    terms = {}
    for source in ("company", "sales_area"):
        with open_adapter(
            fake, terms_source=source, company_code="1010", sales_organization="1010"
        ) as adapter:
            party = next(
                p
                for p in read_all(adapter, "BusinessPartner", NOW)
                if p.key == ("s4-fake", "customer", customer)
            )
            assert isinstance(party, PartyRecord)
            terms[source] = party.terms
    assert terms == {"company": "NT30", "sales_area": "0001"}


def test_configured_streams_limit_what_is_offered(fake: FakeSAP) -> None:
    with open_adapter(fake, streams=["SalesOrder"]) as adapter:
        assert [s.name for s in adapter.streams()] == ["SalesOrder"]
        with pytest.raises(ConfigError, match="no SAP stream 'BusinessPartner'"):
            list(adapter.read("BusinessPartner", None))


def test_an_unknown_configured_stream_is_a_config_error(fake: FakeSAP) -> None:
    with pytest.raises(ConfigError, match="unknown SAP stream"):
        open_adapter(fake, streams=["Nope"])


def test_an_acumatica_auth_mode_is_refused_for_sap(fake: FakeSAP) -> None:
    with pytest.raises(ConfigError, match="not available for SAP"):
        open_adapter(fake, auth="oauth")


def test_missing_credentials_are_named(fake: FakeSAP) -> None:
    with pytest.raises(ConfigError, match="needs password"):
        open_adapter(fake, password=None)
    with pytest.raises(ConfigError, match="token_url, client_id, client_secret"):
        open_adapter(fake, auth="oauth_client_credentials")


def test_fetch_reads_one_entity_by_an_escaped_key(fake: FakeSAP, adapter: SAPAdapter) -> None:
    number = fake.add_partner(customer=True, supplier=True, created=NOW)
    fake.data.partners[number]["BusinessPartner"] = "O'7"  # a key that needs escaping
    fake.index.changed()
    records = adapter.fetch("BusinessPartner", "O'7")
    assert [(r.key[1], r.external_id) for r in records] == [("customer", "O'7"), ("vendor", "O'7")]
    assert fake.last_request is not None and "A_BusinessPartner('O''7')" in fake.last_request.url.path
    assert "$orderby" not in fake.last_request.url.params


def test_fetch_of_an_unknown_key_is_not_found(adapter: SAPAdapter) -> None:
    with pytest.raises(ERPNotFound):
        adapter.fetch("SalesOrder", "nope")


def test_the_package_exports_the_intended_names() -> None:
    import connector.adapters.sap

    assert sorted(connector.adapters.sap.__all__) == [
        "Catalog",
        "MappingRules",
        "ODataErrorInfo",
        "SAPAdapter",
        "SAPClient",
        "load_catalog",
    ]


def test_local_sap_dates_are_read_in_the_systems_time_zone() -> None:
    fake = FakeSAP(seed=7, customers=10, suppliers=0, sales_orders=0, time_zone="America/New_York")
    number = next(iter(fake.data.partners))
    at = datetime(2026, 1, 15, 3, 30, tzinfo=UTC)  # 22:30 on 14 January in New York
    fake.modify("A_BusinessPartner", number, at=at)
    assert fake.data.partners[number]["LastChangeDate"].isoformat() == "2026-01-14"
    with open_adapter(fake) as adapter:
        assert adapter.settings.sap_time_zone == "America/New_York"
        found = [p for p in read_all(adapter, "BusinessPartner", datetime(2026, 1, 15, 3, 0, tzinfo=UTC))]
    assert [p.source_modified_at for p in found if p.external_id == number] == [at]


def test_paid_invoices_are_not_open_documents(fake: FakeSAP, adapter: SAPAdapter) -> None:
    invoices = {
        r.external_id: r for r in read_all(adapter, "BillingDocument") if isinstance(r, DocumentRecord)
    }
    cleared = {k for k, row in fake.data.billing_documents.items() if row["InvoiceClearingStatus"] == "C"}
    assert cleared and all(not invoices[k].is_open and invoices[k].status == "cleared" for k in cleared)
    still_open = next(k for k, r in invoices.items() if r.is_open)
    fake.modify("A_BillingDocument", still_open, at=NOW, InvoiceClearingStatus="C")  # the customer paid
    [paid] = [r for r in read_all(adapter, "BillingDocument", NOW) if r.external_id == still_open]
    assert isinstance(paid, DocumentRecord) and not paid.is_open


def test_a_stream_without_select_asks_for_every_field(fake: FakeSAP, adapter: SAPAdapter) -> None:
    read_all(adapter, "BillingDocument")
    assert fake.last_request is not None and "$select" in fake.last_request.url.params
    adapter._streams["BillingDocument"] = replace(adapter._streams["BillingDocument"], select=False)
    assert len(read_all(adapter, "BillingDocument")) == len(fake.data.billing_documents)
    assert "$select" not in fake.last_request.url.params
