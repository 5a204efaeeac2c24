"""Time in the question: the span of dates a query's own words point at, against its ``as_of``.

"What did we agree last week?", "the call in March", "two days ago", "on 2026-03-14": such words
name when the turn was said, which neither the embedding nor BM25 can see in the turn itself (its
date is metadata). :func:`span` returns that span (start inclusive, end exclusive), or None when the
query names no time; recall then keeps only the turns dated inside it, and falls back to all of
them when none is (a span read wrongly must not empty a recall). A month without a year is the last
such month not after ``as_of``. Only explicit forms are read: "how many days ago did I ..." names no
span (no number), so it narrows nothing.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
    "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "couple of": 2, "few": 3,
}  # fmt: skip
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_COUNT = r"\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple of|few"
_AGO = re.compile(rf"\b({_COUNT})\s+(day|week|month|year)s?\s+ago\b")
_LAST = re.compile(r"\b(yesterday|today|this week|last week|past week|this month|last month|last year)\b")
# "in March", "March 2026", "during May" (not "may I"): a month name after in/during/of/since or before a year
_MONTH_NAME = "|".join(sorted(_MONTHS, key=len, reverse=True))
_MONTH = re.compile(
    rf"\b(?:in|during|of|early|late|mid)\s+({_MONTH_NAME})\b(?:\s+(\d{{4}}))?|\b({_MONTH_NAME})\s+(\d{{4}})\b"
)


def _day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_span(year: int, month: int, as_of: datetime) -> tuple[datetime, datetime]:
    start = as_of.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)
    end = start.replace(year=year + 1, month=1) if month == 12 else start.replace(month=month + 1)
    return start, end


def span(query: str, as_of: datetime) -> tuple[datetime, datetime] | None:
    """The dates ``query`` points at (see the module doc), or None."""
    text = query.lower()
    iso = _ISO.search(text)
    if iso:
        try:
            day = as_of.replace(
                year=int(iso[1]),
                month=int(iso[2]),
                day=int(iso[3]),
                hour=0,
                minute=0,
                second=0,
                microsecond=0,
            )
        except ValueError:
            return None
        return day, day + timedelta(days=1)
    ago = _AGO.search(text)
    if ago:
        count = int(ago[1]) if ago[1].isdigit() else _NUMBERS[ago[1]]
        days = count * _UNIT_DAYS[ago[2]]
        margin = max(1, days // 7)  # "three weeks ago" is a week or so either side, "two days ago" a day
        centre = _day(as_of) - timedelta(days=days)
        return centre - timedelta(days=margin), centre + timedelta(days=margin + 1)
    last = _LAST.search(text)
    if last:
        today = _day(as_of)
        word = last[1]
        if word == "today":
            return today, today + timedelta(days=1)
        if word == "yesterday":
            return today - timedelta(days=1), today
        if word in ("this week", "past week"):
            return today - timedelta(days=7), today + timedelta(days=1)
        if word == "last week":
            return today - timedelta(days=14), today
        if word == "this month":
            return today - timedelta(days=31), today + timedelta(days=1)
        if word == "last month":
            return today - timedelta(days=62), today
        return today - timedelta(days=730), today  # last year
    month = _MONTH.search(text)
    if month:
        name = month[1] or month[3]
        year_text = month[2] or month[4]
        number = _MONTHS[name]
        year = int(year_text) if year_text else (as_of.year if number <= as_of.month else as_of.year - 1)
        return _month_span(year, number, as_of)
    return None
