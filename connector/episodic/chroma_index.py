"""Moved to :mod:`connector.vectors` (the one package that reaches Chroma); kept as a re-export."""

from __future__ import annotations

from connector.vectors.collection import (
    CASE_RETIRED_KEYS,
    DIM_KEY,
    HNSW,
    MODEL_KEY,
    ChromaEraser,
    ChromaIndex,
    cases_index,
    cases_name,
)
from connector.vectors.store import open_client

__all__ = [
    "CASE_RETIRED_KEYS", "DIM_KEY", "HNSW", "MODEL_KEY", "ChromaEraser", "ChromaIndex", "cases_index",
    "cases_name", "open_client",
]  # fmt: skip
