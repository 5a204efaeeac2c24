"""The fake Acumatica serves each endpoint version as its published contract defines it.

Per version (20.200.001 to 26.200.001): a list without ``$select`` sends exactly the entity's
plain fields; a ``$select``, ``$filter``, ``$expand`` or ``$custom`` naming something the version
does not define is a 400 (the fake is never more forgiving than the ERP); nested entities arrive
only when their path is expanded; 26.200.001 sends select values, date-only values and SalesOrder's
``LastModifiedDateTime``, and takes a select key's ID in the by-key URL and in filters.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from connector.adapters.acumatica import contract
from connector.clock import FrozenClock
from connector.testing import FakeAcumatica
from connector.testing.acumatica import ALL_VERSIONS

SYSTEM = {"id", "rowNumber", "note", "custom", "_links"}


@pytest.fixture(scope="module")
def fake() -> FakeAcumatica:
    return FakeAcumatica(
        seed=4, clock=FrozenClock(), customers=15, vendors=4, invoices=60, sales_orders=8, bills=8, cases=10,
        versions=ALL_VERSIONS,
    )  # fmt: skip


@pytest.fixture
def client(fake: FakeAcumatica) -> Iterator[httpx.Client]:
    with httpx.Client(transport=httpx.MockTransport(fake.handle), base_url=fake.base_url) as client:
        credentials = {"name": fake.username, "password": fake.password, "tenant": fake.company}
        assert client.post("/entity/auth/login", json=credentials).status_code == 204
        yield client
        client.post("/entity/auth/logout")


def get(client: httpx.Client, version: str, entity: str, **params: str) -> httpx.Response:
    return client.get(f"/entity/Default/{version}/{entity}", params=params)


def rows(client: httpx.Client, version: str, entity: str, **params: str) -> list[dict[str, Any]]:
    response = get(client, version, entity, **params)
    assert response.status_code == 200, response.text
    body: list[dict[str, Any]] = response.json()
    return body


def _plain_fields(version: str, entity: str) -> set[str]:
    return {
        name
        for name, kind in contract.entity_fields(version, entity).items()
        if contract.target_entity(kind) is None
    }


@pytest.mark.parametrize("version", ALL_VERSIONS)
@pytest.mark.parametrize("entity", ["Customer", "Vendor", "Invoice", "SalesOrder", "Bill", "Case"])
def test_a_list_without_select_sends_exactly_the_versions_plain_fields(
    client: httpx.Client, version: str, entity: str
) -> None:
    row = rows(client, version, entity, **{"$top": "1"})[0]
    assert set(row) - SYSTEM == _plain_fields(version, entity)


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_names_the_version_does_not_define_are_refused(client: httpx.Client, version: str) -> None:
    refused = [
        ("Invoice", {"$select": "ReferenceNbr,CurrencyID"}),  # Invoice has no currency field in any version
        ("Case", {"$select": "CaseID,Resolution"}),
        ("Customer", {"$filter": "Currency eq 'USD'"}),
        ("Customer", {"$expand": "MainContact/Nowhere"}),
        ("Customer", {"$custom": "Document.UsrNotThere"}),
    ]
    if version == "22.200.001":
        refused.append(("Customer", {"$select": "CustomerID,Email"}))
    if version == "20.200.001":
        refused.append(("Vendor", {"$select": "VendorID,LegalName"}))
    if version == "26.200.001":
        refused.append(("SalesOrder", {"$filter": "LastModified ge datetimeoffset'2025-01-01T00:00:00Z'"}))
    else:
        refused.append(("Case", {"$select": "CaseID,ClosureNotes"}))
    for entity, params in refused:
        response = get(client, version, entity, **params)
        assert response.status_code == 400, (entity, params)
        assert (
            version in response.json()["exceptionMessage"] or "$custom" in response.json()["exceptionMessage"]
        )


def test_nested_entities_arrive_only_when_their_path_is_expanded(client: httpx.Client) -> None:
    version = "24.200.001"
    shallow = rows(client, version, "Customer", **{"$top": "3", "$expand": "MainContact,Contacts"})
    assert all("Address" not in row["MainContact"] for row in shallow)
    assert all(set(line) - SYSTEM == {"ContactID"} for row in shallow for line in row["Contacts"])
    deep = rows(
        client,
        version,
        "Customer",
        **{"$top": "3", "$expand": "MainContact/Address,Contacts/Contact/Address"},
    )
    for row in deep:
        assert row["MainContact"]["Address"]["City"]["value"]
        for line in row["Contacts"]:  # a CustomerContact: the contact one level deeper
            assert line["ContactID"]["value"] == line["Contact"]["ContactID"]["value"]
            assert line["Contact"]["Email"]["value"] and line["Contact"]["Address"]["City"]["value"]


def test_26_sends_select_values_date_only_values_and_the_renamed_stamp(client: httpx.Client) -> None:
    invoice = rows(client, "26.200.001", "Invoice", **{"$top": "1"})[0]
    older = rows(client, "25.200.001", "Invoice", **{"$top": "1"})[0]
    codes = {"Invoice": "INV", "Credit Memo": "CRM", "Debit Memo": "DRM"}
    assert invoice["Type"]["value"] == {
        "ID": codes[older["Type"]["value"]],
        "Description": older["Type"]["value"],
    }
    assert set(invoice["Status"]["value"]) == {"ID", "Description"}
    assert invoice["Date"]["value"] == older["Date"]["value"][:10] and len(invoice["Date"]["value"]) == 10
    order = rows(
        client, "26.200.001", "SalesOrder", **{"$top": "1", "$select": "OrderNbr,LastModifiedDateTime"}
    )
    old_order = rows(client, "25.200.001", "SalesOrder", **{"$top": "1", "$select": "OrderNbr,LastModified"})
    assert order[0]["LastModifiedDateTime"] == old_order[0]["LastModified"]


def test_26_takes_a_select_keys_id_in_the_url_and_in_filters(
    client: httpx.Client, fake: FakeAcumatica
) -> None:
    key = next(k for k in fake.keys("Invoice") if k.startswith("Credit Memo/"))
    number = key.split("/", 1)[1]
    by_key = client.get(f"/entity/Default/26.200.001/Invoice/CRM/{number}")
    assert by_key.status_code == 200 and by_key.json()["Type"]["value"]["ID"] == "CRM"
    found = rows(
        client, "26.200.001", "Invoice", **{"$filter": f"Type eq 'CRM' and ReferenceNbr eq '{number}'"}
    )
    assert [row["ReferenceNbr"]["value"] for row in found] == [number]


def test_the_invoice_currency_is_served_through_custom(client: httpx.Client, fake: FakeAcumatica) -> None:
    row = rows(client, "25.200.001", "Invoice", **{"$top": "1", "$custom": "Document.CuryID"})[0]
    key = f"{row['Type']['value']}/{row['ReferenceNbr']['value']}"
    customer = fake.record("Customer", fake.record("Invoice", key)["Customer"])
    assert row["custom"]["Document"]["CuryID"]["value"] == customer["CurrencyID"]
