"""Scratch PostgreSQL databases: created on the server, dropped afterwards.

The test suite's PostgreSQL fixtures and the benchmarks' ``--database postgres`` (or an admin URL)
give each store a database of its own that nothing else touches, dropped when the test or the run
ends (its other connections terminated first, so a failed run leaves nothing behind either).
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa

DEFAULT_PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def admin_url(database: str) -> str | None:
    """The admin URL ``--database`` names: None for ``sqlite``, the local server for ``postgres``."""
    if database == "sqlite":
        return None
    return DEFAULT_PG_ADMIN if database == "postgres" else database


class ScratchDatabases:
    """Databases made through one admin URL; :meth:`drop_all` removes every one of them."""

    def __init__(self, admin: str, prefix: str) -> None:
        self.admin, self.prefix, self.names = admin, prefix, list[str]()

    def create(self) -> str:
        """A new empty database; its URL (password kept, for the engine that connects to it)."""
        name = f"{self.prefix}_{uuid.uuid4().hex[:10]}"
        engine = sa.create_engine(self.admin, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        engine.dispose()
        self.names.append(name)
        return sa.engine.make_url(self.admin).set(database=name).render_as_string(hide_password=False)

    def drop_all(self) -> None:
        if not self.names:
            return
        engine = sa.create_engine(self.admin, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            for name in self.names:
                conn.execute(
                    sa.text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE datname = :n AND pid <> pg_backend_pid()"
                    ),
                    {"n": name},
                )
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}"'))
        engine.dispose()
        self.names.clear()
