"""The SAP client against the fake: auth, retries, errors, warnings, paging safety, secret hygiene."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from connector.adapters.sap import SAPAdapter, SAPClient
from connector.clock import FrozenClock
from connector.errors import (
    ERPAuthError,
    ERPNotFound,
    ERPProtocolError,
    ERPRequestError,
    ERPServerError,
)
from connector.settings import SyncSettings
from connector.testing.sap import FakeSAP

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
PARTNERS = "/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_BusinessPartner"


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(NOW)


def adapter_for(fake: FakeSAP, clock: FrozenClock, **overrides: Any) -> SAPAdapter:
    tenant = fake.tenant_settings(**{"max_retries": 3, **overrides})
    return SAPAdapter(tenant, sync=SyncSettings(), clock=clock, transport=fake.transport())


def client_for(fake: FakeSAP, clock: FrozenClock, **overrides: Any) -> SAPClient:
    tenant = fake.tenant_settings(**{"max_retries": 3, **overrides})
    return SAPClient(tenant, clock=clock, transport=fake.transport())


def count_partners(adapter: SAPAdapter) -> int:
    return sum(len(page.records) for page in adapter.read("BusinessPartner", None))


@pytest.fixture
def oauth_fake(clock: FrozenClock) -> FakeSAP:
    return FakeSAP(seed=2, customers=10, suppliers=0, sales_orders=0, auth="oauth", clock=clock)


# Auth -----------------------------------------------------------------------------------------


def test_basic_auth_reads_with_the_communication_user(clock: FrozenClock) -> None:
    fake = FakeSAP(seed=1, customers=5, suppliers=0, sales_orders=0)
    with adapter_for(fake, clock) as adapter:
        assert count_partners(adapter) == 5
    assert fake.last_request is not None and fake.last_request.headers["authorization"].startswith("Basic ")


def test_a_wrong_password_fails_fast_without_retries_or_the_password(clock: FrozenClock) -> None:
    fake = FakeSAP(seed=1, customers=5, suppliers=0, sales_orders=0, password="the-real-one")
    with adapter_for(fake, clock, password="wrong-secret-123") as adapter:
        with pytest.raises(ERPAuthError) as caught:
            count_partners(adapter)
        assert adapter.request_count == 1 and adapter.retry_count == 0
    assert caught.value.status_code == 401
    assert "wrong-secret-123" not in str(caught.value)


def test_a_wrong_sap_client_is_refused_by_the_server(clock: FrozenClock) -> None:
    fake = FakeSAP(seed=1, customers=5, suppliers=0, sales_orders=0, sap_client="200")
    with adapter_for(fake, clock, sap_client="100") as adapter, pytest.raises(ERPAuthError):
        count_partners(adapter)


def test_the_api_key_goes_in_the_apikey_header(clock: FrozenClock) -> None:
    fake = FakeSAP(seed=1, customers=5, suppliers=0, sales_orders=0, auth="apikey")
    with adapter_for(fake, clock) as adapter:
        assert count_partners(adapter) == 5
    assert fake.last_request is not None and fake.last_request.headers["APIKey"] == "fake-api-key"


def test_an_oauth_token_is_fetched_once_and_reused(oauth_fake: FakeSAP, clock: FrozenClock) -> None:
    with adapter_for(oauth_fake, clock, page_size=3) as adapter:
        assert oauth_fake.gate.tokens_issued == 1  # on entering, before any read
        assert count_partners(adapter) == 10
    assert oauth_fake.gate.tokens_issued == 1
    assert oauth_fake.requests_by_path["/oauth/token"] == 1


def test_an_expired_token_is_refreshed_once_and_the_read_continues(
    oauth_fake: FakeSAP, clock: FrozenClock
) -> None:
    with adapter_for(oauth_fake, clock, page_size=3) as adapter:
        pages = adapter.read("BusinessPartner", None)
        first = next(pages)
        oauth_fake.expire_tokens()
        rest = list(pages)
    assert len(first.records) + sum(len(p.records) for p in rest) == 10
    assert oauth_fake.gate.tokens_issued == 2
    assert adapter.retry_count == 0  # a refresh is not a retry


def test_a_token_about_to_expire_is_renewed_before_use(clock: FrozenClock) -> None:
    fake = FakeSAP(
        seed=2, customers=4, suppliers=0, sales_orders=0, auth="oauth", clock=clock, token_ttl_s=600
    )
    with adapter_for(fake, clock) as adapter:
        clock.advance(timedelta(seconds=590))  # inside the refresh margin, still valid at the server
        assert count_partners(adapter) == 4
    assert fake.gate.tokens_issued == 2
    assert fake.requests_by_path[PARTNERS] == 1  # no 401 round trip


def test_a_token_refused_twice_is_an_auth_error(oauth_fake: FakeSAP, clock: FrozenClock) -> None:
    with adapter_for(oauth_fake, clock) as adapter:
        oauth_fake.gate.token_ttl_s = -1  # every new token is born expired
        oauth_fake.expire_tokens()
        with pytest.raises(ERPAuthError, match="freshly fetched OAuth token"):
            count_partners(adapter)
    assert oauth_fake.gate.tokens_issued == 2


def test_bad_client_credentials_name_the_token_endpoint_not_the_secret(
    oauth_fake: FakeSAP, clock: FrozenClock
) -> None:
    adapter = adapter_for(oauth_fake, clock, client_secret="not-the-secret-42")
    with pytest.raises(ERPAuthError, match="token endpoint") as caught:
        adapter.__enter__()
    assert "not-the-secret-42" not in str(caught.value)


# Retries ----------------------------------------------------------------------------------------


def test_a_429_with_retry_after_waits_that_long_then_succeeds(clock: FrozenClock) -> None:
    fake = FakeSAP(seed=1, customers=5, suppliers=0, sales_orders=0)
    fake.inject("rate_limit", retry_after="7")
    with adapter_for(fake, clock) as adapter:
        assert count_partners(adapter) == 5
        assert adapter.retry_count == 1
    assert clock.sleeps[-1] == 7.0


def test_a_retry_after_beyond_the_cap_is_capped(clock: FrozenClock) -> None:
    fake = FakeSAP(seed=1, customers=5, suppliers=0, sales_orders=0)
    fake.inject("rate_limit", retry_after="3600")
    with adapter_for(fake, clock, max_retry_wait_s=30) as adapter:
        assert count_partners(adapter) == 5
    assert clock.sleeps[-1] == 30.0


def test_a_429_without_retry_after_backs_off(clock: FrozenClock) -> None:
    fake = FakeSAP(seed=1, customers=5, suppliers=0, sales_orders=0)
    fake.inject("rate_limit", times=2)
    with adapter_for(fake, clock) as adapter:
        assert count_partners(adapter) == 5
        assert adapter.retry_count == 2
    assert len(clock.sleeps) == 2 and all(s > 0 for s in clock.sleeps)


@pytest.mark.parametrize("kind", ["server_error", "timeout", "malformed_json"])
def test_transient_failures_are_retried(clock: FrozenClock, kind: Any) -> None:
    fake = FakeSAP(seed=1, customers=5, suppliers=0, sales_orders=0)
    fake.inject(kind, times=2)
    with adapter_for(fake, clock) as adapter:
        assert count_partners(adapter) == 5
        assert adapter.retry_count == 2


def test_a_server_error_that_persists_carries_the_odata_code(clock: FrozenClock) -> None:
    fake = FakeSAP(seed=1, customers=5, suppliers=0, sales_orders=0)
    fake.inject("server_error", times=10, status=503, message="Backend down")
    with adapter_for(fake, clock) as adapter, pytest.raises(ERPServerError) as caught:
        count_partners(adapter)
    assert caught.value.status_code == 503
    assert caught.value.code == "/IWFND/CM_BEC/026" and caught.value.exception_message == "Backend down"
    assert fake.requests_by_path[PARTNERS] == 4  # 1 + max_retries


@pytest.mark.parametrize("version", ["v2", "v4"])
def test_a_bad_request_fails_fast_with_the_odata_code_and_message(clock: FrozenClock, version: Any) -> None:
    fake = FakeSAP(seed=1, customers=5, suppliers=0, sales_orders=0, odata_version=version)
    client = client_for(fake, clock)
    url = fake.url("A_BusinessPartner")
    with pytest.raises(ERPRequestError) as caught:
        client.get_json(url, {"$filter": "NoSuchField eq 'x'"})
    assert caught.value.status_code == 400 and caught.value.code == "/IWBEP/CM_MGW_RT/022"
    assert caught.value.exception_message is not None and "NoSuchField" in caught.value.exception_message
    assert "NoSuchField" in str(caught.value)
    assert client.request_count == 1


def test_a_missing_entity_is_not_found(clock: FrozenClock) -> None:
    fake = FakeSAP(seed=1, customers=5, suppliers=0, sales_orders=0)
    client = client_for(fake, clock)
    with pytest.raises(ERPNotFound):
        client.get_json(fake.url("A_BusinessPartner") + "('nope')", {})


def test_sap_message_warnings_are_logged(clock: FrozenClock, caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeSAP(seed=1, customers=5, suppliers=0, sales_orders=0)
    fake.inject("sap_message", message="Partner 42 has an incomplete address")
    with (
        caplog.at_level(logging.WARNING, logger="connector.adapters.sap.client"),
        adapter_for(fake, clock) as adapter,
    ):
        count_partners(adapter)
    assert "Partner 42 has an incomplete address" in caplog.text and "ZFAKE/001" in caplog.text


# Paging safety ----------------------------------------------------------------------------------


def test_a_next_link_to_another_host_is_refused(clock: FrozenClock) -> None:
    fake = FakeSAP(seed=1, customers=5, suppliers=0, sales_orders=0)
    fake.inject("foreign_next")
    with adapter_for(fake, clock) as adapter, pytest.raises(ERPProtocolError, match="another host"):
        count_partners(adapter)
    assert fake.last_request is not None and fake.last_request.url.host == "s4.fake.example"
    assert fake.request_count == 1


def test_a_repeated_page_is_an_error_not_a_loop(clock: FrozenClock) -> None:
    fake = FakeSAP(seed=1, customers=12, suppliers=0, sales_orders=0)
    fake.inject("repeat_page")
    with (
        adapter_for(fake, clock, page_size=5) as adapter,
        pytest.raises(ERPProtocolError, match="same page twice"),
    ):
        count_partners(adapter)
    assert fake.requests_by_path[PARTNERS] == 2


def test_a_server_ignoring_skip_does_not_matter_to_reads_by_key(clock: FrozenClock) -> None:
    fake = FakeSAP(seed=1, customers=12, suppliers=0, sales_orders=0, ignore_skip=True)
    with adapter_for(fake, clock, page_size=5) as adapter:
        keys = [r.external_id for page in adapter.read("BusinessPartner", None) for r in page.records]
    assert len(keys) == len(set(keys)) == 12  # each request starts after the last key: no $skip sent


def test_a_repeated_next_link_is_an_error_not_a_loop(clock: FrozenClock) -> None:
    fake = FakeSAP(seed=1, customers=12, suppliers=0, sales_orders=0, server_page_size=4)
    fake.inject("repeat_page", after=1)  # the page reached through the first __next repeats the first
    with adapter_for(fake, clock, page_size=10) as adapter, pytest.raises(ERPProtocolError):
        count_partners(adapter)


# Secrets ----------------------------------------------------------------------------------------


def _all_log_records(caplog: pytest.LogCaptureFixture) -> Iterator[str]:
    for record in caplog.records:
        yield record.getMessage()


def test_no_secret_reaches_the_logs(clock: FrozenClock, caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeSAP(seed=2, customers=6, suppliers=0, sales_orders=0, auth="oauth", clock=clock)
    fake.gate.client_secret = "oauth-secret-xyz"
    fake.inject("rate_limit", retry_after="1")
    fake.inject("sap_message")
    with (
        caplog.at_level(logging.DEBUG),
        adapter_for(fake, clock, client_secret="oauth-secret-xyz") as adapter,
    ):
        fake.expire_tokens()
        count_partners(adapter)
        token = adapter.client.http.headers["Authorization"].removeprefix("Bearer ")
    text = "\n".join(_all_log_records(caplog))
    assert text  # the run did log
    assert "oauth-secret-xyz" not in text and token not in text


def test_a_transport_is_closed_with_the_adapter(clock: FrozenClock) -> None:
    closed = []

    class Recording(httpx.MockTransport):
        def close(self) -> None:
            closed.append(True)

    fake = FakeSAP(seed=1, customers=1, suppliers=0, sales_orders=0)
    with SAPAdapter(
        fake.tenant_settings(), sync=SyncSettings(), clock=clock, transport=Recording(fake.handle)
    ):
        pass
    assert closed == [True]


def test_a_read_goes_on_after_the_last_key_instead_of_a_next_link(clock: FrozenClock) -> None:
    fake = FakeSAP(seed=1, customers=1, suppliers=0, sales_orders=0, odata_version="v4")
    seen: list[httpx.URL] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url)
        if "SalesOrder gt '1'" in request.url.params.get("$filter", ""):
            return httpx.Response(200, json={"value": [{"SalesOrder": "2", "SoldToParty": "7"}]})
        first = {
            "value": [{"SalesOrder": "1", "SoldToParty": "7"}],
            "@odata.nextLink": "SalesOrder?$skiptoken=1",
        }
        return httpx.Response(200, json=first)

    tenant = fake.tenant_settings(page_size=10)
    with SAPAdapter(
        tenant, sync=SyncSettings(), clock=clock, transport=httpx.MockTransport(handler)
    ) as adapter:
        numbers = [r.external_id for page in adapter.read("SalesOrder", None) for r in page.records]
    assert numbers == ["1", "2"]
    assert seen[1].path == seen[0].path and seen[1].params["sap-client"] == "100"
    assert "$skiptoken" not in seen[1].params  # the offset link is not followed: a deletion cannot shift it
