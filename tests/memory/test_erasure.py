"""Erasure stays erased: tombstones refuse later writes and re-ingests, and no byte of the customer
stays in the files of the data directory (SQLite + embedded Chroma)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Session
from stored_bytes import files_naming

from connector.cli import main
from connector.clock import FrozenClock
from connector.db.engine import create_db_engine
from connector.episodic.tables import ENTRIES
from connector.erasure.tombstones import erased_t
from connector.errors import ErasedCustomerError
from connector.lexical.tables import DOCS, POSTINGS
from connector.memory import Memory
from connector.scope import Scope
from connector.semantic.tables import CrmCase
from connector.settings import ChromaSettings, EpisodicSettings, Settings

# The tests record cases for customers they name, not synced ones (the byte scan must find none
# of a forgotten customer, and semantic memory keeps the ERP's parties).
UNSYNCED_CUSTOMERS = EpisodicSettings(allow_unknown_customers=True)
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CRM = CrmCase.metadata.tables["crm_case"]


@pytest.fixture
def memory(engine: Engine, tmp_path: Path) -> Memory:
    settings = Settings(
        data_dir=tmp_path / "data",
        chroma=ChromaSettings(path=tmp_path / "data" / "chroma"),
        episodic=UNSYNCED_CUSTOMERS,
    )
    return Memory(settings, clock=FrozenClock(NOW), llm=None, engine=engine)


def entries(memory: Memory, customer: str) -> int:
    with memory.engine.connect() as conn:
        return int(
            conn.execute(sa.select(sa.func.count()).where(ENTRIES.c.customer_id == customer)).scalar_one()
        )


def test_writes_for_a_forgotten_customer_are_refused_until_the_erasure_is_lifted(memory: Memory) -> None:
    memory.record_case("GONE", "Asked about INV-000123.", "Explained it.", case_id="c1")
    memory.record_turn("s-1", "GONE", "user", "hello")
    memory.learn("GONE", "Prefers calls in the morning")

    memory.forget("GONE")

    with pytest.raises(ErasedCustomerError, match="--lift"):
        memory.record_case("GONE", "Asked again about INV-000123.", "Explained it again.", case_id="c2")
    with pytest.raises(ErasedCustomerError):
        memory.record_turn("s-2", "GONE", "user", "hello again")
    with pytest.raises(ErasedCustomerError):
        memory.learn("GONE", "Prefers e-mail")
    assert entries(memory, "GONE") == 0
    memory.record_case("KEPT", "Asked about INV-000999.", "Explained it.", case_id="k1")  # others unaffected

    assert memory.lift_erasure("GONE") is True
    memory.record_case("GONE", "Asked again about INV-000123.", "Explained it again.", case_id="c2")
    assert entries(memory, "GONE") == 1


def test_a_case_whose_write_races_a_forget_leaves_nothing_behind(memory: Memory) -> None:
    """forget runs after the case's rows committed and before its vector reached Chroma: the
    writer notices the tombstone afterwards, takes rows, postings and vector out again and refuses."""
    memory.record_case("RACE", "Asked about INV-000321.", "Explained it.", case_id="r0")
    index = memory.episodic.index
    real_upsert = index.upsert
    forgotten: list[dict[str, int]] = []

    def upsert_after_forget(*args: Any, **kwargs: Any) -> None:
        if not forgotten:  # the erasure lands between the rows' commit and the Chroma write
            forgotten.append(memory.forget("RACE"))
        real_upsert(*args, **kwargs)

    index.upsert = upsert_after_forget  # type: ignore[method-assign]
    with pytest.raises(ErasedCustomerError):
        memory.record_case("RACE", "Asked about CM-000777 for 88.20 EUR.", "Credited it.", case_id="r1")

    assert forgotten and forgotten[0]["episodic_entries"] == 2  # the rows had committed: forget took them
    assert entries(memory, "RACE") == 0
    assert index.inner.ids_in_scope("default", "RACE") == []
    with memory.engine.connect() as conn:
        for table in (POSTINGS, DOCS):
            left = sa.select(sa.func.count()).select_from(table).where(table.c.customer_id == "RACE")
            assert conn.execute(left).scalar_one() == 0
    memory.lift_erasure("RACE")
    assert memory.recall_cases("RACE", "credit memo CM-000777") == []


def test_a_batch_whose_write_races_a_forget_keeps_the_other_customers_cases(memory: Memory) -> None:
    """Several customers in one batch, one forgotten while the batch's vectors are written: only
    that customer's rows and vectors are taken out again, the others' stay recallable."""
    episodic = memory.episodic
    index = episodic.index
    real_upsert = index.upsert
    forgotten: list[dict[str, int]] = []

    def upsert_after_forget(*args: Any, **kwargs: Any) -> None:
        if not forgotten:
            forgotten.append(memory.forget("RACE"))
        real_upsert(*args, **kwargs)

    index.upsert = upsert_after_forget  # type: ignore[method-assign]
    batch = [
        episodic.prepare(
            customer, f"Asked about INV-00{n}{i:03d}.", "Explained it.", case_id=f"{customer}-{i}"
        )
        for n, customer in enumerate(("KEPT", "RACE", "ALSO"))
        for i in range(3)
    ]
    with pytest.raises(ErasedCustomerError) as raised:
        episodic.record_cases(batch)

    assert raised.value.customer_id == "RACE"
    assert entries(memory, "RACE") == 0 and index.inner.ids_in_scope("default", "RACE") == []
    assert entries(memory, "KEPT") == 3 and entries(memory, "ALSO") == 3
    assert len(index.inner.ids_in_scope("default", "KEPT")) == 3
    assert memory.recall_cases("ALSO", "INV-002001")[0].case_id == "ALSO-1"


def test_only_the_erased_customers_of_a_batch_are_named_whatever_their_tenant(memory: Memory) -> None:
    erasures = memory.episodic.erasures
    gone, kept, elsewhere = Scope.of("t1", "GONE"), Scope.of("t1", "KEPT"), Scope.of("t2", "GONE")
    erasures.erase(gone)
    erasures.erase(Scope.of("t2", "ALSO"))

    assert erasures.erased_among([kept, elsewhere, gone, Scope.of("t2", "ALSO")]) == [
        gone,
        Scope.of("t2", "ALSO"),
    ]  # in the order asked, another tenant's same id untouched
    assert erasures.erased_among([kept, elsewhere]) == []
    with pytest.raises(ErasedCustomerError):
        erasures.require_all_writable([kept, gone])
    erasures.lift(gone)
    assert erasures.erased_among([gone]) == []


def _crm_case(external_id: str, customer: str, content_hash: str) -> CrmCase:
    return CrmCase(
        tenant="default", external_id=external_id, customer_external_id=customer,
        subject="Invoice INV-007001 charged at the old price list",
        description="Customer expected the contract price.", resolution="Credit memo CM-000500 issued.",
        status="Closed", case_class="billing", is_closed=True, closed_at=NOW - timedelta(days=3),
        content_hash=content_hash, synced_at=NOW,
    )  # fmt: skip


def test_a_forgotten_erp_case_is_not_ingested_again_after_an_edit_in_the_erp(memory: Memory) -> None:
    with Session(memory.engine) as session:
        session.add(_crm_case("000101", "GONE", "h1"))
        session.add(_crm_case("000102", "KEPT", "h1"))
        session.commit()
    assert memory.episodic.ingest_erp_cases("default") == 2

    memory.forget("GONE")
    with memory.engine.begin() as conn:  # the next sync brings an edit of the case
        conn.execute(sa.update(CRM).values(resolution="Refund paid instead.", content_hash="h2"))

    assert memory.episodic.ingest_erp_cases("default") == 1  # KEPT's edit only
    assert entries(memory, "GONE") == 0 and entries(memory, "KEPT") == 1

    memory.lift_erasure("GONE")
    assert memory.episodic.ingest_erp_cases("default") == 1
    assert entries(memory, "GONE") == 1


def test_cli_lift_is_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("CONNECTOR_DATA_DIR", str(tmp_path / "data"))
    assert main(["forget", "GONE"]) == 0
    with caplog.at_level("WARNING"):
        assert main(["forget", "GONE", "--lift"]) == 0
    assert any("erasure lifted" in r.getMessage() for r in caplog.records)


# On disk ------------------------------------------------------------------------------------------

SECRET_CUSTOMER = "ZQXSECRETCUST"
SECRET_CASES = ("ZQXCASE-0001", "ZQXCASE-0002", "ZQXCASE-0003")
SECRET_PHRASE = "marmalade warehouse flooded"


@pytest.fixture
def on_disk(tmp_path: Path) -> Iterator[Memory]:
    data = tmp_path / "data"
    data.mkdir()
    engine = create_db_engine(f"sqlite:///{data / 'connector.sqlite3'}")
    from connector.db.migrate import upgrade_to_head

    upgrade_to_head(engine)
    settings = Settings(
        data_dir=data, chroma=ChromaSettings(path=data / "chroma"), episodic=UNSYNCED_CUSTOMERS
    )
    yield Memory(settings, clock=FrozenClock(NOW), llm=None, engine=engine)
    engine.dispose()


def test_after_forget_no_file_in_the_data_directory_holds_the_customer(on_disk: Memory) -> None:
    memory = on_disk
    for other in range(30):  # other customers' writes before and after, so pages are shared
        memory.record_case(f"OTHER{other:03d}", f"Asked about INV-{other:06d}.", "Explained it.")
    for i, case_id in enumerate(SECRET_CASES):
        memory.record_case(
            SECRET_CUSTOMER, f"The {SECRET_PHRASE} and order SO-{i:06d} arrived late.",
            f"Credit memo for {SECRET_PHRASE} damage issued.", case_id=case_id,
            transcript=f"Customer: our {SECRET_PHRASE} ...", pii=i == 0,
        )  # fmt: skip
        memory.record_turn("s-secret", SECRET_CUSTOMER, "user", f"Is the {SECRET_PHRASE} claim ok?")
    memory.learn(SECRET_CUSTOMER, f"Runs the {SECRET_PHRASE} site")
    needles = [SECRET_CUSTOMER.encode(), *(c.encode() for c in SECRET_CASES), SECRET_PHRASE.encode()]
    data_dir = memory.settings.data_dir
    assert set(files_naming(data_dir, needles)) >= {"connector.sqlite3-wal", "chroma/chroma.sqlite3"}

    memory.forget(SECRET_CUSTOMER)
    memory.record_case("OTHER999", "Asked about INV-999999.", "Explained it.")

    assert files_naming(data_dir, needles) == {}
    with memory.engine.connect() as conn:  # the tombstone does not name the customer either
        assert conn.execute(sa.select(sa.func.count()).select_from(erased_t)).scalar_one() == 1
    assert memory.recall_cases("OTHER999", "INV-999999")  # the Chroma store still works


def test_chroma_still_works_after_the_purge_when_reopened(on_disk: Memory) -> None:
    memory = on_disk
    kept = [
        memory.record_case("OTHER", f"Asked about INV-{i:06d}.", "Explained it.").entry_id for i in range(5)
    ]
    memory.record_case(SECRET_CUSTOMER, f"The {SECRET_PHRASE}.", "Fixed.", case_id=SECRET_CASES[0])
    memory.forget(SECRET_CUSTOMER)

    reopened = Memory(memory.settings, clock=FrozenClock(NOW), llm=None, engine=memory.engine)
    assert reopened.episodic.index.count() == 5
    assert set(reopened.episodic.index.vectors(kept)) == set(kept)


def test_pii_deleted_by_retention_leaves_no_bytes_either(on_disk: Memory) -> None:
    memory = on_disk
    memory.record_case("OTHER", "Asked about INV-000001.", "Explained it.")
    memory.record_case(
        SECRET_CUSTOMER, f"The {SECRET_PHRASE}.", "Fixed.", case_id=SECRET_CASES[0], pii=True,
        occurred_at=NOW - timedelta(days=20),
    )  # fmt: skip
    needles = [SECRET_PHRASE.encode(), SECRET_CASES[0].encode()]
    assert files_naming(memory.settings.data_dir, needles)
    clock = memory.clock
    assert isinstance(clock, FrozenClock)
    clock.advance(timedelta(days=20))  # now past the 30-day PII policy

    assert memory.episodic.apply_retention().pii_deleted == 1

    assert files_naming(memory.settings.data_dir, needles) == {}
