"""Acumatica's error dialect, decoded into the project's error tree.

The REST API answers most failures with a 500 and a body ``{"message", "exceptionMessage",
"exceptionType"}``; the status alone cannot say what to do. The rules, in order:

* ``"API Login Limit"`` in the message: too many sessions for the licence -> rate limited (retry later);
* ``"Invalid credentials"``: -> auth failed, never retried;
* ``…NoEntitySatisfiesTheConditionException``: the record does not exist -> not found;
* any other 500 raised by the framework (``PX.*`` types) is a business error -> fail, not retried,
  unless it names a lock, deadlock or timeout, which pass;
* the OAuth token endpoint's ``{"error": "invalid_grant" | "invalid_client" | …}`` -> auth failed;
* everything else follows the status table of :mod:`connector.adapters.http`.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from connector.adapters.http import Action, ErrorDecoder, action_for_status, body_excerpt, error_for_action
from connector.errors import ERPError

ERP_NAME = "Acumatica"
NOT_FOUND_TYPE = "NoEntitySatisfiesTheConditionException"
_TRANSIENT_MARKERS = ("LockViolation", "Deadlock", "Timeout", "SqlException")
_OAUTH_AUTH_ERRORS = frozenset({"invalid_grant", "invalid_client", "unauthorized_client", "access_denied"})
_MAX_MESSAGE = 500


def _body(response: httpx.Response) -> dict[str, Any]:
    try:
        data = json.loads(response.content) if response.content else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


LOGIN_LIMIT_HINT = (
    "the likely cause is API sessions left open by earlier runs that were killed before logging out "
    "(each holds one of the licence's logins until its idle timeout, about 10 minutes); the next sync "
    "logs out the one its previous run recorded, or sign the sessions out in Acumatica"
)


def _short(text: str | None) -> str | None:
    if text is None:
        return None
    text = " ".join(str(text).split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _model_state(value: Any) -> str | None:
    """``{"": ["The request body should not be empty."], "CustomerID": ["..."]}`` as one line."""
    if not isinstance(value, dict):
        return None
    parts: list[str] = []
    for name, messages in value.items():
        texts = [str(m) for m in messages] if isinstance(messages, list) else [str(messages)]
        parts.extend(f"{name}: {t}" if name else t for t in texts)
    return "; ".join(parts) or None


def classify(status: int, exception_type: str | None, message: str | None, oauth_error: str | None) -> Action:
    """The action for an Acumatica answer (see the module docstring for the rules)."""
    text = message or ""
    if "API Login Limit" in text:
        return Action.RATE_LIMITED
    if "Invalid credentials" in text:
        return Action.AUTH_FAILED
    if exception_type and exception_type.endswith(NOT_FOUND_TYPE):
        return Action.NOT_FOUND
    if oauth_error in _OAUTH_AUTH_ERRORS:
        return Action.AUTH_FAILED
    if status == 500 and exception_type and exception_type.startswith("PX."):
        if any(marker in exception_type for marker in _TRANSIENT_MARKERS):
            return Action.RETRY
        return Action.FAIL
    return action_for_status(status)


def decoder(tenant: str | None = None) -> ErrorDecoder:
    """The :data:`~connector.adapters.http.ErrorDecoder` for Acumatica responses of ``tenant``."""

    def decode(response: httpx.Response, retry_after: float | None) -> ERPError:
        body = _body(response)
        exception_type = (
            _short(body.get("exceptionType")) if isinstance(body.get("exceptionType"), str) else None
        )
        raw_message = body.get("exceptionMessage") or body.get("message")
        exception_message = _short(raw_message) if isinstance(raw_message, str) else None
        oauth_error = body.get("error") if isinstance(body.get("error"), str) else None
        oauth_text = body.get("error_description") if isinstance(body.get("error_description"), str) else None
        model_state = _model_state(body.get("modelState"))
        if model_state:  # a 400 says only "The request is invalid."; the detail is in modelState
            exception_message = _short(f"{exception_message or 'The request is invalid'}: {model_state}")
        action = classify(response.status_code, exception_type, exception_message, oauth_error)
        detail: str | None
        if exception_message:
            detail = (
                f"{exception_type.rsplit('.', 1)[-1]}: {exception_message}"
                if exception_type
                else exception_message
            )
        elif oauth_error:
            detail = f"{oauth_error}" + (f" ({_short(oauth_text)})" if oauth_text else "")
        else:
            detail = body_excerpt(response, 200) or None
        if "API Login Limit" in (exception_message or ""):
            detail = f"{detail}; {LOGIN_LIMIT_HINT}"
        return error_for_action(
            action,
            erp=ERP_NAME,
            request=response.request,
            status_code=response.status_code,
            detail=detail,
            retry_after=retry_after,
            exception_type=exception_type,
            exception_message=exception_message,
            code=oauth_error,
            tenant=tenant,
        )

    return decode
