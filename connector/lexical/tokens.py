"""Terms of a text for the lexical index: words, names, numbers, dates and document numbers.

Why our own tokenizer: the same terms must come out on SQLite and PostgreSQL, and the ones an agent
asks about are exactly those a general full-text parser mangles or drops. A date is one term whatever
its spelling ("14 March", "March 14th", "2026-03-14" -> ``d0314``, plus the month and, when given, the
year), so "the 14 March call" finds a case dated 2026-03-14. Amounts lose thousands separators and
trailing zeros ("1,250.00" -> ``1250``, "312.40" -> ``312.4``); document numbers are one term
(``INV-004821`` -> ``inv004821``) plus their digits. Text is NFKC-normalised, accents are folded,
case is folded, English stop words are dropped and a small suffix stripper folds plurals and verb
endings ("charged", "charges" -> ``charg``). Queries are plain text: no character is syntax, so
quotes, ``*``, ``OR``, ``NEAR``, ``-`` and ``:`` are separators or ordinary words.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from datetime import date
from decimal import Decimal, InvalidOperation
from functools import lru_cache

MAX_QUERY_CHARS = 4_000  # a longer query is searched by its beginning (as the embedder truncates)
MAX_QUERY_TERMS = 32  # distinct terms of a query; the rest add cost, not precision
MAX_TERM_CHARS = 64  # longer "words" (hashes, base64) are indexed by their first 64 characters

_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
    "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
    "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}  # fmt: skip
_MONTH_NAMES = (
    "", "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ORDINAL = r"(?:st|nd|rd|th)?"
_DATES = (
    (re.compile(r"(\d(?<!\d\d)\d{3})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)"), ("year", "month", "day")),
    (
        re.compile(rf"(\d(?<!\w\d)\d?){_ORDINAL}\s+(?:of\s+)?({_MONTH})\b\.?(?:,?\s+(\d{{4}})(?!\d))?"),
        ("day", "month", "year"),
    ),
    (
        re.compile(rf"\b({_MONTH})\b\.?\s+(\d{{1,2}}){_ORDINAL}(?![\w])(?:,?\s+(\d{{4}})(?!\d))?"),
        ("month", "day", "year"),
    ),
)
_DOCUMENT = re.compile(r"(?<![^\W\d_])([^\W\d_]{2,5})[-#]?(\d{3,12})(?![\w])")
_AMOUNT = re.compile(r"(\d(?<![\w.,]\d)(?:\d{0,2}(?:,\d{3})+(?:\.\d+)?|\d*\.\d+))(?![\w]|[.,]\d)")
_WORD = re.compile(r"[^\W_]+(?:'[^\W\d_]+)?")

_STOP_WORDS_TEXT = """a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does doesn't doing
    don't down during each few for from further had hadn't has hasn't have haven't having he he'd
    he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if in into
    is isn't it it's its itself let's me more most mustn't my myself no nor not of off on once only
    or other ought our ours ourselves out over own same shan't she she'd she'll she's should
    shouldn't so some such than that that's the their theirs them themselves then there there's
    these they they'd they'll they're they've this those through to too under until up very was
    wasn't we we'd we'll we're we've were weren't what what's when when's where where's which while
    who who's whom why why's with won't would wouldn't you you'd you'll you're you've your yours
    yourself yourselves also just yes ok okay oh"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())


def _fold(text: str) -> str:
    """NFKC, accents removed, case folded: ``José`` and ``JOSE`` are one name."""
    if text.isascii():  # nothing to normalise or strip (most case text; the general path is slow)
        return text.lower()
    return fold_unicode(text)


def fold_unicode(text: str) -> str:
    """:func:`_fold` for any text (per character: a third of the ingest's tokenising time)."""
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return stripped.casefold().replace("\u2019", "'")


def date_terms(day: date) -> list[str]:
    """The terms a calendar date is indexed under (month-day, month name, year)."""
    return [f"d{day.month:02d}{day.day:02d}", _MONTH_NAMES[day.month], str(day.year)]


def _date_match(match: re.Match[str], order: tuple[str, ...]) -> list[str] | None:
    parts = dict(zip(order, match.groups(), strict=True))
    month_part = parts["month"]
    month = int(month_part) if month_part.isdigit() else _MONTHS[month_part]
    day = int(parts["day"])
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    terms = [f"d{month:02d}{day:02d}", _MONTH_NAMES[month]]
    if parts.get("year"):
        terms.append(str(int(parts["year"])))
    return terms


def _amount(text: str) -> str:
    try:
        value = Decimal(text.replace(",", ""))
    except InvalidOperation:
        return text
    return format(value.normalize(), "f")


def stem(word: str) -> str:
    """A small suffix stripper (plurals, -ing, -ed, -ly, final e): enough to join word forms."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]
            break
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


@lru_cache(maxsize=1 << 16)
def _word_term(word: str) -> str | None:
    """A word's term, None for a stop word or a lone letter; cached: a word stems the same
    everywhere, and the words of a store repeat (stemming them was a fifth of tokenising)."""
    if word.endswith("'s"):
        word = word[:-2]
    if word in STOP_WORDS or (len(word) == 1 and not word.isdigit()):
        return None
    return stem(word.replace("'", ""))


def _blank(text: str, span: tuple[int, int]) -> str:
    return text[: span[0]] + " " * (span[1] - span[0]) + text[span[1] :]


def terms(text: str) -> list[str]:
    """Every indexed term of ``text``, in order (repeats kept: they are the term frequencies)."""
    folded = _fold(text)
    found: list[tuple[int, list[str]]] = []
    for pattern, order in _DATES:
        for match in pattern.finditer(folded):
            date_found = _date_match(match, order)
            if date_found is not None:
                found.append((match.start(), date_found))
                folded = _blank(folded, match.span())
    for match in _DOCUMENT.finditer(folded):
        prefix, digits = match.groups()
        found.append((match.start(), [prefix + digits, digits]))
        folded = _blank(folded, match.span())
    for match in _AMOUNT.finditer(folded):
        found.append((match.start(), [_amount(match.group(1))]))
        folded = _blank(folded, match.span())
    for match in _WORD.finditer(folded):
        term = _word_term(match.group(0))
        if term is not None:
            found.append((match.start(), [term]))
    found.sort(key=lambda item: item[0])
    return [term[:MAX_TERM_CHARS] for _, group in found for term in group]


def term_counts(text: str) -> Counter[str]:
    return Counter(terms(text))


def query_terms(query: str) -> list[str]:
    """A query's distinct terms in first-seen order, capped (a 1 MB query costs what 4,000 chars do)."""
    return list(dict.fromkeys(terms(query[:MAX_QUERY_CHARS])))[:MAX_QUERY_TERMS]


def same_words(a: str, b: str, *, overlap: float = 0.8) -> bool:
    """Whether two texts say the same thing in (nearly) the same terms: equal numbers, amounts,
    dates and document numbers, and at least ``overlap`` of their distinct terms shared.

    Embeddings barely see names and numbers, so "Anna: the audit is on 3 July" and "Mei: the audit
    is on 1 October" have a cosine above 0.95; this keeps such texts apart.
    """
    ta, tb = set(terms(a)), set(terms(b))
    values_a = {t for t in ta if any(ch.isdigit() for ch in t)}
    values_b = {t for t in tb if any(ch.isdigit() for ch in t)}
    union = ta | tb
    return values_a == values_b and (not union or len(ta & tb) >= overlap * len(union))
