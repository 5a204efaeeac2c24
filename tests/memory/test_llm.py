"""The OpenAI-compatible client, mocked at the HTTP layer with respx."""

from __future__ import annotations

import httpx
import pytest
import respx
from llm_stub import LLM_BASE, USAGE, completion
from pydantic import SecretStr

from connector.errors import LLMError
from connector.llm import LLMClient, make_llm
from connector.settings import LLMSettings


def client(**kw: object) -> LLMClient:
    return LLMClient(LLMSettings(base_url=LLM_BASE, api_key=SecretStr("sk-very-secret"), model="m", **kw))  # type: ignore[arg-type]


def test_no_endpoint_means_non_llm_mode() -> None:
    assert make_llm(LLMSettings()) is None


@respx.mock
def test_completion_sends_model_and_key_and_returns_text() -> None:
    route = respx.post(f"{LLM_BASE}/chat/completions").mock(return_value=completion("ok", usage=USAGE))
    result = client().complete("sys", "user")
    assert result.text == "ok"
    request = route.calls.last.request
    assert request.headers["authorization"] == "Bearer sk-very-secret"
    assert b'"model":"m"' in request.content.replace(b" ", b"")


@respx.mock
def test_429_is_retried_then_succeeds() -> None:
    route = respx.post(f"{LLM_BASE}/chat/completions").mock(
        side_effect=[
            httpx.Response(429, headers={"retry-after": "0"}),
            completion("x", usage=USAGE),
        ]
    )
    assert client(max_retries=2).complete("s", "u").text == "x"
    assert route.call_count == 2


@respx.mock
def test_failure_is_an_llm_error_without_the_key() -> None:
    respx.post(f"{LLM_BASE}/chat/completions").mock(return_value=httpx.Response(500, json={"error": "boom"}))
    with pytest.raises(LLMError) as err:
        client(max_retries=0).complete("s", "u")
    assert "500" in str(err.value)
    assert "sk-very-secret" not in str(err.value)


@respx.mock
def test_timeout_is_an_llm_error() -> None:
    respx.post(f"{LLM_BASE}/chat/completions").mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(LLMError, match="timed out"):
        client(max_retries=0, timeout_s=0.5).complete("s", "u")
