"""Render untrusted text as quoted data that cannot escape its quote.

Every line of customer, case or conversation text is prefixed with ``> ``; line breaks of every
kind (CR, LS, PS, NEL, VT, FF) become plain newlines first and control and bidi-override
characters are removed, so no piece of data can start a line of its own: a fake section header
or "ignore previous instructions" stays inside its quote. ERP values that belong on one line are
flattened instead.
"""

from __future__ import annotations

import re

_LINE_BREAKS = re.compile(r"\r\n|[\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_SPACES = re.compile(r"[ \t]+")
_ASCII_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")


# Code points of categories Cc, Cf and Cs except newline (Unicode as of Python 3.11-3.13);
# tests/context/test_context_quoting.py checks this table against the running Python's unicodedata.
_UNSAFE_RANGES = (
    (0x0, 0x9), (0xB, 0x1F), (0x7F, 0x9F), (0xAD, 0xAD), (0x600, 0x605), (0x61C, 0x61C), (0x6DD, 0x6DD),
    (0x70F, 0x70F), (0x890, 0x891), (0x8E2, 0x8E2), (0x180E, 0x180E), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x2064), (0x2066, 0x206F), (0xD800, 0xDFFF), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001), (0xE0020, 0xE007F),
)  # fmt: skip
_UNSAFE = re.compile("[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in _UNSAFE_RANGES) + "]")


def unsafe_chars() -> re.Pattern[str]:
    """Every control, format (bidi, zero-width) and surrogate code point but newline, as one class."""
    return _UNSAFE


def clean(text: str) -> str:
    """Normalised line breaks, tabs as spaces, no control, format (bidi, zero-width) or surrogate chars."""
    if text.isprintable():  # no line break, tab, control, format or surrogate char: nothing to do
        return text
    text = _LINE_BREAKS.sub("\n", text).replace("\t", " ")
    if text.isascii():  # the common case needs no Unicode tables
        return _ASCII_CONTROL.sub("", text)
    return unsafe_chars().sub("", text)


def quote(text: str) -> str:
    """``text`` as a quoted block: every line starts with ``> `` (blank lines with ``>``)."""
    lines = clean(text).strip("\n").split("\n")
    return "\n".join(f"> {line.rstrip()}" if line.strip() else ">" for line in lines)


def one_line(value: object, limit: int = 200) -> str:
    """A value flattened to one line of at most ``limit`` characters (ERP names, descriptions)."""
    raw = str(value)
    if raw.isprintable() and "  " not in raw:  # the common case: nothing to clean or collapse
        text = raw.strip()
    else:
        text = _SPACES.sub(" ", clean(raw).replace("\n", " ")).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
