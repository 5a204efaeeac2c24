"""The embedder contract shared by the offline model and OpenAI.

An embedder turns texts into L2-normalised float32 rows, so cosine similarity is a dot product.
``model_id`` names model *and* dimension; an index records it and refuses to be read with another.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    @property
    def model_id(self) -> str:
        """Stable name of the model, e.g. ``minilm-l6-v2-int8``; stored with every index."""
        ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One normalised row per text, shape ``(len(texts), dimension)``."""
        ...


def l2_normalise(matrix: npt.NDArray[np.floating]) -> Vectors:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    scaled: Vectors = (matrix / np.maximum(norms, 1e-12)).astype(np.float32)
    return scaled
