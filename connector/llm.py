"""The LLM client: the ``openai`` package against any OpenAI-compatible endpoint.

Used for running summaries, case summaries and learned-fact extraction. When no endpoint is
configured, :func:`make_llm` returns None and each feature uses its deterministic non-LLM path,
labelled as such in its output; nothing ever pretends to be LLM output.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import httpx
import openai

from connector.errors import LLMError
from connector.settings import LLMSettings
from connector.telemetry import traced_llm

log = logging.getLogger(__name__)

NON_LLM_LABEL = "non-LLM mode (deterministic)"


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    model: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class LLMClient:
    """Chat completions with the configured timeout and retries (the openai client retries 429/5xx)."""

    def __init__(self, settings: LLMSettings, *, http_client: httpx.Client | None = None) -> None:
        self.settings = settings
        api_key = settings.api_key.get_secret_value() if settings.api_key else "not-needed"
        self._client = openai.OpenAI(
            api_key=api_key,
            base_url=settings.base_url,
            timeout=settings.timeout_s,
            max_retries=settings.max_retries,
            http_client=http_client,
        )
        self._owns_http = http_client is None

    @property
    def model(self) -> str:
        return self.settings.model

    def close(self) -> None:
        """Close the HTTP connections this client opened (a client handed in stays the caller's)."""
        if self._owns_http:
            self._client.close()

    @traced_llm
    def complete(
        self, system: str, user: str, *, json_mode: bool = False, max_tokens: int = 600
    ) -> Completion:
        """One chat completion. Raises LLMError (without the key) when the endpoint fails."""
        try:
            response = self._client.chat.completions.create(
                model=self.settings.model,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                temperature=0,
                max_tokens=max_tokens,
                response_format={"type": "json_object"} if json_mode else openai.omit,
            )
        except openai.APIStatusError as exc:
            raise LLMError(f"LLM endpoint answered HTTP {exc.status_code} for model {self.model}") from None
        except openai.APITimeoutError:
            raise LLMError(f"LLM endpoint timed out after {self.settings.timeout_s}s") from None
        except openai.APIConnectionError:
            raise LLMError("LLM endpoint is unreachable") from None
        choice = response.choices[0] if response.choices else None
        text = choice.message.content if choice and choice.message else None
        if not text or not text.strip():
            raise LLMError("LLM returned an empty completion")
        usage = response.usage
        return Completion(
            text=text.strip(),
            model=response.model or self.model,
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
        )

    def check(self) -> str:
        """One authenticated 1-token completion, without retries, for ``connector doctor``: the
        model that answered. Raises LLMError saying why when the endpoint refuses the key (401/403),
        does not know the model (404) or cannot be reached; the key is never in the message."""
        where = self.settings.base_url or "api.openai.com"
        try:
            response = self._client.with_options(max_retries=0).chat.completions.create(
                model=self.settings.model,
                messages=[{"role": "user", "content": "ping"}],
                temperature=0,
                max_tokens=1,
            )
        except openai.AuthenticationError as exc:
            raise LLMError(
                f"LLM endpoint {where} refused the API key (HTTP {exc.status_code}); "
                "check llm.api_key (CONNECTOR_LLM__API_KEY)"
            ) from None
        except openai.PermissionDeniedError as exc:
            raise LLMError(
                f"LLM endpoint {where} denied the key access to model {self.model} (HTTP {exc.status_code})"
            ) from None
        except openai.NotFoundError as exc:
            raise LLMError(
                f"LLM endpoint {where} does not serve model {self.model} (HTTP {exc.status_code}); "
                "check llm.model and llm.base_url"
            ) from None
        except openai.APIStatusError as exc:
            raise LLMError(
                f"LLM endpoint {where} answered HTTP {exc.status_code} for model {self.model}"
            ) from None
        except openai.APITimeoutError:
            raise LLMError(f"LLM endpoint {where} timed out after {self.settings.timeout_s}s") from None
        except openai.APIConnectionError:
            raise LLMError(f"LLM endpoint {where} is unreachable") from None
        return response.model or self.model


def make_llm(settings: LLMSettings) -> LLMClient | None:
    """An LLM client when an endpoint is configured, else None (non-LLM mode)."""
    if not settings.enabled:
        return None
    return LLMClient(settings)
