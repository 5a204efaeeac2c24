"""Extraction of amounts, dates and document numbers from structured tool results."""

from __future__ import annotations

from connector.working.pins import extract_values, pin_kind


def by_name(result: object, tool: str = "t") -> dict[str, tuple[str, str]]:
    return {v.name: (v.value, v.kind) for v in extract_values(tool, result)}


def test_acumatica_wrapped_invoice() -> None:
    got = by_name({"ReferenceNbr": {"value": "INV-004821"}, "Amount": {"value": 1250.75}, "TaxZone": {}})
    assert got == {"INV-004821": ("INV-004821", "document"), "INV-004821.Amount": ("1250.75", "amount")}


def test_sap_v2_collection_with_decimal_strings_and_json_dates() -> None:
    result = {"d": {"results": [{"SalesOrder": "12345", "TotalNetAmount": "52.65",
                                 "CreationDate": "/Date(1471392000000)/"}]}}  # fmt: skip
    got = by_name(result)
    assert got["12345.TotalNetAmount"] == ("52.65", "amount")
    assert got["12345.CreationDate"] == ("2016-08-17", "date")


def test_document_numbers_in_free_text_and_detail_lines() -> None:
    result = {"OrderNbr": "SO-000123", "note": "see AR004821 and PO#778812",
              "Details": [{"OrderQty": 3}, {"OrderQty": 4}]}  # fmt: skip
    got = by_name(result)
    assert {"SO-000123", "AR004821", "PO#778812"} <= set(got)
    assert got["SO-000123.Details[0].OrderQty"] == ("3", "number")
    assert got["SO-000123.Details[1].OrderQty"] == ("4", "number")


def test_values_without_a_document_are_named_by_tool_and_path() -> None:
    assert by_name([{"balance": "5"}], tool="aging") == {"aging[0].balance": ("5", "amount")}
    assert by_name({"credit": {"RemainingCreditLimit": 10}}, tool="c") == {
        "c.credit.RemainingCreditLimit": ("10", "amount")
    }


def test_booleans_and_plain_text_are_not_pinned() -> None:
    assert by_name({"Hold": True, "Status": "Open", "total": "n/a"}) == {}


def test_limit_caps_the_number_of_values() -> None:
    result = [{"ReferenceNbr": f"INV-{i:06d}", "Amount": i} for i in range(100)]
    assert len(extract_values("t", result, limit=24)) == 24


def test_pin_kind_of_explicit_values() -> None:
    assert pin_kind("INV-004821") == "document"
    assert pin_kind("2026-01-05") == "date"
    assert pin_kind("1250.75") == "amount"
    assert pin_kind(3) == "number"
    assert pin_kind("net 30") == "text"
