"""Worker pools started on first use and stopped by the object that owns them.

Every pool has an owner (the context builder, the episodic store, the embedder) whose ``close()``
shuts it down, so a closed ``Memory`` leaves no thread behind; nothing here is process-wide. Each
job gets its own pool on purpose: context recall runs on one and, inside it, the episodic recall
embeds its query on another, so a full pool can never wait on itself.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor


class LazyPool:
    """A named ``ThreadPoolExecutor`` that is only started when first asked for (thread-safe).

    :meth:`shutdown` stops its threads; asked for again after that, it starts a fresh pool.
    """

    def __init__(self, name: str, max_workers: int = 4) -> None:
        self._name = name
        self._max_workers = max_workers
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def get(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self._max_workers, thread_name_prefix=self._name)
            return self._pool

    def shutdown(self, *, wait: bool = True, cancel_waiting: bool = False) -> None:
        """Stop the pool's threads: after the running work when ``wait``, after the work waiting
        too unless ``cancel_waiting``."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=wait, cancel_futures=cancel_waiting)
