"""``connector db upgrade|current``: schema migrations."""

from __future__ import annotations

import argparse
from typing import Any

from connector.db.deadline import within
from connector.db.engine import check_connection, create_db_engine, safe_url
from connector.db.migrate import current_revisions, head_revisions, upgrade_to_head
from connector.settings import load_settings


def register(sub: Any) -> None:
    parser = sub.add_parser("db", help="database schema migrations")
    db_sub = parser.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    up = db_sub.add_parser("upgrade", help="apply every pending migration (SQLite or PostgreSQL)")
    up.set_defaults(handler=_upgrade)
    cur = db_sub.add_parser("current", help="show the applied and the latest schema revisions")
    cur.set_defaults(handler=_current)


def _upgrade(args: argparse.Namespace) -> int:
    settings = load_settings()
    engine = create_db_engine(settings.database_url, database=settings.database)
    check_connection(engine)
    revisions = upgrade_to_head(engine)
    print(f"database {safe_url(settings.database_url)} is at revision {', '.join(revisions)}")
    return 0


def _current(args: argparse.Namespace) -> int:
    settings = load_settings()
    engine = create_db_engine(settings.database_url, database=settings.database)
    with within(settings.database.read_timeout_s):
        check_connection(engine)
        applied = current_revisions(engine)
    print(f"applied: {', '.join(applied) or 'none'}")
    print(f"latest:  {', '.join(head_revisions(engine))}")
    return 0
