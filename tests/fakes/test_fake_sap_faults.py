"""The fake SAP's injectable faults, data-changing helpers, counters and generation speed."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from typing import Any

import httpx
import pytest

from connector.clock import FrozenClock
from connector.testing.sap import FakeSAP

PARTNERS = "/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_BusinessPartner"
ORDERS = "/sap/opu/odata/sap/API_SALES_ORDER_SRV/A_SalesOrder"
AT = datetime(2026, 1, 10, 9, 30, 15, tzinfo=UTC)


@pytest.fixture
def fake() -> FakeSAP:
    return FakeSAP(seed=6, customers=20, suppliers=5, both=2, sales_orders=20)


def get(fake: FakeSAP, path: str = PARTNERS, **params: str) -> httpx.Response:
    client = httpx.Client(
        transport=fake.transport(),
        base_url=fake.base_url,
        auth=(fake.gate.username, fake.gate.password),
        headers={"Accept": "application/json"},
    )
    return client.get(path, params={"sap-client": "100", **params})


def test_rate_limit_with_and_without_retry_after(fake: FakeSAP) -> None:
    fake.inject("rate_limit", retry_after="12")
    fake.inject("rate_limit")
    first, second, third = get(fake), get(fake), get(fake)
    assert (first.status_code, first.headers["Retry-After"]) == (429, "12")
    assert second.status_code == 429 and "Retry-After" not in second.headers
    assert "QuotaViolation" in second.text and third.status_code == 200


def test_server_errors_carry_an_odata_body(fake: FakeSAP) -> None:
    fake.inject("server_error", status=502)
    response = get(fake)
    assert response.status_code == 502 and response.json()["error"]["code"] == "/IWFND/CM_BEC/026"


def test_a_timeout_raises_like_the_network_would(fake: FakeSAP) -> None:
    fake.inject("timeout")
    with pytest.raises(httpx.ReadTimeout):
        get(fake)
    assert get(fake).status_code == 200


def test_malformed_json_is_a_cut_body(fake: FakeSAP) -> None:
    fake.inject("malformed_json")
    with pytest.raises(json.JSONDecodeError):
        get(fake).json()


def test_a_repeated_page_returns_the_previous_answer(fake: FakeSAP) -> None:
    first = get(fake, **{"$top": "3"})
    fake.inject("repeat_page")
    assert get(fake, **{"$top": "3", "$skip": "3"}).content == first.content


def test_a_foreign_next_link_points_elsewhere(fake: FakeSAP) -> None:
    fake.inject("foreign_next")
    assert get(fake).json()["d"]["__next"].startswith("https://attacker.example.net/")


def test_faults_can_wait_and_target_one_entity_set(fake: FakeSAP) -> None:
    fake.inject("server_error", after=1, entity_set="A_SalesOrder")
    assert get(fake).status_code == 200  # another entity set: untouched
    assert get(fake, ORDERS).status_code == 200  # skipped once
    assert get(fake, ORDERS).status_code == 503
    assert get(fake, ORDERS).status_code == 200 and fake.faults == []


def test_sap_message_header(fake: FakeSAP) -> None:
    fake.inject("sap_message", message="check me")
    header = json.loads(get(fake).headers["sap-message"])
    assert header["severity"] == "warning" and header["message"] == "check me"


def test_expired_tokens_are_refused() -> None:
    clock = FrozenClock(AT)
    fake = FakeSAP(
        seed=1, customers=1, suppliers=0, sales_orders=0, auth="oauth", clock=clock, token_ttl_s=60
    )
    client = httpx.Client(
        transport=fake.transport(), base_url=fake.base_url, headers={"Accept": "application/json"}
    )
    form = {"grant_type": "client_credentials"}
    token = client.post("/oauth/token", data=form, auth=(fake.gate.client_id, fake.gate.client_secret)).json()
    bearer = {"Authorization": f"Bearer {token['access_token']}"}
    assert client.get(PARTNERS, params={"sap-client": "100"}, headers=bearer).status_code == 200
    clock.advance(timedelta(seconds=61))
    refused = client.get(PARTNERS, params={"sap-client": "100"}, headers=bearer)
    assert refused.status_code == 401 and "invalid_token" in refused.headers["www-authenticate"]


def test_modify_stamps_the_change_date_and_time(fake: FakeSAP) -> None:
    number = next(iter(fake.data.partners))
    fake.modify("A_BusinessPartner", number, at=AT, BusinessPartnerFullName="Renamed AG")
    row = fake.data.partners[number]
    assert (row["LastChangeDate"], row["LastChangeTime"].isoformat()) == (date(2026, 1, 10), "09:30:15")
    assert row["BusinessPartnerFullName"] == "Renamed AG"
    found = get(fake, **{"$filter": "LastChangeDate eq datetime'2026-01-10T00:00:00'"}).json()["d"]["results"]
    assert number in {r["BusinessPartner"] for r in found}


def test_a_role_change_touches_the_partner_only_when_asked(fake: FakeSAP) -> None:
    customer = next(iter(fake.data.customers))
    before = fake.data.partners[customer]["LastChangeDate"]
    fake.modify("A_CustomerCompany", (customer, "1010"), at=AT, touch_partner=False, PaymentTerms="NT99")
    assert fake.data.partners[customer]["LastChangeDate"] == before
    assert fake.data.customer_companies[customer][0]["PaymentTerms"] == "NT99"
    fake.modify("A_Customer", customer, at=AT, OrderIsBlockedForCustomer="01")
    assert fake.data.partners[customer]["LastChangeDate"] == AT.date()


def test_an_unknown_field_is_refused(fake: FakeSAP) -> None:
    with pytest.raises(ValueError, match="no field"):
        fake.modify("A_SalesOrder", next(iter(fake.data.sales_orders)), at=AT, Nope=1)


def test_bulk_stamp_gives_many_rows_one_timestamp(fake: FakeSAP) -> None:
    assert fake.bulk_stamp("A_SalesOrder", AT) == 20
    assert {r["LastChangeDateTime"] for r in fake.data.sales_orders.values()} == {AT}
    found = get(fake, ORDERS, **{"$filter": "LastChangeDateTime eq datetimeoffset'2026-01-10T09:30:15Z'"})
    assert len(found.json()["d"]["results"]) == 20


def test_delete_removes_a_partner_and_its_roles(fake: FakeSAP) -> None:
    number = next(iter(fake.data.customers))
    fake.delete("A_BusinessPartner", number)
    assert number not in fake.data.customers and number not in fake.data.customer_companies
    assert get(fake, f"{PARTNERS}('{number}')").status_code == 404
    with pytest.raises(KeyError):
        fake.delete("A_BusinessPartner", number)


def test_add_helpers_create_rows_the_server_lists(fake: FakeSAP) -> None:
    partner = fake.add_partner(customer=True, supplier=True, created=AT, BusinessPartnerFullName="New GmbH")
    order = fake.add_sales_order(partner, created=AT, TotalNetAmount=None)
    invoice = fake.add_billing_document(order, created=AT)
    assert fake.data.partners[partner]["LastChangeDate"] is None
    assert fake.data.sales_orders[order]["LastChangeDateTime"] == AT
    assert fake.data.billing_documents[invoice]["SoldToParty"] == partner
    keys: Any = get(fake, **{"$filter": f"BusinessPartner eq '{partner}'"}).json()["d"]["results"]
    assert keys[0]["BusinessPartnerFullName"] == "New GmbH"


def test_requests_are_counted_per_path(fake: FakeSAP) -> None:
    get(fake)
    get(fake, ORDERS)
    get(fake, ORDERS)
    assert fake.requests_to("A_BusinessPartner") == 1 and fake.requests_to("A_SalesOrder") == 2
    assert fake.request_count == 3


def test_a_generated_system_at_scale_serves_a_deep_page() -> None:
    fake = FakeSAP(seed=1, customers=8_000, suppliers=2_000, sales_orders=20_000)
    response = get(fake, ORDERS, **{"$top": "1000", "$skip": "5000"})
    assert len(response.json()["d"]["results"]) == 1000
