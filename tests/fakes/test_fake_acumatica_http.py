"""The fake Acumatica's HTTP surface: login, sessions, OAuth, /entity, lists, records, errors."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from connector.clock import FrozenClock
from connector.testing import FakeAcumatica

V = "/entity/Default/24.200.001"


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock()


@pytest.fixture
def fake(clock: FrozenClock) -> FakeAcumatica:
    return FakeAcumatica(
        seed=3, clock=clock, customers=30, vendors=5, invoices=12, sales_orders=6, bills=4, cases=8
    )


@pytest.fixture
def client(fake: FakeAcumatica) -> Iterator[httpx.Client]:
    with httpx.Client(transport=httpx.MockTransport(fake.handle), base_url=fake.base_url) as client:
        yield client


def login(client: httpx.Client, fake: FakeAcumatica, **body: Any) -> httpx.Response:
    payload = {
        "name": fake.username,
        "password": fake.password,
        "tenant": fake.company,
        "branch": "HQ",
        **body,
    }
    return client.post("/entity/auth/login", json=payload)


# Login and sessions ---------------------------------------------------------------------------


def test_login_answers_204_with_session_cookies(client: httpx.Client, fake: FakeAcumatica) -> None:
    response = login(client, fake)
    assert response.status_code == 204
    assert {".ASPXAUTH", "ASP.NET_SessionId", "CompanyID", "UserBranch", "Locale"} <= set(
        client.cookies.keys()
    )
    assert fake.active_sessions == 1


def test_older_clients_may_name_the_tenant_company(client: httpx.Client, fake: FakeAcumatica) -> None:
    assert client.post(
        "/entity/auth/login", json={"name": "admin", "password": fake.password, "company": "Company"}
    )
    assert fake.active_sessions == 1


@pytest.mark.parametrize("override", [{"password": "nope"}, {"name": "root"}, {"tenant": "Other"}])
def test_bad_credentials_are_a_500_with_invalid_credentials(
    client: httpx.Client, fake: FakeAcumatica, override: dict[str, str]
) -> None:
    response = login(client, fake, **override)
    assert response.status_code == 500
    body = response.json()
    assert body["exceptionMessage"].startswith("Error: Invalid credentials")
    assert set(body) >= {"message", "exceptionMessage", "exceptionType"}
    assert fake.active_sessions == 0


def test_requests_without_a_session_are_401(client: httpx.Client) -> None:
    assert client.get(f"{V}/Customer").status_code == 401


def test_logout_ends_the_session(client: httpx.Client, fake: FakeAcumatica) -> None:
    login(client, fake)
    assert client.post("/entity/auth/logout").status_code == 204
    assert fake.active_sessions == 0
    assert client.get(f"{V}/Customer").status_code == 401


def test_an_idle_session_expires_after_ten_minutes(
    client: httpx.Client, fake: FakeAcumatica, clock: FrozenClock
) -> None:
    login(client, fake)
    clock.advance(timedelta(minutes=9))
    assert client.get(f"{V}/Vendor").status_code == 200  # activity keeps it alive
    clock.advance(timedelta(minutes=10, seconds=1))
    assert client.get(f"{V}/Vendor").status_code == 401
    assert fake.active_sessions == 0


def test_sessions_left_open_hit_the_api_login_limit(clock: FrozenClock) -> None:
    fake = FakeAcumatica(seed=1, clock=clock, customers=1, vendors=1, invoices=0, max_sessions=2)
    transport = httpx.MockTransport(fake.handle)
    clients = [httpx.Client(transport=transport, base_url=fake.base_url) for _ in range(3)]
    statuses = [login(c, fake).status_code for c in clients]
    assert statuses == [204, 204, 500]
    assert "API Login Limit" in login(clients[2], fake).json()["exceptionMessage"]
    clients[0].post("/entity/auth/logout")
    assert login(clients[2], fake).status_code == 204


# OAuth ----------------------------------------------------------------------------------------


def token(client: httpx.Client, fake: FakeAcumatica, **form: str) -> httpx.Response:
    data = {"client_id": fake.client_id, "client_secret": fake.client_secret, **form}
    return client.post("/identity/connect/token", data=data)


def test_password_grant_issues_a_bearer_token_and_a_refresh_token(
    client: httpx.Client, fake: FakeAcumatica
) -> None:
    response = token(
        client,
        fake,
        grant_type="password",
        username="admin",
        password=fake.password,
        scope="api offline_access",
    )
    body = response.json()
    assert (response.status_code, body["token_type"], body["expires_in"]) == (200, "Bearer", 3600)
    headers = {"Authorization": f"Bearer {body['access_token']}"}
    assert client.get(f"{V}/Vendor", headers=headers).status_code == 200
    refreshed = token(client, fake, grant_type="refresh_token", refresh_token=body["refresh_token"]).json()
    assert refreshed["access_token"] != body["access_token"]
    reused = token(client, fake, grant_type="refresh_token", refresh_token=body["refresh_token"])
    assert reused.json() == {"error": "invalid_grant"}  # refresh tokens rotate


def test_without_offline_access_there_is_no_refresh_token(client: httpx.Client, fake: FakeAcumatica) -> None:
    body = token(
        client, fake, grant_type="password", username="admin", password=fake.password, scope="api"
    ).json()
    assert "refresh_token" not in body


def test_a_token_expires(client: httpx.Client, fake: FakeAcumatica, clock: FrozenClock) -> None:
    body = token(client, fake, grant_type="password", username="admin", password=fake.password).json()
    clock.advance(timedelta(hours=1))
    assert (
        client.get(f"{V}/Vendor", headers={"Authorization": f"Bearer {body['access_token']}"}).status_code
        == 401
    )


@pytest.mark.parametrize(
    ("form", "error"),
    [
        ({"grant_type": "client_credentials"}, "unsupported_grant_type"),
        ({"grant_type": "password", "username": "admin", "password": "x"}, "invalid_grant"),
        ({"grant_type": "password", "client_id": "someone-else"}, "invalid_client"),
    ],
)
def test_token_endpoint_refusals(
    client: httpx.Client, fake: FakeAcumatica, form: dict[str, str], error: str
) -> None:
    response = token(client, fake, **form)
    assert (response.status_code, response.json()["error"]) == (400, error)


# Endpoints and lists --------------------------------------------------------------------------


def test_entity_lists_the_default_endpoint_versions(client: httpx.Client, fake: FakeAcumatica) -> None:
    body = client.get("/entity").json()
    assert [(e["name"], e["version"]) for e in body["endpoints"]] == [
        ("Default", "20.200.001"),
        ("Default", "22.200.001"),
        ("Default", "23.200.001"),
        ("Default", "24.200.001"),
        ("Default", "25.200.001"),
    ]


def test_a_list_is_a_bare_array_of_wrapped_fields(client: httpx.Client, fake: FakeAcumatica) -> None:
    login(client, fake)
    records = client.get(f"{V}/Customer").json()
    assert isinstance(records, list) and len(records) == 30
    first = records[0]
    assert set(first) >= {"id", "rowNumber", "note", "CustomerID", "LastModifiedDateTime", "custom", "_links"}
    assert first["CustomerID"] == {"value": fake.keys("Customer")[0]}
    assert first["ParentRecord"] == {}  # empty fields have no value key
    assert "MainContact" not in first and "Contacts" not in first  # only when expanded
    assert first["_links"]["self"] == f"/AcumaticaERP{V}/Customer/{first['id']}"  # instance prefix


def test_top_and_skip_page_in_server_order(client: httpx.Client, fake: FakeAcumatica) -> None:
    login(client, fake)
    keys = fake.keys("Customer")
    pages = [client.get(f"{V}/Customer", params={"$top": "12", "$skip": str(s)}).json() for s in (0, 12, 24)]
    assert [len(p) for p in pages] == [12, 12, 6]
    assert [r["CustomerID"]["value"] for p in pages for r in p] == keys
    assert [r["rowNumber"] for r in pages[1]][:2] == [1, 2]  # restarts on every page


def test_select_expand_and_custom(client: httpx.Client, fake: FakeAcumatica) -> None:
    login(client, fake)
    params = {
        "$select": "CustomerID,CreditLimit,MainContact/Email",
        "$expand": "MainContact,Contacts",
        "$custom": "Document.AttrPOREQ",
        "$top": "1",
    }
    (record,) = client.get(f"{V}/Customer", params=params).json()
    expected = {
        "id",
        "rowNumber",
        "note",
        "CustomerID",
        "CreditLimit",
        "MainContact",
        "Contacts",
        "custom",
        "_links",
    }
    assert set(record) == expected
    assert set(record["MainContact"]) == {"Email"}
    assert all("rowNumber" in contact for contact in record["Contacts"])
    assert record["custom"]["Document"]["AttrPOREQ"]["type"] == "CustomStringField"
    assert record["custom"]["Document"]["AttrPOREQ"]["value"] in ("Y", "N")


def test_filter_on_the_change_field(client: httpx.Client, fake: FakeAcumatica, clock: FrozenClock) -> None:
    login(client, fake)
    moment = clock.now()
    changed = fake.keys("Invoice")[3:6]
    fake.stamp("Invoice", changed, moment)
    literal = moment.isoformat(timespec="milliseconds")
    response = client.get(
        f"{V}/Invoice", params={"$filter": f"LastModifiedDateTime ge datetimeoffset'{literal}'"}
    )
    assert [f"{r['Type']['value']}/{r['ReferenceNbr']['value']}" for r in response.json()] == changed


@pytest.mark.parametrize(
    "params",
    [
        {"$orderby": "CustomerID"},
        {"$top": "-1"},
        {"$skip": "x"},
        {"$select": "NoSuchField"},
        {"$expand": "Details"},
        {"$filter": "CustomerID eq"},
        {"$custom": "NoDot"},
    ],
)
def test_bad_queries_are_400_with_an_error_body(
    client: httpx.Client, fake: FakeAcumatica, params: dict[str, str]
) -> None:
    login(client, fake)
    response = client.get(f"{V}/Customer", params=params)
    assert response.status_code == 400
    assert response.json()["exceptionMessage"]


def test_a_record_by_key_or_a_500_not_found(client: httpx.Client, fake: FakeAcumatica) -> None:
    login(client, fake)
    invoice = fake.keys("Invoice")[0]
    found = client.get(f"{V}/Invoice/{invoice}")
    assert found.status_code == 200 and f"{found.json()['Type']['value']}/AR000001" == invoice
    missing = client.get(f"{V}/Customer/NOBODY")
    assert missing.status_code == 500
    assert missing.json()["exceptionType"] == "PX.Api.ContractBased.NoEntitySatisfiesTheConditionException"


def test_unknown_versions_entities_and_writes(client: httpx.Client, fake: FakeAcumatica) -> None:
    login(client, fake)
    assert client.get("/entity/Default/19.200.001/Customer").status_code == 404
    assert client.get(f"{V}/Planet").status_code == 404
    assert client.put(f"{V}/Customer", json={}).status_code == 405
    assert client.get("/somewhere/else").status_code == 404


def test_requests_are_counted_per_path(client: httpx.Client, fake: FakeAcumatica) -> None:
    login(client, fake)
    client.get(f"{V}/Customer", params={"$top": "5"})
    client.get(f"{V}/Customer", params={"$top": "5", "$skip": "5"})
    assert fake.request_counts[f"{V}/Customer"] == 2
    assert fake.request_counts["/entity/auth/login"] == 1
    assert [r.params.get("$skip") for r in fake.list_requests("Customer")] == [None, "5"]
    fake.reset_log()
    assert fake.requests == [] and not fake.request_counts


def test_the_instance_prefix_is_optional(fake: FakeAcumatica) -> None:
    with httpx.Client(transport=httpx.MockTransport(fake.handle), base_url="http://other-host") as client:
        assert login(client, fake).status_code == 204
        assert client.get(f"{V}/Case", params={"$top": "1"}).status_code == 200
