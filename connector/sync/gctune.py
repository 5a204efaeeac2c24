"""Garbage collection while a sync pages through a stream.

Every page brings hundreds of thousands of decoded JSON objects that live a few pages (read
ahead, mapped, written): long enough for CPython's automatic collector to scan each of them in
every generation, and to run full collections over the whole heap every few pages. A profile of
a full sync spent about a fifth of the process's time there, for nothing: the objects die by
reference counting, not by the collector.

So while pages flow the automatic collector is off, and the runner collects the young
generations itself every :data:`COLLECT_EVERY_PAGES` pages, which bounds any cyclic garbage
(a few kilobytes a page) at the cost of one scan of the pages in flight. The collector is
switched back on when the last run in the process ends (it stays off if it was off before),
on every way out: a return, an exception, a KeyboardInterrupt from SIGINT.

The collector is process-wide, so pausing it is the process's decision: a runner pauses it only
when asked (``SyncRunner(pause_gc=True)``); the ``connector sync`` and ``connector schedule``
commands ask, a library caller's runner leaves the collector alone.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

COLLECT_EVERY_PAGES = 20

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def automatic_gc_paused() -> Iterator[None]:
    """Automatic collection off for the duration (nesting and overlapping threads allowed)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


def page_committed(pages: int) -> None:
    """Collect the young generations every :data:`COLLECT_EVERY_PAGES` pages of a run."""
    if pages % COLLECT_EVERY_PAGES == 0:
        gc.collect(1)
