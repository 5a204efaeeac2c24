"""Text embedders: offline all-MiniLM-L6-v2 (default) and OpenAI.

:func:`embedder_for` builds the configured one and caches it per process, since loading the model
costs a few hundred milliseconds and the session is thread-safe.
"""

from __future__ import annotations

import threading

from connector.embeddings.base import Embedder, Vectors, l2_normalise
from connector.embeddings.minilm import MiniLMEmbedder
from connector.embeddings.openai_embedder import OpenAIEmbedder
from connector.settings import Settings

__all__ = ["Embedder", "MiniLMEmbedder", "OpenAIEmbedder", "Vectors", "embedder_for", "l2_normalise"]

_cache: dict[tuple[str, ...], Embedder] = {}
_cache_lock = threading.Lock()


def embedder_for(settings: Settings) -> Embedder:
    """The embedder the settings name (cached for the offline model)."""
    conf = settings.embeddings
    if conf.provider == "openai":
        return OpenAIEmbedder(settings.llm, conf.openai_model, batch_size=conf.batch_size or 256)
    key = ("minilm", conf.minilm_model, str(conf.batch_size))
    with _cache_lock:
        embedder = _cache.get(key)
        if embedder is None:
            embedder = _cache[key] = MiniLMEmbedder(model=conf.minilm_model, batch_size=conf.batch_size or 8)
        return embedder
