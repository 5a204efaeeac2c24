"""Time in the question: the span of dates a query's own words point at, against its ``as_of``.

"What did we agree last week?", "the call in March", "two days ago", "on 2026-03-14": such words
name when the turn was said, which neither the embedding nor BM25 can see in the turn itself (its
date is metadata). :func:`span` returns that span (start inclusive, end exclusive), or None when the
query names no time; recall then keeps only the turns dated inside it, and falls back to all of
them when none is (a span read wrongly must not empty a recall). A month without a year is the last
such month not after ``as_of``. "The past two months" is the span up to ``as_of``; "last weekend" the
last Saturday to Monday (a weekend is often told a day late), "last Friday" that day and the next.
Only explicit forms are read: "how many days ago did I ..." names no span (no number), and future
time ("next week", "this weekend") narrows nothing.
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
_LAST = re.compile(
    r"\b(yesterday|today|this week|last week|past week|this month|past month|last month|last year)\b"
)
# "the past two months", "in the last 3 weeks", "over the past few days": the span up to as_of
_WITHIN = re.compile(rf"\b(?:past|last|previous)\s+({_COUNT})\s+(day|week|month|year)s?\b")
_WEEKEND = re.compile(r"\b(?:last|past)\s+weekend\b")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY = re.compile(rf"\blast\s+({'|'.join(_WEEKDAYS)})\b")
# "in March", "March 2026", "during May" (not "may I"): a month name after in/during/of/since or before a year
_MONTH_NAME = "|".join(sorted(_MONTHS, key=len, reverse=True))
_MONTH_RANGE = re.compile(rf"\bfrom\s+({_MONTH_NAME})\s+(?:to|until|through|till)\s+({_MONTH_NAME})\b")
_MONTH = re.compile(
    rf"\b(?:in|during|of|early|late|mid)\s+({_MONTH_NAME})\b(?:\s+(\d{{4}}))?|\b({_MONTH_NAME})\s+(\d{{4}})\b"
)


def _day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_span(year: int, month: int, as_of: datetime) -> tuple[datetime, datetime]:
    start = as_of.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)
    end = start.replace(year=year + 1, month=1) if month == 12 else start.replace(month=month + 1)
    return start, end


def span(query: str, as_of: datetime, *, absolute: bool = True) -> tuple[datetime, datetime] | None:
    """The dates ``query`` points at (see the module doc), or None. ``absolute=False``: relative
    time only ("last week", "two days ago"), for texts whose dates the lexical index already holds
    (a case's date terms), where "due on 2025-12-28" or "in March" may name what the case is about."""
    text = query.lower()
    iso = _ISO.search(text) if absolute else None
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
    within = _WITHIN.search(text)
    if within:
        count = int(within[1]) if within[1].isdigit() else _NUMBERS[within[1]]
        today = _day(as_of)
        return today - timedelta(days=count * _UNIT_DAYS[within[2]]), today + timedelta(days=1)
    weekend = _WEEKEND.search(text)
    if weekend:  # the last Saturday before today, to the Monday after (told a day late)
        saturday = _day(as_of) - timedelta(days=(as_of.weekday() - 5) % 7 or 7)
        return saturday, saturday + timedelta(days=3)
    weekday = _WEEKDAY.search(text)
    if weekday:  # the last such day before today, and the day after
        back = (as_of.weekday() - _WEEKDAYS.index(weekday[1])) % 7 or 7
        day = _day(as_of) - timedelta(days=back)
        return day, day + timedelta(days=2)
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
        if word in ("this month", "past month"):
            return today - timedelta(days=31), today + timedelta(days=1)
        if word == "last month":
            return today - timedelta(days=62), today
        return today - timedelta(days=730), today  # last year
    if not absolute:
        return None
    months = _MONTH_RANGE.search(text)
    if months:
        first, last_month = _MONTHS[months[1]], _MONTHS[months[2]]
        end_year = as_of.year if last_month <= as_of.month else as_of.year - 1
        start_year = end_year if first <= last_month else end_year - 1
        return _month_span(start_year, first, as_of)[0], _month_span(end_year, last_month, as_of)[1]
    month = _MONTH.search(text)
    if month:
        name = month[1] or month[3]
        year_text = month[2] or month[4]
        number = _MONTHS[name]
        year = int(year_text) if year_text else (as_of.year if number <= as_of.month else as_of.year - 1)
        return _month_span(year, number, as_of)
    return None
