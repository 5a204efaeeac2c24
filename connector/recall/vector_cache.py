"""An in-process cache of entry vectors in front of the vector index, derived from it only.

Chroma stays the one store of record for vectors; this cache only saves re-reading (and decoding
the metadata of) vectors a recall already fetched. It cannot serve what Chroma would not:

- it is filled only with what Chroma returned to a guarded read (scope and ``vector_hash`` checked)
  or accepted in an upsert, each vector keyed by entry id under the stamp it was stored with
  (tenant, customer, ``vector_hash``);
- a hit needs the scope of the recall and the hash the relational row wants *now*: a row another
  process rewrote wants another hash, so the cached vector is not used and Chroma is read again.
  A row without a hash (from before hashes) always reads Chroma;
- writes through the index drop what they touch (upsert replaces, metadata updates and deletes
  drop, recreate empties it); ``forget`` drops the customer's scope; an unfiltered recall drops
  cached ids of its scope that are no longer recallable (archived or erased by another process);
- it is bounded: least recently used vectors go first once ``max_bytes`` is reached (0 disables).

Measured in ``scripts/bench_episodic`` (cold and warm recall, see the README).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from connector.embeddings.base import Vectors
from connector.recall.vector_index import Stamp, StoredVector, VectorIndex, guarded
from connector.scope import Scope

ScopeKey = tuple[str, str]
_OVERHEAD = 200  # bytes per entry besides the vector: key, stamp, dictionary slots (an estimate)


@dataclass(frozen=True, slots=True)
class _Cached:
    scope: ScopeKey
    vector_hash: str
    vector: Vectors
    size: int


@dataclass(frozen=True, slots=True)
class CacheStats:
    entries: int
    bytes: int
    max_bytes: int
    hits: int
    misses: int


class VectorCache:
    """Entry vectors by id, LRU-bounded by bytes, each under the stamp Chroma stored it with."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max(0, int(max_bytes))
        self._entries: OrderedDict[str, _Cached] = OrderedDict()
        self._by_scope: dict[ScopeKey, set[str]] = {}
        self._bytes = 0
        self._hits = 0
        self._misses = 0
        self._lock = threading.Lock()

    def lookup(self, scope: Scope, wanted: Mapping[str, str | None]) -> dict[str, Vectors]:
        """The cached vectors of ``wanted`` ids whose scope is ``scope`` and hash the one wanted."""
        key = (scope.tenant, scope.customer_id)
        found: dict[str, Vectors] = {}
        with self._lock:
            for entry_id, want in wanted.items():
                cached = self._entries.get(entry_id)
                if cached is None or want is None or (cached.vector_hash, cached.scope) != (want, key):
                    continue
                self._entries.move_to_end(entry_id)
                found[entry_id] = cached.vector
            self._hits += len(found)
            self._misses += len(wanted) - len(found)
        return found

    def keep(self, entry_id: str, stamp: Stamp, vector: Vectors) -> None:
        """Cache a vector Chroma returned or accepted under ``stamp`` (unstamped ones are not kept)."""
        if self.max_bytes == 0 or not stamp.vector_hash or stamp.tenant is None or stamp.customer_id is None:
            return
        own = np.array(vector, dtype=np.float32, copy=True).reshape(-1)
        own.setflags(write=False)  # shared with every recall that hits it
        cached = _Cached((stamp.tenant, stamp.customer_id), stamp.vector_hash, own, own.nbytes + _OVERHEAD)
        if cached.size > self.max_bytes:
            return
        with self._lock:
            self._remove(entry_id)
            self._entries[entry_id] = cached
            self._by_scope.setdefault(cached.scope, set()).add(entry_id)
            self._bytes += cached.size
            while self._bytes > self.max_bytes:
                self._remove(next(iter(self._entries)))

    def drop(self, ids: Sequence[str]) -> None:
        with self._lock:
            for entry_id in ids:
                self._remove(entry_id)

    def drop_scope(self, scope: Scope, *, keep: set[str] | None = None) -> None:
        """Drop the scope's cached vectors (all, or those not in ``keep``)."""
        with self._lock:
            held = self._by_scope.get((scope.tenant, scope.customer_id), set())
            for entry_id in [i for i in held if keep is None or i not in keep]:
                self._remove(entry_id)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._by_scope.clear()
            self._bytes = 0

    def ids_of(self, scope: Scope) -> set[str]:
        """The ids cached for ``scope`` (what an erasure check looks at)."""
        with self._lock:
            return set(self._by_scope.get((scope.tenant, scope.customer_id), ()))

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(len(self._entries), self._bytes, self.max_bytes, self._hits, self._misses)

    def _remove(self, entry_id: str) -> None:
        cached = self._entries.pop(entry_id, None)
        if cached is None:
            return
        self._bytes -= cached.size
        held = self._by_scope.get(cached.scope)
        if held is not None:
            held.discard(entry_id)
            if not held:
                del self._by_scope[cached.scope]


