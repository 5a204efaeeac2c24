"""The collections of the vector store: case summaries and conversation turns.

Vectors are always passed in explicitly, so Chroma never loads a model of its own. A collection
records the embedding model and dimension in its metadata; opening it with another embedder raises
:class:`EmbeddingModelMismatch` (``connector episodic reindex`` rebuilds it).

Recall reads vectors by id (``get(ids=..., include=["embeddings", "metadatas"])``): the relational
store knows which entries belong to the scope, and fetching those by id costs what the customer's
history costs, while a metadata-filtered query scans the whole collection. The scope in each
vector's metadata is checked on the client side (``get`` with ``ids`` and a ``where`` filter took
80-150 ms at 100k vectors, ~1 ms by id). A vector's metadata is its stamp alone (tenant, customer,
vector hash); writes to the case collection delete the keys older versions stored
(:data:`CASE_RETIRED_KEYS`).

Every call goes through the store (:class:`~connector.vectors.store.ChromaStore`): deadlines,
one-line errors, the cross-process write order and the zeroing of the index files' slack.
:class:`ChromaEraser` opens a collection for ``forget`` without an embedder.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from connector.embeddings.base import Embedder, Vectors
from connector.errors import EmbeddingModelMismatch, StoreError
from connector.settings import ChromaSettings
from connector.vectors.deadline import Kind
from connector.vectors.files import purge_chroma_log
from connector.vectors.stamps import Stamp, StoredVector
from connector.vectors.store import ChromaStore

log = logging.getLogger(__name__)

MODEL_KEY = "embedding_model"
DIM_KEY = "embedding_dim"
_BATCH = 2000
# Recall never searches the HNSW graph, so the graph Chroma always builds is kept cheap: adds ran
# 3.8x faster than with the defaults (ef 100, M 16).
HNSW = {"hnsw:space": "cosine", "hnsw:construction_ef": 16, "hnsw:M": 8}
# Metadata keys the case collection held before it kept the stamp alone (nothing reads them): every
# write of a case vector names them as None, so a record written again sheds them.
CASE_RETIRED_KEYS = ("case_id", "case_type", "occurred_at", "occurred_at_ts", "documents", "pii")


def cases_name(conf: ChromaSettings) -> str:
    return f"{conf.collection_prefix}_cases"


def turns_name(conf: ChromaSettings) -> str:
    return f"{conf.collection_prefix}_turns"


def cases_index(
    client: Any, conf: ChromaSettings, embedder: Embedder, *, embedded_path: Path | None = None
) -> ChromaIndex:
    """The settings' case-summary collection on ``client`` (a store or a raw client), checked
    against ``embedder``; ``embedded_path``: the directory of an embedded Chroma (None for a server)."""
    return ChromaIndex(
        client, cases_name(conf), model_id=embedder.model_id, dimension=embedder.dimension,
        embedded_path=embedded_path, retired_keys=CASE_RETIRED_KEYS,
    )  # fmt: skip


def _is_missing(exc: Exception) -> bool:
    from chromadb.errors import NotFoundError

    return isinstance(exc, NotFoundError) or (isinstance(exc, ValueError) and "does not exist" in str(exc))


class _Collection:
    """A named collection of a store, fetched again whenever the store opens a new client."""

    def __init__(self, client: Any, name: str, *, embedded_path: Path | None = None) -> None:
        self.store = ChromaStore.wrapping(client, embedded_path)
        self.name = name
        self._handle: Any = None
        self._handle_version = -1

    @property
    def embedded_path(self) -> Path | None:
        return self.store.embedded_path

    def _call(self, kind: Kind, action: str, op: Any) -> Any:
        """``op(collection)`` as one store call; the collection is fetched on this client if needed."""

        def run(client: Any) -> Any:
            handle = self._fetch(client)
            return None if handle is None else op(handle)

        return self.store.run(kind, f"{action} on collection {self.name!r}", run, collection=self.name)

    def _fetch(self, client: Any) -> Any:
        if self._handle is None or self._handle_version != self.store.version:
            self._handle = self._open(client)
            self._handle_version = self.store.version
        return self._handle

    def _open(self, client: Any) -> Any:
        raise NotImplementedError

    def _delete(self, ids: Sequence[str]) -> None:
        def delete(collection: Any) -> None:
            for start in range(0, len(ids), _BATCH):
                collection.delete(ids=list(ids[start : start + _BATCH]))

        self._call("write", "delete", delete)

    def erase(self, ids: Sequence[str], *, scope: tuple[str, str] | None = None) -> None:
        """Delete ``ids`` for good: from the collection and, embedded, from Chroma's log and free
        pages (with ``scope`` = (tenant, customer): every log entry stamped with it too)."""
        if ids:
            self._delete(ids)
        if self.embedded_path is not None and (ids or scope is not None):
            purge_chroma_log(self.embedded_path, ids, scope=scope)

    def ids_in_scope(self, tenant: str, customer_id: str) -> list[str]:
        """Ids of the vectors stamped with this scope: a filtered scan, for erasure only (never recall)."""
        where = {"$and": [{"tenant": tenant}, {"customer_id": customer_id}]}
        found = self._call("write", "get", lambda c: list(c.get(where=where, include=[])["ids"]))
        return found or []


class ChromaEraser(_Collection):
    """A collection opened for erasing from it (``forget``): no embedder is needed, none is loaded,
    and the collection's model is not checked. A collection that does not exist is not created:
    there is nothing to erase in it."""

    def _open(self, client: Any) -> Any:
        try:
            return client.get_collection(self.name, embedding_function=None)
        except Exception as exc:
            if _is_missing(exc):
                return None
            raise

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._delete(ids)


class ChromaIndex(_Collection):
    """A collection of vectors, checked against the embedder that reads and writes it."""

    def __init__(
        self,
        client: Any,
        name: str,
        *,
        model_id: str,
        dimension: int,
        embedded_path: Path | None = None,
        retired_keys: Sequence[str] = (),
    ) -> None:
        """``retired_keys``: metadata keys that older versions stored and every write now deletes."""
        super().__init__(client, name, embedded_path=embedded_path)
        self.model_id = model_id
        self.dimension = dimension
        self._retired: dict[str, None] = dict.fromkeys(retired_keys)

    def _open(self, client: Any) -> Any:
        try:
            collection = client.get_collection(self.name, embedding_function=None)
        except Exception as exc:
            if not _is_missing(exc):
                raise
            collection = self._create(client)
        self._check(collection.metadata or {})
        return collection

    def _create(self, client: Any) -> Any:
        metadata = {MODEL_KEY: self.model_id, DIM_KEY: self.dimension, **HNSW}
        return client.get_or_create_collection(self.name, metadata=metadata, embedding_function=None)

    def _check(self, metadata: Mapping[str, Any]) -> None:
        built_with, built_dim = metadata.get(MODEL_KEY), metadata.get(DIM_KEY)
        if built_with != self.model_id or built_dim != self.dimension:
            raise EmbeddingModelMismatch(
                f"episodic index {self.name!r} was built with {built_with or 'an unknown model'} "
                f"(dimension {built_dim or '?'}), but the configured embedder is {self.model_id} "
                f"(dimension {self.dimension}): run `connector episodic reindex` to rebuild it "
                "from the relational copy, or configure the model it was built with"
            )

    @property
    def collection(self) -> Any:
        """The raw collection on the current client (tests and tools)."""
        return self._call("write", "open", lambda c: c)

    def upsert(self, ids: Sequence[str], vectors: Vectors, metadatas: Sequence[Mapping[str, Any]]) -> None:
        if not ids:
            return
        if vectors.shape != (len(ids), self.dimension):
            raise StoreError(
                f"expected {len(ids)} vectors of dimension {self.dimension}, got {vectors.shape}"
            )

        def upsert(collection: Any) -> None:
            for start in range(0, len(ids), _BATCH):
                stop = start + _BATCH
                collection.upsert(
                    ids=list(ids[start:stop]),
                    embeddings=vectors[start:stop],
                    metadatas=self._written(metadatas[start:stop]),
                )

        self._call("write", "upsert", upsert)

    def update_metadata(self, ids: Sequence[str], metadatas: Sequence[Mapping[str, Any]]) -> None:
        """Merge ``metadatas`` into the records' metadata (and drop the retired keys)."""
        if not ids:
            return

        def update(collection: Any) -> None:
            for start in range(0, len(ids), _BATCH):
                stop = start + _BATCH
                collection.update(ids=list(ids[start:stop]), metadatas=self._written(metadatas[start:stop]))

        self._call("write", "update", update)

    def _written(self, metadatas: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return [{**self._retired, **m} for m in metadatas]

    def vectors(self, ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vector of each id that is in the index (missing ids are left out)."""
        if not ids:
            return {}
        result = self._call("read", "get", lambda c: c.get(ids=list(ids), include=["embeddings"]))
        embeddings = result.get("embeddings")
        if embeddings is None:
            return {}
        return {
            entry_id: np.asarray(vector, dtype=np.float32)
            for entry_id, vector in zip(result["ids"], embeddings, strict=True)
        }

    def stored(self, ids: Sequence[str]) -> dict[str, StoredVector]:
        """Vectors with the scope and hash they were stored under (missing ids are left out)."""
        if not ids:
            return {}
        include = ["embeddings", "metadatas"]
        result = self._call("read", "get", lambda c: c.get(ids=list(ids), include=include))
        embeddings, metadatas = result.get("embeddings"), result.get("metadatas")
        if embeddings is None or metadatas is None:
            return {}
        return {
            entry_id: StoredVector(np.asarray(vector, dtype=np.float32), Stamp.of(meta))
            for entry_id, vector, meta in zip(result["ids"], embeddings, metadatas, strict=True)
        }

    def stamps(self) -> Iterator[tuple[str, Stamp]]:
        """Every id in the collection with its stamp, a page at a time (no vectors read)."""
        offset = 0
        while True:
            page = self._call(
                "read", "get", lambda c, at=offset: c.get(include=["metadatas"], limit=_BATCH, offset=at)
            )
            ids = page["ids"]
            for entry_id, meta in zip(ids, page["metadatas"] or [None] * len(ids), strict=True):
                yield entry_id, Stamp.of(meta)
            if len(ids) < _BATCH:
                return
            offset += len(ids)

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._delete(ids)

    def count(self) -> int:
        return int(self._call("read", "count", lambda c: c.count()))

    def stored_model(self) -> tuple[str | None, int | None]:
        """(model, dimension) the existing collection was built with, without the mismatch check."""

        def read(client: Any) -> dict[str, Any]:
            return dict(client.get_collection(self.name, embedding_function=None).metadata or {})

        try:
            metadata = self.store.run("write", f"open collection {self.name!r}", read)
        except StoreError:
            return (None, None)
        return (metadata.get(MODEL_KEY), metadata.get(DIM_KEY))

    def recreate(self) -> None:
        """Drop the collection (whatever model built it) and create it empty for this embedder."""

        def recreate(client: Any) -> Any:
            try:
                client.delete_collection(self.name)
            except Exception as exc:
                log.debug("no collection %s to drop (%s)", self.name, type(exc).__name__)
            return self._create(client)

        self._handle = self.store.run("write", f"recreate collection {self.name!r}", recreate)
        self._handle_version = self.store.version
