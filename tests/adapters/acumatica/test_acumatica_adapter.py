"""The Acumatica adapter against the fake Acumatica, in-process (no sockets, no sleeping)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import respx

from connector.adapters.acumatica import AcumaticaAdapter
from connector.adapters.factory import open_adapter
from connector.adapters.http import SessionExpired
from connector.clock import FrozenClock
from connector.erp.records import CaseRecord, DocumentRecord, PartyRecord
from connector.errors import (
    ConfigError,
    ERPAuthError,
    ERPNotFound,
    ERPProtocolError,
    ERPRateLimited,
    ERPRequestError,
)
from connector.settings import SyncSettings
from connector.testing import FakeAcumatica, Fault
from connector.testing.acumatica import ALL_VERSIONS

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
WATERMARK = datetime(2026, 1, 15, 6, 0, 0, 250000, tzinfo=UTC)  # after all generated data


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(NOW)


def small_fake(clock: FrozenClock, **sizes: Any) -> FakeAcumatica:
    counts = {"customers": 50, "vendors": 10, "invoices": 40, "sales_orders": 20, "bills": 20, "cases": 20}
    counts.update(sizes)
    return FakeAcumatica(seed=7, clock=clock, **counts)


@pytest.fixture
def fake(clock: FrozenClock) -> FakeAcumatica:
    return small_fake(clock)


def adapter_for(
    fake: FakeAcumatica, clock: FrozenClock, *, sync: SyncSettings | None = None, **tenant: Any
) -> AcumaticaAdapter:
    settings = fake.tenant_settings(**tenant)
    return AcumaticaAdapter(
        settings, sync=sync or SyncSettings(), clock=clock, transport=httpx.MockTransport(fake.handle)
    )


def read_all(adapter: AcumaticaAdapter, stream: str, since: datetime | None = None, **kw: Any) -> list[Any]:
    return [record for page in adapter.read(stream, since, **kw) for record in page.records]


# Paging ---------------------------------------------------------------------------------------


def test_full_read_of_2500_customers_takes_three_list_requests(clock: FrozenClock) -> None:
    fake = small_fake(clock, customers=2500)
    with adapter_for(fake, clock, page_size=1000) as adapter:
        pages = list(adapter.read("Customer", None))
    assert [len(page.records) for page in pages] == [1000, 1000, 500]
    calls = fake.list_requests("Customer")
    assert len(calls) == 3
    assert [(c.params["$top"], c.params["$skip"]) for c in calls] == [  # each page overlaps the last
        ("1000", "0"),
        ("1020", "980"),
        ("1020", "1980"),
    ]
    records = [r for page in pages for r in page.records]
    assert all(isinstance(r, PartyRecord) and r.kind == "customer" for r in records)
    assert len({r.external_id for r in records}) == 2500
    assert "$filter" not in calls[0].params


def test_a_full_last_page_ends_with_an_empty_page(clock: FrozenClock) -> None:
    fake = small_fake(clock, customers=200)
    with adapter_for(fake, clock, page_size=100) as adapter:
        sizes = [len(page.records) for page in adapter.read("Customer", None)]
    assert sizes == [100, 100, 0]


def test_a_server_that_repeats_a_page_is_detected(clock: FrozenClock) -> None:
    fake = small_fake(clock, customers=250)
    fake.repeat_page(target="Customer", after=1)
    with (
        adapter_for(fake, clock, page_size=100) as adapter,
        pytest.raises(ERPProtocolError, match="repeats page 0"),
    ):
        list(adapter.read("Customer", None))
    assert fake.active_sessions == 0


# Delta ----------------------------------------------------------------------------------------


def test_delta_read_returns_exactly_the_records_changed_at_or_after_the_watermark(
    clock: FrozenClock, fake: FakeAcumatica
) -> None:
    keys = fake.keys("Customer")
    fake.modify("Customer", keys[3], {"CreditLimit": 1.0}, modified_at=WATERMARK - timedelta(milliseconds=1))
    fake.modify("Customer", keys[5], {"CreditLimit": 2.0}, modified_at=WATERMARK)
    fake.modify("Customer", keys[7], {"CreditLimit": 3.0}, modified_at=WATERMARK)  # shares the boundary
    fake.modify("Customer", keys[9], {"CreditLimit": 4.0}, modified_at=WATERMARK + timedelta(seconds=1))
    with adapter_for(fake, clock) as adapter:
        changed = read_all(adapter, "Customer", WATERMARK)
        pinned = read_all(adapter, "Customer", WATERMARK, until=WATERMARK)
    assert sorted(r.external_id for r in changed) == sorted([keys[5], keys[7], keys[9]])
    assert sorted(r.external_id for r in pinned) == sorted([keys[5], keys[7]])


def test_delta_filter_is_a_closed_datetimeoffset_window_on_the_stream_change_field(
    clock: FrozenClock, fake: FakeAcumatica
) -> None:
    until = WATERMARK + timedelta(hours=1, microseconds=1500)
    with adapter_for(fake, clock) as adapter:
        read_all(adapter, "SalesOrder", WATERMARK, until=until)
        read_all(adapter, "Invoice", WATERMARK)
    order_filter = fake.list_requests("SalesOrder")[0].params["$filter"]
    assert order_filter == (
        "LastModified ge datetimeoffset'2026-01-15T06:00:00.250+00:00' and "
        "LastModified le datetimeoffset'2026-01-15T07:00:00.252+00:00'"  # the end rounds up to the ms
    )
    assert fake.list_requests("Invoice")[0].params["$filter"] == (
        "LastModifiedDateTime ge datetimeoffset'2026-01-15T06:00:00.250+00:00'"
    )


def test_a_bulk_update_with_one_timestamp_is_read_completely(clock: FrozenClock) -> None:
    fake = small_fake(clock, customers=220)
    stamped = fake.stamp("Customer", 150, WATERMARK)
    with adapter_for(fake, clock, page_size=100) as adapter:
        pages = list(adapter.read("Customer", WATERMARK))
    assert sorted(r.external_id for p in pages for r in p.records) == sorted(stamped)
    assert [p.max_modified for p in pages] == [WATERMARK, WATERMARK]


def test_times_in_a_server_offset_map_to_utc(clock: FrozenClock) -> None:
    fake = small_fake(clock, customers=5, utc_offset=timedelta(hours=3))
    key = fake.keys("Customer")[0]
    fake.modify("Customer", key, modified_at=WATERMARK)
    with adapter_for(fake, clock) as adapter:
        (record,) = read_all(adapter, "Customer", WATERMARK)
    assert record.source_modified_at == WATERMARK
    assert record.raw["LastModifiedDateTime"]["value"] == "2026-01-15T09:00:00.25+03:00"


# Session lifecycle ----------------------------------------------------------------------------


def test_logout_happens_after_an_exception(clock: FrozenClock, fake: FakeAcumatica) -> None:
    with pytest.raises(RuntimeError), adapter_for(fake, clock) as adapter:
        next(iter(adapter.read("Customer", None)))
        assert fake.active_sessions == 1
        raise RuntimeError("the sync job failed mid-run")
    assert fake.active_sessions == 0
    assert fake.request_counts["/entity/auth/logout"] == 1


def test_logout_happens_after_an_erp_error(clock: FrozenClock, fake: FakeAcumatica) -> None:
    fake.business_error(target="Vendor")
    with pytest.raises(ERPRequestError), adapter_for(fake, clock) as adapter:
        list(adapter.read("Vendor", None))
    assert fake.active_sessions == 0


def test_a_failed_version_discovery_still_logs_out(clock: FrozenClock, fake: FakeAcumatica) -> None:
    fake.business_error(target="index")
    with pytest.raises(ERPRequestError), adapter_for(fake, clock):
        pass
    assert fake.sessions.logins == 1
    assert fake.active_sessions == 0


def test_401_mid_run_logs_in_again_once_and_the_read_completes(clock: FrozenClock) -> None:
    fake = small_fake(clock, customers=250)
    fake.expire_sessions(target="Customer", after=1)
    with adapter_for(fake, clock, page_size=100) as adapter:
        records = read_all(adapter, "Customer")
    assert len(records) == 250
    assert fake.request_counts["/entity/auth/login"] == 2
    assert [c.status for c in fake.list_requests("Customer")] == [200, 401, 200, 200]
    assert fake.active_sessions == 0


def test_a_401_that_persists_after_the_relogin_fails(clock: FrozenClock, fake: FakeAcumatica) -> None:
    fake.inject(Fault("expire_sessions", "Customer", times=2))
    with adapter_for(fake, clock) as adapter, pytest.raises(SessionExpired, match="HTTP 401"):
        read_all(adapter, "Customer")
    assert fake.request_counts["/entity/auth/login"] == 2


def test_invalid_credentials_fail_fast_with_a_clear_error_and_no_retry(
    clock: FrozenClock, fake: FakeAcumatica
) -> None:
    with (
        pytest.raises(ERPAuthError, match="Invalid credentials") as info,
        adapter_for(fake, clock, password="not-the-password"),
    ):
        pass
    assert info.value.exception_message is not None
    assert info.value.exception_message.startswith("Error: Invalid credentials")
    assert "not-the-password" not in str(info.value)
    assert fake.request_counts["/entity/auth/login"] == 1
    assert clock.sleeps == []


def test_an_api_login_limit_is_retried_later(clock: FrozenClock, fake: FakeAcumatica) -> None:
    fake.login_limit(times=2)
    with adapter_for(fake, clock) as adapter:
        assert len(read_all(adapter, "Vendor")) == 10
        assert adapter.retry_count == 2
    assert fake.request_counts["/entity/auth/login"] == 3
    assert len(clock.sleeps) == 2


# Retries --------------------------------------------------------------------------------------


def test_a_429_storm_completes_with_the_expected_retries_and_waits(clock: FrozenClock) -> None:
    fake = small_fake(clock, customers=250)
    fake.rate_limit(times=4, retry_after=3, target="Customer", after=1)
    with adapter_for(fake, clock, page_size=100) as adapter:
        assert len(read_all(adapter, "Customer")) == 250
        assert adapter.retry_count == 4
    assert clock.sleeps == [3.0, 3.0, 3.0, 3.0]
    assert [c.status for c in fake.list_requests("Customer")] == [200, 429, 429, 429, 429, 200, 200]


def test_429_without_retry_after_backs_off_exponentially(clock: FrozenClock, fake: FakeAcumatica) -> None:
    fake.rate_limit(times=3, target="Vendor")
    with adapter_for(fake, clock) as adapter:
        read_all(adapter, "Vendor")
    low = [2.5, 5.0, 10.0]  # 5 s doubling, with up to half of each wait as jitter
    assert len(clock.sleeps) == 3
    assert all(lo <= wait <= 2 * lo for lo, wait in zip(low, clock.sleeps, strict=True))


def test_a_429_storm_beyond_the_retry_budget_raises_rate_limited(
    clock: FrozenClock, fake: FakeAcumatica
) -> None:
    fake.rate_limit(times=10, retry_after="Thu, 15 Jan 2026 12:00:04 GMT", target="Vendor")
    with adapter_for(fake, clock, max_retries=2) as adapter, pytest.raises(ERPRateLimited) as info:
        read_all(adapter, "Vendor")
    assert info.value.status_code == 429
    assert len(fake.list_requests("Vendor")) == 3


def test_timeouts_5xx_and_malformed_json_are_retried(clock: FrozenClock, fake: FakeAcumatica) -> None:
    fake.time_out(target="Invoice")
    fake.fail(503, target="Invoice")
    fake.fail(500, target="Invoice")
    fake.malformed_json(target="Invoice")
    with adapter_for(fake, clock) as adapter:
        assert len(read_all(adapter, "Invoice")) == 40
        assert adapter.retry_count == 4


def test_a_business_error_500_is_not_retried(clock: FrozenClock, fake: FakeAcumatica) -> None:
    fake.business_error("Something is wrong with the record.", target="Bill")
    with adapter_for(fake, clock) as adapter, pytest.raises(ERPRequestError, match="PXException") as info:
        read_all(adapter, "Bill")
    assert info.value.exception_type == "PX.Data.PXException"
    assert len(fake.list_requests("Bill")) == 1
    assert clock.sleeps == []


def test_the_client_side_rate_limit_spaces_requests(clock: FrozenClock) -> None:
    fake = small_fake(clock, customers=300)
    with adapter_for(fake, clock, page_size=10, requests_per_minute=60) as adapter:
        read_all(adapter, "Customer")  # login, discovery, 31 list requests, logout; burst of 6
    assert len(clock.sleeps) == 34 - 6
    assert all(wait == pytest.approx(1.0) for wait in clock.sleeps)


# Versions and auth ----------------------------------------------------------------------------


def test_the_newest_supported_endpoint_version_is_discovered(clock: FrozenClock) -> None:
    fake = small_fake(clock, versions=("22.200.001", "24.200.001", "99.100.001"))
    with adapter_for(fake, clock) as adapter:
        assert adapter.version == "24.200.001"
        read_all(adapter, "Customer")
    assert fake.request_counts["/entity/Default/24.200.001/Customer"] == 1


def test_a_configured_version_skips_discovery(clock: FrozenClock, fake: FakeAcumatica) -> None:
    with adapter_for(fake, clock, version="23.200.001") as adapter:
        read_all(adapter, "Case")
    assert fake.request_counts["/entity"] == 0
    assert fake.request_counts["/entity/Default/23.200.001/Case"] == 1


def test_a_version_the_server_lacks_is_a_not_found_error(clock: FrozenClock, fake: FakeAcumatica) -> None:
    with (
        adapter_for(fake, clock, version="21.200.001") as adapter,
        pytest.raises(ERPNotFound, match=r"21\.200\.001"),
    ):
        read_all(adapter, "Case")


def test_oauth_password_flow_reads_and_refreshes_before_expiry(
    clock: FrozenClock, fake: FakeAcumatica
) -> None:
    with adapter_for(fake, clock, auth="oauth") as adapter:
        assert len(read_all(adapter, "Vendor")) == 10
        clock.advance(timedelta(minutes=59, seconds=30))  # the token expires in 30 s: refresh first
        assert len(read_all(adapter, "Vendor")) == 10
    assert fake.request_counts["/identity/connect/token"] == 2
    assert fake.request_counts["/entity/auth/login"] == 0
    assert [c.status for c in fake.list_requests("Vendor")] == [200, 200]
    clock.advance(timedelta(minutes=1))  # the replaced token's session ends when that token expires
    assert fake.active_sessions == 0


def test_oauth_401_refreshes_the_token_and_retries(clock: FrozenClock, fake: FakeAcumatica) -> None:
    fake.expire_sessions(target="Vendor")
    with adapter_for(fake, clock, auth="oauth") as adapter:
        assert len(read_all(adapter, "Vendor")) == 10
    assert fake.request_counts["/identity/connect/token"] == 2


def test_oauth_bad_password_is_an_auth_error(clock: FrozenClock, fake: FakeAcumatica) -> None:
    with (
        pytest.raises(ERPAuthError, match="invalid_grant"),
        adapter_for(fake, clock, auth="oauth", password="nope"),
    ):
        pass
    assert clock.sleeps == []


@pytest.mark.parametrize("auth", ["oauth_client_credentials", "basic", "apikey"])
def test_acumatica_refuses_auth_modes_it_does_not_have(
    clock: FrozenClock, fake: FakeAcumatica, auth: str
) -> None:
    with pytest.raises(ConfigError, match="session' or 'oauth'"), adapter_for(fake, clock, auth=auth):
        pass


def test_missing_credentials_are_a_config_error(clock: FrozenClock, fake: FakeAcumatica) -> None:
    with pytest.raises(ConfigError, match="password"), adapter_for(fake, clock, password=None):
        pass


# Queries --------------------------------------------------------------------------------------


def test_requests_select_expand_and_custom_fields(clock: FrozenClock, fake: FakeAcumatica) -> None:
    custom = {"Customer": ["Document.AttrPOREQ"]}
    with adapter_for(fake, clock, custom_fields=custom) as adapter:
        records = read_all(adapter, "Customer")
    params = fake.list_requests("Customer")[0].params
    assert params["$select"].split(",")[:3] == ["CustomerID", "CustomerName", "Status"]
    assert "MainContact" not in params["$select"]
    assert params["$expand"] == (  # nested paths after their parents, as Acumatica documents $expand
        "MainContact,MainContact/Address,BillingContact,BillingContact/Address,PrimaryContact,"
        "PrimaryContact/Address,Contacts,Contacts/Contact,Contacts/Contact/Address,Attributes,"
        "CreditVerificationRules"
    )
    assert params["$custom"] == "Document.AttrPOREQ"
    for record in records:
        expected = fake.tables["Customer"].get([record.external_id])
        assert expected is not None and expected.custom is not None
        assert record.attributes["Document.AttrPOREQ"] == expected.custom["Document.AttrPOREQ"]
        assert record.attributes["POREQ"] == expected.custom["Document.AttrPOREQ"]


def test_invalid_custom_field_names_are_refused(clock: FrozenClock, fake: FakeAcumatica) -> None:
    with pytest.raises(ConfigError, match=r"View\.Field"):
        adapter_for(fake, clock, custom_fields={"Customer": ["Attr') or 1 eq 1"]})


def test_a_quote_in_a_key_neither_breaks_nor_changes_the_filter(
    clock: FrozenClock, fake: FakeAcumatica
) -> None:
    fake.add("Customer", {"CustomerID": "O'BRIEN", "CustomerName": "O'Brien & Sons"})
    with adapter_for(fake, clock) as adapter:
        found = adapter.find("Customer", "O'BRIEN")
        injected = adapter.find("Customer", "X' or CustomerID ne '")
    assert isinstance(found, PartyRecord) and found.name == "O'Brien & Sons"
    assert injected is None
    filters = [c.params["$filter"] for c in fake.list_requests("Customer")]
    assert filters == ["CustomerID eq 'O''BRIEN'", "CustomerID eq 'X'' or CustomerID ne '''"]


def test_a_missing_record_is_not_found_without_retry(clock: FrozenClock, fake: FakeAcumatica) -> None:
    with adapter_for(fake, clock) as adapter, pytest.raises(ERPNotFound) as info:
        adapter.get("Customer", "NO-SUCH-ONE")
    assert info.value.exception_type is not None
    assert info.value.exception_type.endswith("NoEntitySatisfiesTheConditionException")
    assert clock.sleeps == []


def test_a_record_by_composite_key(clock: FrozenClock, fake: FakeAcumatica) -> None:
    key = fake.keys("Invoice")[0]
    with adapter_for(fake, clock) as adapter:
        record = adapter.get("Invoice", key)
    assert isinstance(record, DocumentRecord)
    assert record.external_id == key
    assert fake.request_counts[f"/entity/Default/25.200.001/Invoice/{key}"] == 1


def test_scan_keys_reads_only_the_key_fields(clock: FrozenClock, fake: FakeAcumatica) -> None:
    deleted = fake.keys("Invoice")[4]
    fake.delete("Invoice", deleted)
    with adapter_for(fake, clock, page_size=15) as adapter:
        keys = list(adapter.scan_keys("Invoice"))
    assert keys == fake.keys("Invoice")
    assert deleted not in keys and len(keys) == 39
    assert all(c.params["$select"] == "Type,ReferenceNbr" for c in fake.list_requests("Invoice"))
    assert len(fake.list_requests("Invoice")) == 3


# Malformed records ----------------------------------------------------------------------------


def test_a_malformed_record_is_skipped_and_reported_with_its_key(
    clock: FrozenClock, fake: FakeAcumatica
) -> None:
    key = fake.keys("Customer")[2]
    latest = WATERMARK + timedelta(days=1)
    fake.modify("Customer", key, modified_at=latest)
    fake.corrupt("Customer", key, "CreditLimit", {"value": "lots"})
    with adapter_for(fake, clock) as adapter:
        (page,) = list(adapter.read("Customer", None))
    assert len(page.records) == 49
    assert key not in {r.external_id for r in page.records}
    (problem,) = page.problems
    assert (problem.stream, problem.key) == ("Customer", key)
    assert "CreditLimit" in problem.reason
    assert page.max_modified == latest  # the watermark does not stall on the skipped record


def test_a_record_without_its_key_is_reported_without_one(clock: FrozenClock, fake: FakeAcumatica) -> None:
    fake.corrupt("Vendor", fake.keys("Vendor")[0], "VendorID")
    with adapter_for(fake, clock) as adapter:
        (page,) = list(adapter.read("Vendor", None))
    assert len(page.records) == 9
    assert [(p.key, "VendorID" in p.reason) for p in page.problems] == [(None, True)]


def test_a_malformed_record_fails_the_page_when_configured(clock: FrozenClock, fake: FakeAcumatica) -> None:
    key = fake.keys("Case")[1]
    fake.corrupt("Case", key, "LastModifiedDateTime", {"value": "2026-01-15T10:00:00"})  # no offset
    sync = SyncSettings(on_malformed_record="fail")
    with adapter_for(fake, clock, sync=sync) as adapter, pytest.raises(ERPProtocolError, match=key) as info:
        list(adapter.read("Case", None))
    assert "UTC offset" in str(info.value)


# Streams and mapping --------------------------------------------------------------------------


def test_streams_are_declared_with_their_record_types_and_change_fields(
    clock: FrozenClock, fake: FakeAcumatica
) -> None:
    specs = {s.name: (s.record_type, s.cursor_field) for s in adapter_for(fake, clock).streams()}
    assert specs == {
        "Customer": ("party", "LastModifiedDateTime"),
        "Vendor": ("party", "LastModifiedDateTime"),
        "Invoice": ("document", "LastModifiedDateTime"),
        "SalesOrder": ("document", "LastModified"),
        "Bill": ("document", "LastModifiedDateTime"),
        "Case": ("case", "LastModifiedDateTime"),
    }


def test_configured_streams_limit_the_adapter(clock: FrozenClock, fake: FakeAcumatica) -> None:
    adapter = adapter_for(fake, clock, streams=["Customer", "Case"])
    assert [s.name for s in adapter.streams()] == ["Customer", "Case"]
    with pytest.raises(ConfigError, match="unknown Acumatica stream"):
        adapter_for(fake, clock, streams=["Customers"])


def test_every_stream_maps_into_canonical_records(clock: FrozenClock, fake: FakeAcumatica) -> None:
    with adapter_for(fake, clock) as adapter:
        result = {s.name: read_all(adapter, s.name) for s in adapter.streams()}
    assert {name: len(records) for name, records in result.items()} == {
        name: fake.count(name) for name in result
    }
    invoices = result["Invoice"]
    assert {r.doc_type for r in invoices} == {"ar_invoice", "credit_memo"}
    for record in invoices:
        assert isinstance(record, DocumentRecord)
        assert record.external_id == f"{record.extra['type']}/{record.number}"
        assert (record.doc_type == "credit_memo") == (record.extra["type"] == "Credit Memo")
    assert all(isinstance(r, DocumentRecord) and r.doc_type == "sales_order" for r in result["SalesOrder"])
    assert all(isinstance(r, DocumentRecord) and r.party_kind == "vendor" for r in result["Bill"])
    cases = [r for r in result["Case"] if isinstance(r, CaseRecord)]
    assert len(cases) == 20
    for case in cases:
        assert case.is_closed == (case.status in ("Closed", "Resolved"))
        assert (case.resolution is not None) == case.is_closed
        assert case.description and "<p>" not in case.description


def test_counters_cover_login_reads_and_logout(clock: FrozenClock, fake: FakeAcumatica) -> None:
    adapter = adapter_for(fake, clock)
    with adapter:
        read_all(adapter, "Vendor")
    assert adapter.request_count == 4  # login, GET /entity, one page, logout
    assert adapter.retry_count == 0


def test_secrets_never_reach_logs_or_errors(
    clock: FrozenClock, fake: FakeAcumatica, caplog: pytest.LogCaptureFixture
) -> None:
    fake.rate_limit(target="Vendor")
    fake.expire_sessions(target="Vendor", after=0)
    caplog.set_level(logging.DEBUG)
    with adapter_for(fake, clock, auth="oauth") as adapter:
        read_all(adapter, "Vendor")
        token = adapter.client.http.headers["Authorization"].split()[1]
    with pytest.raises(ERPAuthError) as info, adapter_for(fake, clock, password="wrong-Secret-1"):
        pass
    text = caplog.text + str(info.value)
    for secret in (fake.password, fake.client_secret, token, "wrong-Secret-1"):
        assert secret not in text


# Factory and respx ----------------------------------------------------------------------------


def test_open_adapter_returns_the_acumatica_adapter_unopened(clock: FrozenClock, fake: FakeAcumatica) -> None:
    adapter = open_adapter(fake.tenant_settings(), sync=SyncSettings(), clock=clock)
    assert isinstance(adapter, AcumaticaAdapter)
    assert fake.request_counts == {}


@pytest.fixture
def routed(fake: FakeAcumatica) -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False) as router:
        router.route(host=fake.host).mock(side_effect=fake.handle)
        yield router


def test_the_fake_serves_the_adapter_through_respx(
    clock: FrozenClock, fake: FakeAcumatica, routed: respx.MockRouter
) -> None:
    with open_adapter(fake.tenant_settings(), sync=SyncSettings(), clock=clock) as adapter:
        assert len(read_all(adapter, "Customer")) == 50
    assert routed.calls.call_count == 4
    assert routed.calls.last.request.url.path == "/AcumaticaERP/entity/auth/logout"


def test_the_filter_is_url_encoded_so_the_offset_sign_survives(
    clock: FrozenClock, fake: FakeAcumatica
) -> None:
    queries: list[bytes] = []

    def recording(request: httpx.Request) -> httpx.Response:
        queries.append(request.url.query)
        return fake.handle(request)

    tenant = fake.tenant_settings()
    transport = httpx.MockTransport(recording)
    with AcumaticaAdapter(tenant, sync=SyncSettings(), clock=clock, transport=transport) as adapter:
        read_all(adapter, "Vendor", WATERMARK)
    (query,) = [q for q in queries if b"filter" in q]
    assert b"datetimeoffset%272026-01-15T06%3A00%3A00.250%2B00%3A00%27" in query
    assert b"+00:00" not in query


def test_on_26_a_record_is_read_by_the_same_id_as_on_older_versions(clock: FrozenClock) -> None:
    """26.200.001's ``Type`` key is a select value whose ID (``INV``) the by-key URL takes; the id
    keeps the description (``Invoice/AR...``), so the adapter filters on the number and matches it."""
    fake = FakeAcumatica(seed=3, clock=clock, customers=5, invoices=12, versions=ALL_VERSIONS)
    key = fake.keys("Invoice")[0]
    with adapter_for(fake, clock, version="26.200.001") as adapter:
        record = adapter.get("Invoice", key)
        found = adapter.find("Invoice", key)
        with pytest.raises(ERPNotFound):
            adapter.get("Invoice", key.split("/")[0] + "/NO-SUCH-NUMBER")
    assert isinstance(record, DocumentRecord) and record.external_id == key
    assert isinstance(found, DocumentRecord) and found.external_id == key
    assert record.extra["type_code"] != key.split("/")[0]  # the ID really differs from the description
    filters = [c.params["$filter"] for c in fake.list_requests("Invoice")]
    assert filters and all(f.startswith("ReferenceNbr eq ") and "Type" not in f for f in filters)
