"""The Chroma side of episodic memory: one collection of case-summary vectors.

Embedded (``PersistentClient``, the default) or a Chroma server (``HttpClient``) when
``chroma.host`` is set. Vectors are always passed in explicitly, so Chroma never loads a model of its
own. The collection records the embedding model and dimension in its metadata; opening it with
another embedder raises :class:`EmbeddingModelMismatch` (``connector episodic reindex`` rebuilds it).

Chroma is the store of record for entry vectors (:class:`~connector.episodic.vector_index.VectorIndex`).
Recall reads them by id (``get(ids=..., include=["embeddings", "metadatas"])``): the relational store
knows which entries belong to the scope, and fetching those by id costs what the customer's history
costs, while a metadata-filtered query scans the whole collection (see the benchmark). The scope in
each vector's metadata is checked on the client side: ``get`` with both ``ids`` and a ``where`` filter
took 80-150 ms at 100k vectors (Chroma evaluates the filter over the collection), against ~1 ms by id.
A vector's metadata is its stamp alone (tenant, customer, vector hash): the read returns every key
stored, and at 100k vectors the case collection's old nine keys cost 0.4-0.5 ms more per cold recall
than three. Writes to the case collection delete the keys older versions stored
(:data:`CASE_RETIRED_KEYS`), so every vector written again converges, and ``reindex`` rewrites the rest.

Embedded, every write runs under this process's lock of the directory and is followed by zeroing
the HNSW files past their last element (:mod:`connector.erasure.hnsw`): a write may start a segment,
and Chroma then writes uninitialised memory (freed copies of earlier records) into it.
:class:`ChromaEraser` opens the collection for ``forget`` without an embedder.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from connector.embeddings.base import Embedder, Vectors
from connector.episodic.vector_index import Stamp, StoredVector
from connector.erasure.hnsw import WRITES, scrub_segment_slack
from connector.errors import ConnectorError, EmbeddingModelMismatch, StoreError
from connector.settings import ChromaSettings, Settings

log = logging.getLogger(__name__)

MODEL_KEY = "embedding_model"
DIM_KEY = "embedding_dim"
_BATCH = 2000
# Recall never searches the HNSW graph (it fetches a scope's vectors by id; a filtered search
# scans the collection), so the graph Chroma always builds is kept cheap: adds ran 3.8x faster
# than with the defaults (ef 100, M 16). Only the unscoped baseline query of the benchmark uses it.
HNSW = {"hnsw:space": "cosine", "hnsw:construction_ef": 16, "hnsw:M": 8}
# Metadata keys the case collection held before it kept the stamp alone (nothing reads them). Chroma
# merges the metadata of an upsert or update into what a record holds and deletes a key given as
# None, so every write of a case vector names these as None: a record written again sheds them.
CASE_RETIRED_KEYS = ("case_id", "case_type", "occurred_at", "occurred_at_ts", "documents", "pii")


def open_client(settings: Settings) -> Any:
    """A Chroma client for the settings: server when ``chroma.host`` is set, else embedded."""
    import chromadb
    from chromadb.config import Settings as ChromaClientSettings

    conf: ChromaSettings = settings.chroma
    client_settings = ChromaClientSettings(anonymized_telemetry=False)
    try:
        if conf.host:
            return chromadb.HttpClient(host=conf.host, port=conf.port, ssl=conf.ssl, settings=client_settings)
        path = settings.chroma_path
        path.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(path), settings=client_settings)
    except Exception as exc:
        where = f"server {conf.host}:{conf.port}" if conf.host else f"path {settings.chroma_path}"
        hint = "" if conf.host else " (`connector episodic reindex --rebuild` recreates it from the rows)"
        raise StoreError(f"Chroma at {where} is unavailable: {type(exc).__name__}: {exc}{hint}") from None


def cases_name(conf: ChromaSettings) -> str:
    return f"{conf.collection_prefix}_cases"


def cases_index(
    client: Any, conf: ChromaSettings, embedder: Embedder, *, embedded_path: Path | None = None
) -> ChromaIndex:
    """The settings' case-summary collection on ``client``, checked against ``embedder``;
    ``embedded_path``: the directory of an embedded Chroma (None for a server)."""
    return ChromaIndex(
        client, cases_name(conf), model_id=embedder.model_id, dimension=embedder.dimension,
        embedded_path=embedded_path, retired_keys=CASE_RETIRED_KEYS,
    )  # fmt: skip


@contextmanager
def _chroma_errors(action: str, name: str) -> Iterator[None]:
    """Any Chroma or transport failure becomes a StoreError naming the action and the collection."""
    try:
        yield
    except ConnectorError:
        raise
    except Exception as exc:
        raise StoreError(
            f"Chroma {action} on collection {name!r} failed: {type(exc).__name__}: {exc}"
        ) from None


class _Collection:
    """A named collection on a client; writes to an embedded one leave no stale bytes behind."""

    def __init__(self, client: Any, name: str, *, embedded_path: Path | None = None) -> None:
        self._client = client
        self.name = name
        self.embedded_path = embedded_path
        self._read_before = False

    @contextmanager
    def _writing(self, action: str) -> Iterator[None]:
        """One write: Chroma's errors as StoreError; embedded, under the directory's lock and
        followed by zeroing what Chroma's HNSW files hold past their last element."""
        if self.embedded_path is None:
            with _chroma_errors(action, self.name):
                yield
            return
        with WRITES.of(self.embedded_path):
            try:
                with _chroma_errors(action, self.name):
                    yield
            finally:
                scrub_segment_slack(self.embedded_path)

    @contextmanager
    def _reading(self, action: str) -> Iterator[None]:
        """One read: Chroma's errors as StoreError. Embedded, this process's first read of the
        collection runs as a write does (under the directory's lock, then the zeroing): Chroma
        starts a segment on first access too, and writes its uninitialised buffers to disk (seen on
        every first ``count`` of a fresh client after a ``forget``)."""
        if self.embedded_path is None or self._read_before:
            with _chroma_errors(action, self.name):
                yield
            return
        with self._writing(action):
            yield
        self._read_before = True

    def _delete(self, collection: Any, ids: Sequence[str]) -> None:
        with self._writing("delete"):
            for start in range(0, len(ids), _BATCH):
                collection.delete(ids=list(ids[start : start + _BATCH]))

    def _in_scope(self, collection: Any, tenant: str, customer_id: str) -> list[str]:
        where = {"$and": [{"tenant": tenant}, {"customer_id": customer_id}]}
        with self._reading("get"):
            return list(collection.get(where=where, include=[])["ids"])


