"""Fetch the next page while the current one is written.

A page costs an HTTP round trip plus mapping on the ERP side and an upsert plus commit on ours;
doing them one after the other leaves both sides idle half the time. A single background thread
drives the adapter's page iterator (so the adapter is still used from one thread) and hands pages
over a bounded queue: at most ``depth`` pages wait, and none is committed early. Errors are
re-raised in the consumer at the position they happened, after the pages before them.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator
from types import TracebackType
from typing import Generic, TypeVar

T = TypeVar("T")

_POLL_S = 0.05


class _End:
    pass


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


class Prefetcher(Generic[T]):
    """Iterate ``items`` from a background thread, up to ``depth`` items ahead; a context manager."""

    def __init__(self, items: Iterator[T], *, name: str = "sync-prefetch", depth: int = 1) -> None:
        self._items = items
        self._queue: queue.Queue[T | _End | _Failure] = queue.Queue(maxsize=max(1, depth))
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._produce, name=name, daemon=True)
        self._done = False

    def __enter__(self) -> Prefetcher[T]:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        if self._done:
            raise StopIteration
        item = self._queue.get()
        if isinstance(item, _End):
            self._done = True
            raise StopIteration
        if isinstance(item, _Failure):
            self._done = True
            raise item.error
        return item

    def close(self) -> None:
        """Stop reading ahead and wait for the producer (it finishes a request in flight)."""
        self._cancel.set()
        while self._thread.is_alive():
            with contextlib.suppress(queue.Empty):
                self._queue.get(timeout=_POLL_S)
        self._thread.join()

    def _put(self, item: T | _End | _Failure) -> bool:
        while not self._cancel.is_set():
            try:
                self._queue.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self) -> None:
        try:
            for item in self._items:
                if not self._put(item):
                    return
            self._put(_End())
        except BaseException as exc:  # handed to the consumer, raised there
            self._put(_Failure(exc))
        finally:
            close = getattr(self._items, "close", None)
            if close is not None:
                close()
