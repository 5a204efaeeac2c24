"""OpenAI (or any OpenAI-compatible) embeddings, the alternative to the offline model.

Uses the endpoint and key of the LLM settings. The dimension is known for OpenAI's models and
otherwise learnt from the first answer; vectors are re-normalised so scores mean the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import numpy as np
import openai

from connector.embeddings.base import Vectors, l2_normalise
from connector.errors import ConfigError, StoreError
from connector.settings import LLMSettings

KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIEmbedder:
    def __init__(
        self,
        llm: LLMSettings,
        model: str = "text-embedding-3-small",
        *,
        batch_size: int = 256,
        dimension: int | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        if not llm.enabled:
            raise ConfigError(
                "embeddings.provider=openai needs llm.api_key (and llm.base_url for other endpoints)"
            )
        self._model = model
        self._batch_size = batch_size
        self._dimension = dimension or KNOWN_DIMENSIONS.get(model)
        self._client = openai.OpenAI(
            api_key=llm.api_key.get_secret_value() if llm.api_key else "not-needed",
            base_url=llm.base_url,
            timeout=llm.timeout_s,
            max_retries=llm.max_retries,
            http_client=http_client,
        )
        self._owns_http = http_client is None

    def close(self) -> None:
        """Close the HTTP connections this embedder opened (a client handed in stays the caller's)."""
        if self._owns_http:
            self._client.close()

    @property
    def model_id(self) -> str:
        return f"openai:{self._model}"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self.embed(["dimension probe"]).shape[1])
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            try:
                response = self._client.embeddings.create(model=self._model, input=batch)
            except openai.APIStatusError as exc:
                raise StoreError(
                    f"embedding endpoint answered HTTP {exc.status_code} for {self._model}"
                ) from None
            except (openai.APITimeoutError, openai.APIConnectionError):
                raise StoreError(f"embedding endpoint unreachable or timed out ({self._model})") from None
            data = sorted(response.data, key=lambda item: item.index)
            if len(data) != len(batch):
                raise StoreError(f"embedding endpoint returned {len(data)} vectors for {len(batch)} texts")
            rows.extend(item.embedding for item in data)
        if not rows:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        matrix = l2_normalise(np.asarray(rows, dtype=np.float32))
        if self._dimension is None:
            self._dimension = int(matrix.shape[1])
        elif matrix.shape[1] != self._dimension:
            raise StoreError(
                f"{self._model} returned {matrix.shape[1]}-d vectors, expected {self._dimension}"
            )
        return matrix
