"""Text embedders: offline all-MiniLM-L6-v2 (default) and OpenAI.

:func:`embedder_for` builds a new embedder of the configured kind for its caller to own (and close:
it has worker threads). The offline model's loaded files are shared within the process (see
:func:`connector.embeddings.minilm._loaded`), so a second embedder costs no second load.

The names are imported on first access, so ``import connector.embeddings`` (or its light ``base``)
loads neither onnxruntime nor the OpenAI client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from connector.lazy import lazy_attributes

if TYPE_CHECKING:
    from connector.embeddings.base import Embedder, Vectors, l2_normalise
    from connector.embeddings.minilm import MiniLMEmbedder
    from connector.embeddings.openai_embedder import OpenAIEmbedder
    from connector.settings import Settings

__all__ = ["Embedder", "MiniLMEmbedder", "OpenAIEmbedder", "Vectors", "embedder_for", "l2_normalise"]

_HOMES = {
    "Embedder": "connector.embeddings.base",
    "Vectors": "connector.embeddings.base",
    "l2_normalise": "connector.embeddings.base",
    "MiniLMEmbedder": "connector.embeddings.minilm",
    "OpenAIEmbedder": "connector.embeddings.openai_embedder",
}


def embedder_for(settings: Settings) -> MiniLMEmbedder | OpenAIEmbedder:
    """A new embedder of the kind the settings name; the caller owns it and closes it."""
    conf = settings.embeddings
    if conf.provider == "openai":
        from connector.embeddings.openai_embedder import OpenAIEmbedder

        return OpenAIEmbedder(settings.llm, conf.openai_model, batch_size=conf.batch_size or 256)
    from connector.embeddings.minilm import MiniLMEmbedder

    return MiniLMEmbedder(model=conf.minilm_model, batch_size=conf.batch_size or 1)


__getattr__ = lazy_attributes(__name__, _HOMES)
