#!/usr/bin/env python3
# ruff: noqa: E501  (the topic tables are sentences; wrapping them would hide what a turn says)
"""Generate the conversational labelled set (deterministic: same seed, same files).

Writes ``benchmarks/conversation_turns.jsonl`` (one line per dialogue turn: conversation = customer,
session, date, speaker, text) and ``benchmarks/conversation_questions.jsonl`` (questions with the
ids of the turns that answer them). 32 conversations between a customer's contact and their account
manager over 9-12 sessions each (business talk and small talk), each turn recorded as one case of
its conversation's customer, as a memory-augmented agent would store them.

What makes it hard, on purpose:
- every fact turn has look-alikes: the same kind of event with other people, amounts, dates and
  document numbers (``1,250.00`` beside ``1,520.00`` and ``125.00``, ``CM-004411`` beside
  ``CM-004414``, 14 March beside 14 May), and the same person or amount in unrelated turns, so neither
  the topic nor a name alone identifies the turn;
- questions spell values differently from the turn ("1250" for "1,250.00", "March 14th" for
  "14 March") and talk about things in other words ("lift truck" for "forklift"), which only the
  dense side bridges;
- adversarial questions credit a fact to the other speaker ("When did Jonas fly to Lisbon?" when it
  was Priya), so the name in the question points at the wrong turns.
Question kinds: ``person``, ``date``, ``amount``, ``document``, ``paraphrase``, ``adversarial``.
Run: ``python scripts/make_conversation_dataset.py``.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its helper, also when loaded by path

from _dialogue_common import write_dialogue_set

SEED = 20261201
START = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)
OUT = Path(__file__).resolve().parent.parent / "benchmarks"
CONVERSATIONS = 32

FIRST = [
    "Priya", "Jonas", "Mei", "Carlos", "Anna", "Tomasz", "Aisha", "Luca", "Sofia", "Kenji", "Amara",
    "Mateo", "Ingrid", "Ravi", "Chloe", "Oskar", "Fatima", "Diego", "Hana", "Liam", "Zara", "Nikolai",
    "Elena", "Samuel", "Yara", "Arjun", "Lena", "Marco", "Nadia", "Tobias", "Grace", "Emil", "Leila",
    "Hugo", "Maya", "Felix", "Rosa", "Omar", "Julia", "Pavel",
]  # fmt: skip
LAST = [
    "Raman", "Berg", "Chen", "Alvarez", "Kowalski", "Nakamura", "Okafor", "Rossi", "Lindqvist", "Haddad",
    "Novak", "Fischer", "Moreau", "Sato", "Patel", "Costa", "Jensen", "Ibrahim", "Silva", "Dubois",
    "Keller", "Yilmaz", "Murphy", "Schmidt", "Larsen", "Petrov", "Garcia", "Tanaka", "Weber", "Hughes",
]  # fmt: skip
COMPANIES = [
    "Northwind Traders", "Blue Heron Marine", "Cascade Plumbing", "Desert Sun Solar", "Fox River Foods",
    "Granite Works", "Harbor Lighting", "Ironclad Fabrication", "Juniper Hotels", "Keystone Builders",
    "Lakeside Clinic", "Meridian Office Park", "Nova Tech Labs", "Oakridge Schools", "Pinnacle Fitness",
    "Quarry Hill Stone", "Riverbend Bakery", "Silverline Transit", "Tidewater Seafood", "Upland Farms",
    "Valley Auto Parts", "Westgate Mall", "York Printing", "Zenith Pharmacy", "Acme Industrial",
    "Brightline Retail", "Summit Outdoor Gear", "Metro Dental Group", "Polar Cold Storage",
    "Evergreen Landscaping", "Coffee Shop Co.", "Main Street Deli",
]  # fmt: skip
CITIES = ["Lisbon", "Lyon", "Krakow", "Osaka", "Denver", "Porto", "Gdansk", "Seville", "Leeds", "Utrecht"]
MONTHS = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
    "November", "December",
]  # fmt: skip


@dataclass(frozen=True)
class Topic:
    """A kind of event. ``things`` pairs the word a turn uses with the word a question uses.

    Templates: ``say`` (the speaker states the event), ``para`` (a question in other words, naming
    no value), and optional questions naming a person (``who``), a date, an amount or a document,
    ``actor`` (a question naming who did it: the fact's speaker, or the other one when adversarial).
    """

    name: str
    things: tuple[tuple[str, str], ...]
    say: tuple[str, ...]
    para: str
    actor: str
    who: str | None = None
    date: str | None = None
    amount: str | None = None
    document: str | None = None
    doc_prefix: str = "INV"


TOPICS = [
    Topic(
        "breakdown",
        (("forklift", "lift truck"), ("conveyor belt", "belt line"), ("label printer", "sticker printer"),
         ("walk-in freezer", "cold room"), ("air compressor", "air pump"), ("pallet wrapper", "stretch-wrap machine")),
        ("Our {thing} broke down on {date}, {person} had to call the technician and the repair came to {amount}.",
         "Bad news: the {thing} failed again on {date}. {person} says the repair bill is {amount}.",
         "We lost half a shift because the {thing} stopped working on {date}; {person} got it fixed for {amount}."),
        "What happened with the {q_thing} that stopped working?",
        "When did {actor}'s {q_thing} break down?",
        who="Who dealt with the broken {q_thing}?",
        date="What broke down on {date_q}?",
        amount="What was the {amount_q} repair for?",
    ),
    Topic(
        "handover",
        (("warehouse account", "storage contract"), ("payroll file", "salary data"), ("tender", "bid"),
         ("supplier onboarding", "vendor setup"), ("quarterly forecast", "three-month projection")),
        ("{person} is taking over the {thing} from {date}, so please copy them from now on.",
         "Heads up, the {thing} moves to {person} starting {date}.",
         "From {date} {person} owns the {thing}; I am only on it until then."),
        "Who is going to look after the {q_thing} from now on?",
        "Who did {actor} hand the {q_thing} over to?",
        who="What is {person} taking over?",
        date="What changes hands on {date_q}?",
    ),
    Topic(
        "credit",
        (("damaged pallets", "broken skids"), ("spoiled produce", "rotten vegetables"),
         ("scratched panels", "marked sheets"), ("missing cartons", "boxes that never arrived"),
         ("leaking drums", "barrels that leaked")),
        ("We issued credit memo {doc} for {amount} for the {thing}; {person} approved it on {date}.",
         "{person} signed off credit note {doc} on {date}: {amount} back for the {thing}.",
         "The {thing} are settled, credit {doc} over {amount}, approved by {person} on {date}."),
        "Did we ever get money back for the {q_thing}?",
        "Which credit did {actor} arrange for the {q_thing}?",
        who="Which credit did {person} approve?",
        date="What credit was approved on {date_q}?",
        amount="What was the credit of {amount_q} for?",
        document="What is credit memo {doc_q} about?",
        doc_prefix="CM",
    ),
    Topic(
        "invoice_dispute",
        (("freight surcharge", "shipping extra"), ("fuel levy", "diesel surcharge"),
         ("restocking fee", "return charge"), ("rush fee", "express charge"), ("storage fee", "warehousing charge")),
        ("Invoice {doc} has a {thing} of {amount} that nobody agreed to; {person} is disputing it.",
         "I am querying {doc}: the {thing} of {amount} was never in the contract, {person} has the details.",
         "{person} flagged invoice {doc}, there is an unexpected {thing} of {amount} on it."),
        "Which bill had the {q_thing} we never agreed on?",
        "What did {actor} dispute about the {q_thing}?",
        who="What invoice is {person} disputing?",
        amount="Which invoice had the {amount_q} charge?",
        document="What is wrong with invoice {doc_q}?",
    ),
    Topic(
        "trip",
        (("trade fair", "industry expo"), ("supplier visit", "factory tour"), ("training course", "workshop"),
         ("sister's wedding", "family wedding"), ("marathon", "long-distance race")),
        ("I flew to {city} on {date} for the {thing}, {person} came along too.",
         "Just back from {city}: the {thing} was on {date} and {person} joined me.",
         "The {thing} in {city} on {date} was great, {person} and I went together."),
        "Who travelled abroad for the {q_thing}?",
        "When did {actor} go to {city} for the {q_thing}?",
        who="Where did {person} travel with the speaker?",
        date="Who was travelling on {date_q}?",
    ),
    Topic(
        "price_change",
        (("copper fittings", "brass couplings"), ("nitrile gloves", "disposable gloves"),
         ("printer toner", "laser cartridges"), ("coffee beans", "roasted arabica"), ("LED panels", "ceiling lights")),
        ("The price of the {thing} goes up to {amount} per case from {date}, {person} sent the notice.",
         "From {date} the {thing} cost {amount} a case; {person} confirmed the new price list.",
         "{person} told me the {thing} will be {amount} per case starting {date}."),
        "How much more will we pay for the {q_thing}?",
        "What price did {actor} quote for the {q_thing}?",
        who="Which price did {person} announce?",
        date="Which price changes on {date_q}?",
        amount="What costs {amount_q} per case now?",
    ),
    Topic(
        "order",
        (("solar inverters", "power converters"), ("office chairs", "desk seating"), ("hydraulic hoses", "oil lines"),
         ("shipping boxes", "cardboard cartons"), ("water filters", "filter cartridges")),
        ("We placed order {doc} for the {thing}, {amount} in total, {person} expects delivery on {date}.",
         "Order {doc} is in: {thing} worth {amount}; {person} says they arrive {date}.",
         "{person} raised {doc} for the {thing} ({amount}), due on {date}."),
        "When do the {q_thing} we bought arrive?",
        "Which order did {actor} place for the {q_thing}?",
        who="Which order is {person} tracking?",
        date="Which delivery is due on {date_q}?",
        amount="Which order came to {amount_q}?",
        document="What was ordered on {doc_q}?",
        doc_prefix="SO",
    ),
    Topic(
        "payment",
        (("wire transfer", "bank transfer"), ("card payment", "credit card charge"), ("cheque", "paper check"),
         ("direct debit", "automatic withdrawal")),
        ("We sent a {thing} of {amount} on {date} against invoice {doc}; {person} has the remittance.",
         "{person} confirmed the {thing} for {doc}: {amount}, paid {date}.",
         "The {thing} of {amount} for {doc} went out on {date}, ask {person} if it has not landed."),
        "Has the money for that bill been sent?",
        "How did {actor} pay invoice {doc_q}?",
        who="Which payment does {person} have the remittance for?",
        date="What was paid on {date_q}?",
        amount="Which invoice was the {amount_q} payment for?",
        document="Was invoice {doc_q} paid?",
    ),
    Topic(
        "family",
        (("daughter", "little girl"), ("son", "boy"), ("mother", "mum"), ("nephew", "sister's kid"),
         ("grandfather", "grandpa")),
        ("My {thing} {person} started at a new school in {city} on {date}.",
         "Big day: {person}, my {thing}, moved to {city} on {date}.",
         "{person} (my {thing}) finally settled in {city}; the move was on {date}."),
        "Whose relative moved to a new town?",
        "Where did {actor}'s {q_thing} move?",
        who="Where did {person} move?",
        date="Who moved on {date_q}?",
    ),
    Topic(
        "hobby",
        (("pottery class", "ceramics lessons"), ("choir", "singing group"), ("climbing gym", "bouldering hall"),
         ("chess club", "board game evening"), ("sailing course", "boating lessons")),
        ("I signed up for a {thing} with {person}, it costs {amount} for the term and starts {date}.",
         "{person} talked me into a {thing}: {amount} for ten weeks, first session {date}.",
         "Starting {date} I do a {thing} on Thursdays with {person}, {amount} for the season."),
        "What new pastime did someone take up?",
        "Which {q_thing} did {actor} join?",
        who="What activity does the speaker do with {person}?",
        date="What starts on {date_q}?",
        amount="What costs {amount_q} for the term?",
    ),
    Topic(
        "audit",
        (("safety audit", "health and safety inspection"), ("tax audit", "revenue inspection"),
         ("ISO review", "quality certification visit"), ("fire inspection", "fire marshal visit")),
        ("The {thing} is booked for {date}; {person} from the auditor's office will lead it.",
         "{person} confirmed the {thing} on {date}, we need the records ready.",
         "Reminder: {thing} on {date}, run by {person}."),
        "When are the inspectors coming?",
        "Who is leading {actor}'s {q_thing}?",
        who="What is {person} leading?",
        date="What is scheduled for {date_q}?",
    ),
    Topic(
        "shortage",
        (("stainless bolts", "steel fasteners"), ("arabica beans", "coffee"), ("hand sanitiser", "disinfectant gel"),
         ("pallet wrap", "stretch film"), ("printer paper", "copy paper")),
        ("Delivery {doc} was short: only half the {thing} arrived, {person} counted them on {date}.",
         "{person} found on {date} that {doc} was missing half of the {thing}.",
         "We are short on {thing}: {doc} came in incomplete on {date}, {person} checked."),
        "Which shipment came in with things missing?",
        "What was {actor} short of?",
        who="Which delivery did {person} count?",
        date="What was found short on {date_q}?",
        document="What was missing from {doc_q}?",
        doc_prefix="DN",
    ),
    Topic(
        "discount",
        (("volume discount", "bulk rebate"), ("early-payment discount", "prompt-pay rebate"),
         ("loyalty discount", "long-customer rebate")),
        ("{person} agreed a {thing} of {amount} on invoice {doc} on {date}.",
         "Good news: a {thing} worth {amount} on {doc}, {person} approved it {date}.",
         "We got the {thing}: {amount} off {doc}, thanks to {person}."),
        "Did they give us any reduction on the price?",
        "Which {q_thing} did {actor} negotiate?",
        who="What discount did {person} agree?",
        amount="What was the {amount_q} reduction for?",
        document="Was there a discount on {doc_q}?",
    ),
    Topic(
        "health",
        (("knee surgery", "operation on the knee"), ("flu", "bad cold"), ("back pain", "sore back"),
         ("broken wrist", "fractured arm")),
        ("I was off after my {thing}, {person} covered for me until {date}.",
         "Sorry for the silence, {thing}; {person} stood in for me until {date}.",
         "{person} ran things while I recovered from the {thing}; back since {date}."),
        "Why was someone away from work?",
        "Who covered for {actor} during the {q_thing}?",
        who="Whom did {person} stand in for?",
        date="Who came back to work on {date_q}?",
    ),
]  # fmt: skip

SMALL_TALK = [
    "Morning! How was your weekend?", "Pretty quiet, we mostly stayed in because of the rain.",
    "Did you watch the match last night?", "No, I fell asleep on the sofa before half time.",
    "Thanks for getting back to me so quickly.", "No problem, happy to help.",
    "Let me check with the team and come back to you.", "Sounds good, talk tomorrow then.",
    "The traffic this morning was terrible.", "I started cycling to work, it is faster now.",
    "We finally repainted the office, it looks much brighter.", "Is it still that hot where you are?",
    "It cooled down a bit, thankfully.", "I am trying a new recipe tonight, fish tacos.",
    "Any plans for the holidays?", "Probably visiting family, nothing fancy.",
    "Our new intern is doing really well.", "Coffee machine is broken again, send help.",
    "I will send the minutes after the call.", "Got it, I will forward it to accounting.",
    "Could you resend that attachment? It did not come through.", "Sure, sending it again now.",
    "We have a team lunch on Friday.", "Enjoy it, you deserve a break.",
    "I have been reading a great book about sailing.", "The garden is finally blooming.",
    "My phone died halfway through the day.", "Let us keep this short, I have another meeting.",
    "Quick one: are we still on for Thursday?", "Yes, Thursday works for me.",
    "How is the new system working out for you?", "Slowly getting used to it.",
    "Happy Friday!", "Same to you, have a good one.", "The kids are on school break this week.",
    "I am working from home today.", "We are hiring two more people in logistics.",
    "Congratulations on the promotion!", "Thank you, still getting used to the title.",
    "Did the samples arrive?", "They did, everyone liked the blue ones.",
    "Sorry, I was on leave last week.", "Welcome back, hope you had a good rest.",
    "I think it is going to snow tomorrow.", "We need to plan the year-end stock count.",
    "Can you join the call at three?", "I will be five minutes late.", "No rush.",
]  # fmt: skip


def amount_forms(rng: random.Random) -> tuple[float, str, str]:
    """An amount, how a turn writes it and how a question writes it (never the same spelling)."""
    value = rng.choice([rng.randint(40, 990) + rng.choice([0, 0.5, 0.4, 0.75, 0.99]),
                        rng.randint(1, 48) * 250 + rng.choice([0, 0, 50, 20.4])])  # fmt: skip
    said = rng.choice([f"{value:,.2f}", f"{value:,.2f} USD", f"${value:,.2f}", f"{value:,.2f} EUR"])
    whole = value == int(value)
    asked = rng.choice(
        [f"{int(value)}" if whole else f"{value:g}", f"{value:,.0f}" if whole else f"{value:,.2f}"]
    )
    if asked.replace(",", "") == said.split()[0].lstrip("$").replace(",", ""):
        asked = f"{int(value)}" if whole else f"{value:.2f}".rstrip("0")
    return value, said, asked


def date_forms(rng: random.Random, day: datetime) -> tuple[str, str]:
    """A date as a turn writes it and as a question writes it (another spelling)."""
    month = MONTHS[day.month - 1]
    forms = [
        f"{day.day} {month}",
        f"{month} {day.day}",
        f"{day.date().isoformat()}",
        f"{month[:3]} {day.day}",
    ]
    ordinal = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}.get(day.day, "th")
    asked = [f"{month} {day.day}{ordinal}", f"the {day.day}{ordinal} of {month}", f"{day.date().isoformat()}"]
    said = rng.choice(forms)
    return said, rng.choice([a for a in asked if a != said])


def near_amount(rng: random.Random, value: float) -> float:
    text = f"{value:.2f}".replace(".", "")
    digits = list(text)
    if len(digits) > 3:
        i = rng.randrange(len(digits) - 3)
        digits[i], digits[i + 1] = digits[i + 1], digits[i]
    swapped = float("".join(digits)) / 100
    return rng.choice([swapped if swapped != value else value + 30, round(value / 10, 2), value + 100])


@dataclass
class Conversation:
    cid: str
    company: str
    speakers: tuple[str, str]
    people: list[str]
    sessions: list[datetime]
    turns: list[list[tuple[str, str, dict[str, Any] | None]]] = field(default_factory=list)


def fill(rng: random.Random, topic: Topic, conv: Conversation, session: int, **fixed: Any) -> dict[str, Any]:
    """Slot values for one telling of a topic (``fixed`` overrides, for look-alikes)."""
    base = conv.sessions[session]
    day = base + timedelta(days=rng.randint(-12, 25))
    date_said, date_asked = date_forms(rng, day)
    value, amount_said, amount_asked = amount_forms(rng)
    thing = rng.choice(topic.things)
    number = f"{topic.doc_prefix}-{rng.randint(1000, 99999):06d}"
    values = {
        "thing": thing[0], "q_thing": thing[1], "person": rng.choice(conv.people), "city": rng.choice(CITIES),
        "date": date_said, "date_q": date_asked, "day": day, "value": value, "amount": amount_said,
        "amount_q": amount_asked, "doc": number, "doc_q": number.replace("-", "").lower() if rng.random() < 0.3
        else number,
    }  # fmt: skip
    values.update(fixed)
    return values


def say(rng: random.Random, topic: Topic, values: dict[str, Any], avoid: int = -1) -> tuple[int, str]:
    """The topic told with these values in one of its phrasings, not phrasing ``avoid``."""
    choices = [i for i in range(len(topic.say)) if i != avoid]
    pick = rng.choice(choices)
    return pick, topic.say[pick].format(**values)


def build(rng: random.Random, n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    cid = f"CONV{n + 1:03d}"
    pool = rng.sample(FIRST, 8)
    speakers = (pool[0], pool[1])
    people = [f"{p} {rng.choice(LAST)}" if rng.random() < 0.3 else p for p in pool[2:]]
    start = START + timedelta(days=rng.randint(0, 120))
    sessions = []
    day = start
    for _ in range(rng.randint(9, 12)):
        sessions.append(day)
        day += timedelta(days=rng.randint(4, 21), hours=rng.randint(-3, 3))
    conv = Conversation(cid, COMPANIES[n % len(COMPANIES)], speakers, people, sessions)
    conv.turns = [[] for _ in sessions]
    facts: list[tuple[int, Topic, dict[str, Any], int]] = []  # session, topic, values, speaker index
    topics = rng.sample(TOPICS, len(TOPICS))
    for i in range(18):
        topic = topics[i % len(topics)]
        session = rng.randrange(len(sessions))
        teller = rng.randrange(2)
        values = fill(rng, topic, conv, session)
        phrasing, told = say(rng, topic, values)
        conv.turns[session].append((speakers[teller], told, {"fact": len(facts)}))
        facts.append((session, topic, values, teller))
        # look-alike: the same kind of event with other values, in another session
        other = rng.randrange(len(sessions))
        twin = fill(rng, topic, conv, other, thing=values["thing"], q_thing=values["q_thing"])
        if rng.random() < 0.5:
            twin["amount"] = f"{near_amount(rng, values['value']):,.2f}"
        twin_turn = (speakers[rng.randrange(2)], say(rng, topic, twin, phrasing)[1], {"twin": len(facts) - 1})
        conv.turns[other].append(twin_turn)
        # the same person (or amount) in an unrelated event
        stranger = rng.choice([t for t in TOPICS if t is not topic])
        shared = fill(rng, stranger, conv, rng.randrange(len(sessions)), person=values["person"])
        if rng.random() < 0.4:
            shared.update(amount=values["amount"])
        conv.turns[rng.randrange(len(sessions))].append(
            (speakers[rng.randrange(2)], say(rng, stranger, shared)[1], None)
        )
    turns: list[dict[str, Any]] = []
    fact_turn: dict[int, str] = {}
    twin_turn_of: dict[int, str] = {}
    for s, session_turns in enumerate(conv.turns):
        chat = [(speakers[k % 2], rng.choice(SMALL_TALK), None) for k in range(rng.randint(5, 8))]
        rest = session_turns + chat[2:]
        rng.shuffle(rest)
        mixed = chat[:2] + rest
        for t, (speaker, text, meta) in enumerate(mixed):
            tid = f"{cid}:S{s + 1}:T{t + 1}"
            turns.append({
                "turn_id": tid, "conversation": cid, "session": s + 1, "speaker": speaker,
                "occurred_at": (conv.sessions[s] + timedelta(minutes=2 * t)).isoformat(), "text": f"{speaker}: {text}",
            })  # fmt: skip
            if meta is not None and "fact" in meta:
                fact_turn[meta["fact"]] = tid
            elif meta is not None:
                twin_turn_of[meta["twin"]] = tid
    questions = [
        q for i, fact in enumerate(facts) for q in ask(rng, conv, fact, fact_turn[i], twin_turn_of[i])
    ]
    return turns, questions


def ask(
    rng: random.Random,
    conv: Conversation,
    fact: tuple[int, Topic, dict[str, Any], int],
    evidence: str,
    twin: str,
) -> list[dict[str, Any]]:
    """One or two questions about a fact, of the kinds its topic supports.

    A paraphrase names no value, so the look-alike turn (same kind of event, same thing) answers it
    as well and is evidence too; every other question names what tells the two apart.
    """
    _, topic, values, speaker = fact
    kinds = ["paraphrase", "adversarial", "person"]
    kinds += [k for k in ("date", "amount", "document") if getattr(topic, k) is not None]
    kinds += [k for k in ("date", "amount", "document") if getattr(topic, k) is not None]  # values weigh more
    chosen = rng.sample(kinds, 2)
    out = []
    for kind in dict.fromkeys(chosen):
        if kind == "paraphrase":
            text = topic.para.format(**values)
        elif kind == "adversarial":
            text = topic.actor.format(**values, actor=conv.speakers[1 - speaker])
        elif kind == "person":
            template = topic.who if topic.who and rng.random() < 0.6 else topic.actor
            text = template.format(**values, actor=conv.speakers[speaker])
        else:
            text = str(getattr(topic, kind)).format(**values)
        turns = [evidence, twin] if kind == "paraphrase" else [evidence]
        out.append({"conversation": conv.cid, "question": text, "evidence": turns, "kind": kind})
    return out


def main() -> None:
    write_dialogue_set(build, seed=SEED, conversations=CONVERSATIONS, out=OUT, prefix="conversation")


if __name__ == "__main__":
    main()
