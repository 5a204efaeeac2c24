"""Alembic migrations, driven from code so they work from an installed wheel.

The same revision files run on SQLite (batch mode) and PostgreSQL. ``upgrade_to_head`` upgrades
to every head, so feature areas can add revisions independently.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import MetaData
from sqlalchemy.engine import Engine

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def alembic_config(engine: Engine, target_metadata: MetaData | None = None) -> Config:
    """Alembic config for ``engine``; pass ``connector.schema.metadata`` as ``target_metadata`` to diff."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["engine"] = engine
    config.attributes["target_metadata"] = target_metadata
    return config


def upgrade_to_head(engine: Engine) -> list[str]:
    """Apply every pending revision; return the revisions now current."""
    config = alembic_config(engine)
    command.upgrade(config, "heads")
    return current_revisions(engine)


def current_revisions(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return sorted(MigrationContext.configure(conn).get_current_heads())


def head_revisions(engine: Engine) -> list[str]:
    return sorted(ScriptDirectory.from_config(alembic_config(engine)).get_heads())
