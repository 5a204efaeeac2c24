"""Process-wide worker pools, created on first use.

Each job gets its own pool on purpose: context recall runs on one and, inside it, the episodic
recall embeds its query on another, so a full pool can never wait on itself.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor


class LazyPool:
    """A named ``ThreadPoolExecutor`` that is only started when first asked for (thread-safe)."""

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
