#!/usr/bin/env python3
"""Generate the labelled episodic quality set (deterministic: same seed, same files).

Writes ``benchmarks/episodic_cases.jsonl`` (resolved ERP cases) and
``benchmarks/episodic_queries.jsonl`` (questions with the case ids that answer them).
36 customers x 10 cases: duplicate charges, credit memos for returns, late deliveries, price and
tax corrections, short shipments, damaged goods, misapplied payments, freight overcharges and
wrong items. Every customer gets cases that are look-alikes of another customer's (same story,
product and amounts, other document numbers), so any scope leak shows up as a wrong hit.
Queries are paraphrases (other words for the problem and the product), document-number questions
and vague questions about a kind of problem (any case of that kind counts).
Run: ``python scripts/make_episodic_dataset.py``.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

SEED = 20260301
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
OUT = Path(__file__).resolve().parent.parent / "benchmarks"

CUSTOMERS = [
    ("ABARTENDE", "Alpha Bartending Supplies"),
    ("COFFEESHOP", "Coffee Shop Co."),
    ("GOODFOOD", "Good Food One Inc."),
    ("JERSEYCITY", "Jersey City Hardware"),
    ("MAINSTREET", "Main Street Deli"),
    ("NORTHWIND", "Northwind Traders"),
    ("BLUEHERON", "Blue Heron Marine"),
    ("CASCADEPLB", "Cascade Plumbing"),
    ("DESERTSUN", "Desert Sun Solar"),
    ("EVERGREEN", "Evergreen Landscaping"),
    ("FOXRIVER", "Fox River Foods"),
    ("GRANITEWKS", "Granite Works"),
    ("HARBORLGT", "Harbor Lighting"),
    ("IRONCLAD", "Ironclad Fabrication"),
    ("JUNIPERHTL", "Juniper Hotels"),
    ("KEYSTONE", "Keystone Builders"),
    ("LAKESIDE", "Lakeside Clinic"),
    ("MERIDIAN", "Meridian Office Park"),
    ("NOVATECH", "Nova Tech Labs"),
    ("OAKRIDGE", "Oakridge Schools"),
    ("PINNACLE", "Pinnacle Fitness"),
    ("QUARRYHILL", "Quarry Hill Stone"),
    ("RIVERBEND", "Riverbend Bakery"),
    ("SILVERLINE", "Silverline Transit"),
    ("TIDEWATER", "Tidewater Seafood"),
    ("UPLANDFARM", "Upland Farms"),
    ("VALLEYAUTO", "Valley Auto Parts"),
    ("WESTGATE", "Westgate Mall"),
    ("YORKPRINT", "York Printing"),
    ("ZENITHPHR", "Zenith Pharmacy"),
    ("C000101", "Acme Industrial GmbH"),
    ("C000102", "Acme Industrial Ltd"),
    ("C000103", "Brightline Retail"),
    ("C000104", "Summit Outdoor Gear"),
    ("C000105", "Metro Dental Group"),
    ("C000106", "Polar Cold Storage"),
]

# product: (case text, ways a person refers to it later)
PRODUCTS = {
    "copper pipe fittings": ["copper fittings", "the pipe fittings"],
    "stainless steel bolts": ["stainless bolts", "the steel fasteners"],
    "LED panel lights": ["LED panels", "the ceiling lights"],
    "ergonomic office chairs": ["office chairs", "the desk chairs"],
    "printer toner cartridges": ["toner", "the printer cartridges"],
    "hydraulic hoses": ["hydraulic lines", "the hoses"],
    "espresso machines": ["espresso machines", "the coffee machines"],
    "arabica coffee beans": ["coffee beans", "the arabica"],
    "laptop docking stations": ["docking stations", "the laptop docks"],
    "PVC electrical conduit": ["PVC conduit", "the electrical pipe"],
    "forklift batteries": ["forklift batteries", "the batteries for the forklifts"],
    "corrugated shipping boxes": ["shipping boxes", "the cardboard cartons"],
    "porcelain floor tiles": ["floor tiles", "the porcelain tiles"],
    "solar string inverters": ["solar inverters", "the inverters"],
    "nitrile safety gloves": ["nitrile gloves", "the safety gloves"],
    "commercial water filters": ["water filters", "the filter cartridges"],
}
CARRIERS = ["FedEx Freight", "UPS Ground", "DHL Express", "XPO Logistics", "Old Dominion"]
STATES = ["Texas", "Ohio", "California", "New York", "Florida", "Washington", "Illinois", "Georgia"]
PAY = ["wire transfer", "ACH payment", "check", "credit card payment"]


@dataclass
class Ctx:
    rng: random.Random
    product: str
    qty: int
    price: float
    day: datetime
    carrier: str
    state: str
    pay: str
    docs: dict[str, str]

    @property
    def year(self) -> str:
        return str(self.day.year)


def money(value: float) -> str:
    return f"{value:,.2f} USD"


def d(ctx: Ctx, offset: int = 0) -> str:
    return (ctx.day + timedelta(days=offset)).date().isoformat()


# type -> (request, resolution, documents used, paraphrase questions)
def duplicate_charge(c: Ctx) -> tuple[str, str, list[str]]:
    total = c.qty * c.price
    return (
        f"Customer reports being invoiced twice for the {c.product} on order {c.docs['SO']}: "
        f"{c.docs['INV']} and {c.docs['INV2']} both bill {c.qty} units, {money(total)} each.",
        f"Confirmed duplicate billing. Voided {c.docs['INV2']} on {d(c, 2)} and issued credit memo "
        f"{c.docs['CM']} for {money(total)}.",
        ["SO", "INV", "INV2", "CM"],
    )


def return_credit(c: Ctx) -> tuple[str, str, list[str]]:
    n = max(1, c.qty // 4)
    return (
        f"Customer returned {n} unopened {c.product} from invoice {c.docs['INV']} under RMA {c.docs['RMA']} "
        "because they over-ordered.",
        f"Goods received back on {d(c, 5)}; credit memo {c.docs['CM']} for {money(n * c.price)} issued, "
        "15% restocking fee waived as a one-time courtesy.",
        ["INV", "RMA", "CM"],
    )


def late_delivery(c: Ctx) -> tuple[str, str, list[str]]:
    late = c.rng.randint(4, 14)
    return (
        f"Shipment of {c.qty} {c.product} on sales order {c.docs['SO']} via {c.carrier} arrived {late} days "
        f"after the promised date of {d(c)}; customer asked for compensation.",
        f"Refunded the freight charge of {money(c.rng.randint(60, 400))} on invoice {c.docs['INV']} on "
        f"{d(c, late + 2)} and flagged the customer for expedited shipping on future orders.",
        ["SO", "INV"],
    )


def price_correction(c: Ctx) -> tuple[str, str, list[str]]:
    wrong = round(c.price * 1.12, 2)
    return (
        f"Invoice {c.docs['INV']} billed the {c.product} at {money(wrong)} per unit instead of the "
        f"contract price of {money(c.price)} agreed for {c.year}.",
        f"Price list corrected on {d(c, 3)}; credit memo {c.docs['CM']} for "
        f"{money(c.qty * (wrong - c.price))} covering {c.qty} units.",
        ["INV", "CM"],
    )


def tax_correction(c: Ctx) -> tuple[str, str, list[str]]:
    tax = round(c.qty * c.price * 0.0725, 2)
    return (
        f"Sales tax of {money(tax)} was charged on invoice {c.docs['INV']} for {c.product} although the "
        f"customer holds a valid {c.state} resale exemption certificate.",
        f"Exemption certificate re-uploaded and the tax zone set to exempt on {d(c, 1)}; corrected invoice "
        f"{c.docs['INV2']} issued without tax and {c.docs['INV']} reversed.",
        ["INV", "INV2"],
    )


def short_shipment(c: Ctx) -> tuple[str, str, list[str]]:
    missing = max(1, c.qty // 5)
    return (
        f"Customer received only {c.qty - missing} of {c.qty} {c.product} ordered on {c.docs['SO']}; "
        f"packing slip for shipment {c.docs['SHP']} showed the full quantity.",
        f"Warehouse confirmed a picking error; the missing {missing} units shipped on {d(c, 2)} at no charge "
        f"under {c.docs['SO2']}.",
        ["SO", "SHP", "SO2"],
    )


def damaged_goods(c: Ctx) -> tuple[str, str, list[str]]:
    broken = max(1, c.qty // 6)
    return (
        f"{broken} of the {c.product} delivered with invoice {c.docs['INV']} arrived damaged; customer "
        f"sent photos of crushed packaging from the {c.carrier} delivery.",
        f"Replacement units sent on {d(c, 3)} under order {c.docs['SO']}; freight claim filed with "
        f"{c.carrier} for {money(broken * c.price)}.",
        ["INV", "SO"],
    )


def misapplied_payment(c: Ctx) -> tuple[str, str, list[str]]:
    amount = c.qty * c.price
    return (
        f"Customer's {c.pay} of {money(amount)} ({c.docs['PMT']}) for the {c.product} was applied to "
        f"invoice {c.docs['INV2']} instead of {c.docs['INV']}, so {c.docs['INV']} showed as overdue.",
        f"Payment {c.docs['PMT']} re-applied to {c.docs['INV']} on {d(c, 1)}; late fee of "
        f"{money(round(amount * 0.015, 2))} reversed and the dunning letter withdrawn.",
        ["PMT", "INV", "INV2"],
    )


def freight_overcharge(c: Ctx) -> tuple[str, str, list[str]]:
    charged = c.rng.randint(300, 900)
    return (
        f"Freight on invoice {c.docs['INV']} for the {c.product} was billed at {money(charged)}, but the "
        f"quote {c.docs['QT']} promised free shipping with {c.carrier} above 2,500.00 USD.",
        f"Freight line removed; credit memo {c.docs['CM']} for {money(charged)} issued on {d(c, 4)}.",
        ["INV", "QT", "CM"],
    )


def wrong_item(c: Ctx) -> tuple[str, str, list[str]]:
    return (
        f"Order {c.docs['SO']} was for {c.qty} {c.product}, but the warehouse shipped a different model; "
        f"customer refused the delivery.",
        f"Correct {c.product} shipped on {d(c, 2)} under {c.docs['SO2']}; return label {c.docs['RMA']} sent "
        "for the wrong items and no charge for the reshipment.",
        ["SO", "SO2", "RMA"],
    )


STORIES = {
    "duplicate_charge": (duplicate_charge, [
        "Were they ever billed twice for the {p}?", "double invoice for {p} - has that happened before?",
        "customer says we charged them two times for {p}",
    ]),
    "return_credit": (return_credit, [
        "did they send back some {p} for credit?", "have we taken a return of {p} from them?",
        "refund for {p} they didn't need",
    ]),
    "late_delivery": (late_delivery, [
        "the {p} showed up way past the due date", "has a {p} delivery been delayed for them before?",
        "shipment of {p} came late, what did we do last time?",
    ]),
    "price_correction": (price_correction, [
        "they were charged more than the agreed price for {p}", "wrong unit price on {p}",
        "overbilled per unit on the {p} compared with the contract",
    ]),
    "tax_correction": (tax_correction, [
        "we added sales tax on {p} but they are tax exempt", "tax exemption problem on the {p} invoice",
        "should not have paid tax for {p}, they have a resale certificate",
    ]),
    "short_shipment": (short_shipment, [
        "fewer {p} arrived than they ordered", "part of the {p} order was missing",
        "they got an incomplete quantity of {p}",
    ]),
    "damaged_goods": (damaged_goods, [
        "the {p} came broken", "{p} were damaged in transit", "crushed boxes, damaged {p} on arrival",
    ]),
    "misapplied_payment": (misapplied_payment, [
        "their payment for {p} went to the wrong invoice", "money received for {p} applied incorrectly",
        "invoice for {p} shows overdue even though they paid",
    ]),
    "freight_overcharge": (freight_overcharge, [
        "we charged shipping on {p} even though it was supposed to be free",
        "freight fee on the {p} order was a mistake", "too much delivery cost billed for {p}",
    ]),
    "wrong_item": (wrong_item, [
        "we shipped the wrong {p}", "they received a different model of {p} than ordered",
        "incorrect {p} delivered and refused",
    ]),
}  # fmt: skip
DOC_PREFIX = {"SO": "SO", "SO2": "SO", "INV": "INV", "INV2": "INV", "CM": "CM", "RMA": "RMA", "SHP": "SHP",
              "PMT": "PMT", "QT": "QT"}  # fmt: skip
VAGUE = {
    "duplicate_charge": "has this customer been double billed before?",
    "return_credit": "did they return goods to us for a credit in the past?",
    "late_delivery": "any history of late shipments with them?",
    "price_correction": "have we had pricing disputes with them?",
    "tax_correction": "was there ever a sales tax issue on their invoices?",
    "short_shipment": "have they received incomplete shipments before?",
    "damaged_goods": "did anything arrive broken for them in the past?",
    "misapplied_payment": "did we ever apply one of their payments to the wrong invoice?",
    "freight_overcharge": "have we overcharged them on shipping costs?",
    "wrong_item": "did we ever ship them the wrong product?",
}
DOC_QUESTIONS = [
    "What happened with {doc}?", "Customer is asking about {doc} again", "any history on {doc}?",
    "{doc} - was there an issue?", "status of {doc_lower}",
]  # fmt: skip


class Numbers:
    def __init__(self) -> None:
        self.next = {"SO": 120, "INV": 4800, "CM": 300, "RMA": 50, "SHP": 7000, "PMT": 9000, "QT": 600}

    def take(self, prefix: str) -> str:
        self.next[prefix] += 1
        return f"{prefix}-{self.next[prefix]:06d}"


def build() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    rng = random.Random(SEED)
    numbers = Numbers()
    cases: list[dict[str, object]] = []
    queries: list[dict[str, object]] = []
    plans: dict[str, list[tuple[str, str]]] = {}
    kinds, products = list(STORIES), list(PRODUCTS)
    for customer, _name in CUSTOMERS:
        pairs: set[tuple[str, str]] = set()
        while len(pairs) < 8:
            pairs.add((rng.choice(kinds), rng.choice(products)))
        plans[customer] = sorted(pairs)
    ids = [c for c, _ in CUSTOMERS]
    for i, customer in enumerate(ids):  # two look-alikes: copies of the next customer's stories
        neighbour = ids[(i + 1) % len(ids)]
        extra = [p for p in plans[neighbour] if p not in plans[customer]][:2]
        plans[customer] += extra
    story_values: dict[tuple[str, str], tuple[int, float, int, str, str, str]] = {}
    for customer in ids:
        for n, (kind, product) in enumerate(plans[customer]):
            key = (kind, product)
            if key not in story_values:  # the same story has the same amounts at every customer
                story_values[key] = (
                    rng.randint(8, 120), round(rng.uniform(4, 900), 2), rng.randint(5, 150),
                    rng.choice(CARRIERS), rng.choice(STATES), rng.choice(PAY),
                )  # fmt: skip
            qty, price, age, carrier, state, pay = story_values[key]
            day = NOW - timedelta(days=age + (n % 3))
            docs = {slot: numbers.take(prefix) for slot, prefix in DOC_PREFIX.items()}
            ctx = Ctx(rng, product, qty, price, day, carrier, state, pay, docs)
            request, resolution, used = STORIES[kind][0](ctx)
            case_id = f"{customer}-{n + 1:02d}"
            documents = [docs[s] for s in used]
            cases.append(
                {
                    "case_id": case_id,
                    "customer_id": customer,
                    "case_type": kind,
                    "occurred_at": day.isoformat(),
                    "request": request,
                    "resolution": resolution,
                    "documents": documents,
                    "lookalike_of_other_customer": sum(key in plans[c] for c in ids) > 1,
                }
            )
            alias = rng.choice(PRODUCTS[product])
            question = rng.choice(STORIES[kind][1]).format(p=alias)
            queries.append(
                {"customer_id": customer, "query": question, "expected": [case_id], "kind": "paraphrase"}
            )
            if rng.random() < 0.45:
                doc = rng.choice(documents)
                text = rng.choice(DOC_QUESTIONS).format(doc=doc, doc_lower=doc.lower().replace("-", ""))
                queries.append(
                    {"customer_id": customer, "query": text, "expected": [case_id], "kind": "document"}
                )
    vague_rng = random.Random(SEED + 1)  # separate stream: adding these left the rest unchanged
    for customer in ids:
        mine = [c for c in cases if c["customer_id"] == customer]
        for kind in sorted({str(c["case_type"]) for c in mine}):
            if vague_rng.random() < 0.35:
                expected = [c["case_id"] for c in mine if c["case_type"] == kind]
                queries.append(
                    {"customer_id": customer, "query": VAGUE[kind], "expected": expected, "kind": "vague"}
                )
    return cases, queries


def main() -> None:
    cases, queries = build()
    OUT.mkdir(exist_ok=True)
    for name, rows in (("episodic_cases.jsonl", cases), ("episodic_queries.jsonl", queries)):
        with (OUT / name).open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    kinds: dict[str, int] = {}
    for q in queries:
        kinds[str(q["kind"])] = kinds.get(str(q["kind"]), 0) + 1
    print(
        f"{len(cases)} cases, {len({c['customer_id'] for c in cases})} customers, "
        f"{len(queries)} queries {kinds}"
    )


if __name__ == "__main__":
    main()