class ChromaEraser(_Collection):
    """A collection opened for erasing from it (``forget``): no embedder is needed, none is loaded,
    and the collection's model is not checked (a collection of another model is erased from all the
    same). A collection that does not exist is not created: there is nothing to erase in it."""

    def __init__(self, client: Any, name: str, *, embedded_path: Path | None = None) -> None:
        super().__init__(client, name, embedded_path=embedded_path)
        self._collection: Any = None
        self._missing = False

    def _existing(self) -> Any:
        from chromadb.errors import NotFoundError

        if self._collection is None and not self._missing:
            try:
                self._collection = self._client.get_collection(self.name, embedding_function=None)
            except NotFoundError:
                self._missing = True
            except ValueError as exc:  # older clients say "does not exist" with a ValueError
                if "does not exist" not in str(exc):
                    raise StoreError(f"Chroma collection {self.name!r} cannot be opened: {exc}") from None
                self._missing = True
            except Exception as exc:
                raise StoreError(
                    f"Chroma collection {self.name!r} cannot be opened: {type(exc).__name__}"
                ) from None
        return self._collection

    def ids_in_scope(self, tenant: str, customer_id: str) -> list[str]:
        """Ids of the vectors stamped with this scope: a filtered scan of the whole collection."""
        collection = self._existing()
        return [] if collection is None else self._in_scope(collection, tenant, customer_id)

    def delete(self, ids: Sequence[str]) -> None:
        collection = self._existing()
        if collection is not None and ids:
            self._delete(collection, ids)


