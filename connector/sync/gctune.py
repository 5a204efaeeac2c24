"""Fewer full garbage collections while a sync pages through a stream.

Every page brings thousands of decoded JSON objects that live a few pages (read ahead, mapped,
written), long enough to reach the oldest generation. CPython then runs full collections every
few pages, each scanning the whole heap; a profile of a full sync spent about a fifth of its
time there. The objects die by reference counting, not by the collector, so while a run pages
the oldest generation is collected less often (young generations are unchanged). The previous
thresholds come back when the last run in the process ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

FULL_COLLECTION_THRESHOLD = 1000  # gen-1 collections between full ones (CPython's default: 10)

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, int, int] | None = None


@contextmanager
def fewer_full_collections() -> Iterator[None]:
    """Raise the oldest generation's threshold for the duration (nesting and threads allowed)."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            young, middle, old = _saved
            gc.set_threshold(young, middle, max(old, FULL_COLLECTION_THRESHOLD))
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                _saved = None
