"""Keep PostgreSQL's planner statistics current while a sync fills tables.

The upsert's classify query looks rows up by (tenant, kind, external_id). On a table the planner
has never analysed, PostgreSQL guesses a couple of rows per (tenant, kind), uses the key index on
those two columns only and filters external ids row by row: a 100,000-customer first load became
quadratic (seconds per page). Autovacuum would fix the statistics eventually, but it may be slow
or switched off, so the sync analyses a table itself whenever this run has at least doubled it.
Only the columns some index or key covers are analysed: they are what the planner needs for the
sync's lookups, and sampling the raw JSON documents made each ANALYZE several times dearer
(autovacuum still analyses every column in its own time).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

TABLES_BY_RECORD_TYPE: dict[str, tuple[str, ...]] = {
    "party": ("party", "party_contact", "party_address", "party_attribute"),
    "document": ("document",),
    "case": ("crm_case",),
}
_MIN_ROWS = 1000


class StatsKeeper:
    """Counts rows a run inserted per table and runs ``ANALYZE`` when a table doubled (PG only)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.enabled = engine.dialect.name == "postgresql"
        self._baseline: dict[str, float] = {}
        self._inserted: dict[str, int] = {}
        self.analyses = 0

    def inserted(self, record_type: str, rows: int) -> None:
        if not self.enabled or rows <= 0:
            return
        for table in TABLES_BY_RECORD_TYPE.get(record_type, ()):
            if table not in self._baseline:
                self._baseline[table] = self._reltuples(table)
            self._inserted[table] = self._inserted.get(table, 0) + rows
            if self._inserted[table] >= max(_MIN_ROWS, self._baseline[table]):
                self._analyze(table)

    def _reltuples(self, table: str) -> float:
        with self.engine.connect() as conn:
            value = conn.execute(
                sa.text("SELECT reltuples FROM pg_class WHERE relname = :t AND relkind = 'r'"), {"t": table}
            ).scalar()
        return max(float(value or 0), 0.0)  # -1 = never analysed

    def _analyze(self, table: str) -> None:
        columns = ", ".join(f'"{c}"' for c in indexed_columns(table))
        with self.engine.begin() as conn:
            conn.execute(sa.text(f'ANALYZE "{table}" ({columns})' if columns else f'ANALYZE "{table}"'))
        self.analyses += 1
        self._baseline[table] = self._reltuples(table)
        self._inserted[table] = 0


def indexed_columns(table_name: str) -> list[str]:
    """Columns of ``table_name`` covered by an index or a unique / primary key, in table order."""
    from connector.db.models import metadata

    table = metadata.tables[table_name]
    covered: set[str] = set()
    for index in table.indexes:
        covered.update(c.name for c in index.columns)
    for constraint in table.constraints:
        if isinstance(constraint, sa.UniqueConstraint | sa.PrimaryKeyConstraint):
            covered.update(c.name for c in constraint.columns)
    return [c.name for c in table.columns if c.name in covered]
