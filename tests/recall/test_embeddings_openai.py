"""OpenAI embeddings over HTTP, mocked with respx."""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest
import respx
from pydantic import SecretStr

from connector.embeddings import OpenAIEmbedder, embedder_for
from connector.errors import ConfigError, StoreError
from connector.settings import EmbeddingSettings, LLMSettings, Settings

BASE = "http://llm.test/v1"
LLM = LLMSettings(base_url=BASE, api_key=SecretStr("sk-embed-secret"), max_retries=0)


def answer(vectors: list[list[float]]) -> httpx.Response:
    data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
    data.reverse()  # the API does not promise order; the embedder sorts by index
    return httpx.Response(
        200,
        json={"object": "list", "data": data, "model": "m", "usage": {"prompt_tokens": 1, "total_tokens": 1}},
    )


@respx.mock
def test_vectors_come_back_in_input_order_and_normalised() -> None:
    route = respx.post(f"{BASE}/embeddings").mock(return_value=answer([[3.0, 4.0], [0.0, 2.0]]))
    embedder = OpenAIEmbedder(LLM, "my-embed", dimension=2)
    vectors = embedder.embed(["a", "b"])
    np.testing.assert_allclose(vectors, [[0.6, 0.8], [0.0, 1.0]], atol=1e-6)
    body = json.loads(route.calls.last.request.content)
    assert body["model"] == "my-embed" and body["input"] == ["a", "b"]
    assert route.calls.last.request.headers["authorization"] == "Bearer sk-embed-secret"
    assert embedder.model_id == "openai:my-embed"


@respx.mock
def test_unknown_model_learns_its_dimension_from_the_first_answer() -> None:
    respx.post(f"{BASE}/embeddings").mock(return_value=answer([[1.0, 0.0, 0.0]]))
    assert OpenAIEmbedder(LLM, "custom").dimension == 3


@respx.mock
def test_a_wrong_dimension_is_an_error() -> None:
    respx.post(f"{BASE}/embeddings").mock(return_value=answer([[1.0, 0.0, 0.0]]))
    with pytest.raises(StoreError, match="expected 1536"):
        OpenAIEmbedder(LLM, "text-embedding-3-small").embed(["a"])


@respx.mock
def test_http_failure_is_a_store_error_without_the_key() -> None:
    respx.post(f"{BASE}/embeddings").mock(return_value=httpx.Response(500, json={"error": {"message": "x"}}))
    with pytest.raises(StoreError) as caught:
        OpenAIEmbedder(LLM, "m", dimension=2).embed(["a"])
    assert "500" in str(caught.value) and "sk-embed-secret" not in str(caught.value)


def test_openai_provider_needs_an_endpoint() -> None:
    with pytest.raises(ConfigError, match=r"llm\.api_key"):
        embedder_for(Settings(embeddings=EmbeddingSettings(provider="openai")))


def test_settings_select_the_openai_embedder() -> None:
    chosen = embedder_for(Settings(embeddings=EmbeddingSettings(provider="openai"), llm=LLM))
    assert chosen.model_id == "openai:text-embedding-3-small" and chosen.dimension == 1536
