"""Readable labels for what the context shows: document kinds, their dates, ERP field names.

The labels are per ERP because the same idea has different raw names (Acumatica's
``open_orders_balance``, SAP's ``company_code``); the raw name stays in each item's provenance
id, so a program can still find the field. A name without a label is shown as words
(``PRICE_CLASS`` -> ``price class``), never dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ERP_NAMES = {"acumatica": "Acumatica", "sap": "SAP"}

# (singular, plural)
DOC_KINDS: dict[str, tuple[str, str]] = {
    "ar_invoice": ("AR invoice", "AR invoices"),
    "credit_memo": ("credit memo", "credit memos"),
    "sales_order": ("sales order", "sales orders"),
    "ap_bill": ("AP bill", "AP bills"),
    "open_item": ("open item", "open items"),
}
# What a document's two dates mean, per kind: (doc_date label, due_date label).
DOC_DATES: dict[str, tuple[str, str]] = {
    "ar_invoice": ("dated", "due"),
    "ap_bill": ("dated", "due"),
    "credit_memo": ("dated", "applies by"),
    "sales_order": ("ordered", "requested"),
    "open_item": ("dated", "due"),
}


@dataclass(frozen=True, slots=True)
class FieldLabel:
    label: str
    money: bool = False  # an amount in the party's currency
    unit: str = ""


_PARTY_FIELDS: dict[str, dict[str, FieldLabel]] = {
    "acumatica": {
        "remaining_credit_limit": FieldLabel("remaining credit limit", money=True),
        "open_orders_balance": FieldLabel("open orders balance", money=True),
        "credit_days_past_due": FieldLabel("credit days past due", unit="days"),
        "tax_exemption_number": FieldLabel("tax exemption number"),
        "price_class": FieldLabel("price class"),
        "parent_account": FieldLabel("parent account"),
        "legal_name": FieldLabel("legal name"),
        "payment_method": FieldLabel("payment method"),
    },
    "sap": {
        "business_partner": FieldLabel("business partner"),
        "category": FieldLabel("partner category"),
        "customer": FieldLabel("SAP customer number"),
        "supplier": FieldLabel("SAP supplier number"),
        "company_code": FieldLabel("company code"),
        "payment_methods": FieldLabel("payment methods"),
        "sales_area": FieldLabel("sales area (organisation/channel/division)"),
        "incoterms": FieldLabel("incoterms"),
        "price_group": FieldLabel("price group"),
    },
}
_ATTRIBUTES: dict[str, dict[str, str]] = {
    "sap": {
        "order_block": "order block",
        "delivery_block": "delivery block",
        "billing_block": "billing block",
        "posting_block": "posting block",
        "purchasing_block": "purchasing block",
        "payment_block": "payment block",
        "company_payment_block": "payment block (company code)",
    },
}


def erp_name(kind: str | None) -> str:
    """The ERP's product name for messages such as "balance not available from SAP"."""
    return ERP_NAMES.get(kind or "", "the ERP")


def words(name: str) -> str:
    """A raw field name as words: ``PO_REQUIRED`` -> ``PO required``, ``creditDays`` -> ``credit days``."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).replace("_", " ").strip()
    parts = spaced.split()
    return " ".join(p if len(p) <= 3 and p.isupper() else p.lower() for p in parts) or name


def party_field(erp: str | None, name: str) -> FieldLabel:
    return _PARTY_FIELDS.get(erp or "", {}).get(name) or FieldLabel(words(name))


def attribute_label(erp: str | None, name: str, own: Mapping[str, str] | None = None) -> str:
    """The ERP's own label, ours, or for a custom field (``View.Field``) its dotted name; else words."""
    known = (own or {}).get(name) or _ATTRIBUTES.get(erp or "", {}).get(name)
    if known:
        return known
    if "." in name:
        return f"custom field {name}"
    return words(name)


def _unwrap(value: Any) -> Any:
    return value.get("value") if isinstance(value, dict) else value


def erp_attribute_labels(erp: str | None, raw: Any) -> dict[str, str]:
    """Labels the ERP itself gives its attributes (Acumatica's ``AttributeDescription``)."""
    if erp != "acumatica" or not isinstance(raw, dict) or not isinstance(raw.get("Attributes"), list):
        return {}
    found: dict[str, str] = {}
    for item in raw["Attributes"]:
        if isinstance(item, dict):
            name, label = _unwrap(item.get("AttributeID")), _unwrap(item.get("AttributeDescription"))
            if isinstance(name, str) and isinstance(label, str) and label.strip():
                found[name] = label.strip()
    return found


def status_text(status: str) -> str:
    """An ERP status code as words (``partially_cleared`` -> ``partially cleared``)."""
    return status.replace("_", " ")


def kind_label(doc_type: str, count: int = 1) -> str:
    singular, plural = DOC_KINDS.get(doc_type, (doc_type, doc_type))
    return singular if count == 1 else plural


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """``1 invoice``, ``2 invoices``, ``1,000 invoices``."""
    return f"{count:,} {singular if count == 1 else (plural or singular + 's')}"
