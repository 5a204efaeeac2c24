"""The relational copy of an entry's vector: float16 bytes in ``episodic_entry.vector``.

Why a copy: recall must read the scope's rows anyway (the relational store is the authority on
scope), and with the vector in the row it ranks from those rows alone. Fetching the vectors from
Chroma by id cost ~55 µs per entry, so a customer with 100 cases paid ~5.5 ms for it; decoding 100
copies costs microseconds. float16 (768 bytes for 384 dimensions) keeps every cosine within ~1e-3
of float32, far below the score gaps ranking and the near-duplicate test rely on.

A copy is only used when its row says it was made by the configured embedder (``embedding_model``)
and it has the embedder's dimension; anything else goes the Chroma way, where a model mismatch is
still detected by the collection.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from connector.embeddings.base import Vectors

COPY_DTYPE = np.dtype("<f2")


def encode(vector: Vectors) -> bytes:
    """One vector as little-endian float16 bytes (the same bytes on every platform)."""
    return np.asarray(vector, dtype=np.float32).reshape(-1).astype(COPY_DTYPE).tobytes()


def decode(blob: bytes) -> Vectors:
    """One stored copy back as a float32 vector."""
    return np.frombuffer(blob, dtype=COPY_DTYPE).astype(np.float32)


def decode_many(blobs: Sequence[bytes], dimension: int) -> Vectors:
    """Stored copies as one float32 matrix (one join and one conversion, not one per row)."""
    if not blobs:
        return np.zeros((0, dimension), dtype=np.float32)
    joined = b"".join(blobs)
    return np.frombuffer(joined, dtype=COPY_DTYPE).reshape(len(blobs), dimension).astype(np.float32)


def usable(blob: bytes | None, made_by: str | None, model_id: str, dimension: int) -> bool:
    """Whether a row's copy can stand for its vector under the configured embedder."""
    return blob is not None and made_by == model_id and len(blob) == dimension * COPY_DTYPE.itemsize
