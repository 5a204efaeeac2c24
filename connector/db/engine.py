"""Engine creation for SQLite (embedded default) and PostgreSQL (psycopg 3).

SQLite gets WAL, a busy timeout and foreign keys so a sync writer and context readers can share
the file. The embedded default upgrades its own schema on first use; PostgreSQL is upgraded
explicitly with ``connector db upgrade`` (a production schema should not change behind your back).
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from connector.db import pg_liveness
from connector.db.deadline import unscoped_limit
from connector.errors import StoreError
from connector.settings import DatabaseSettings, Settings


def normalise_url(url: str) -> str:
    """Use psycopg 3 for plain ``postgresql://`` URLs."""
    if url.startswith("postgresql://"):
        return "postgresql+psycopg://" + url[len("postgresql://") :]
    if url.startswith("postgres://"):
        return "postgresql+psycopg://" + url[len("postgres://") :]
    return url


def _sqlite_pragmas(busy_ms: int) -> Any:
    def set_pragmas(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={busy_ms}")
        cursor.execute("PRAGMA secure_delete=ON")  # deleted rows are zeroed: erased customers leave no bytes
        cursor.close()

    return set_pragmas


def postgres_deadlines(conf: DatabaseSettings) -> dict[str, Any]:
    """libpq options that bound every PostgreSQL call: connecting (``connect_timeout_s``), one
    statement (``statement_timeout_s``, enforced by the server) and a server that stops answering
    (``dead_server_s``: TCP keepalives, and the kernel's timeout for unacknowledged data)."""
    dead = conf.dead_server_s
    args: dict[str, Any] = {
        "connect_timeout": conf.connect_timeout_s,
        "keepalives": 1,
        "keepalives_idle": max(1, dead // 2),
        "keepalives_interval": max(1, dead // 6),
        "keepalives_count": 3,
        "tcp_user_timeout": dead * 1000,
    }
    if conf.statement_timeout_s:
        args["options"] = f"-c statement_timeout={int(conf.statement_timeout_s * 1000)}"
    return args


def create_db_engine(url: str, *, echo: bool = False, database: DatabaseSettings | None = None) -> Engine:
    """An engine for ``url``; creates the SQLite file's directory when needed. ``database``: the
    settings whose deadlines the connections get (default: the defaults)."""
    conf = database or DatabaseSettings()
    url = normalise_url(url)
    if url.startswith("sqlite"):
        db_path = sa.engine.make_url(url).database
        if db_path and db_path != ":memory:":
            try:
                Path(db_path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"database {safe_url(url)}: cannot create the directory {Path(db_path).parent}: "
                    f"{exc.strerror or type(exc).__name__} (check database.url / data_dir)"
                ) from None
        # A small pool: opening a SQLite connection and setting its pragmas costs more than most queries.
        engine = sa.create_engine(
            url,
            echo=echo,
            pool_size=5,
            max_overflow=10,
            pool_pre_ping=False,
            connect_args={"timeout": conf.busy_timeout_s, "check_same_thread": False},
            json_serializer=_pg_json,
        )
        sa.event.listen(engine, "connect", _sqlite_pragmas(int(conf.busy_timeout_s * 1000)))
        return engine
    engine = sa.create_engine(
        url, echo=echo, pool_pre_ping=False, pool_size=5, max_overflow=5, json_serializer=_pg_json,
        connect_args=postgres_deadlines(conf),
    )  # fmt: skip
    pg_liveness.install(engine)  # pings a pooled connection only when it may be dead
    sa.event.listen(engine, "do_connect", _deadline_connect(conf))
    return engine


def _deadline_connect(conf: DatabaseSettings) -> Any:
    """``do_connect``: connections whose waits have client-side deadlines (connector.db.deadline)."""
    per_wait = unscoped_limit(conf.statement_timeout_s, conf.dead_server_s)

    def connect(_dialect: Any, _record: Any, cargs: Any, cparams: dict[str, Any]) -> Any:
        from connector.db.pg_deadline import connect as deadline_connect

        return deadline_connect(per_wait, conf.connect_timeout_s, cargs, cparams)

    return connect


def _pg_json(value: Any) -> str:
    """JSON columns through orjson (several times faster than ``json.dumps``); the database parses
    the text, so only the value matters. A ``Decimal`` (raw ERP records keep money exact) is written
    as a JSON number with its own digits and scale. Whatever orjson cannot encode goes to the stdlib."""
    try:
        return orjson.dumps(value, option=_PASSTHROUGH, default=_refuse).decode()
    except TypeError:
        return json.dumps(value)


_PASSTHROUGH = (
    orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def _refuse(value: Any) -> Any:
    """orjson ``default``: a finite Decimal as its exact number text; every other non-JSON value
    back to ``json.dumps`` (same result or error)."""
    if type(value) is Decimal and value.is_finite():
        return orjson.Fragment(format(value, "f"))
    raise TypeError(type(value).__name__)


def safe_url(url: str) -> str:
    """The URL with any password hidden, for messages and logs."""
    try:
        return sa.engine.make_url(normalise_url(url)).render_as_string(hide_password=True)
    except Exception:
        return "<unparseable database url>"


_engines: dict[str, Engine] = {}


def engine_for(settings: Settings, *, upgrade: bool | None = None) -> Engine:
    """The (cached) engine for these settings, upgraded to the latest schema when embedded."""
    url = settings.database_url
    engine = _engines.get(url)
    if engine is None:
        engine = create_db_engine(url, echo=settings.database.echo, database=settings.database)
        auto = upgrade if upgrade is not None else engine.dialect.name == "sqlite"
        if auto:
            from connector.db.migrate import upgrade_to_head

            try:
                check_connection(engine)  # a file that cannot be opened fails here, in one line
                upgrade_to_head(engine)
            except StoreError:
                engine.dispose()
                raise
        _engines[url] = engine
    return engine


def check_connection(engine: Engine) -> None:
    """Raise StoreError (with the password hidden) if the database cannot be reached or opened."""
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except SQLAlchemyError as exc:
        from connector.db.diagnosis import cause

        orig = getattr(exc, "orig", None) or exc
        reason = next((line.strip() for line in str(orig).splitlines() if line.strip()), "")
        url = engine.url.render_as_string(hide_password=False)
        named = cause(exc, url)  # a full disk says so, not "cannot be reached"
        what = f"failed: {named}" if named else "cannot be reached or opened"
        raise StoreError(
            f"database {safe_url(str(engine.url))} {what}: {type(orig).__name__}"
            + (f": {reason[:200]}" if reason else "")
        ) from None


def dispose_engines() -> None:
    """Close every cached engine (tests and process shutdown)."""
    for engine in _engines.values():
        engine.dispose()
    _engines.clear()
