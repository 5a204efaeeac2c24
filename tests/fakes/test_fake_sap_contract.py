"""The fake SAP is built from SAP's published contracts and is never more forgiving than SAP.

Each entity set the fake serves sends only properties and navigation its version's $metadata
defines; a ``$select``, ``$filter`` or ``$orderby`` naming a property the version lacks is a 400
with SAP's error body, an entity set the service lacks a 404 (a v2 name under a v4 path too), and
a navigation SAP defines but the fake cannot expand a 501 instead of a made-up answer. Its
``$metadata`` is generated from the same facts.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import httpx
import pytest

from connector.testing.sap import FakeSAP
from connector.testing.sap_contract import Version, entity_contract
from connector.testing.sap_model import ENTITY_SETS, SERVICE_PATHS

V2_ORDERS = "/sap/opu/odata/sap/API_SALES_ORDER_SRV"
V4_ORDERS = SERVICE_PATHS["v4"]["API_SALES_ORDER_SRV"]
V2_BILLING = "/sap/opu/odata/sap/API_BILLING_DOCUMENT_SRV"
V4_BILLING = SERVICE_PATHS["v4"]["API_BILLING_DOCUMENT_SRV"]


@pytest.fixture(scope="module")
def fake() -> FakeSAP:
    return FakeSAP(seed=3, customers=15, suppliers=6, sales_orders=20, billing_documents=10)


def get(fake: FakeSAP, path: str, **params: str) -> httpx.Response:
    client = httpx.Client(
        transport=fake.transport(),
        base_url=fake.base_url,
        auth=(fake.gate.username, fake.gate.password),
        headers={"Accept": "application/json"},
    )
    return client.get(path, params={"sap-client": "100", **params})


def rows_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = body["d"]["results"] if "d" in body else body["value"]
    return found


@pytest.mark.parametrize("name", sorted(ENTITY_SETS))
def test_every_served_entity_sends_only_what_its_version_defines(fake: FakeSAP, name: str) -> None:
    entity_set = ENTITY_SETS[name]
    contract = entity_contract(entity_set.service, entity_set.version, name)
    assert contract is not None
    response = get(fake, fake.url(name).removeprefix(fake.base_url), **{"$top": "5"})
    assert response.status_code == 200, response.text
    found = rows_of(response.json())
    assert found
    allowed = set(contract.properties) | set(contract.navigation) | {"__metadata"}
    for row in found:
        assert set(row) <= allowed, set(row) - allowed


@pytest.mark.parametrize(
    ("path", "option", "name"),
    [
        (f"{V2_BILLING}/A_BillingDocument", "$select", "TotalTaxAmount"),  # v2 has TaxAmount
        (f"{V4_BILLING}/BillingDocument", "$select", "InvoiceClearingStatus"),
        (f"{V4_ORDERS}/SalesOrder", "$select", "LastChangeDate"),
        (f"{V4_ORDERS}/SalesOrder", "$select", "OverallTotalDeliveryStatus"),
        (f"{V2_ORDERS}/A_SalesOrder", "$select", "SalesOrganizationCurrency"),
        (f"{V4_ORDERS}/SalesOrder", "$orderby", "LastChangeDate"),
    ],
)
def test_a_name_the_version_lacks_is_refused(fake: FakeSAP, path: str, option: str, name: str) -> None:
    response = get(fake, path, **{option: name})
    assert response.status_code == 400
    assert response.json()["error"]["code"].startswith("/IWBEP/")


@pytest.mark.parametrize(
    "path", [f"{V4_BILLING}/BillingDocument", f"{V4_ORDERS}/SalesOrder", f"{V2_BILLING}/A_BillingDocument"]
)
def test_a_filter_on_an_undefined_property_is_refused(fake: FakeSAP, path: str) -> None:
    name = "LastChangeDate" if "SalesOrder" in path else "TotalTaxAmountX"
    response = get(fake, path, **{"$filter": f"{name} eq null"})
    assert response.status_code == 400
    assert "Invalid filter" in str(response.json()["error"]["message"])


@pytest.mark.parametrize(
    "path",
    [
        f"{V4_ORDERS}/A_SalesOrder",  # v2 names under the v4 service
        f"{V4_BILLING}/A_BillingDocument",
        f"{V2_ORDERS}/SalesOrder",
        "/sap/opu/odata4/sap/api_business_partner/srvd_a2x/sap/businesspartner/0001/A_BusinessPartner",
    ],
)
def test_other_versions_names_are_not_found(fake: FakeSAP, path: str) -> None:
    assert get(fake, path).status_code == 404


def test_a_navigation_sap_defines_but_the_fake_cannot_serve_is_501(fake: FakeSAP) -> None:
    response = get(fake, f"{V4_ORDERS}/SalesOrder", **{"$expand": "_Partner"})
    assert response.status_code == 501
    assert get(fake, f"{V4_ORDERS}/SalesOrder", **{"$expand": "_Nowhere"}).status_code == 400


def test_invoices_carry_gross_and_tax_under_each_versions_names(fake: FakeSAP) -> None:
    v2 = rows_of(get(fake, f"{V2_BILLING}/A_BillingDocument", **{"$top": "1"}).json())[0]
    v4 = rows_of(get(fake, f"{V4_BILLING}/BillingDocument", **{"$top": "1"}).json())[0]
    assert "TotalTaxAmount" not in v2 and {"TaxAmount", "TotalGrossAmount"} <= set(v2)
    assert "InvoiceClearingStatus" not in v4 and {"TotalTaxAmount", "TotalGrossAmount"} <= set(v4)


@pytest.mark.parametrize(
    ("path", "service", "version", "entity_set", "absent"),
    [
        (V2_ORDERS, "API_SALES_ORDER_SRV", "v2", "A_SalesOrder", None),
        (V4_ORDERS, "API_SALES_ORDER_SRV", "v4", "SalesOrder", "LastChangeDate"),
        (V4_BILLING, "API_BILLING_DOCUMENT_SRV", "v4", "BillingDocument", "InvoiceClearingStatus"),
    ],
)
def test_metadata_is_generated_from_the_contract(
    fake: FakeSAP, path: str, service: str, version: Version, entity_set: str, absent: str | None
) -> None:
    response = get(fake, f"{path}/$metadata")
    assert response.status_code == 200 and "xml" in response.headers["content-type"]
    root = ET.fromstring(response.content)
    sets = {e.get("Name"): e.get("EntityType") for e in root.iter() if e.tag.endswith("EntitySet")}
    contract = entity_contract(service, version, entity_set)
    assert contract is not None and entity_set in sets
    type_name = str(sets[entity_set]).rsplit(".", 1)[-1]
    entity_type = next(e for e in root.iter() if e.tag.endswith("EntityType") and e.get("Name") == type_name)
    names = {p.get("Name") for p in entity_type if p.tag.endswith("}Property")}
    assert names == set(contract.properties)
    assert absent is None or absent not in names


def test_an_expansion_sends_only_the_selected_properties(fake: FakeSAP) -> None:
    v2 = get(
        fake, f"{V2_ORDERS}/A_SalesOrder", **{"$expand": "to_Item", "$select": "SalesOrder,to_Item/Material"}
    )
    item = rows_of(v2.json())[0]["to_Item"]["results"][0]
    assert set(item) == {"__metadata", "Material"}
    v4 = get(fake, f"{V4_ORDERS}/SalesOrder", **{"$expand": "_Item($select=Product,NetAmount)"})
    assert set(rows_of(v4.json())[0]["_Item"][0]) == {"Product", "NetAmount"}
    refused = get(fake, f"{V4_ORDERS}/SalesOrder", **{"$expand": "_Item($select=Material)"})  # v2's name
    assert refused.status_code == 400
