"""Worker pools started on first use and stopped by the object that owns them.

Every pool has an owner (the context builder, the episodic store, the embedder) whose ``close()``
shuts it down, so a closed ``Memory`` leaves no thread behind; nothing here is process-wide. Each
job gets its own pool on purpose: context recall runs on one and, inside it, the episodic recall
embeds its query on another, so a full pool can never wait on itself.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")


class ContextThreadPoolExecutor(ThreadPoolExecutor):
    """A ``ThreadPoolExecutor`` whose jobs run in a copy of the submitter's context variables.

    OpenTelemetry keeps the current span in a context variable, which a plain pool thread does not
    see: a recall run on a pool thread inside ``build_context`` would start a root span of its own
    instead of a child of the build. Each job here runs in the context it was submitted from.
    """

    def submit(self, fn: Callable[_P, _R], /, *args: _P.args, **kwargs: _P.kwargs) -> Future[_R]:
        context = contextvars.copy_context()
        return super().submit(context.run, fn, *args, **kwargs)  # type: ignore[arg-type]


class LazyPool:
    """A named :class:`ContextThreadPoolExecutor` that is only started when first asked for (thread-safe).

    :meth:`shutdown` stops its threads; asked for again after that, it starts a fresh pool.
    """

    def __init__(self, name: str, max_workers: int = 4) -> None:
        self._name = name
        self._max_workers = max_workers
        self._lock = threading.Lock()
        self._pool: ContextThreadPoolExecutor | None = None

    def get(self) -> ContextThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ContextThreadPoolExecutor(
                    max_workers=self._max_workers, thread_name_prefix=self._name
                )
            return self._pool

    def shutdown(self, *, wait: bool = True, cancel_waiting: bool = False) -> None:
        """Stop the pool's threads: after the running work when ``wait``, after the work waiting
        too unless ``cancel_waiting``."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=wait, cancel_futures=cancel_waiting)
