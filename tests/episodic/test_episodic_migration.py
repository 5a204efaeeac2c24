"""Migrations 0006 (a vector copy column) and 0007 (the copy dropped: Chroma is the store of record,
rows say which vector they want) upgrade a store that already holds entries, on SQLite and
PostgreSQL: old rows keep everything, lose the copy and have no vector hash yet."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from conftest import scratch_pg_database
from sqlalchemy.engine import Engine

from connector.db.engine import create_db_engine
from connector.db.migrate import alembic_config, current_revisions, head_revisions, upgrade_to_head
from connector.episodic.tables import ENTRIES

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def entry(entry_id: str) -> dict[str, object]:
    return {
        "id": entry_id, "tenant": "default", "customer_id": "ACME", "case_id": entry_id,
        "case_type": "dispute", "summary": "Request: charged twice. Resolution: credited.",
        "summary_mode": "non-llm", "documents": ["INV-000001"], "doc_keys": ["INV-000001"],
        "occurred_at": NOW, "retain_from": NOW, "recorded_at": NOW, "updated_at": NOW,
        "archived_at": None, "pii": False, "status": "live", "embedding_model": "minilm-l6-v2-int8",
        "merged_count": 1,
    }  # fmt: skip


def check_upgrade(engine: Engine) -> None:
    command.upgrade(alembic_config(engine), "0006")  # the store as the vector-copy release left it
    assert "vector" in {c["name"] for c in sa.inspect(engine).get_columns("episodic_entry")}
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO episodic_entry (id, tenant, customer_id, case_id, case_type, summary,"
                " summary_mode, documents, doc_keys, occurred_at, retain_from, recorded_at, updated_at,"
                " pii, status, embedding_model, merged_count, vector) VALUES (:id, 'default', 'ACME',"
                " :id, 'dispute', 'Request: charged twice.', 'non-llm', '[\"INV-000001\"]',"
                " '[\"INV-000001\"]', :t, :t, :t, :t, false, 'live', 'minilm-l6-v2-int8', 1, :v)"
            ),
            {"id": "old", "t": NOW, "v": b"\x00" * 768},
        )

    upgrade_to_head(engine)

    assert current_revisions(engine) == head_revisions(engine)
    columns = {c["name"] for c in sa.inspect(engine).get_columns("episodic_entry")}
    assert "vector" not in columns and {"vector_hash", "vector_pending"} <= columns
    with engine.begin() as conn:
        conn.execute(sa.insert(ENTRIES).values({**entry("new"), "vector_hash": "a" * 32}))
    with engine.connect() as conn:
        rows = {r["id"]: r for r in conn.execute(sa.select(ENTRIES)).mappings()}
    assert rows["old"]["vector_hash"] is None and rows["old"]["vector_pending"] is False
    assert rows["old"]["documents"] == ["INV-000001"] and rows["old"]["occurred_at"] == NOW
    assert rows["new"]["vector_hash"] == "a" * 32 and rows["new"]["vector_pending"] is False


def test_upgrade_on_sqlite_keeps_old_rows_and_drops_the_copy(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'old.sqlite3'}")
    try:
        check_upgrade(engine)
    finally:
        engine.dispose()


@pytest.fixture
def empty_pg_engine() -> Iterator[Engine]:
    """A new, empty PostgreSQL database (the session's shared one is already at head)."""
    with scratch_pg_database("connector_mig") as url:
        engine = create_db_engine(url)
        try:
            yield engine
        finally:
            engine.dispose()


@pytest.mark.postgres
def test_upgrade_on_postgres_keeps_old_rows_and_drops_the_copy(empty_pg_engine: Engine) -> None:
    check_upgrade(empty_pg_engine)
