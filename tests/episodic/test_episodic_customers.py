"""``record_case`` for a customer id semantic memory does not hold is refused by default (ids are
case-sensitive: ``silverinst`` is not ``SILVERINST``), with an error that names no other customer;
``episodic.allow_unknown_customers`` records it anyway. SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.erp.records import PartyRecord
from connector.errors import ConnectorError, UnknownCustomerError
from connector.mcp_server.guard import agent_message
from connector.memory import Memory
from connector.semantic.upsert import upsert_records
from connector.settings import ChromaSettings, EpisodicSettings, Settings, load_settings

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
PARTIES = [
    PartyRecord(tenant="default", kind="customer", external_id="SILVERINST", name="Silver Instruments"),
    PartyRecord(tenant="default", kind="customer", external_id="SILVERIN", name="Silverin Ltd"),
    PartyRecord(tenant="default", kind="vendor", external_id="ACMEVEND", name="Acme Vendor"),
    PartyRecord(tenant="other", kind="customer", external_id="OTHERONLY", name="Other tenant"),
]


def memory_on(engine: Engine, tmp_path: Path, **episodic: bool) -> Memory:
    settings = Settings(
        data_dir=tmp_path / "data",
        chroma=ChromaSettings(path=tmp_path / "chroma"),
        episodic=EpisodicSettings(**episodic),
    )
    memory = Memory(settings, clock=FrozenClock(NOW), llm=None, engine=engine)
    with engine.begin() as conn:
        upsert_records(conn, PARTIES, NOW)
    return memory


def test_a_synced_customer_records_and_a_case_variant_of_its_id_is_refused(
    engine: Engine, tmp_path: Path
) -> None:
    memory = memory_on(engine, tmp_path)
    recorded = memory.record_case("SILVERINST", "Disputed INV-000101.", "Credited 10.00 USD.")
    assert recorded.status == "created"

    with pytest.raises(UnknownCustomerError) as refused:
        memory.record_case("silverinst", "Disputed INV-000102.", "Credited 12.00 USD.")
    assert isinstance(refused.value, ConnectorError)
    message = str(refused.value)
    assert message.startswith("unknown customer 'silverinst': not in semantic memory")
    assert "episodic.allow_unknown_customers" in message
    for other in ("SILVERINST", "SILVERIN", "OTHERONLY", "ACMEVEND"):
        assert other not in message and other not in agent_message(refused.value)
    assert refused.value.suggestions == []
    assert memory.episodic.stats().live_entries == 1  # nothing of the refused case was stored


@pytest.mark.parametrize(
    ("customer", "tenant"),
    [("ACMEVEND", None), ("OTHERONLY", None), ("SILVERINST", "other"), ("NEVERSYNCED", None)],
    ids=["a-vendor", "another-tenants-customer", "in-another-tenant", "never-synced"],
)
def test_only_a_customer_of_the_same_tenant_counts(
    engine: Engine, tmp_path: Path, customer: str, tenant: str | None
) -> None:
    memory = memory_on(engine, tmp_path)
    with pytest.raises(UnknownCustomerError):
        memory.record_case(customer, "Asked about INV-000103.", "Explained it.", tenant=tenant)


def test_the_setting_records_cases_for_unknown_customers(engine: Engine, tmp_path: Path) -> None:
    memory = memory_on(engine, tmp_path, allow_unknown_customers=True)
    recorded = memory.record_case("silverinst", "Disputed INV-000104.", "Credited 14.00 USD.")
    assert recorded.status == "created"
    assert [hit.case_id for hit in memory.recall_cases("silverinst", "INV-000104")] == [recorded.case_id]


def test_the_setting_reads_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().episodic.allow_unknown_customers is False
    monkeypatch.setenv("CONNECTOR_EPISODIC__ALLOW_UNKNOWN_CUSTOMERS", "true")
    assert load_settings().episodic.allow_unknown_customers is True
