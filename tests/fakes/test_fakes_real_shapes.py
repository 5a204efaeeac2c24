"""The fakes answer in the shapes measured on real Acumatica and S/4HANA payloads, and the adapters
read those shapes (row numbers per page, links, detail-line metadata, error bodies, etags,
partners without a role)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connector.adapters.acumatica import AcumaticaAdapter
from connector.adapters.acumatica.errors import decoder
from connector.adapters.sap import SAPAdapter
from connector.clock import FrozenClock
from connector.errors import ERPAuthError, ERPError
from connector.memory import Memory
from connector.settings import Settings, SyncSettings, TenantSettings
from connector.sync.runlog import run_t
from connector.testing import FakeAcumatica
from connector.testing.sap import FakeSAP, etag
from connector.testing.sap_contract import entity_contract

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
V = "/entity/Default/24.200.001"


@pytest.fixture
def acumatica() -> FakeAcumatica:
    return FakeAcumatica(
        seed=5, clock=FrozenClock(NOW), customers=12, vendors=2, invoices=4, sales_orders=4, bills=2, cases=2
    )


@pytest.fixture
def client(acumatica: FakeAcumatica) -> Iterator[httpx.Client]:
    with httpx.Client(transport=httpx.MockTransport(acumatica.handle), base_url=acumatica.base_url) as client:
        credentials = {
            "name": acumatica.username,
            "password": acumatica.password,
            "tenant": acumatica.company,
        }
        assert client.post("/entity/auth/login", json=credentials).status_code == 204
        yield client


def page(client: httpx.Client, entity: str, **params: str) -> list[dict[str, Any]]:
    response = client.get(f"{V}/{entity}", params=params)
    assert response.status_code == 200
    rows: list[dict[str, Any]] = response.json()
    return rows


def test_row_numbers_restart_at_one_on_every_page(client: httpx.Client) -> None:
    second = page(client, "Customer", **{"$top": "5", "$skip": "5"})
    assert [row["rowNumber"] for row in second] == [1, 2, 3, 4, 5]


def test_links_carry_the_instance_prefix_and_files_put(client: httpx.Client) -> None:
    row = page(client, "Customer", **{"$top": "1"})[0]
    assert row["_links"]["self"] == f"/AcumaticaERP{V}/Customer/{row['id']}"
    assert row["_links"]["files:put"].startswith(f"/AcumaticaERP{V}/files/")


def test_detail_lines_carry_id_row_number_note_and_custom(client: httpx.Client) -> None:
    row = page(client, "Customer", **{"$top": "1", "$expand": "Contacts"})[0]
    lines = row["Contacts"]
    assert lines and [line["rowNumber"] for line in lines] == list(range(1, len(lines) + 1))
    for line in lines:
        assert len(line["id"]) == 36 and line["note"] is None and line["custom"] == {}
    again = page(client, "Customer", **{"$top": "1", "$expand": "Contacts"})[0]
    assert [line["id"] for line in again["Contacts"]] == [line["id"] for line in lines]  # stable


def test_the_adapter_reads_the_real_shapes(acumatica: FakeAcumatica) -> None:
    clock = FrozenClock(NOW)
    tenant = acumatica.tenant_settings(page_size=5)
    with AcumaticaAdapter(
        tenant, sync=SyncSettings(), clock=clock, transport=httpx.MockTransport(acumatica.handle)
    ) as a:
        customers = [r for p in a.read("Customer", None) for r in p.records]
        orders = [r for p in a.read("SalesOrder", None) for r in p.records]
    assert len(customers) == 12 and len({c.external_id for c in customers}) == 12
    assert any(c.contacts for c in customers) and len(orders) == 4


def test_a_400_says_what_its_model_state_says(acumatica: FakeAcumatica) -> None:
    with httpx.Client(transport=httpx.MockTransport(acumatica.handle), base_url=acumatica.base_url) as client:
        response = client.post("/entity/auth/login", content=b"")
    assert response.status_code == 400
    assert response.json() == {
        "message": "The request is invalid.",
        "modelState": {"": ["The request body should not be empty."]},
    }
    error = decoder("acu")(response, None)
    assert isinstance(error, ERPError) and "The request body should not be empty." in str(error)


def test_a_failed_login_never_shows_the_stack_trace(acumatica: FakeAcumatica) -> None:
    tenant = acumatica.tenant_settings(password="wrong")
    adapter = AcumaticaAdapter(
        tenant, sync=SyncSettings(), clock=FrozenClock(NOW), transport=httpx.MockTransport(acumatica.handle)
    )
    with pytest.raises(ERPAuthError) as caught:
        adapter.__enter__()
    message = str(caught.value)
    assert "Invalid credentials" in message and "PX.Api" not in message and " at " not in message


def test_sap_v2_etag_is_the_change_stamp() -> None:
    fake = FakeSAP(seed=1, customers=3, suppliers=0, sales_orders=4, billing_documents=1)
    number = sorted(fake.data.sales_orders)[0]
    url = fake.url("A_SalesOrder") + f"('{number}')"
    with httpx.Client(transport=fake.transport(), auth=(fake.gate.username, fake.gate.password)) as client:
        body = client.get(url, params={"sap-client": "100", "$format": "json"}).json()
    stamp = fake.data.sales_orders[number]["LastChangeDateTime"]
    assert body["d"]["__metadata"]["etag"] == etag(stamp)
    assert (
        etag(datetime(2005, 10, 24, 15, 36, 52, tzinfo=UTC))
        == "W/\"datetimeoffset'2005-10-24T15%3A36%3A52.0000000Z'\""
    )


def test_partners_without_a_role_are_counted_in_the_run(sqlite_engine: Engine) -> None:
    fake = FakeSAP(seed=2, customers=3, suppliers=1, both=0, sales_orders=2, billing_documents=1)
    contact = fake.add_partner(customer=False, supplier=False, created=NOW - timedelta(days=3))
    clock = FrozenClock(NOW + timedelta(hours=1))
    tenant = fake.tenant_settings(name="s4", streams=["BusinessPartner"])
    settings = Settings(tenants=[tenant], sync=SyncSettings(lookback_seconds=0))
    memory = Memory(settings, clock=clock, engine=sqlite_engine, llm=None)

    def factory(t: TenantSettings) -> SAPAdapter:
        return SAPAdapter(t, sync=settings.sync, clock=clock, transport=fake.transport())

    assert memory.sync_runner(adapter_factory=factory).run().ok
    with sqlite_engine.connect() as conn:
        problems = conn.execute(
            sa.select(run_t.c.problems).where(run_t.c.stream == "BusinessPartner")
        ).scalar()
    assert problems is not None
    assert (
        f"passed over 1 business partner(s) with neither a customer nor a supplier role: {contact}"
        in problems
    )


# A full Customer, the <NEW> placeholder, endpoint 20.200.001 ----------------------------------
def small(seed: int, **sizes: Any) -> FakeAcumatica:
    counts = {"customers": 12, "vendors": 1, "invoices": 1, "sales_orders": 1, "bills": 1, "cases": 1}
    return FakeAcumatica(seed=seed, clock=FrozenClock(NOW), **{**counts, **sizes})


def test_a_customer_without_select_has_the_real_fields_mostly_empty() -> None:
    fake = small(3, customers=103, invoices=1, sales_orders=1)
    with httpx.Client(transport=httpx.MockTransport(fake.handle), base_url=fake.base_url) as client:
        client.post("/entity/auth/login", json={"name": fake.username, "password": fake.password})
        rows = client.get(f"{V}/Customer").json()
    # the contract's 55 Customer fields (54 measured on a real one, plus RestrictVisibilityTo) + id,
    # rowNumber, note, custom, _links
    assert len(rows) == 103 and {len(row) for row in rows} == {60}
    assert {"CreditLimit", "Email", "TaxExemptionNumber", "StatementCycleID", "NoteID"} <= set(rows[0])
    assert "MainContact" not in rows[0]  # linked entities only when expanded
    assert sum(1 for row in rows if row["TaxZone"]) <= 10  # real: set on 5 of 103
    assert all(row["ParentRecord"] == {} for row in rows)
    assert [row["CustomerID"]["value"] for row in rows].count("<NEW>") == 1


def test_the_20_200_001_customer_has_no_credit_limit_email_or_tax_exemption(client: httpx.Client) -> None:
    old = "/entity/Default/20.200.001"
    row = client.get(f"{old}/Customer", params={"$top": "1"}).json()[0]
    # the 20.200.001 contract defines 45 Customer fields, none of these three
    assert len(row) == 50 and not {"CreditLimit", "Email", "TaxExemptionNumber"} & set(row)
    assert row["_links"]["self"].startswith(f"/AcumaticaERP{old}/Customer/")
    refused = client.get(f"{old}/Customer", params={"$select": "CustomerID,CreditLimit"})
    assert refused.status_code == 400 and "CreditLimit" in refused.json()["exceptionMessage"]


def test_the_adapter_reads_20_200_001_and_says_what_it_lacks(sqlite_engine: Engine) -> None:
    fake = small(5, customers=12, invoices=1, sales_orders=1, versions=["20.200.001"])
    tenant = fake.tenant_settings(name="acu20", streams=["Customer"], page_size=5)
    settings = Settings(tenants=[tenant], sync=SyncSettings(lookback_seconds=0))
    memory = Memory(settings, clock=FrozenClock(NOW), engine=sqlite_engine, llm=None)

    def factory(t: TenantSettings) -> AcumaticaAdapter:
        return AcumaticaAdapter(
            t, sync=settings.sync, clock=FrozenClock(NOW), transport=httpx.MockTransport(fake.handle)
        )

    with factory(tenant) as adapter:  # the only version the server offers, discovered
        assert adapter.version == "20.200.001"
        assert adapter.lacking("Customer") == ("CreditLimit", "TaxExemptionNumber", "Email")
        first = next(iter(fake.keys("Customer")))
        record = adapter.get("Customer", first)
    values = fake.record("Customer", first)
    assert record.credit_limit == values["CreditVerificationRules"]["CreditLimit"]  # the fallback
    assert record.email == values["MainContact"]["Email"]
    assert "tax_exemption_number" not in record.extra
    selects = [r.params["$select"].split(",") for r in fake.requests if r.target == "Customer"]
    assert selects and all("CreditLimit" not in s and "Email" not in s for s in selects)

    assert memory.sync_runner(adapter_factory=factory).run().ok
    with sqlite_engine.connect() as conn:
        problems = conn.execute(sa.select(run_t.c.problems).where(run_t.c.stream == "Customer")).scalar()
    assert problems is not None and (
        "the endpoint Default/20.200.001 has no Customer field(s) CreditLimit, TaxExemptionNumber, Email"
        in problems
    )
    assert problems.count("20.200.001") == 1  # said once per run, not per page


def test_a_customer_without_the_fields_maps_to_empty_values() -> None:
    from connector.adapters.acumatica.mapping import map_customer

    record = map_customer(
        {
            "id": "x",
            "CustomerID": {"value": "C1"},
            "LastModifiedDateTime": {"value": "2026-01-01T00:00:00+00:00"},
        },
        "t",
    )
    assert (record.credit_limit, record.email, record.extra) == (None, None, {})


def test_the_new_placeholder_customer_reads_by_key_and_by_filter() -> None:
    fake = small(5, customers=4, invoices=8, sales_orders=1, placeholder_customer=2)
    assert fake.keys("Customer")[1] == "<NEW>"
    tenant = fake.tenant_settings()
    transport = httpx.MockTransport(fake.handle)
    with AcumaticaAdapter(tenant, sync=SyncSettings(), clock=FrozenClock(NOW), transport=transport) as a:
        by_key = a.get("Customer", "<NEW>")
        by_filter = a.find("Customer", "<NEW>")
        listed = [r.external_id for p in a.read("Customer", None) for r in p.records]
    assert by_key.external_id == "<NEW>" and by_filter is not None and by_filter.external_id == "<NEW>"
    assert "<NEW>" in listed


def test_the_status_values_seen_in_real_data_occur_and_map() -> None:
    fake = small(1, customers=400, invoices=1, sales_orders=300)
    customer_statuses = {r.values["Status"] for r in fake.tables["Customer"].ordered()}
    order_statuses = {r.values["Status"] for r in fake.tables["SalesOrder"].ordered()}
    assert {"Active", "Inactive", "On Hold", "Credit Hold"} <= customer_statuses
    assert {"Open", "Completed", "On Hold"} <= order_statuses
    transport = httpx.MockTransport(fake.handle)
    with AcumaticaAdapter(
        fake.tenant_settings(), sync=SyncSettings(), clock=FrozenClock(NOW), transport=transport
    ) as a:
        orders = [r for p in a.read("SalesOrder", None) for r in p.records]
    open_by_status = {o.status: o.is_open for o in orders}
    assert open_by_status["Completed"] is False and open_by_status["Open"] and open_by_status["On Hold"]


def test_sap_sales_order_has_the_real_field_count_unless_selected() -> None:
    fake = FakeSAP(seed=1, customers=3, suppliers=0, sales_orders=2, billing_documents=1)
    auth = (fake.gate.username, fake.gate.password)
    with httpx.Client(transport=fake.transport(), auth=auth) as client:
        full = client.get(fake.url("A_SalesOrder"), params={"sap-client": "100", "$format": "json"}).json()
        some = client.get(
            fake.url("A_SalesOrder"),
            params={"sap-client": "100", "$format": "json", "$select": "SalesOrder,IncotermsClassification"},
        ).json()
    row = full["d"]["results"][0]
    contract = entity_contract("API_SALES_ORDER_SRV", "v2", "A_SalesOrder")
    assert contract is not None and set(row) - {"__metadata"} <= set(contract.properties) | set(
        contract.navigation
    )
    assert len(row) == 92 and row["to_Partner"]["__deferred"]["uri"].endswith("/to_Partner")
    assert row["PriceDetnExchangeRate"] == "1.00000"  # Edm.Decimal as a string
    assert set(some["d"]["results"][0]) == {"__metadata", "SalesOrder", "IncotermsClassification"}
