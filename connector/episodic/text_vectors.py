"""The vectors the embedder made for recently recorded texts, so a text is embedded once per process.

ERP cases are often templated: with document numbers, amounts and dates taken out of the embedded
text (:func:`~connector.episodic.summary.embedding_text`), cases of different customers embed the
same words (the labelled ERP set: 134 distinct texts among 360 cases; each call of 64 embeds its
distinct texts once, 262 in all, and this cuts that to 134). Keyed by
:func:`~connector.recall.vector_index.vector_hash` (model and text); what is kept is the embedder's
own output, as the writer would have stored it: the default embedder runs each text alone, so that
is the vector the text gets again, bit for bit (with a configured batch size above one a text's
vector depends on its batch-mates anyway, and a call already reuses one vector per distinct text).

Erasure: each vector is held under the scopes whose cases it served, and ``forget`` drops every
vector a forgotten scope used; a PII case's vector is never kept (retention deletes its entry).
The writer keeps a chunk's vectors only once its rows and vectors are written and before its
erasure re-check, so a ``forget`` racing the write drops them too. Bounded: the least recently used
go first past ``max_entries`` (0 disables).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping

import numpy as np

from connector.embeddings.base import Vectors
from connector.scope import Scope

ScopeKey = tuple[str, str]
MAX_ENTRIES = 4096  # ~1.7 KB each (384 float32 and the key): ~7 MB at most


class TextVectors:
    """Embedder output by vector hash, LRU-bounded, each under the scopes that used it."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max(0, int(max_entries))
        self._vectors: OrderedDict[str, Vectors] = OrderedDict()
        self._scopes: dict[str, set[ScopeKey]] = {}
        self._by_scope: dict[ScopeKey, set[str]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._vectors)

    def lookup(self, hashes: Iterable[str]) -> dict[str, Vectors]:
        """The kept vectors of these hashes (read-only arrays)."""
        found: dict[str, Vectors] = {}
        with self._lock:
            for digest in hashes:
                vector = self._vectors.get(digest)
                if vector is not None:
                    self._vectors.move_to_end(digest)
                    found[digest] = vector
        return found

    def keep(self, vectors: Mapping[str, Vectors], scopes: Mapping[str, Iterable[Scope]]) -> None:
        """Keep each vector under the scopes of the cases it served (``scopes`` by hash)."""
        if self.max_entries == 0:
            return
        with self._lock:
            for digest, vector in vectors.items():
                users = {(s.tenant, s.customer_id) for s in scopes.get(digest, ())}
                if not users:
                    continue
                if digest not in self._vectors:
                    own = np.array(vector, dtype=np.float32, copy=True)
                    own.setflags(write=False)  # shared by every case that reuses it
                    self._vectors[digest] = own
                self._vectors.move_to_end(digest)
                self._scopes.setdefault(digest, set()).update(users)
                for user in users:
                    self._by_scope.setdefault(user, set()).add(digest)
            while len(self._vectors) > self.max_entries:
                self._remove(next(iter(self._vectors)))

    def drop_scope(self, scope: Scope) -> None:
        """Drop every vector a case of ``scope`` used (erasure)."""
        with self._lock:
            for digest in list(self._by_scope.get((scope.tenant, scope.customer_id), ())):
                self._remove(digest)

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()
            self._scopes.clear()
            self._by_scope.clear()

    def _remove(self, digest: str) -> None:
        self._vectors.pop(digest, None)
        for user in self._scopes.pop(digest, set()):
            held = self._by_scope.get(user)
            if held is not None:
                held.discard(digest)
                if not held:
                    del self._by_scope[user]
