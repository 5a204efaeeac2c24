"""Normalised fact text: the identity used to merge a repeated fact instead of storing a copy."""

from __future__ import annotations

import hashlib
import re
import unicodedata

MAX_FACT_CHARS = 500

_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = re.compile(r"^[\s\"'“”‘’`.,;:!?-]+|[\s\"'“”‘’`.,;:!?-]+$")


def clean_content(text: str) -> str:
    """The text as stored: Unicode-normalised, whitespace collapsed, trimmed."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def normalise(text: str) -> str:
    """Case-, whitespace- and edge-punctuation-insensitive form of a fact."""
    return _EDGE_PUNCT.sub("", clean_content(text).casefold())


def content_key(text: str) -> str:
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()
