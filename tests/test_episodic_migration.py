"""Migration 0006 (the vector copy column) upgrades a store that already holds entries, on SQLite
and PostgreSQL: old rows keep everything and have no copy; new rows store one."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from alembic import command
from conftest import scratch_pg_database
from sqlalchemy.engine import Engine

from connector.db.engine import create_db_engine
from connector.db.migrate import alembic_config, current_revisions, head_revisions, upgrade_to_head
from connector.episodic import vectors as copies
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
    command.upgrade(alembic_config(engine), "0002")  # the store as the first episodic release left it
    assert "vector" not in {c["name"] for c in sa.inspect(engine).get_columns("episodic_entry")}
    with engine.begin() as conn:
        conn.execute(sa.insert(ENTRIES).values(entry("old")))

    upgrade_to_head(engine)

    assert current_revisions(engine) == head_revisions(engine)
    vector = np.linspace(-1, 1, 384, dtype=np.float32)
    with engine.begin() as conn:
        conn.execute(sa.insert(ENTRIES).values({**entry("new"), "vector": copies.encode(vector)}))
    with engine.connect() as conn:
        rows = {r["id"]: r for r in conn.execute(sa.select(ENTRIES)).mappings()}
    assert rows["old"]["vector"] is None
    assert rows["old"]["documents"] == ["INV-000001"] and rows["old"]["occurred_at"] == NOW
    np.testing.assert_allclose(copies.decode(bytes(rows["new"]["vector"])), vector, atol=1e-3)


def test_upgrade_on_sqlite_keeps_old_rows_without_a_copy(tmp_path: Path) -> None:
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
def test_upgrade_on_postgres_keeps_old_rows_without_a_copy(empty_pg_engine: Engine) -> None:
    check_upgrade(empty_pg_engine)
