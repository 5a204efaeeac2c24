"""Embedders for tests about rows, files and descriptors rather than ranking: no model is loaded."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


class OneVector:
    """The same unit vector for every text: Chroma and the engine are used, not the model."""

    model_id = "one-vector-4"
    dimension = 4

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.tile(np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32), (len(texts), 1))
