"""One run per (tenant, stream), across processes and machines.

PostgreSQL: a session-level advisory lock on a stable 64-bit hash of tenant and stream, held on a
dedicated connection for the whole run (the server releases it if the process dies). SQLite: a
file lock next to the database file (the kernel releases it if the process dies). When the lock is
taken, ``on_locked="exit"`` raises :class:`AlreadyRunning` at once; ``"wait"`` waits up to
``wait_s`` seconds and then raises it.

A session lock on PostgreSQL can be lost while the run goes on: the server ends the lock's
connection (``pg_terminate_backend``, a failover, an idle timeout) and a second run takes the lock.
So the lock yields a :class:`Fence`, checked inside every transaction that writes the stream's data:
it takes a transaction-level advisory lock on the stream's write key (page transactions of the
stream are serialised, so a check cannot pass and then overlap the next holder's page) and verifies
that our lock connection's backend still holds the run lock, else raises :class:`LockLost` and the
page rolls back. A kernel file lock (SQLite) is not lost while the process lives: its fence is a no-op.
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

from connector.errors import AlreadyRunning, LockLost, StoreError

OnLocked = Literal["wait", "exit"]


def advisory_key(tenant: str, stream: str) -> int:
    """A signed 64-bit key that is the same in every process and Python version (no ``hash()``)."""
    digest = hashlib.blake2b(f"{tenant}\x00{stream}".encode(), digest_size=8, person=b"conn-sync").digest()
    return int.from_bytes(digest, "big", signed=True)


def _write_key(tenant: str, stream: str) -> int:
    digest = hashlib.blake2b(f"{tenant}\x00{stream}".encode(), digest_size=8, person=b"conn-fence").digest()
    return int.from_bytes(digest, "big", signed=True)


class Fence:
    """Proof, checked in the writing transaction, that this run still holds its stream lock."""

    def __init__(self, tenant: str, stream: str) -> None:
        self.tenant = tenant
        self.stream = stream

    def check(self, conn: sa.Connection) -> None:
        """Raise :class:`LockLost` when the lock is gone; call in each transaction that writes data."""


class _PgFence(Fence):
    # pg_locks shows a bigint advisory key as classid (high 32 bits) and objid (low), objsubid 1.
    _HELD = sa.text(
        "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = :pid"
        " AND classid = :hi AND objid = :lo AND objsubid = 1)"
        " FROM (SELECT pg_advisory_xact_lock(:write_key)) AS serialised"
    )

    def __init__(self, tenant: str, stream: str, key: int, pid: int) -> None:
        super().__init__(tenant, stream)
        unsigned = key & 0xFFFFFFFFFFFFFFFF
        self._params = {
            "pid": pid,
            "hi": unsigned >> 32,
            "lo": unsigned & 0xFFFFFFFF,
            "write_key": _write_key(tenant, stream),
        }

    def check(self, conn: sa.Connection) -> None:
        if not conn.execute(self._HELD, self._params).scalar():
            raise LockLost(self.tenant, self.stream)


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
) -> Iterator[Fence]:
    """Hold the (tenant, stream) lock for the duration of the block; yields its :class:`Fence`."""
    if engine.dialect.name == "postgresql":
        with _pg_lock(engine, tenant, stream, on_locked=on_locked, wait_s=wait_s) as fence:
            yield fence
    else:
        with _file_lock(lock_file_path(engine, tenant, stream), tenant, stream, on_locked, wait_s):
            yield Fence(tenant, stream)


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
) -> Iterator[Fence]:
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
        pid = int(conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one())
        try:
            yield _PgFence(tenant, stream, key, pid)
        finally:
            with contextlib.suppress(DBAPIError):  # a lost connection took the lock with it
                conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": key})
    finally:
        conn.close()
