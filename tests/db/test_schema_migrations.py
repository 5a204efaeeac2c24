"""The SQLModel tables and the migrations describe the same schema, on SQLite and PostgreSQL.

After ``upgrade_to_head`` an Alembic autogenerate comparison against ``connector.schema.metadata``
must find nothing to do: a column added to a model without a migration (or the reverse) fails here.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import Engine
from sqlalchemy.schema import CreateIndex

from connector.schema import metadata


def _expression_index(obj: Any) -> bool:
    return isinstance(obj, sa.Index) and any(not isinstance(e, sa.Column) for e in obj.expressions)


def test_models_and_migrations_agree(engine: Engine) -> None:
    sqlite = engine.dialect.name == "sqlite"

    def include(obj: Any, name: str | None, kind: str, reflected: bool, compare_to: Any) -> bool:
        # SQLite reflects no expression or DESC index columns; those are compared by their DDL below.
        return not (sqlite and kind == "index" and (_expression_index(obj) or _expression_index(compare_to)))

    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True, "include_object": include})
        diff = compare_metadata(context, metadata)
    assert diff == []


def test_expression_indexes_are_created_as_the_models_declare_them(sqlite_engine: Engine) -> None:
    indexes = [i for t in metadata.sorted_tables for i in t.indexes if _expression_index(i)]
    assert indexes  # the check below would pass vacuously otherwise
    with sqlite_engine.connect() as conn:
        for index in indexes:
            stored = conn.execute(
                sa.text("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = :n"), {"n": index.name}
            ).scalar_one()
            declared = str(CreateIndex(index).compile(dialect=sqlite_engine.dialect))
            assert " ".join(stored.replace('"', "").split()) == " ".join(declared.replace('"', "").split())
