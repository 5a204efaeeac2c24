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
