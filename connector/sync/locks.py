"""One run per (tenant, stream), across processes and machines.

PostgreSQL: a session-level advisory lock on a stable 64-bit hash of tenant and stream, held on a
dedicated connection for the whole run (the server releases it if the process dies). SQLite: a
file lock next to the database file (the kernel releases it if the process dies). When the lock is
taken, ``on_locked="exit"`` raises :class:`AlreadyRunning` at once; ``"wait"`` waits up to
``wait_s`` seconds and then raises it.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import filelock
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from connector.errors import AlreadyRunning, StoreError

OnLocked = Literal["wait", "exit"]


def advisory_key(tenant: str, stream: str) -> int:
    """A signed 64-bit key that is the same in every process and Python version (no ``hash()``)."""
    digest = hashlib.blake2b(f"{tenant}\x00{stream}".encode(), digest_size=8, person=b"conn-sync").digest()
    return int.from_bytes(digest, "big", signed=True)


def lock_file_path(engine: Engine, tenant: str, stream: str) -> Path:
    """``<db file>.sync-<tenant>-<stream>.lock``; a temp dir for in-memory databases."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{tenant}-{stream}")
    database = engine.url.database
    if database and database != ":memory:":
        return Path(database).with_name(f"{Path(database).name}.sync-{safe}.lock")
    return Path(tempfile.gettempdir()) / f"connector-memdb.sync-{safe}.lock"


@contextmanager
def stream_lock(
    engine: Engine, tenant: str, stream: str, *, on_locked: OnLocked = "exit", wait_s: float = 0.0
) -> Iterator[None]:
    """Hold the (tenant, stream) lock for the duration of the block."""
    if engine.dialect.name == "postgresql":
        with _pg_lock(engine, tenant, stream, on_locked=on_locked, wait_s=wait_s):
            yield
    else:
        with _file_lock(lock_file_path(engine, tenant, stream), tenant, stream, on_locked, wait_s):
            yield


@contextmanager
def _file_lock(path: Path, tenant: str, stream: str, on_locked: OnLocked, wait_s: float) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = filelock.FileLock(str(path))
    try:
        lock.acquire(timeout=wait_s if on_locked == "wait" else 0)
    except filelock.Timeout:
        raise AlreadyRunning(tenant, stream) from None
    try:
        yield
    finally:
        lock.release()


@contextmanager
def _pg_lock(
    engine: Engine, tenant: str, stream: str, *, on_locked: OnLocked, wait_s: float
) -> Iterator[None]:
    key = advisory_key(tenant, stream)
    try:
        conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    except DBAPIError as exc:
        raise StoreError(
            f"cannot take the sync lock for {tenant}/{stream}: {type(exc.orig).__name__}"
        ) from None
    try:
        if on_locked == "wait" and wait_s > 0:
            conn.execute(sa.text(f"SET lock_timeout = '{int(wait_s * 1000)}ms'"))
            try:
                conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": key})
                got = True
            except DBAPIError as exc:
                if getattr(exc.orig, "sqlstate", None) != "55P03":  # lock_not_available
                    raise
                got = False
            conn.execute(sa.text("RESET lock_timeout"))
        else:
            got = bool(conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar())
        if not got:
            raise AlreadyRunning(tenant, stream)
        try:
            yield
        finally:
            with contextlib.suppress(DBAPIError):  # a lost connection took the lock with it
                conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": key})
    finally:
        conn.close()
