"""Secrets never print: one redaction for every message, report and log line that may hold a URL.

``redact(text)`` masks what a URL or header can carry: the password of ``scheme://user:pass@host``
(a bare ``scheme://token@host`` loses the whole user part), credential query parameters
(``?api-key=``, ``&sig=``, ``token``, ``password``, ``client_secret`` ...), ``Bearer``/``Basic``
credentials and ``password=...`` pairs. Hosts, paths and every other parameter stay readable, so
an operator still sees *which* endpoint failed.

:func:`install_log_redaction` puts the same redaction in front of every handler of the root logger
(it wraps each handler's formatter, so the message, extra fields and tracebacks are all covered),
keeps httpx/httpcore request lines below INFO, and keeps the OpenAI client's debug lines (they
carry whole prompts) off unless the operator opted in. This module imports nothing from the rest
of the connector, so adapters can use it too.
"""

from __future__ import annotations

import logging
import re

MASK = "***"

_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<user>[^:/?#@\s]*)(?P<pw>:[^/?#@\s]*)?@")
_SECRET_PARAMS = (
    r"api[-_]?key|apikey|key|sig|signature|x-amz-signature|x-amz-credential|x-goog-signature|token|"
    r"access[-_]?token|refresh[-_]?token|id[-_]?token|auth|password|passwd|pwd|secret|client[-_]?secret|"
    r"code|session[-_]?id|sap-password"
)
_QUERY_SECRET = re.compile(rf"(?P<lead>[?&;#](?:{_SECRET_PARAMS})=)[^&#\s\"'<>]*", re.IGNORECASE)
# Bearer credentials of any length; Basic/Token only when long enough not to be a word of prose.
_SCHEME_CREDENTIAL = re.compile(
    r"\b(?:(?P<bearer>Bearer)\s+[A-Za-z0-9._~+/=-]{6,}|(?P<other>Basic|Token)\s+[A-Za-z0-9._~+/=-]{12,})",
    re.IGNORECASE,
)
_ASSIGNED_SECRET = re.compile(
    r"(?P<lead>\b(?:password|passwd|pwd|client_secret|api[-_]?key|access_token|refresh_token)"
    r"\s*[=:]\s*['\"]?)[^\s&'\",;]+",
    re.IGNORECASE,
)


def _userinfo(match: re.Match[str]) -> str:
    if match.group("pw") is None:
        return f"{match.group('scheme')}{MASK}@"
    return f"{match.group('scheme')}{match.group('user')}:{MASK}@"


def redact(text: str) -> str:
    """``text`` with URL passwords, credential parameters and auth headers masked."""
    if not text:
        return text
    text = _USERINFO.sub(_userinfo, text)
    text = _QUERY_SECRET.sub(lambda m: m.group("lead") + MASK, text)
    text = _SCHEME_CREDENTIAL.sub(lambda m: f"{m.group('bearer') or m.group('other')} {MASK}", text)
    return _ASSIGNED_SECRET.sub(lambda m: m.group("lead") + MASK, text)


class RedactingFormatter(logging.Formatter):
    """Formats with the wrapped formatter, then redacts the whole line (message, extras, traceback)."""

    def __init__(self, inner: logging.Formatter | None = None) -> None:
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        return redact(self.inner.format(record))


# Loggers whose lines carry request URLs (httpx, httpcore) or whole prompts (openai at debug).
HTTP_LOGGERS = ("httpx", "httpcore")
PROMPT_LOGGERS = ("openai", "openai._base_client")


def redact_root_handlers() -> None:
    """Wrap every root handler's formatter (again after handlers were replaced); idempotent."""
    for handler in logging.getLogger().handlers:
        if not isinstance(handler.formatter, RedactingFormatter):
            handler.setFormatter(RedactingFormatter(handler.formatter))


def install_log_redaction(*, verbose: bool = False, log_customer_text: bool = False) -> None:
    """Redact every root handler's output; HTTP request lines only when ``verbose``; LLM prompts
    only when ``verbose`` *and* ``log_customer_text`` (the ``log_customer_text`` setting)."""
    redact_root_handlers()
    for name in HTTP_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else logging.WARNING)
    for name in PROMPT_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if verbose and log_customer_text else logging.INFO)
