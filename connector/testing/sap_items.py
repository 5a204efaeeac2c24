"""The fake SAP's open AR/AP items (``A_OperationalAcctgDocItemCube``), as FI posts them.

Each uncancelled billing document posts a customer item (account type ``D``, debit ``S``, the
gross amount, positive); a paid invoice's item is cleared (``IsCleared``, ``ClearingDate``,
``ClearingAccountingDocument``), a partly paid one stays open beside an open partial payment
(``DZ``, credit ``H``, negative). Suppliers get vendor invoices (``K``, credit, negative). Items
draw from their own random stream, so adding them changed none of the other generated data.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, tzinfo
from decimal import Decimal

from connector.testing.datagen import DataGen
from connector.testing.sap_data import Row, SAPData

COMPANY_CODE = "1010"
_DUE_DAYS = 30
_NEXT_DOCUMENT = {"RV": 1_800_000_000, "DZ": 1_400_000_000, "KR": 5_100_000_000}


def item_key(row: Row) -> str:
    """The item's external id as the adapter builds it from the four key fields."""
    return "/".join(
        row[k] for k in ("CompanyCode", "FiscalYear", "AccountingDocument", "AccountingDocumentItem")
    )


class ItemPoster:
    """Posts items into ``data.open_items``; also used by the fake's helpers."""

    def __init__(self, data: SAPData, seed: int, zone: tzinfo, now: datetime) -> None:
        self.data = data
        self.gen = DataGen(seed * 7919 + 17)
        self.zone = zone
        self.now = now
        self._next = dict(_NEXT_DOCUMENT)

    def _number(self, doc_type: str) -> str:
        self._next[doc_type] += 1
        return str(self._next[doc_type])

    def post(
        self,
        *,
        kind: str,
        party: str,
        amount: Decimal,
        currency: str,
        posted: date,
        doc_type: str,
        due: date | None = None,
        billing_document: str = "",
        sales_document: str = "",
        reference: str = "",
        invoice_reference: str = "",
    ) -> str:
        """One item on a customer (``kind="D"``) or supplier (``"K"``) account; ``amount`` is signed."""
        number = self._number(doc_type)
        row: Row = {
            "CompanyCode": COMPANY_CODE,
            "FiscalYear": str(posted.year),
            "AccountingDocument": number,
            "AccountingDocumentItem": "1" if kind == "D" else "2",
            "FinancialAccountType": kind,
            "Customer": party if kind == "D" else "",
            "Supplier": party if kind == "K" else "",
            "DebitCreditCode": "S" if amount >= 0 else "H",
            "IsCleared": False,
            "ClearingDate": None,
            "ClearingAccountingDocument": "",
            "NetDueDate": due or posted + timedelta(days=_DUE_DAYS),
            "PostingDate": posted,
            "DocumentDate": posted,
            "DocumentReferenceID": reference,
            "BillingDocument": billing_document,
            "SalesDocument": sales_document,
            "InvoiceReference": invoice_reference,
            "AccountingDocumentType": doc_type,
            "PaymentTerms": "NT30",
            "PaymentBlockingReason": "",
            "DunningLevel": "0",
            "LastDunningDate": None,
            "AmountInTransactionCurrency": amount,
            "TransactionCurrency": currency,
            "AmountInCompanyCodeCurrency": amount,
            "CompanyCodeCurrency": currency,
            "AccountingDocumentCreationDate": posted,
            "LastChangeDate": None,
        }
        key = item_key(row)
        self.data.open_items[key] = row
        return key

    def clear(self, key: str, on: date) -> None:
        row = self.data.open_items[key]
        row["IsCleared"] = True
        row["ClearingDate"] = on
        row["ClearingAccountingDocument"] = self._number("DZ")

    def for_billing_document(self, bd: Row) -> None:
        """The receivable a billing document posts, cleared or partly paid per its clearing status."""
        if bd["BillingDocumentIsCancelled"]:
            return
        gross: Decimal = bd["TotalGrossAmount"]
        credit = bd["SDDocumentCategory"] in ("O", "6")
        posted: date = bd["BillingDocumentDate"]
        common = {
            "kind": "D",
            "party": bd["PayerParty"] or bd["SoldToParty"],
            "currency": bd["TransactionCurrency"],
            "posted": posted,
        }
        key = self.post(
            amount=-gross if credit else gross,
            doc_type="DG" if credit else "RV",
            billing_document=bd["BillingDocument"],
            reference=bd["BillingDocument"],
            **common,
        )
        status = bd["InvoiceClearingStatus"]
        if status == "C":
            self.clear(key, min(posted + timedelta(days=5 + self.gen.below(40)), self.now.date()))
        elif status == "B":
            paid = (gross * Decimal("0.4")).quantize(Decimal("0.01"))
            self.post(
                amount=-paid,
                doc_type="DZ",
                invoice_reference=self.data.open_items[key]["AccountingDocument"],
                **common,
            )

    def for_supplier(self, supplier: str, currency: str) -> None:
        """A few vendor invoices; the older ones paid."""
        for _ in range(self.gen.below(3)):
            posted = (self.now - timedelta(days=self.gen.below(120))).astimezone(self.zone).date()
            amount = self.gen.amount(100, 40_000)
            key = self.post(
                kind="K",
                party=supplier,
                amount=-amount,
                currency=currency,
                posted=posted,
                doc_type="KR",
                reference=f"INV-{self.gen.digits(5)}",
            )
            if (self.now.date() - posted).days > 60:
                self.clear(key, posted + timedelta(days=30))


def post_all(data: SAPData, poster: ItemPoster) -> None:
    """Items for every billing document and supplier of freshly generated data."""
    for bd in data.billing_documents.values():
        poster.for_billing_document(bd)
    for supplier in data.suppliers:
        poster.for_supplier(supplier, "EUR")
