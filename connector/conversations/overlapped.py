"""Indexing an import's groups of sessions with the embedder kept busy between them.

An import writes a group of sessions to working memory, then indexes it. Done one after the other,
the embedder waited for every SQL write, Chroma upsert and tombstone check of the import (a fifth of
a chat-length import's time). Here each group's embedding runs on a thread of its own while the
caller's thread writes the next group's turns and the previous group's rows, postings and vectors
(onnxruntime releases the GIL, so both proceed). Each group keeps the indexer's order of steps
(:mod:`connector.conversations.indexer`: embedded, then rows committed, then vectors written, then
the tombstone checked again); only different groups overlap, and a session is never in two passes
at once. The vectors written are not read back into the vector cache (an import's thousands would
evict what recalls asked for). :meth:`OverlappedIndexing.drain` writes every group, so recall sees
every imported turn when it returns; :meth:`OverlappedIndexing.close` without it leaves the rest to
the catch-up (``index_pending``), as a failed import did before.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING

from connector.conversations import indexer
from connector.embeddings.base import Vectors
from connector.threads import ContextThreadPoolExecutor

if TYPE_CHECKING:
    from connector.conversations.memory import ConversationMemory


class OverlappedIndexing:
    """Index groups of sessions, one group embedding while the one before it is written."""

    def __init__(self, conv: ConversationMemory) -> None:
        self._conv = conv
        self._pool = ContextThreadPoolExecutor(max_workers=1, thread_name_prefix="import-embed")
        self._inflight: tuple[indexer.Batch, Future[Vectors | None]] | None = None
        self._next: list[str] = []  # sessions to read in the next pass

    def add(self, session_ids: Sequence[str]) -> int:
        """Start indexing these sessions' new turns; returns the turns indexed meanwhile (the group
        before, written while this one embeds)."""
        busy = set(self._inflight[0].sessions) if self._inflight is not None else set()
        todo = list(dict.fromkeys([*self._next, *session_ids]))
        self._next = [sid for sid in todo if sid in busy]  # their next pass reads after this write
        batch = indexer.pending_batch(self._conv, [sid for sid in todo if sid not in busy])
        started = None if batch is None else (batch, self._pool.submit(indexer.embed, self._conv, batch))
        indexed = 0
        if self._inflight is not None:
            written, vectors = self._inflight
            self._inflight = None
            indexed = indexer.write(self._conv, written, vectors.result(), cache=False)
            self._next += written.unfinished  # sessions with more than one pass of new turns
        self._inflight = started
        return indexed

    def drain(self) -> int:
        """Index everything added (and every further pass it needs); returns the turns indexed."""
        indexed = 0
        while self._inflight is not None or self._next:
            indexed += self.add([])
        return indexed

    def close(self) -> None:
        """Stop the embedding thread; a group not written yet is left for ``index_pending``."""
        self._inflight = None
        self._next = []
        self._pool.shutdown(wait=True, cancel_futures=True)
