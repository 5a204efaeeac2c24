"""The vector store: every use of Chroma goes through this package (no other module imports it).

- :mod:`~connector.vectors.store`: the client of one Chroma (server or embedded directory), and
  how each call is made: within its deadline, with one-line errors, in the cross-process order;
- :mod:`~connector.vectors.deadline`: deadlines and failing fast once a store is seen hung;
- :mod:`~connector.vectors.lock`: one writer at a time to an embedded directory, across processes;
- :mod:`~connector.vectors.collection`: the case and turn collections;
- :mod:`~connector.vectors.reconcile`: which rows lack their vector, which vectors lack their row;
- :mod:`~connector.vectors.files` and :mod:`~connector.vectors.slack`: erasure on disk (Chroma's
  log, free pages, the index files' unused bytes) and the rebuild's file work;
- :mod:`~connector.vectors.health`: the ``doctor`` check.

See docs/guides/vector-store.md.
"""

from __future__ import annotations

from connector.vectors.collection import (
    CASE_RETIRED_KEYS,
    ChromaEraser,
    ChromaIndex,
    cases_index,
    cases_name,
    turns_name,
)
from connector.vectors.deadline import Deadlines
from connector.vectors.store import ChromaStore, acquire_store, open_client, release_store

__all__ = [
    "CASE_RETIRED_KEYS",
    "ChromaEraser",
    "ChromaIndex",
    "ChromaStore",
    "Deadlines",
    "acquire_store",
    "cases_index",
    "cases_name",
    "open_client",
    "release_store",
    "turns_name",
]
