"""Seeded, realistic-looking business data for fake ERPs (company names, people, amounts, ids).

ERP-neutral: the fake Acumatica and the fake SAP both draw from it. Everything comes from one
``random.Random(seed)``, so the same seed gives the same data. Fast enough for hundreds of
thousands of records: fixed pools and cheap draws, no per-value formatting libraries.
Names include apostrophes and ampersands on purpose (``O'Brien & Sons``): they must survive
filters, URLs and JSON.
"""

from __future__ import annotations

import bisect
import itertools
import random
import re
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any, NamedTuple, TypeVar

T = TypeVar("T")


def _pool(text: str) -> tuple[str, ...]:
    return tuple(text.split("|"))


_PREFIXES = _pool(
    "Alpine|Atlas|Beacon|Blue Ridge|Bright|Cascade|Cedar|Coastal|Copper|Crescent|Delta|Eagle|"
    "Evergreen|Falcon|First|Frontier|Golden|Granite|Great Lakes|Harbor|Highland|Horizon|Iron|"
    "Keystone|Lakeside|Liberty|Lone Star|Maple|Meridian|Metro|Midwest|Mountain|North Star|Northern|"
    "Oak|Ocean|Pacific|Peak|Pine|Pioneer|Prairie|Premier|Red Rock|River|Rocky|Silver|Sterling|"
    "Summit|Sun|Tri-State|United|Valley|Vista|West Coast|Willow|O'Brien|O'Neill|D'Angelo|McAllister|"
    "Smith"
)
_CORES = _pool(
    "Bartending|Bakery|Beverage|Builders|Cabinetry|Catering|Chemicals|Coffee|Construction|Dental|"
    "Design|Electric|Electronics|Engineering|Equipment|Fabrication|Farms|Fitness|Flooring|Foods|"
    "Freight|Furniture|Glass|Hardware|Health|Hospitality|HVAC|Imaging|Industrial|Instruments|"
    "Landscaping|Lighting|Logistics|Lumber|Machining|Marine|Medical|Metals|Motors|Office Supply|"
    "Optical|Packaging|Paper|Pharmacy|Plastics|Plumbing|Printing|Restaurant Supply|Roofing|Software|"
    "Solar|Sporting Goods|Steel|Textiles|Tile|Tools|Trading|Transport|Uniforms|Vending|Water|"
    "Wholesale|Wine & Spirits|Woodworks"
)
_SUFFIXES = _pool(
    "Inc.|LLC|Co.|Corp.|Ltd.|Group|& Sons|Partners|Supply|Services|Company|International|Holdings|"
    "Distributors|Associates"
)
_FIRST = _pool(
    "James|Mary|Robert|Patricia|John|Jennifer|Michael|Linda|David|Elizabeth|William|Barbara|Richard|"
    "Susan|Joseph|Jessica|Thomas|Sarah|Carlos|Karen|Daniel|Lisa|Matthew|Nancy|Anthony|Sandra|Mark|"
    "Ashley|Wei|Priya|Ahmed|Fatima|Hiroshi|Yuki|Olga|Lars|Ingrid|Mateo|Sofia|Chloé|René|Zoë|Siobhan|"
    "Seán|Aoife"
)
_LAST = _pool(
    "Smith|Johnson|Williams|Brown|Jones|Garcia|Miller|Davis|Rodriguez|Martinez|Hernandez|Lopez|"
    "Gonzalez|Wilson|Anderson|Thomas|Taylor|Moore|Jackson|Martin|Lee|Perez|Thompson|White|Harris|"
    "Clark|Lewis|Walker|Hall|Young|O'Brien|O'Connor|Müller|Schmidt|Nguyen|Kim|Patel|Singh|Chen|Wang|"
    "Kowalski|Novak|Rossi|Dubois|Larsen|Jensen|Fischer|Costa|Silva|Tanaka"
)
_STREETS = _pool(
    "Main St|Oak Ave|Maple Dr|Cedar Ln|Park Blvd|Industrial Way|Commerce Pkwy|Market St|River Rd|"
    "Harbor Dr|Lake Shore Dr|Elm St|Pine St|Washington Ave|Airport Rd|Mill Rd"
)
# (city, region, postal prefix, country)
_PLACES = (
    ("Seattle", "WA", "981", "US"),
    ("Portland", "OR", "972", "US"),
    ("San Francisco", "CA", "941", "US"),
    ("Los Angeles", "CA", "900", "US"),
    ("San Diego", "CA", "921", "US"),
    ("Phoenix", "AZ", "850", "US"),
    ("Denver", "CO", "802", "US"),
    ("Dallas", "TX", "752", "US"),
    ("Austin", "TX", "787", "US"),
    ("Houston", "TX", "770", "US"),
    ("Chicago", "IL", "606", "US"),
    ("Minneapolis", "MN", "554", "US"),
    ("Detroit", "MI", "482", "US"),
    ("Atlanta", "GA", "303", "US"),
    ("Miami", "FL", "331", "US"),
    ("Boston", "MA", "021", "US"),
    ("New York", "NY", "100", "US"),
    ("Philadelphia", "PA", "191", "US"),
    ("Toronto", "ON", "M5V", "CA"),
    ("Vancouver", "BC", "V6B", "CA"),
    ("London", "", "EC1", "GB"),
    ("Manchester", "", "M1 ", "GB"),
    ("Berlin", "BE", "101", "DE"),
    ("München", "BY", "803", "DE"),
    ("Paris", "IDF", "750", "FR"),
    ("Amsterdam", "NH", "101", "NL"),
    ("Sydney", "NSW", "200", "AU"),
)
_DOMAINS = ("com", "net", "biz", "co", "us", "io")
_NON_WORD = re.compile(r"[^a-z0-9]+")


