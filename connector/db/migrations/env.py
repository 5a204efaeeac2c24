"""Alembic environment: the engine (and, to autogenerate, the target metadata) come from connector.db.migrate.

Upgrades need no metadata; a caller comparing the models with the migrations passes
``connector.schema.metadata``, so this package never imports the feature areas' tables.
"""

from __future__ import annotations

from alembic import context

engine = context.config.attributes["engine"]
metadata = context.config.attributes.get("target_metadata")

with engine.begin() as connection:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    context.run_migrations()