class ChromaIndex(_Collection):
    """The case-summary collection, checked against the embedder that reads and writes it."""

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
        self._collection: Any = None
        self._retired: dict[str, None] = dict.fromkeys(retired_keys)

    @property
    def collection(self) -> Any:
        if self._collection is None:
            self._collection = self._open()
        return self._collection

    def _open(self) -> Any:
        from chromadb.errors import NotFoundError

        try:
            collection = self._client.get_collection(self.name, embedding_function=None)
        except NotFoundError:
            collection = self._create()
        except ValueError as exc:  # older clients say "does not exist" with a ValueError
            if "does not exist" not in str(exc):
                raise StoreError(f"Chroma collection {self.name!r} cannot be opened: {exc}") from None
            collection = self._create()
        except Exception as exc:
            raise StoreError(
                f"Chroma collection {self.name!r} cannot be opened: {type(exc).__name__}"
            ) from None
        self._check(collection.metadata or {})
        return collection

    def _create(self) -> Any:
        metadata = {MODEL_KEY: self.model_id, DIM_KEY: self.dimension, **HNSW}
        return self._client.get_or_create_collection(self.name, metadata=metadata, embedding_function=None)

    def _check(self, metadata: Mapping[str, Any]) -> None:
        built_with, built_dim = metadata.get(MODEL_KEY), metadata.get(DIM_KEY)
        if built_with != self.model_id or built_dim != self.dimension:
            raise EmbeddingModelMismatch(
                f"episodic index {self.name!r} was built with {built_with or 'an unknown model'} "
                f"(dimension {built_dim or '?'}), but the configured embedder is {self.model_id} "
                f"(dimension {self.dimension}): run `connector episodic reindex` to rebuild it "
                "from the relational copy, or configure the model it was built with"
            )

    def upsert(self, ids: Sequence[str], vectors: Vectors, metadatas: Sequence[Mapping[str, Any]]) -> None:
        if not ids:
            return
        if vectors.shape != (len(ids), self.dimension):
            raise StoreError(
                f"expected {len(ids)} vectors of dimension {self.dimension}, got {vectors.shape}"
            )
        with self._writing("upsert"):
            for start in range(0, len(ids), _BATCH):
                stop = start + _BATCH
                self.collection.upsert(
                    ids=list(ids[start:stop]),
                    embeddings=vectors[start:stop],
                    metadatas=self._written(metadatas[start:stop]),
                )

    def update_metadata(self, ids: Sequence[str], metadatas: Sequence[Mapping[str, Any]]) -> None:
        """Merge ``metadatas`` into the records' metadata (and drop the retired keys)."""
        if not ids:
            return
        with self._writing("update"):
            for start in range(0, len(ids), _BATCH):
                stop = start + _BATCH
                self.collection.update(
                    ids=list(ids[start:stop]), metadatas=self._written(metadatas[start:stop])
                )

    def _written(self, metadatas: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The metadata as written: the retired keys as None (deleted), unless given."""
        return [{**self._retired, **m} for m in metadatas]

    def vectors(self, ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vector of each id that is in the index (missing ids are left out)."""
        if not ids:
            return {}
        with self._reading("get"):
            result = self.collection.get(ids=list(ids), include=["embeddings"])
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
        with self._reading("get"):
            result = self.collection.get(ids=list(ids), include=["embeddings", "metadatas"])
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
            with self._reading("get"):
                page = self.collection.get(include=["metadatas"], limit=_BATCH, offset=offset)
            ids = page["ids"]
            for entry_id, meta in zip(ids, page["metadatas"] or [None] * len(ids), strict=True):
                yield entry_id, Stamp.of(meta)
            if len(ids) < _BATCH:
                return
            offset += len(ids)

    def ids_in_scope(self, tenant: str, customer_id: str) -> list[str]:
        """Ids of the vectors stamped with this scope: a filtered scan, for erasure only (never recall)."""
        return self._in_scope(self.collection, tenant, customer_id)

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._delete(self.collection, ids)

    def count(self) -> int:
        with self._reading("count"):
            return int(self.collection.count())

    def stored_model(self) -> tuple[str | None, int | None]:
        """(model, dimension) the existing collection was built with, without the mismatch check."""
        try:
            metadata = self._client.get_collection(self.name, embedding_function=None).metadata or {}
        except Exception:
            return (None, None)
        return (metadata.get(MODEL_KEY), metadata.get(DIM_KEY))

    def recreate(self) -> None:
        """Drop the collection (whatever model built it) and create it empty for this embedder."""
        try:
            self._client.delete_collection(self.name)
        except Exception as exc:
            log.debug("no collection %s to drop (%s)", self.name, type(exc).__name__)
        with self._writing("create"):
            self._collection = self._create()