class CachedIndex:
    """A :class:`VectorIndex` whose guarded reads go through a :class:`VectorCache`.

    Every write goes to the index first and changes the cache only after the index accepted it
    (what it touches is dropped before too, so a failed write leaves nothing stale cached).
    """

    def __init__(self, inner: VectorIndex, cache: VectorCache) -> None:
        self.inner = inner
        self.cache = cache
        self.model_id = inner.model_id
        self.dimension = inner.dimension

    def guarded(
        self, scope: Scope, wanted: Mapping[str, str | None], *, complete: bool = False
    ) -> dict[str, Vectors]:
        """The vectors of ``wanted`` (id -> the hash its row wants) that belong to ``scope`` and are
        the ones their rows want: from the cache, else from the index (checked, then cached).

        ``complete``: ``wanted`` is every recallable entry of the scope, so cached ids of the scope
        outside it (archived or erased since, maybe by another process) are dropped.
        """
        if complete:
            self.cache.drop_scope(scope, keep=set(wanted))
        vectors = self.cache.lookup(scope, wanted)
        missing = [entry_id for entry_id in wanted if entry_id not in vectors]
        if not missing:
            return vectors
        found = self.inner.stored(missing)
        fetched = guarded(found, scope, wanted)
        for entry_id, vector in fetched.items():
            self.cache.keep(entry_id, found[entry_id].stamp, vector)
        vectors.update(fetched)
        return vectors

    def drop_scope(self, scope: Scope) -> None:
        """Nothing of the scope stays cached (erasure)."""
        self.cache.drop_scope(scope)

    # The VectorIndex protocol ----------------------------------------------------------------------
    def stored(self, ids: Sequence[str]) -> dict[str, StoredVector]:
        return self.inner.stored(ids)

    def vectors(self, ids: Sequence[str]) -> dict[str, Vectors]:
        return self.inner.vectors(ids)

    def upsert(self, ids: Sequence[str], vectors: Vectors, metadatas: Sequence[Mapping[str, Any]]) -> None:
        """Cache what Chroma now holds, read back: a cosine collection stores each vector normalised
        again (hnswlib's own float loop), so the written array can differ in its last bits from the
        stored one, and a cache of the written array would rank cold and warm recalls differently."""
        self.cache.drop(ids)
        self.inner.upsert(ids, vectors, metadatas)
        for entry_id, found in self.inner.stored(ids).items():
            self.cache.keep(entry_id, found.stamp, found.vector)

    def upsert_uncached(
        self, ids: Sequence[str], vectors: Vectors, metadatas: Sequence[Mapping[str, Any]]
    ) -> None:
        """Write without reading the vectors back into the cache (an import: thousands of vectors no
        recall asked for yet would evict the ones it did; a first recall reads them as a new process
        does)."""
        self.cache.drop(ids)
        self.inner.upsert(ids, vectors, metadatas)
        self.cache.drop(ids)

    def update_metadata(self, ids: Sequence[str], metadatas: Sequence[Mapping[str, Any]]) -> None:
        self.cache.drop(ids)
        self.inner.update_metadata(ids, metadatas)
        self.cache.drop(ids)

    def delete(self, ids: Sequence[str]) -> None:
        self.cache.drop(ids)
        self.inner.delete(ids)
        self.cache.drop(ids)

    def ids_in_scope(self, tenant: str, customer_id: str) -> list[str]:
        return self.inner.ids_in_scope(tenant, customer_id)

    def count(self) -> int:
        return self.inner.count()

    def stamps(self) -> Iterator[tuple[str, Stamp]]:
        return self.inner.stamps()

    def stored_model(self) -> tuple[str | None, int | None]:
        return self.inner.stored_model()

    def recreate(self) -> None:
        self.cache.clear()
        self.inner.recreate()
        self.cache.clear()
