"""The content hash: orjson builds the hashed text only where it equals the stdlib's exactly."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest

from connector.erp.records import (
    Address,
    Contact,
    DocumentRecord,
    PartyRecord,
    _jsonable,
    canonical_json,
    content_hash,
)


def stdlib(data: dict[str, Any]) -> bytes:
    """The definition the hash has always used."""
    return json.dumps(_jsonable(data), sort_keys=True, separators=(",", ":")).encode()


CASES: list[dict[str, Any]] = [
    {"b": "plain", "a": None, "c": True, "d": 0, "e": -1234567890123456789},
    {"umlaut": "München", "cjk": "中文", "astral": "emoji \U0001f600", "sep": "\u2028\u2029", "del": "\x7f"},
    {"ctl": "\x00\x01\x08\t\n\x0b\x0c\r\x1f", "quote": '"\\/'},
    {"money": Decimal("1.2300"), "nan": Decimal("NaN"), "neg0": Decimal("-0.00"), "big": Decimal("1E+30")},
    {
        "when": datetime(2026, 3, 1, 1, 2, 3, 4, tzinfo=timezone(timedelta(hours=-7))),
        "day": date(2026, 2, 28),
    },
    {
        "contacts": (Contact(role="main", name="Zoë"), Contact(role="billing")),
        "addresses": [Address(role="x")],
    },
    {"nested": {"z": [1, {"y": "ü", "x": [None, {"é": 1, "e": 2}]}], "a": ()}},
    {"huge": -12345678901234567890},  # beyond 64 bits: the stdlib path
    {"float": 1.5, "exp": 1e16, "small": 1e-7},  # floats: the stdlib path
    {"nan": float("nan"), "inf": float("inf")},
    {"deep": {"list": [[[2.5]]]}},
    {"keys": {1: "int key", "1": "str key"}},  # non-str keys: the stdlib path
    {"ünïcode keys": {"b": 1, "ä": 2, "a": 3}},
]


@pytest.mark.parametrize("data", CASES)
def test_canonical_json_is_the_stdlib_text(data: dict[str, Any]) -> None:
    assert canonical_json(data) == stdlib(data)


def test_hash_of_a_record_is_stable_and_ignores_raw() -> None:
    base = PartyRecord(
        tenant="t", kind="customer", external_id="C1", name="Café", credit_limit=Decimal("10.50"),
        contacts=(Contact(role="main", email="a@b"),), addresses=(Address(role="main", city="Köln"),),
        attributes={"B": "1", "A": None}, extra={"lines": [{"q": "2"}]},
        source_modified_at=datetime(2026, 1, 1, tzinfo=UTC), raw={"x": 1},
    )  # fmt: skip
    same_but_raw = PartyRecord(**{**{f: getattr(base, f) for f in base.__slots__}, "raw": {"x": 2}})  # type: ignore[arg-type]
    assert content_hash(base) == content_hash(same_but_raw)
    # Pinned: a different hash than earlier versions computed would rewrite every row once.
    assert content_hash(base) == "c6742efd863437a134ed02aa2963228df5f9a3572ccdb23913a98aaa479c6f68"


def test_documents_with_equal_content_hash_equal_and_a_change_shows() -> None:
    doc = DocumentRecord(
        tenant="t", doc_type="ar_invoice", external_id="INV/1", number="1", party_kind="customer",
        party_external_id="C1", amount=Decimal("1.00"), doc_date=date(2026, 1, 2),
    )  # fmt: skip
    assert content_hash(doc) == content_hash(DocumentRecord(**{f: getattr(doc, f) for f in doc.__slots__}))  # type: ignore[arg-type]
    changed = DocumentRecord(**{**{f: getattr(doc, f) for f in doc.__slots__}, "amount": Decimal("1.01")})  # type: ignore[arg-type]
    assert content_hash(changed) != content_hash(doc)


@pytest.mark.parametrize("data", [c for c in CASES[:7]])
def test_float_free_str_keyed_data_takes_the_orjson_path(
    data: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = stdlib(data)

    def refuse(*_args: Any, **_kw: Any) -> str:
        raise AssertionError("the stdlib path was taken")

    monkeypatch.setattr("connector.erp.records.json.dumps", refuse)
    assert canonical_json(data) == expected
