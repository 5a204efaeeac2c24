"""One writer at a time to an embedded vector store, across threads and processes.

Embedded Chroma keeps each collection's index in the memory of the process that opened it and
writes its files when it likes; two processes writing (the scheduled sync ingesting cases, the
agent recording turns, ``forget``) race on those files, and a process whose copy is older than the
files fails to read ("Nothing found on disk") or to open the store at all. So, per directory:

- every write (and everything that rewrites Chroma's files: the zeroing, the log purge, VACUUM)
  holds an exclusive ``flock`` on ``connector.lock`` in the directory; reads hold it shared;
- a write leaves a new token in the lock file; a process that finds a token it did not write
  knows another process changed the store and opens its client anew before the next call
  (:class:`~connector.vectors.store.ChromaStore`), so it reads what the other wrote.

Within a process the lock is reentrant per thread (a write that zeroes the files takes it again).
Waiting for it counts against the caller's deadline; past it, :class:`StoreBusy`.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from connector.errors import StoreBusy, StoreError

LOCK_NAME = "connector.lock"
LOCK_WAIT_S = 60.0  # operator work outside a deadline (forget's purge, a rebuild) waits this long
_POLL_S = 0.005
_TOKEN_BYTES = 32


class DirectoryLock:
    """The lock of one embedded store directory (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / LOCK_NAME
        self._held = threading.local()  # this thread's exclusive hold: fd, whether it changes the store
        self.last_stamp = ""  # the token this process's last write left

    @contextmanager
    def exclusive(self, timeout: float, *, changes: bool = True) -> Iterator[str]:
        """Hold the lock for writing (reentrant in this thread); yields the token the last write
        left. ``changes``: the hold changes what the store holds, so it leaves a new token (the
        outermost hold does); loading a collection or zeroing unused bytes changes nothing."""
        held = getattr(self._held, "fd", None)
        if held is not None:
            self._held.changes = self._held.changes or changes
            yield self._token(held)
            return
        fd = self._acquire(fcntl.LOCK_EX, timeout)
        self._held.fd, self._held.changes = fd, changes
        try:
            yield self._token(fd)
        finally:
            self._held.fd = None
            try:
                if self._held.changes:
                    self._stamp(fd)
            finally:
                os.close(fd)  # closing releases the flock

    def peek(self) -> str:
        """The token without holding the lock: a hint that another process wrote (checked again
        under the lock)."""
        try:
            with self.path.open("rb") as file:
                return file.read(_TOKEN_BYTES).decode("ascii", "replace").strip()
        except OSError:
            return ""

    @contextmanager
    def shared(self, timeout: float) -> Iterator[str]:
        """Hold the lock for reading; yields the token the last write left."""
        if getattr(self._held, "fd", None) is not None:  # inside this thread's own write
            yield self._token(self._held.fd)
            return
        fd = self._acquire(fcntl.LOCK_SH, timeout)
        try:
            yield self._token(fd)
        finally:
            os.close(fd)

    def _acquire(self, mode: int, timeout: float) -> int:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StoreError(f"cannot open the vector store's lock {self.path}: {exc.strerror}") from None
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise StoreBusy(
                        f"the embedded vector store at {self.directory} stayed locked by another process "
                        f"past the call's deadline ({timeout:g} s of waiting); for several busy processes "
                        "run a Chroma server (set chroma.host)"
                    ) from None
                time.sleep(_POLL_S)

    def _token(self, fd: int) -> str:
        return os.pread(fd, _TOKEN_BYTES, 0).decode("ascii", "replace").strip()

    def _stamp(self, fd: int) -> None:
        token = uuid.uuid4().hex
        os.pwrite(fd, token.encode("ascii"), 0)
        self.last_stamp = token


_LOCKS: dict[Path, DirectoryLock] = {}
_GUARD = threading.Lock()


def lock_of(directory: Path) -> DirectoryLock:
    """The process's one lock object for ``directory``."""
    key = directory.resolve()
    with _GUARD:
        lock = _LOCKS.get(key)
        if lock is None:
            lock = _LOCKS[key] = DirectoryLock(key)
        return lock
