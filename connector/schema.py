"""The whole relational schema: every area's tables in one metadata, for code that handles them all.

Each area declares its tables beside its code and they join SQLModel's shared metadata when their
module is imported. Code that reads or writes a table imports that table's module, so nothing needs
a global registration at run time; what needs *every* table at once (comparing the models with the
migrations, truncating the store between tests) imports this module. It sits above the feature
packages, so ``connector.db`` never imports them. A new area's tables module is added here.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlmodel import SQLModel

# Imported for their tables, which join SQLModel.metadata as a side effect.
import connector.audit.table
import connector.conversations.tables
import connector.db.models
import connector.episodic.tables
import connector.erasure.tables
import connector.facts.tables
import connector.lexical.tables
import connector.semantic.history_table
import connector.semantic.tables
import connector.sync.tables
import connector.working.tables  # noqa: F401

metadata: sa.MetaData = SQLModel.metadata
