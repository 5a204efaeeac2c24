"""The fake SAP speaks OData like SAP: filters, paging, expansion, selection, counts, formats, auth."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest
import respx

from connector.testing.sap import FakeSAP

PARTNERS = "/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_BusinessPartner"
ORDERS = "/sap/opu/odata/sap/API_SALES_ORDER_SRV/A_SalesOrder"
ORDERS_V4 = "/sap/opu/odata4/sap/api_salesorder/srvd_a2x/sap/salesorder/0001/SalesOrder"


@pytest.fixture(scope="module")
def fake() -> FakeSAP:
    return FakeSAP(seed=4, customers=30, suppliers=10, both=4, sales_orders=50, billing_documents=20)


def http(fake: FakeSAP, accept: str = "application/json") -> httpx.Client:
    return httpx.Client(
        transport=fake.transport(),
        base_url=fake.base_url,
        auth=(fake.gate.username, fake.gate.password),
        headers={"Accept": accept},
    )


def get(fake: FakeSAP, path: str, **params: str) -> Any:
    response = http(fake).get(path, params={"sap-client": "100", **params})
    assert response.status_code == 200, response.text
    return response.json()


def rows(fake: FakeSAP, path: str, **params: str) -> list[dict[str, Any]]:
    body = get(fake, path, **params)
    return body["d"]["results"] if "d" in body else body["value"]  # type: ignore[no-any-return]


def test_v2_collections_wrap_results_and_metadata(fake: FakeSAP) -> None:
    body = get(fake, PARTNERS, **{"$top": "2"})
    first = body["d"]["results"][0]
    assert first["__metadata"]["type"] == "API_BUSINESS_PARTNER.A_BusinessPartnerType"
    assert first["__metadata"]["uri"].endswith(f"A_BusinessPartner('{first['BusinessPartner']}')")
    assert first["to_Customer"] == {"__deferred": {"uri": first["__metadata"]["uri"] + "/to_Customer"}}
    assert first["CreationDate"].startswith("/Date(") and first["CreationTime"].startswith("PT")


def test_v2_values_are_encoded_like_sap(fake: FakeSAP) -> None:
    order = rows(fake, ORDERS, **{"$top": "1"})[0]
    row = fake.data.sales_orders[order["SalesOrder"]]
    assert order["TotalNetAmount"] == str(row["TotalNetAmount"])  # Edm.Decimal as a string
    stamp = int(row["LastChangeDateTime"].timestamp() * 1000)
    assert order["LastChangeDateTime"] == f"/Date({stamp}+0000)/"


@pytest.mark.parametrize(
    ("expression", "check"),
    [
        ("SoldToParty eq '{party}'", lambda r, p: r["SoldToParty"] == p),
        ("SoldToParty ne '{party}'", lambda r, p: r["SoldToParty"] != p),
        ("TotalNetAmount gt 1000", lambda r, p: r["TotalNetAmount"] > 1000),
        ("TotalNetAmount le 1000.5M", lambda r, p: r["TotalNetAmount"] <= Decimal("1000.5")),
        (
            "CreationDate ge datetime'2024-01-01T00:00:00' and CreationDate lt datetime'2025-01-01T00:00:00'",
            lambda r, p: date(2024, 1, 1) <= r["CreationDate"] < date(2025, 1, 1),
        ),
        (
            "LastChangeDateTime ge datetimeoffset'2025-06-01T00:00:00Z' or OverallSDProcessStatus eq 'A'",
            lambda r, p: (
                r["LastChangeDateTime"] >= datetime(2025, 6, 1, tzinfo=UTC)
                or r["OverallSDProcessStatus"] == "A"
            ),
        ),
        ("not (OverallSDProcessStatus eq 'C')", lambda r, p: r["OverallSDProcessStatus"] != "C"),
    ],
)
def test_filters_select_exactly_the_matching_rows(fake: FakeSAP, expression: str, check: Any) -> None:
    party = next(iter(fake.data.sales_orders.values()))["SoldToParty"]
    found = {r["SalesOrder"] for r in rows(fake, ORDERS, **{"$filter": expression.format(party=party)})}
    expected = {k for k, r in fake.data.sales_orders.items() if check(r, party)}
    assert found == expected and found


def test_null_comparisons_follow_odata(fake: FakeSAP) -> None:
    never = {k for k, r in fake.data.partners.items() if r["LastChangeDate"] is None}
    assert {
        r["BusinessPartner"] for r in rows(fake, PARTNERS, **{"$filter": "LastChangeDate eq null"})
    } == never
    changed = rows(fake, PARTNERS, **{"$filter": "LastChangeDate ge datetime'2000-01-01T00:00:00'"})
    assert {r["BusinessPartner"] for r in changed} == set(fake.data.partners) - never


def test_quotes_in_string_literals_are_unescaped() -> None:
    fake = FakeSAP(seed=1, customers=3, suppliers=0, sales_orders=0)
    number = fake.add_partner(BusinessPartnerFullName="O'Brien & Sons")
    found = rows(fake, PARTNERS, **{"$filter": "BusinessPartnerFullName eq 'O''Brien & Sons'"})
    assert [r["BusinessPartner"] for r in found] == [number]


def test_top_and_skip_page_in_key_order(fake: FakeSAP) -> None:
    keys = sorted(fake.data.partners)
    page = rows(fake, PARTNERS, **{"$top": "5", "$skip": "10"})
    assert [r["BusinessPartner"] for r in page] == keys[10:15]


def test_orderby_sorts_descending(fake: FakeSAP) -> None:
    page = rows(fake, ORDERS, **{"$orderby": "TotalNetAmount desc", "$top": "3"})
    amounts = sorted((r["TotalNetAmount"] for r in fake.data.sales_orders.values()), reverse=True)[:3]
    assert [Decimal(r["TotalNetAmount"]) for r in page] == amounts


def test_server_paging_hands_out_next_links_with_a_skiptoken() -> None:
    fake = FakeSAP(seed=4, customers=30, suppliers=0, sales_orders=0, server_page_size=8)
    client = http(fake)
    url: str | None = f"{PARTNERS}?sap-client=100&$top=20"
    seen: list[str] = []
    while url:
        body = client.get(url).json()["d"]
        seen += [r["BusinessPartner"] for r in body["results"]]
        url = body.get("__next")
        assert url is None or "$skiptoken=" in url
    assert seen == sorted(fake.data.partners)[:20]


def test_expand_nests_to_many_in_results_and_to_one_as_objects(fake: FakeSAP) -> None:
    expand = "to_Customer/to_CustomerCompany,to_BusinessPartnerAddress/to_EmailAddress"
    both = next(k for k, r in fake.data.partners.items() if r["Customer"] and r["Supplier"])
    found = rows(fake, PARTNERS, **{"$expand": expand, "$filter": f"BusinessPartner eq '{both}'"})[0]
    assert found["to_Customer"]["Customer"] == both
    assert found["to_Customer"]["to_CustomerCompany"]["results"][0]["CompanyCode"] == "1010"
    assert "__deferred" in found["to_Customer"]["to_CustomerSalesArea"]
    assert isinstance(found["to_BusinessPartnerAddress"]["results"][0]["to_EmailAddress"]["results"], list)


def test_an_expanded_missing_role_is_null(fake: FakeSAP) -> None:
    supplier_only = next(k for k, r in fake.data.partners.items() if not r["Customer"])
    found = rows(
        fake, PARTNERS, **{"$expand": "to_Customer", "$filter": f"BusinessPartner eq '{supplier_only}'"}
    )
    assert found[0]["to_Customer"] is None


def test_select_limits_fields(fake: FakeSAP) -> None:
    found = rows(fake, PARTNERS, **{"$select": "BusinessPartner,Customer", "$top": "1"})[0]
    assert set(found) == {"__metadata", "BusinessPartner", "Customer"}


def test_inlinecount_and_count_segment(fake: FakeSAP) -> None:
    body = get(fake, PARTNERS, **{"$inlinecount": "allpages", "$top": "1"})
    assert body["d"]["__count"] == str(len(fake.data.partners))
    response = http(fake).get(f"{PARTNERS}/$count", params={"sap-client": "100"})
    assert response.text == str(len(fake.data.partners))


def test_a_single_entity_by_key(fake: FakeSAP) -> None:
    number = sorted(fake.data.partners)[3]
    body = get(fake, f"{PARTNERS}('{number}')")
    assert body["d"]["BusinessPartner"] == number
    company = get(
        fake,
        f"/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_CustomerCompany(Customer='{number}',CompanyCode='1010')",
    )
    assert company["d"]["CompanyCode"] == "1010"


def test_v4_speaks_iso_values_plain_lists_and_next_links() -> None:
    fake = FakeSAP(seed=4, customers=10, suppliers=0, sales_orders=12, odata_version="v4", server_page_size=5)
    client = http(fake, "application/json;IEEE754Compatible=true")
    body = client.get(ORDERS_V4, params={"sap-client": "100", "$count": "true", "$expand": "_Item"}).json()
    first = body["value"][0]
    row = fake.data.sales_orders[first["SalesOrder"]]
    assert body["@odata.count"] == 12 and "@odata.nextLink" in body
    assert first["SalesOrderDate"] == row["SalesOrderDate"].isoformat()
    assert first["TotalNetAmount"] == str(row["TotalNetAmount"])
    assert isinstance(first["_Item"], list) and "__metadata" not in first
    plain = http(fake).get(ORDERS_V4, params={"sap-client": "100", "$top": "1"}).json()["value"][0]
    assert isinstance(plain["TotalNetAmount"], float)  # without IEEE754Compatible decimals are numbers


def test_v4_expand_syntax_and_no_v4_business_partner_service() -> None:
    fake = FakeSAP(seed=4, customers=3, suppliers=0, sales_orders=2, odata_version="v4")
    params = {"sap-client": "100", "$expand": "_Item($select=SalesOrderItem,Product)"}
    found = http(fake).get(ORDERS_V4, params=params).json()["value"][0]
    assert isinstance(found["_Item"], list) and found["_Item"][0]["Product"]
    path = "/sap/opu/odata4/sap/api_business_partner/srvd_a2x/sap/businesspartner/0001/A_BusinessPartner"
    assert http(fake).get(path, params={"sap-client": "100"}).status_code == 404  # SAP publishes none


def test_v2_without_a_json_accept_answers_atom(fake: FakeSAP) -> None:
    response = http(fake, accept="*/*").get(PARTNERS, params={"sap-client": "100"})
    assert response.headers["content-type"] == "application/atom+xml"


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"$filter": "Nope eq 1"}, "/IWBEP/CM_MGW_RT/022"),
        ({"$filter": "BusinessPartner eq"}, "/IWBEP/CM_MGW_RT/022"),
        ({"$expand": "to_Nowhere"}, "/IWBEP/CM_MGW_RT/004"),
        ({"$top": "-1"}, "/IWBEP/CM_MGW_RT/004"),
    ],
)
def test_bad_queries_get_sap_error_bodies(fake: FakeSAP, params: dict[str, str], code: str) -> None:
    response = http(fake).get(PARTNERS, params={"sap-client": "100", **params})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == code and error["message"]["lang"] == "en" and error["message"]["value"]


def test_an_unknown_entity_set_is_404(fake: FakeSAP) -> None:
    response = http(fake).get("/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_Nope", params={"sap-client": "100"})
    assert response.status_code == 404 and response.json()["error"]["code"] == "/IWBEP/CM_MGW_RT/021"


def test_a_v4_error_body_has_a_plain_message() -> None:
    fake = FakeSAP(seed=1, customers=1, suppliers=0, sales_orders=0, odata_version="v4")
    response = http(fake).get(ORDERS_V4, params={"sap-client": "100", "$filter": "Nope eq 1"})
    assert isinstance(response.json()["error"]["message"], str)


@pytest.mark.parametrize(
    ("auth", "headers", "status"),
    [
        ("basic", {}, 401),
        ("apikey", {"APIKey": "fake-api-key"}, 200),
        ("apikey", {"APIKey": "wrong"}, 401),
        ("oauth", {"Authorization": "Bearer made-up"}, 401),
    ],
)
def test_auth_modes(auth: Any, headers: dict[str, str], status: int) -> None:
    fake = FakeSAP(seed=1, customers=1, suppliers=0, sales_orders=0, auth=auth)
    client = httpx.Client(
        transport=fake.transport(), base_url=fake.base_url, headers={"Accept": "application/json"}
    )
    assert client.get(PARTNERS, params={"sap-client": "100"}, headers=headers).status_code == status


def test_oauth_client_credentials_issue_a_working_token() -> None:
    fake = FakeSAP(seed=1, customers=2, suppliers=0, sales_orders=0, auth="oauth")
    client = httpx.Client(
        transport=fake.transport(), base_url=fake.base_url, headers={"Accept": "application/json"}
    )
    refused = client.post(
        "/oauth/token", data={"grant_type": "client_credentials"}, auth=("fake-client", "bad")
    )
    assert refused.status_code == 401
    token = client.post(
        "/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=(fake.gate.client_id, fake.gate.client_secret),
    ).json()
    assert token["expires_in"] == 3600
    ok = client.get(
        PARTNERS, params={"sap-client": "100"}, headers={"Authorization": f"Bearer {token['access_token']}"}
    )
    assert ok.status_code == 200


def test_sap_client_must_match(fake: FakeSAP) -> None:
    client = http(fake)
    assert client.get(PARTNERS, params={"sap-client": "200"}).status_code == 401
    before = fake.gate.requests_without_client
    assert client.get(PARTNERS).status_code == 401
    assert fake.gate.requests_without_client == before + 1


def test_the_fake_works_as_a_respx_side_effect() -> None:
    fake = FakeSAP(seed=1, customers=3, suppliers=0, sales_orders=0)
    with respx.mock(assert_all_called=True) as router:
        route = router.route(host="s4.fake.example").mock(side_effect=fake.handle)
        response = httpx.get(
            fake.base_url + PARTNERS,
            params={"sap-client": "100"},
            headers={"Accept": "application/json"},
            auth=(fake.gate.username, fake.gate.password),
        )
    assert len(response.json()["d"]["results"]) == 3 and route.call_count == 1


def test_the_same_seed_gives_the_same_data() -> None:
    first = FakeSAP(seed=9, customers=20, suppliers=5, sales_orders=10)
    second = FakeSAP(seed=9, customers=20, suppliers=5, sales_orders=10)
    assert _dump(first) == _dump(second)


def _dump(fake: FakeSAP) -> str:
    return json.dumps([fake.data.partners, fake.data.sales_orders], default=str, sort_keys=True)


@pytest.mark.parametrize(
    "expression", ["startswith(BusinessPartnerFullName, 'A')", "substringof('a', BusinessPartnerFullName)"]
)
def test_string_functions(fake: FakeSAP, expression: str) -> None:
    found = rows(fake, PARTNERS, **{"$filter": expression})
    assert found and len(found) < len(fake.data.partners)


def test_each_version_refuses_the_other_versions_literals() -> None:
    v2 = FakeSAP(seed=1, customers=2, suppliers=0, sales_orders=2)
    assert (
        http(v2)
        .get(ORDERS, params={"sap-client": "100", "$filter": "CreationDate ge 2024-01-01"})
        .status_code
        == 400
    )
    v4 = FakeSAP(seed=1, customers=2, suppliers=0, sales_orders=2, odata_version="v4")
    v2_literal = "CreationDate ge datetime'2024-01-01T00:00:00'"
    assert http(v4).get(ORDERS_V4, params={"sap-client": "100", "$filter": v2_literal}).status_code == 400
    assert (
        http(v4)
        .get(ORDERS_V4, params={"sap-client": "100", "$filter": "CreationDate ge 2024-01-01"})
        .is_success
    )
