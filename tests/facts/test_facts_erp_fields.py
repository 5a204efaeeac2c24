"""The ERP-field rule's pattern check: facts the ERP holds are recognised, the rest are kept."""

from __future__ import annotations

import pytest

from connector.facts.erp_fields import erp_field_in, erp_field_reason


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ("Credit limit was raised to 75,000", "credit limit"),
        ("They have a credit line of 10k", "credit limit"),
        ("Payment terms are 2/10 net 30", "payment terms"),
        ("Pays on NET30", "payment terms"),
        ("Invoices are due within 45 days", "payment terms"),
        ("Their currency is CAD", "currency"),
        ("Wants to be invoiced in euros", "currency"),
        ("Customer is tax-exempt", "tax status"),
        ("Uses tax zone CA-SF", "tax status"),
        ("VAT number changed last month", "tax status"),
        ("Account is on hold", "account status"),
        ("Customer status is inactive", "account status"),
        ("Billing contact is ap@bartender.example", "e-mail address"),
    ],
)
def test_facts_about_erp_fields_are_recognised(content: str, field: str) -> None:
    assert erp_field_in(content) == field


@pytest.mark.parametrize(
    "content",
    [
        "Prefers troubleshooting steps by e-mail",
        "Always wants the PO number on the invoice line",
        "Accounts payable only processes invoices on Tuesdays",
        "Prefers a phone call before any payment reminder",
        "Likes short answers with the document number first",
        "The warehouse manager Ana approves returns",
    ],
)
def test_facts_with_no_home_in_the_erp_are_kept(content: str) -> None:
    assert erp_field_in(content) is None
    assert erp_field_reason(content, "preference") is None


def test_a_declared_erp_category_drops_even_innocent_looking_text() -> None:
    reason = erp_field_reason("The agreed amount is 20k", "ERP_Field", "credit_limit")
    assert reason is not None and "credit_limit" in reason
