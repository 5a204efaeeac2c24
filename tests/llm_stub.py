"""The OpenAI-compatible chat endpoint as the tests mock it with respx: its address, its answer and
the ``llm_route`` fixture (a pytest plugin, listed in conftest).

One place for the response shape, so a test that mocks the LLM reads as what the model says, not
as the JSON around it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import httpx
import pytest
import respx

LLM_BASE = "http://llm.test/v1"
USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


def completion_body(content: str, *, usage: Mapping[str, int] | None = None) -> dict[str, object]:
    """A non-streamed chat completion whose only choice says ``content``; with ``usage`` (e.g.
    :data:`USAGE`) when a test reads the token counts."""
    message = {"role": "assistant", "content": content}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    body: dict[str, object] = {"id": "c", "object": "chat.completion", "created": 0, "model": "m"}
    body["choices"] = [choice]
    if usage is not None:
        body["usage"] = dict(usage)
    return body


def completion(content: str, *, usage: Mapping[str, int] | None = None) -> httpx.Response:
    """The endpoint's 200 answer saying ``content``."""
    return httpx.Response(200, json=completion_body(content, usage=usage))


@pytest.fixture
def llm_route() -> Iterator[respx.Route]:
    """The mocked chat endpoint; a test sets its answers with ``llm_route.mock(...)``."""
    with respx.mock(assert_all_called=False) as mock:
        yield mock.post(f"{LLM_BASE}/chat/completions")
