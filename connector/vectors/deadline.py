"""Deadlines for vector-store calls: a hung store cannot hang the caller.

Neither client bounds a call by itself (the HTTP client's timeout is unset, an embedded call waits
for locks), so every call runs on a worker thread and the caller waits at most its deadline:
``chroma.read_timeout_s`` for a read on the agent's path, ``chroma.timeout_s`` for writes, opening
the store and loading a collection. A call past its deadline raises :class:`StoreTimeout`; it goes
on in the background (a thread cannot be killed) and, while it has not returned, every later call
to the same store fails at once: a frozen store costs one deadline, not one per call.

Workers are daemon threads (a hung call never keeps the process from exiting), started on demand
and reused; each call runs in a copy of the caller's context (tracing spans carry over).
"""

from __future__ import annotations

import contextvars
import functools
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from queue import SimpleQueue
from typing import Literal, ParamSpec, TypeVar

from connector.errors import StoreTimeout

T = TypeVar("T")
P = ParamSpec("P")
Kind = Literal["read", "write"]
_Job = tuple[Callable[[], object], "Future[object]"]


class _Workers:
    """Daemon threads that run jobs; a thread stuck in a hung call is replaced by a new one."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: SimpleQueue[_Job] = SimpleQueue()
        self._idle = 0
        self._guard = threading.Lock()

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        with self._guard:
            start = self._idle == 0
            if not start:
                self._idle -= 1  # this job is that idle worker's
        self._jobs.put((fn, future))  # type: ignore[arg-type]
        if start:
            threading.Thread(target=self._work, name=self._name, daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            fn, future = self._jobs.get()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except BaseException as exc:
                    future.set_exception(exc)
            del fn, future
            with self._guard:
                self._idle += 1


_WORKERS = _Workers("vector-store-call")
_PATIENT: contextvars.ContextVar[bool] = contextvars.ContextVar("vector_store_patient", default=False)


@contextmanager
def patient() -> Iterator[None]:
    """Reads inside get the write deadline: a write's own reads, and operator work (reconcile,
    rebuild) that may wait for another process's write; the agent's recalls keep the short one."""
    token = _PATIENT.set(True)
    try:
        yield
    finally:
        _PATIENT.reset(token)


def with_patience(fn: Callable[P, T]) -> Callable[P, T]:
    """``fn`` runs :func:`patient`."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        with patient():
            return fn(*args, **kwargs)

    return wrapper


class Deadlines:
    """The deadlines of one store (``where`` names it in messages) and its hung-call state."""

    def __init__(self, where: str, *, read_s: float, write_s: float) -> None:
        self.where = where
        self.read_s = read_s
        self.write_s = write_s
        self._hung: dict[int, float] = {}  # calls past their deadline still running: id -> started at
        self._guard = threading.Lock()

    def seconds(self, kind: Kind) -> float:
        return self.read_s if kind == "read" and not _PATIENT.get() else self.write_s

    def call(self, kind: Kind, what: str, fn: Callable[[], T]) -> T:
        """``fn()`` within the deadline of ``kind``; StoreTimeout past it, or at once while an
        earlier call to this store is hung."""
        self.check()
        seconds = self.seconds(kind)
        context = contextvars.copy_context()
        future = _WORKERS.submit(lambda: context.run(fn))
        try:
            return future.result(timeout=seconds)
        except FutureTimeout:
            self._hang(future)
            setting = "chroma.read_timeout_s" if seconds == self.read_s else "chroma.timeout_s"
            raise StoreTimeout(
                f"{self.where} did not answer {what} within {seconds:g} s ({setting}); "
                "it looks hung: later calls fail at once until it answers"
            ) from None

    def check(self) -> None:
        """Raise StoreTimeout if an earlier call is still hung (fail fast)."""
        if not self._hung:
            return
        with self._guard:
            started = min(self._hung.values(), default=None)
        if started is not None:
            raise StoreTimeout(
                f"{self.where} is not answering (a call past its deadline for "
                f"{time.monotonic() - started:.0f} s has not returned); failing at once until it answers"
            )

    @property
    def hung(self) -> bool:
        return bool(self._hung)

    def _hang(self, future: Future[T]) -> None:
        key = id(future)
        with self._guard:
            self._hung[key] = time.monotonic()

        def answered(_: Future[T]) -> None:
            with self._guard:
                self._hung.pop(key, None)

        future.add_done_callback(answered)