class Place(NamedTuple):
    line1: str
    line2: str | None
    city: str
    region: str | None
    postal_code: str
    country: str


class DataGen:
    """Realistic values from one seeded generator. ``rng`` is public for ERP-specific draws."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)
        self.random = self.rng.random  # bound once: the hot path of every draw
        self._codes: dict[str, int] = {}
        self._used: set[str] = set()
        self._weights: dict[int, tuple[Sequence[Any], list[float]]] = {}

    # Generic draws ------------------------------------------------------------------------------
    def pick(self, options: Sequence[T]) -> T:
        return options[int(self.random() * len(options))]

    def below(self, limit: int) -> int:
        """An int in ``[0, limit)`` (cheaper than ``randrange``)."""
        return int(self.random() * limit)

    def weighted(self, options: Sequence[tuple[T, float]]) -> T:
        """One option drawn by weight; weights need not sum to 1."""
        cached = self._weights.get(id(options))
        if cached is None or cached[0] is not options:
            cumulative = list(itertools.accumulate(weight for _, weight in options))
            cached = (options, cumulative)
            self._weights[id(options)] = cached
        cumulative = cached[1]
        index = bisect.bisect_right(cumulative, self.random() * cumulative[-1])
        return options[min(index, len(options) - 1)][0]

    def chance(self, probability: float) -> bool:
        return self.random() < probability

    def digits(self, count: int) -> str:
        return f"{int(self.random() * 10**count):0{count}d}"

    def guid(self) -> str:
        """A random (version 4 layout) GUID string."""
        h = f"{self.rng.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"

    # Business values ----------------------------------------------------------------------------
    def company_name(self) -> str:
        return f"{self.pick(_PREFIXES)} {self.pick(_CORES)} {self.pick(_SUFFIXES)}"

    def person(self) -> tuple[str, str]:
        return self.pick(_FIRST), self.pick(_LAST)

    def domain(self, company: str) -> str:
        words = _NON_WORD.sub(" ", company.lower().replace("'", "")).split()
        core = "".join(words[:2]) or "example"
        return f"{core}.{self.pick(_DOMAINS)}"

    def email(self, first: str, last: str, domain: str) -> str:
        local = _NON_WORD.sub("", f"{first[0]}{last}".lower().replace("'", "")) or "info"
        return f"{local}@{domain}"

    def phone(self) -> str:
        return f"+1 {201 + self.below(789)}-555-{self.digits(4)}"

    def place(self) -> Place:
        city, region, postal, country = self.pick(_PLACES)
        suite = f"Suite {100 + self.below(900)}" if self.random() < 0.25 else None
        return Place(
            f"{1 + self.below(9998)} {self.pick(_STREETS)}",
            suite,
            city,
            region or None,
            (postal + self.digits(2)).strip() if country == "US" else f"{postal}{self.digits(1)}",
            country,
        )

    def amount(self, low: float, high: float) -> Decimal:
        """A money amount in ``[low, high]`` with cents, skewed towards small values (log-uniform)."""
        if low <= 0:
            value = low + (high - low) * self.rng.random() ** 2
        else:
            value = low * (high / low) ** self.rng.random()
        return Decimal(round(value, 2)).quantize(Decimal("0.01"))

    def code(self, name: str, length: int = 10) -> str:
        """A unique upper-case id derived from a name (``ALPINEBART``, ``ALPINEBAR2``)."""
        base = re.sub(r"[^A-Z0-9]", "", name.upper())[:length] or "X"
        seen = self._codes.get(base, 0)
        while True:
            seen += 1
            suffix = "" if seen == 1 else str(seen)
            candidate = base[: length - len(suffix)] + suffix
            if candidate not in self._used:
                break
        self._codes[base] = seen
        self._used.add(candidate)
        return candidate

    def timestamp(self, start: datetime, end: datetime, *, resolution_ms: int = 1) -> datetime:
        """An aware UTC time in ``[start, end]`` at ``resolution_ms`` precision."""
        span_ms = int((end - start).total_seconds() * 1000)
        offset = int(self.random() * (max(span_ms, 0) + 1))
        offset -= offset % resolution_ms
        moment = start + timedelta(milliseconds=offset)
        return moment if moment.tzinfo is UTC else moment.astimezone(UTC)

    def day(self, start: date, end: date) -> date:
        return start + timedelta(days=self.below((end - start).days + 1))
