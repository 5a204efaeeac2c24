#!/usr/bin/env python3
# ruff: noqa: E501  (the event tables are sentences; wrapping them would hide what a turn says)
"""Generate the second conversational labelled set, LoCoMo-like (deterministic: same seed, same files).

Writes ``benchmarks/chat_turns.jsonl`` and ``benchmarks/chat_questions.jsonl``. Written apart from
``make_conversation_dataset.py`` on purpose, so the fusion is not tuned to one generator's habits:
10 long conversations between two friends (about 25 sessions, 400-500 turns each), personal life
rather than business, dates relative to the session ("yesterday", "last weekend") instead of
spelled out, few amounts or document numbers, speakers who call each other by name, reactions
that repeat the words of the turn they answer and later sessions that come back to a topic
without its facts. Each turn is recorded as one case of its conversation's customer.

Question kinds follow LoCoMo's: ``single-hop`` (a fact of one turn, often in other words),
``multi-hop`` (facts of two or more turns across sessions; any one counts as found), ``temporal``
(when something happened; the turn says "yesterday"), ``open-domain`` (an inference from a turn,
in other words) and ``adversarial`` (the fact asked about the other speaker).
Run: ``python scripts/make_chat_dataset.py``.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its helper, also when loaded by path

from _dialogue_common import write_dialogue_set

SEED = 20231207
START = datetime(2025, 1, 6, 18, 0, tzinfo=UTC)
OUT = Path(__file__).resolve().parent.parent / "benchmarks"
CONVERSATIONS = 10

NAMES = [
    "Caroline", "Melanie", "Jon", "Gina", "John", "Maria", "Joanna", "Nate", "Tim", "Audrey", "Andrew",
    "Deborah", "Evan", "Sam", "Calvin", "Dave", "James", "Jolene", "Ruth", "Tony",
]  # fmt: skip
FRIENDS = ("Jess", "Marcus", "Priya", "Leo", "Hannah", "Omar", "Beth", "Kai", "Rosa", "Theo", "Ivy", "Sean")
WHEN = [
    "yesterday", "last weekend", "last Friday", "two days ago", "this morning", "last week",
    "on Saturday", "a few days ago", "last night", "on Sunday",
]  # fmt: skip
PLACES = ("the lake", "Yosemite", "the coast", "the mountains", "Lake Tahoe", "the national park", "Big Sur")
CITIES = (
    "Paris",
    "Tokyo",
    "Barcelona",
    "Chicago",
    "Toronto",
    "Seattle",
    "Rome",
    "Austin",
    "Dublin",
    "Lisbon",
)


@dataclass(frozen=True)
class Event:
    """Something a speaker did. ``tell`` states it (slot values in braces), ``react`` is the friend's
    answer (it repeats the topic's words, without the fact), ``later`` a callback in a later session.
    Questions: ``what`` (single-hop), ``when`` (temporal), ``infer`` (open-domain, in other words);
    ``group`` names the multi-hop category the event counts towards (``{S}``'s pets, trips, ...)."""

    name: str
    slots: dict[str, tuple[str, ...]]
    tell: tuple[str, ...]
    react: tuple[str, ...]
    later: tuple[str, ...]
    what: tuple[str, ...]
    when: tuple[str, ...]
    infer: tuple[str, ...]
    group: str


EVENTS = [
    Event("pottery", {"obj": ("a bowl", "a mug", "a vase", "a little plate")},
          ("I took a pottery class {when} and made {obj}! My hands were covered in clay the whole time.",
           "Guess what, I made {obj} at my pottery workshop {when}. It is lopsided but I love it."),
          ("Pottery sounds so relaxing, {S}! Send me a photo of what you made.", "Wow, a pottery class! I always wanted to try the wheel."),
          ("I am still going to pottery every week, it is my therapy now.",),
          ("What did {S} make in the pottery class?", "What did {S} create out of clay?"),
          ("When did {S} take the pottery class?", "When did {S} go to the clay workshop?"),
          ("Is {S} into arts and crafts?", "Would {S} enjoy a ceramics studio?"), "hobbies"),
    Event("pet", {"pet": ("puppy", "kitten", "rabbit", "parrot"), "pet_name": ("Max", "Luna", "Oliver", "Bella", "Pepper", "Milo")},
          ("We adopted a {pet} {when}! We named him {pet_name} and he already sleeps on my bed.",
           "Big news, {pet_name} joined the family {when}, a tiny {pet} from the shelter."),
          ("Oh my gosh, a {pet}! {pet_name} is such a cute name.", "A new {pet}, how exciting! Shelter animals are the best."),
          ("{pet_name} chewed my shoes again, the little rascal.",),
          ("What is the name of {S}'s {pet}?", "What did {S} call the animal from the shelter?"),
          ("When did {S} adopt {pet_name}?", "When did {S} get the {pet}?"),
          ("Is {S} an animal lover?", "Would {S} volunteer at an animal rescue?"), "pets"),
    Event("camping", {"place": PLACES, "sight": ("the stars", "a bear", "a waterfall", "the sunrise")},
          ("My family and I went camping at {place} {when}. The kids could not stop talking about {sight}.",
           "We just got back from a camping trip to {place}; we saw {sight} {when} and it was magical."),
          ("Camping sounds amazing, {S}! Did the kids sleep in the tent?", "I love camping trips, {place} is on my list."),
          ("I miss the campfire, we should plan another trip soon.",),
          ("Where did {S} go camping?", "What did {S}'s kids see on the camping trip?"),
          ("When did {S} go camping?", "When was {S}'s trip to {place}?"),
          ("Does {S} like the outdoors?", "Would {S} enjoy a hiking holiday?"), "trips"),
    Event("concert", {"band": ("Coldplay", "Taylor Swift", "the Lumineers", "Imagine Dragons", "a local jazz band"), "song": ("their biggest hit", "my favourite ballad", "an acoustic encore")},
          ("I saw {band} live {when}! They played {song} and I cried a little.",
           "The {band} concert {when} was unreal, they closed with {song}."),
          ("No way, {band}! I am so jealous, {S}.", "Live music is the best, I need to go to more concerts."),
          ("I still have the {band} songs stuck in my head.",),
          ("Which band did {S} see live?", "What did {band} play at the show {S} went to?"),
          ("When did {S} go to the {band} concert?", "When did {S} see {band}?"),
          ("Is {S} a music fan?", "Would {S} like tickets to a music festival?"), "music"),
    Event("job", {"job": ("nurse", "graphic designer", "teacher", "software tester", "barista"), "company": ("a children's hospital", "a small studio", "the high school", "a startup", "a coffee roastery")},
          ("I started my new job as a {job} at {company} {when}. Everyone was so welcoming.",
           "First day as a {job} was {when}! {company} feels like the right place."),
          ("Congrats on the new job, {S}! A {job}, that suits you.", "Starting a new job is scary and exciting at the same time."),
          ("Work has been busy, but I really like my team.",),
          ("What is {S}'s new job?", "Where does {S} work now?"),
          ("When did {S} start the new job?", "When was {S}'s first day at work?"),
          ("Is {S} happy with their career?", "Would {S} recommend their employer?"), "work"),
    Event("race", {"cause": ("cancer research", "the animal shelter", "mental health awareness", "the food bank"), "distance": ("5K", "10K", "half marathon")},
          ("I ran a {distance} for {cause} {when}. My legs are still sore!",
           "Finished the charity {distance} {when}, we raised money for {cause}."),
          ("A {distance}, that is impressive, {S}! Running for charity is so meaningful.", "You are so sporty, I could never run that far."),
          ("I am training for the next race already.",),
          ("What cause did {S} run for?", "How far did {S} run in the charity race?"),
          ("When did {S} run the charity race?", "When did {S} do the {distance}?"),
          ("Does {S} care about giving back?", "Would {S} sign up for a marathon?"), "sports"),
    Event("book", {"book": ("'Becoming'", "'The Midnight Library'", "'Dune'", "'Educated'", "'Little Women'"), "theme": ("second chances", "growing up", "finding your voice", "courage")},
          ("I just finished reading {book} {when}, it is all about {theme}.",
           "Stayed up late {when} to finish {book}; the part about {theme} really got me."),
          ("Ooh, {book}! I have heard good things, {S}.", "I need a new book, is it worth reading?"),
          ("I keep thinking about that book I read, it stayed with me.",),
          ("What book did {S} finish recently?", "What is the book {S} read about?"),
          ("When did {S} finish reading {book}?", "When did {S} read the book?"),
          ("Does {S} enjoy reading?", "Would {S} join a book club?"), "books"),
    Event("support", {"group": ("LGBTQ support group", "grief support group", "new parents group", "anxiety support circle")},
          ("I went to the {group} {when}. Hearing everyone's stories made me feel less alone.",
           "The {group} meeting {when} was so powerful, I shared my story for the first time."),
          ("I am so proud of you for going, {S}. Those groups can be life-changing.", "That takes courage. How did it feel to share?"),
          ("The people from the group have become real friends.",),
          ("What group did {S} attend?", "What kind of meeting did {S} share their story at?"),
          ("When did {S} go to the {group}?", "When did {S} first share their story?"),
          ("Does {S} value community support?", "Would {S} go to counselling?"), "community"),
    Event("painting", {"subject": ("a sunset", "a lake at dawn", "sunflowers", "my grandmother's house", "a horse")},
          ("I painted {subject} {when}, first painting in years! I will show you.",
           "Finished a painting of {subject} {when}, acrylics on a big canvas."),
          ("You paint, {S}? That is wonderful, I cannot wait to see it.", "Painting is such a good outlet."),
          ("I hung the painting in the hallway, it makes me smile every morning.",),
          ("What did {S} paint?", "What is in {S}'s painting?"),
          ("When did {S} paint {subject}?", "When did {S} finish the painting?"),
          ("Is {S} artistic?", "Would {S} enjoy a visit to an art museum?"), "hobbies"),
    Event("travel", {"city": CITIES, "sight": ("the old cathedral", "a food market", "the river walk", "a jazz bar", "the science museum")},
          ("I just got back from {city}! We spent {when} wandering around {sight}.",
           "{city} was incredible, {when} we found {sight} and stayed for hours."),
          ("{city}! I have always wanted to go there, {S}.", "Travelling is the best way to recharge."),
          ("I am already dreaming about the next trip abroad.",),
          ("Which city did {S} visit?", "What did {S} see in {city}?"),
          ("When was {S} in {city}?", "When did {S} visit {sight}?"),
          ("Does {S} like to travel?", "Would {S} go on a trip to Europe?"), "trips"),
    Event("baking", {"food": ("a chocolate cake", "banana bread", "lemon cupcakes", "an apple pie"), "friend": FRIENDS},
          ("I baked {food} for {friend}'s birthday {when}, and it actually turned out great.",
           "Made {food} {when} for {friend}, the whole thing was gone in ten minutes."),
          ("Yum, {food}! You have to share the recipe, {S}.", "Baking is so satisfying, I love that smell."),
          ("I think I am getting better at baking, slowly.",),
          ("What did {S} bake for {friend}?", "What dessert did {S} make for the birthday?"),
          ("When did {S} bake {food}?", "When was {friend}'s birthday cake made?"),
          ("Does {S} like cooking?", "Would {S} enjoy a cooking show?"), "food"),
    Event("instrument", {"instrument": ("guitar", "piano", "violin", "ukulele", "drums"), "months": ("three", "six", "two", "four")},
          ("I have been learning the {instrument} for {months} months now, I played my first full song {when}.",
           "My {instrument} teacher said {when} that I am improving fast, {months} months in."),
          ("The {instrument}! That is so cool, {S}. Play something for me next time.", "I wish I had kept up music lessons."),
          ("My fingers hurt from practising so much.",),
          ("What instrument is {S} learning?", "How long has {S} been playing the {instrument}?"),
          ("When did {S} play their first full song?", "When did {S}'s teacher praise the playing?"),
          ("Is {S} musical?", "Would {S} join a band?"), "music"),
    Event("injury", {"part": ("ankle", "wrist", "knee", "shoulder"), "sport": ("soccer", "tennis", "basketball", "skiing")},
          ("I hurt my {part} {when} playing {sport}, so I am stuck on the couch.",
           "Twisted my {part} at {sport} {when}, the doctor says two weeks of rest."),
          ("Oh no, your {part}! Take care of yourself, {S}.", "Ouch, I hope it heals quickly."),
          ("My {part} is much better now, thanks for asking.",),
          ("What did {S} injure?", "How did {S} get hurt?"),
          ("When did {S} hurt their {part}?", "When did {S} get injured playing {sport}?"),
          ("Is {S} physically active?", "Would {S} need physiotherapy?"), "sports"),
    Event("visit", {"relative": ("mom", "brother", "grandma", "aunt", "cousin"), "friend": FRIENDS},
          ("My {relative} {friend} came to stay with us {when}, we talked until midnight.",
           "{friend}, my {relative}, visited {when}; it had been almost a year."),
          ("That is lovely, {S}, family visits are precious.", "How long is your {relative} staying?"),
          ("The house feels quiet since my {relative} left.",),
          ("Who visited {S}?", "Which relative came to stay with {S}?"),
          ("When did {S}'s {relative} visit?", "When did {friend} come to stay?"),
          ("Is {S} close to their family?", "Would {S} host a family reunion?"), "family"),
    Event("volunteer", {"place": ("the animal shelter", "a soup kitchen", "the library", "a youth center"), "day": ("Tuesdays", "Saturdays", "Wednesday evenings")},
          ("I started volunteering at {place} {when}, I will go every {day} from now on.",
           "{when} was my first shift volunteering at {place}; I signed up for {day}."),
          ("Volunteering at {place}, that is so kind of you, {S}.", "Giving back feels good, right?"),
          ("I love my volunteering shifts, the people there are great.",),
          ("Where does {S} volunteer?", "On which days does {S} volunteer?"),
          ("When did {S} start volunteering?", "When was {S}'s first shift at {place}?"),
          ("Is {S} community-minded?", "Would {S} help at a charity event?"), "community"),
    Event("garden", {"plant": ("tomatoes", "roses", "herbs", "strawberries", "sunflowers")},
          ("We planted {plant} in the backyard {when}, the kids dug all the holes.",
           "{when} I finally put the {plant} in the ground, fingers crossed they grow."),
          ("A garden! {plant} are a great choice, {S}.", "Gardening with kids is so sweet."),
          ("The garden is really growing now, we picked the first ones.",),
          ("What did {S} plant in the garden?", "What is growing in {S}'s backyard?"),
          ("When did {S} plant {plant}?", "When did {S} start the garden?"),
          ("Does {S} enjoy gardening?", "Would {S} like a visit to a botanical garden?"), "hobbies"),
]  # fmt: skip
GROUP_QUESTIONS = {
    "hobbies": "What hobbies does {S} have?", "pets": "What pets does {S} have?",
    "trips": "Where has {S} travelled?", "music": "What musical things has {S} done?",
    "work": "What does {S} do for work?", "sports": "What sports does {S} do?",
    "books": "What books has {S} read?", "community": "How is {S} involved in the community?",
    "food": "What has {S} cooked or baked?", "family": "Which family members has {S} seen?",
}  # fmt: skip
CHAT = [
    "Hey {O}! How have you been? It feels like ages since we talked.", "Haha, totally, {O}!",
    "Thanks, {O}! That means a lot to me.", "I know, right? Life has been a whirlwind lately.",
    "Same here, work has been crazy but I am hanging in there.", "That is awesome! I am so happy for you.",
    "Take care, {O}! Talk soon.", "Bye! Catch up later this week?", "Aw, you are the best.",
    "Honestly I just needed a quiet weekend at home.", "I have been trying to sleep more, it helps.",
    "We should grab coffee when things calm down.", "Totally agree, it is all about balance.",
    "What have you been up to lately?", "Not much, just the usual routine with the kids.",
    "I love hearing about your week, {O}.", "Sorry I went quiet, it has been a hectic few days.",
    "That sounds like a lot, be kind to yourself.", "Yes! Exactly what I was thinking.",
    "Anyway, enough about me. How is everything with you?", "The weather has been so gloomy, I miss the sun.",
    "I made a to-do list and ignored it all day, haha.", "Good luck, you have got this!",
]  # fmt: skip


def small_talk(rng: random.Random, other: str) -> str:
    """One or two small-talk lines (so that few chat turns repeat word for word, as in real chats)."""
    first, second = rng.sample(CHAT, 2)
    text = first if rng.random() < 0.3 else f"{first} {second}"
    return text.format(O=other)


def build(rng: random.Random, n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    cid = f"CHAT{n + 1:02d}"
    speakers = tuple(rng.sample(NAMES, 2))
    sessions = []
    day = START + timedelta(days=rng.randint(0, 60))
    for _ in range(rng.randint(22, 28)):
        sessions.append(day)
        day += timedelta(days=rng.randint(5, 14), hours=rng.randint(-4, 4))
    per_session: list[list[tuple[str, str, str | None]]] = [[] for _ in sessions]  # speaker, text, fact key
    facts: list[tuple[int, Event, dict[str, str], int]] = []  # session, event, values, speaker index
    for who in range(2):
        for event in rng.sample(EVENTS, 11):  # both speakers share most event kinds: look-alikes
            for _ in range(1 if rng.random() < 0.75 else 2):
                session = rng.randrange(len(sessions) - 2)
                values = {slot: rng.choice(options) for slot, options in event.slots.items()}
                values.update(when=rng.choice(WHEN), S=speakers[who], O=speakers[1 - who])
                key = f"f{len(facts)}"
                tell = rng.choice(event.tell).format(**values)
                per_session[session].append((speakers[who], tell[0].upper() + tell[1:], key))
                react = rng.choice(event.react).format(**values)
                per_session[session].append((speakers[1 - who], react, None))
                later = rng.randrange(session + 1, len(sessions))
                per_session[later].append((speakers[who], rng.choice(event.later).format(**values), None))
                facts.append((session, event, values, who))
    turns: list[dict[str, Any]] = []
    fact_turn: dict[str, str] = {}
    for s, told in enumerate(per_session):
        chat = [
            (speakers[k % 2], small_talk(rng, speakers[(k + 1) % 2]), None) for k in range(rng.randint(8, 12))
        ]
        # a reaction stays right after the turn it answers
        pairs: list[list[tuple[str, str, str | None]]] = []
        i = 0
        while i < len(told):
            pairs.append(
                [told[i], told[i + 1]] if told[i][2] is not None and i + 1 < len(told) else [told[i]]
            )
            i += len(pairs[-1])
        blocks = [[c] for c in chat[2:]] + pairs
        rng.shuffle(blocks)
        mixed = chat[:2] + [turn for block in blocks for turn in block]
        for t, (speaker, text, fact_key) in enumerate(mixed):
            tid = f"{cid}:D{s + 1}:{t + 1}"
            when = sessions[s] + timedelta(minutes=t)
            turns.append({"turn_id": tid, "conversation": cid, "session": s + 1, "speaker": speaker,
                          "occurred_at": when.isoformat(), "text": f"{speaker}: {text}"})  # fmt: skip
            if fact_key is not None:
                fact_turn[fact_key] = tid
    questions: list[dict[str, Any]] = []
    by_group: dict[tuple[int, str], list[str]] = {}
    done = {(who, event.name) for _, event, _, who in facts}
    for i, (_, event, values, who) in enumerate(facts):
        evidence = [fact_turn[f"f{i}"]]
        by_group.setdefault((who, event.group), []).append(evidence[0])
        asked = [("single-hop", rng.choice(event.what)), ("temporal", rng.choice(event.when))]
        # adversarial only when the other speaker never did the like: else the question has an answer
        tricky = (1 - who, event.name) not in done and rng.random() < 0.6
        asked.append(
            ("adversarial", rng.choice(event.what)) if tricky else ("open-domain", rng.choice(event.infer))
        )
        for kind, template in asked:
            target = {**values, "S": values["O"]} if kind == "adversarial" else values
            questions.append(
                {
                    "conversation": cid,
                    "question": template.format(**target),
                    "evidence": evidence,
                    "kind": kind,
                }
            )
    for (who, group), evidence in sorted(by_group.items()):
        if len(evidence) >= 2:
            text = GROUP_QUESTIONS[group].format(S=speakers[who])
            questions.append(
                {"conversation": cid, "question": text, "evidence": evidence, "kind": "multi-hop"}
            )
    return turns, questions


def main() -> None:
    write_dialogue_set(build, seed=SEED, conversations=CONVERSATIONS, out=OUT, prefix="chat")


if __name__ == "__main__":
    main()
