"""The embedder and the cached vector index of one memory part, each made on first use.

Case memory and conversation memory both take factories for these two: loading a model or opening
Chroma is slow or may fail, and a part that is never read or written needs neither. The holder makes
each once, under a lock, and serves the index through the part's own vector cache
(:class:`~connector.recall.vector_cache.CachedIndex`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from connector.embeddings.base import Embedder
from connector.recall.vector_cache import CachedIndex, VectorCache
from connector.recall.vector_index import Eraser, VectorIndex


class LazyVectors:
    """Makes the embedder, then the index (which needs it), once each; thread-safe."""

    def __init__(
        self,
        embedder: Callable[[], Embedder],
        index: Callable[[Embedder], VectorIndex],
        cache: VectorCache | None = None,
        eraser: Callable[[], Eraser] | None = None,
    ) -> None:
        """``cache``: the in-process cache in front of the index (none without it); ``eraser``: opens
        the vector store for deleting only, without the embedder (none: erase through the index)."""
        self.cache = cache or VectorCache(0)
        self._make_eraser = eraser
        self._make_embedder = embedder
        self._make_index = index
        self._embedder: Embedder | None = None
        self._index: CachedIndex | None = None
        self._lock = threading.Lock()

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:
                    self._embedder = self._make_embedder()
        return self._embedder

    @property
    def index(self) -> CachedIndex:
        """The store of record for vectors, read through the cache."""
        if self._index is None:
            embedder = self.embedder
            with self._lock:
                if self._index is None:
                    self._index = CachedIndex(self._make_index(embedder), self.cache)
        return self._index

    @property
    def opened(self) -> CachedIndex | None:
        """The index if it was made already (None: nothing was read through it yet)."""
        return self._index

    def eraser(self) -> Eraser:
        """What ``forget`` deletes through: the index if it is open already, else the eraser (no
        embedder is made), else the index."""
        if self._index is not None or self._make_eraser is None:
            return self.index
        return self._make_eraser()

    def reopen(self) -> None:
        """Have the factory make the index again on next use (after the caller opened a new client)."""
        self._index = None
