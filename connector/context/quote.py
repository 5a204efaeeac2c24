"""Render untrusted text as quoted data that cannot escape its quote.

Every line of customer, case or conversation text is prefixed with ``> ``; line breaks of every
kind (CR, LS, PS, NEL, VT, FF) become plain newlines first and control and bidi-override
characters are removed, so no piece of data can start a line of its own: a fake section header
or "ignore previous instructions" stays inside its quote. ERP values that belong on one line are
flattened instead.
"""

from __future__ import annotations

import re
import unicodedata

_LINE_BREAKS = re.compile(r"\r\n|[\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_SPACES = re.compile(r"[ \t]+")


def _keep(ch: str) -> bool:
    if ch == "\n":
        return True
    category = unicodedata.category(ch)
    return not (category == "Cc" or category == "Cf" or category == "Cs")


def clean(text: str) -> str:
    """Normalised line breaks, tabs as spaces, no control, format (bidi, zero-width) or surrogate chars."""
    text = _LINE_BREAKS.sub("\n", text).replace("\t", " ")
    if text.isascii() and text.isprintable():
        return text
    return "".join(ch for ch in text if _keep(ch))


def quote(text: str) -> str:
    """``text`` as a quoted block: every line starts with ``> `` (blank lines with ``>``)."""
    lines = clean(text).strip("\n").split("\n")
    return "\n".join(f"> {line.rstrip()}" if line.strip() else ">" for line in lines)


def one_line(value: object, limit: int = 200) -> str:
    """A value flattened to one line of at most ``limit`` characters (ERP names, descriptions)."""
    text = _SPACES.sub(" ", clean(str(value)).replace("\n", " ")).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
