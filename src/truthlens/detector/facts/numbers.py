"""Numbers and dates in text, normalised, and whether a context states the same ones.

A number is its value and, when it has one, its unit's canonical name: ``1,000`` =
``one thousand``, ``$4.2 million`` = ``4.2 million dollars``, ``12%`` = ``12 percent``,
``3 km`` = ``3 kilometres``, ``third`` = ``3rd``. A date is its (year, month, day) parts:
``July 20, 1969`` = ``20 July 1969`` = ``1969-07-20``. A clock time is the minutes after
midnight it may mean: ``7:00 PM`` = ``19:00`` = ``19:0`` (how JSON records write opening hours).
Numbers that point into the prompt or measure the reply itself ("(Passage 2)", "steps 7 and 8",
"a summary in 63 words", "the larger of the two") are read but not checked: they are no claim
about the world.

An answer's number that is not the context's exactly may still restate it: rounded to the
precision the answer writes ("8,849 m" for "8,848.86 m", "4.2 million" for "4,213,000"), or
hedged within 10% ("about 21,000 km" for "21,196 km"). Either counts only for a context number
that speaks of the same thing (:class:`Claim`): a physical quantity in the same unit, or a number
whose sentence (and the one before it, when this one opens with "It", "Its", …) names what the
answer's sentence names and shares its words (two of them; one if the answer's sentence has only
one). A hedged "About 61,500 people work for Brightvale" is not restated by "About 60,200 people
work for Torvel Logistics" in another passage of a long context.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

from truthlens.detector.facts.claims import SENTENCE_END, Claim, Ranges, topic_words
from truthlens.detector.facts.implied import CONVERSION_SLACK, CONVERT, counts_the_list, implied_numbers
from truthlens.detector.facts.pointers import own_count, points_elsewhere, rating_scale, set_size
from truthlens.detector.text import list_markers
from truthlens.detector.types import FactReason

# ----------------------------------------------------------------------------- word lists

MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
    "oct": 10, "nov": 11, "dec": 12,
}
_MONTH = r"(?P<{}>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"

_UNITS: dict[str, str] = {}
for _canon, _aliases in {
    "km": "km kms kilometre kilometres kilometer kilometers",
    "m": "m metre metres meter meters",
    "cm": "cm centimetre centimetres centimeter centimeters",
    "mm": "mm millimetre millimetres millimeter millimeters",
    "mi": "mi mile miles",
    "ft": "ft foot feet",
    "yd": "yd yard yards",
    "kg": "kg kgs kilogram kilograms kilogramme kilogrammes",
    "g": "g gram grams gramme grammes",
    "mg": "mg milligram milligrams",
    "lb": "lb lbs pound pounds",
    "t": "tonne tonnes ton tons",
    "l": "l litre litres liter liters",
    "ml": "ml millilitre millilitres milliliter milliliters",
    "%": "% percent per_cent pct",
    "°c": "°c celsius degrees_celsius degree_celsius",
    "°f": "°f fahrenheit degrees_fahrenheit degree_fahrenheit",
    "°": "° degree degrees",
    "km/h": "km/h kph kmh",
    "mph": "mph",
    "s": "s sec secs second seconds",
    "min": "min mins minute minutes",
    "h": "h hr hrs hour hours",
    "day": "day days",
    "week": "week weeks",
    "month": "month months",
    "year": "year years yr yrs",
    "usd": "usd dollar dollars $ us$",
    "eur": "eur euro euros €",
    "gbp": "gbp £ sterling",
    "jpy": "jpy yen ¥",
    "w": "w watt watts",
    "kw": "kw kilowatt kilowatts",
    "mw": "mw megawatt megawatts",
    "ha": "ha hectare hectares",
    "acre": "acre acres",
}.items():
    for _alias in _aliases.split():
        _UNITS[_alias.replace("_", " ")] = _canon
# Unit names written as words ("Celsius", "miles"): after a number, a capitalised one is the unit,
# not a name (:mod:`.names`).
UNIT_WORDS = frozenset(u for u in _UNITS if u.isalpha() and len(u) > 2)
_KINDS = {u: kind for kind, units in {
    "length": "km m cm mm mi ft yd", "mass": "kg g mg lb t", "volume": "l ml", "money": "usd eur gbp jpy",
    "temperature": "°c °f °", "speed": "km/h mph", "time": "s min h day week month year", "power": "w kw mw",
    "area": "ha acre",
}.items() for u in units.split()}
# "pounds" may be money or weight: either reading supports it.
# "degrees" says no scale: either of °C and °F agrees with it.
_UNIT_ALSO = {"lb": {"gbp"}, "gbp": {"lb"}, "°": {"°c", "°f"}, "°c": {"°"}, "°f": {"°"}}
_CURRENCY_SIGNS = {"$": "usd", "us$": "usd", "€": "eur", "£": "gbp", "¥": "jpy"}
_SCALES = {"thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "mn": 1e6, "billion": 1e9, "bn": 1e9,
           "trillion": 1e12, "millions": 1e6, "milliard": 1e9, "milliards": 1e9}  # (French plurals and 10^9)

_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
         "fifteen sixteen seventeen eighteen nineteen").split()
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
         "ninety": 90}
_WORD_VALUES: dict[str, int] = {w: i for i, w in enumerate(_ONES)} | _TENS | {"hundred": 100, "dozen": 12}
_ORDINAL_WORDS = {
    "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9,
    "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13, "fourteenth": 14, "fifteenth": 15,
    "sixteenth": 16, "seventeenth": 17, "eighteenth": 18, "nineteenth": 19, "twentieth": 20,
}
# Too common as pronoun, article or adverb ("one of", "the first time") to be checked in an
# answer; they still count as numbers in the context.
_UNCHECKED_WORDS = {"zero", "one", "first"}
_HEDGE = re.compile(
    r"(?:(?<![\w.])(?:about|around|approximately|approx\.|roughly|nearly|almost|some|over|more than|"
    r"less than|under|up to|circa|c\.|estimated)|~)$"
)

# ----------------------------------------------------------------------------- dates


@dataclass(frozen=True, slots=True)
class Date:
    start: int
    end: int
    year: int | None
    month: int | None
    day: int | None


_Y = r"(?P<y>\d{4})(?!\d)"
_D = r"(?P<d>\d{1,2})(?:st|nd|rd|th)?(?!\d)"
# Each pattern opens with a look-ahead on its first character: the alternations are then tried
# at a few positions only (4x faster over a long context).
_MONTH_START = "(?=[" + "".join(sorted({m[0] for m in MONTHS})) + "])"
_DATE_FORMS = [
    re.compile(r"(?=\d)(?<![\w-])(?P<y>\d{4})-(?P<mn>\d{1,2})-(?P<d>\d{1,2})(?![\w-])"),
    re.compile(r"\b" + _MONTH_START + _MONTH.format("m") + r"\s+" + _D + r"(?:,?\s+" + _Y + r")?", re.IGNORECASE),
    re.compile(r"(?=\d)(?<![\w.])" + _D + r"\s+(?:of\s+)?" + _MONTH.format("m") + r"(?:,?\s+" + _Y + r")?\b",
               re.IGNORECASE),
    re.compile(r"\b" + _MONTH_START + _MONTH.format("m") + r",?\s+(?:of\s+)?" + _Y, re.IGNORECASE),
]


def find_dates(text: str) -> list[Date]:
    found: list[Date] = []
    spans = Ranges()
    for start, end in list_markers(text):  # "in November. 2. ...": the "2." numbers a list item
        spans.add(start, end)
    for form in _DATE_FORMS:  # most specific first; a later form never re-reads a date's chars
        for m in form.finditer(text):
            if spans.overlaps(m.start(), m.end()):
                continue
            groups = m.groupdict()
            month = int(groups["mn"]) if groups.get("mn") else MONTHS[groups["m"].lower()]
            day = int(groups["d"]) if groups.get("d") else None
            year = int(groups["y"]) if groups.get("y") else None
            if not 1 <= month <= 12 or (day is not None and not 1 <= day <= 31):
                continue
            if groups.get("m") and groups["m"].lower() == "may" and not groups["m"][0].isupper() and day is None:
                continue  # "may 2020" in lower case is more likely the verb
            spans.add(m.start(), m.end())
            found.append(Date(m.start(), m.end(), year, month, day))
    return sorted(found, key=lambda d: d.start)


# ----------------------------------------------------------------------------- clock times


@dataclass(frozen=True, slots=True)
class ClockTime:
    start: int
    end: int
    minutes: frozenset[int]  # the minutes after midnight it may mean ("9:00" may be 21:00)


# "7 pm", "7:30 a.m.", "12:00 AM"; or "19:00" (and, in a context only, "8:0": records written
# from JSON drop the minutes' zero).
_TIME_12H = re.compile(
    r"(?<![\w:.,])(?P<h>1[0-2]|0?[1-9])(?::(?P<m>[0-5]\d))?\s?(?P<ap>[ap])(?:m\b|\.\s?m\.)", re.IGNORECASE
)
_TIME_24H = re.compile(r"(?<![\w:.,])(?P<h>[01]?\d|2[0-4]):(?P<m>[0-5]\d)(?![\d:])")
_TIME_24H_SHORT = re.compile(r"(?<![\w:.,])(?P<h>[01]?\d|2[0-4]):(?P<m>[0-5]\d?)(?![\d:])")


def find_times(text: str, *, answer: bool = True) -> list[ClockTime]:
    """The clock times in ``text`` (a context's may drop the minutes' leading zero: ``8:0``)."""
    found: list[ClockTime] = []
    spans = Ranges()
    for m in _TIME_12H.finditer(text):
        hour, minute = int(m.group("h")) % 12, int(m.group("m") or 0)
        if m.group("ap").lower() == "p":
            hour += 12
        spans.add(m.start(), m.end())
        found.append(ClockTime(m.start(), m.end(), frozenset({hour * 60 + minute})))
    for m in (_TIME_24H if answer else _TIME_24H_SHORT).finditer(text):
        if spans.overlaps(m.start(), m.end()):
            continue
        hour, minute = int(m.group("h")) % 24, int(m.group("m"))
        # Without am/pm, "9:00" may be either half of the day; "21:00" and "0:00" cannot.
        hours = {hour, (hour + 12) % 24} if 1 <= hour <= 12 else {hour}
        spans.add(m.start(), m.end())
        found.append(ClockTime(m.start(), m.end(), frozenset(h * 60 + minute for h in hours)))
    return sorted(found, key=lambda t: t.start)


# ----------------------------------------------------------------------------- numbers


@dataclass(frozen=True, slots=True)
class Quantity:
    start: int
    end: int
    value: float
    unit: str | None
    hedged: bool
    year_like: bool  # a bare 4-digit integer in the range of years: reported as a date
    alt: float | None = None  # a second reading of the value ("4.2m": metres or millions)
    checked: bool = True  # False: too ambiguous to flag in an answer ("one", "first")
    step: float = 0.0  # the precision it is written to ("8,849": 1; "4.2 million": 100,000; 0: unknown)
    ordinal: bool = False  # "third day", "3rd year": a position, not an amount


_UNIT_ALT = "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True) if u not in _CURRENCY_SIGNS)
_NUMBER = re.compile(
    r"(?=[\d.$€£¥u])(?<![\w.,/])(?<![^\W\d_]-)(?:(?P<cur>us\$|[$€£¥])\s?)?"
    # Thousands grouped by commas, or (French, and SI) by spaces with a decimal comma: "1 500",
    # "2 345,6"; a decimal comma before one or two digits: "1,5".
    r"(?P<num>\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?:,\d+)?(?![\d.,])|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+,\d{1,2}(?![\d,])|"
    r"\d+(?:\.\d+)?|\.\d+)"
    r"(?P<ord>st|nd|rd|th)?"
    r"(?P<s>s\b)?"
    r"(?:\s?(?P<scale>thousand|millions?|milliards?|billion|trillion|bn|mn|k|m)\b(?!\s?(?:/|²|2\b)))?"
    r"(?:[\s-]?(?:de\s+)?(?P<unit>" + _UNIT_ALT + r")(?![\w/]))?",
    re.IGNORECASE,
)
NUMBER_WORDS = frozenset([*_ONES, *_TENS, "hundred", "dozen", *_ORDINAL_WORDS, "first"])
_WORD_NUMBER = re.compile(
    r"\b(?=[" + "".join(sorted({w[0] for w in NUMBER_WORDS})) + r"])"
    r"(?P<num>(?:" + "|".join(_TENS) + r")(?:[\s-](?:" + "|".join(_ONES[1:10]) + r"))?|"
    + "|".join(sorted(NUMBER_WORDS - set(_TENS), key=len, reverse=True)) + r")"
    r"(?P<hundred>[\s-]hundred\b)?"
    r"(?:\s(?P<scale>thousand|million|billion|trillion))?"
    r"(?:\s(?P<unit>" + _UNIT_ALT + r")(?![\w/]))?\b",
    re.IGNORECASE,
)


def find_quantities(text: str, *, answer: bool = True) -> Iterator[Quantity]:
    """The numbers in ``text``; only an answer's are read for hedges ("about 4 million")."""
    markers = {start for start, _ in list_markers(text)}
    for m in _NUMBER.finditer(text):
        if m.start() in markers or m.start() - 1 in markers or (
                _LIST_MARKER.match(text, m.start()) and _line_start(text, m.start())):
            continue  # "1. Paris", "2) Lyon", "1. Rome 2. Paris": the answer's own numbering, not a fact
        raw = _digits(m.group("num"))
        value = float(raw)
        cur, scale, unit = m.group("cur"), m.group("scale"), m.group("unit")
        alt: float | None = None
        if scale and scale.lower() == "m" and not cur:
            # "5 m" is five metres unless money is meant; "4.2m people" reads as millions
            unit, scale, alt = unit or "m", None, value * 1e6
        if scale:
            value *= _SCALES[scale.lower()]
        canon = _CURRENCY_SIGNS[cur.lower()] if cur else (_UNITS[unit.lower()] if unit else None)
        plain = not (cur or scale or unit or m.group("ord"))
        year_like = plain and len(m.group("num")) == 4 and raw.isdigit() and 1000 <= value <= 2100
        if m.group("s") and year_like:  # "the 1960s"
            yield Quantity(m.start(), m.end(), value, "decade", False, True)
            continue
        end = m.end("num") if plain else m.end()
        checked = not (answer and plain
                       and (points_elsewhere(text, m.start(), end) or rating_scale(text, m.start(), end)))
        decimals = len(raw.partition(".")[2])
        step = 10.0 ** -decimals * (_SCALES[scale.lower()] if scale else 1.0)
        yield Quantity(m.start(), end, value, canon, answer and _hedged(text, m.start()), year_like, alt, checked,
                       step, ordinal=bool(m.group("ord")))
    for m in _WORD_NUMBER.finditer(text):
        word = m.group("num").lower()
        parts = re.split(r"[\s-]", word)
        if len(parts) == 2:
            value = float(_TENS[parts[0]] + _WORD_VALUES[parts[1]])
        elif word in _ORDINAL_WORDS:
            value = float(_ORDINAL_WORDS[word])
        elif word == "first":
            value = 1.0
        else:
            value = float(_WORD_VALUES[word])
        if m.group("hundred") and word != "hundred":  # "two hundred", "forty-two hundred": one number
            value *= 100
        if m.group("scale"):
            value *= _SCALES[m.group("scale").lower()]
        unit = _UNITS[m.group("unit").lower()] if m.group("unit") else None
        checked = (word not in _UNCHECKED_WORDS or bool(m.group("scale") or m.group("hundred"))) and not (
            answer and (set_size(text, m.start(), m.end()) or rating_scale(text, m.start(), m.end())
                        or (word in _ORDINAL_WORDS and own_count(text, m.start(), m.end()))))
        yield Quantity(m.start(), m.end(), value, unit, answer and _hedged(text, m.start()), False, None, checked,
                       ordinal=word in _ORDINAL_WORDS)


def _digits(num: str) -> str:
    """A numeral as Python reads it: "1,280" -> "1280", "1 500" -> "1500", "2 345,6" / "1,5" (a
    decimal comma) -> "2345.6" / "1.5"."""
    grouped = re.sub(r"[ \u00a0\u202f]", "", num)
    if grouped != num or re.fullmatch(r"\d+,\d{1,2}", num):
        return grouped.replace(",", ".")
    return num.replace(",", "")


_LIST_MARKER = re.compile(r"\(?\d{1,2}[.)](?:\s|$)")
def _line_start(text: str, start: int) -> bool:
    line = text[text.rfind("\n", 0, start) + 1 : start]
    return line.strip() in ("", "(", "-", "*", "•") or line.rstrip().endswith(("(", ":"))


def _hedged(text: str, start: int) -> bool:
    return _HEDGE.search(text[max(0, start - 16) : start].lower().rstrip()) is not None


def _exact(known: float, q: Quantity) -> bool:
    return math.isclose(known, q.value, rel_tol=1e-9, abs_tol=1e-9)


def _near(known: Quantity, q: Quantity) -> bool:
    """``q`` restates ``known`` approximately: rounded to the precision it is written to
    ("8,849" for 8,848.86), or hedged ("about 4 million" for 4.2 million; "around 1970" for 1969:
    years are not 10% fuzzy)."""
    if known.year_like != q.year_like:
        return False
    gap = abs(known.value - q.value)
    if not q.year_like and 0 < known.step < q.step and gap <= q.step / 2 * (1 + 1e-9):
        return True
    if not q.hedged:
        return False
    return gap <= (2.0 if q.year_like else 0.1 * max(abs(known.value), abs(q.value)))


# Units that name one physical quantity: an approximate value in the same one speaks of the
# same thing. Money, percentages and durations are everywhere in a long context.
_PHYSICAL_KINDS = frozenset({"length", "mass", "volume", "temperature", "speed", "power", "area"})
_OPENS_WITH_PRONOUN = re.compile(r"\s*(?:it|its|they|their|this|these|that|those|he|his|she|her)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class KnownNumbers:
    """The numbers and dates a context states."""

    quantities: tuple[Quantity, ...]
    dates: tuple[Date, ...]
    times: frozenset[int]  # every minute after midnight a clock time of the context may mean
    source: str = ""  # the text they were read from (what a number's sentence is looked up in)
    sentence_starts: tuple[int, ...] = (0,)

    @staticmethod
    def of(source: str) -> KnownNumbers:
        dates = find_dates(source)
        taken = Ranges()
        for d in dates:
            taken.add(d.start, d.end)
        quantities = [q for q in find_quantities(source, answer=False) if not taken.overlaps(q.start, q.end)]
        # A date's parts are numbers too ("20 July 1969" supports "1969" and "the 20th").
        for d in dates:
            for part in (d.year, d.day):
                if part is not None:
                    quantities.append(Quantity(d.start, d.end, float(part), None, False, part == d.year))
        quantities.extend(Quantity(start, end, value, unit, False, unit is None)
                          for start, end, value, unit in implied_numbers(source))
        times = frozenset(minute for t in find_times(source, answer=False) for minute in t.minutes)
        starts = (0, *(m.end() for m in SENTENCE_END.finditer(source)))
        return KnownNumbers(tuple(quantities), tuple(dates), times, source, starts)

    def _topic(self, at: int) -> frozenset[str]:
        """The words of the sentence holding character ``at``, and of the sentence before it when
        this one opens with a pronoun (that one names what "its elevation" is of)."""
        i = bisect.bisect_right(self.sentence_starts, at) - 1
        first = self.sentence_starts[i]
        last = self.sentence_starts[i + 1] if i + 1 < len(self.sentence_starts) else len(self.source)
        if i > 0 and _OPENS_WITH_PRONOUN.match(self.source, first):
            first = self.sentence_starts[i - 1]
        return topic_words(self.source[first:last])

    def _same_thing(self, known: Quantity, q: Quantity, claim: Claim) -> bool:
        if q.unit is not None and known.unit == q.unit and _KINDS.get(q.unit) in _PHYSICAL_KINDS:
            return True
        if not claim.words:
            return True  # nothing said about it to compare: as before, the value alone
        topic = self._topic(known.start)
        if claim.names and not claim.names & topic:
            return False
        return len(claim.words & topic) >= min(2, len(claim.words))

    def has_time(self, time: ClockTime) -> bool:
        return not time.minutes.isdisjoint(self.times)

    def has_date(self, date: Date) -> bool:
        years = {q.value for q in self.quantities if q.year_like}
        for c in self.dates:
            if c.month != date.month or (date.day is not None and c.day != date.day):
                continue
            if date.year is None or c.year == date.year or (c.year is None and date.year in years):
                return True
        return False

    def problem(self, q: Quantity, claim: Claim | None = None) -> FactReason | None:
        """Why the answer's quantity ``q`` is not supported, or None when it is. ``claim``: what
        the answer's sentence says ``q`` is about, which a context number restated only
        approximately must speak of too (None: the value alone decides)."""
        claim = claim if claim is not None else Claim(frozenset(), frozenset())
        if q.unit == "decade":
            decade = q.value // 10 * 10
            if any(c.year_like and decade <= c.value < decade + 10 for c in self.quantities):
                return None
            return "unsupported_date"
        same = [c for c in self.quantities if (_exact(c.value, q) or (c.alt is not None and _exact(c.alt, q)))
                and counts_the_list(c.unit, claim.words)]
        if not same:
            same = [c for c in self.quantities
                    if (_near(c, q) or (c.alt is not None and _near(replace(c, value=c.alt, year_like=False), q)))
                    and self._same_thing(c, q, claim) and counts_the_list(c.unit, claim.words)]
        if not same and q.alt is not None and any(math.isclose(c.value, q.alt) for c in self.quantities):
            return None
        if not same and q.unit in CONVERT:
            other, convert = CONVERT[q.unit]
            # (a context's bare "degrees" may be on the other scale too)
            if any(c.unit in (other, "°") and abs(convert(c.value) - q.value) <= CONVERSION_SLACK[q.unit]
                   for c in self.quantities):
                return None
        if not same:
            return "unsupported_date" if q.year_like else "unsupported_number"
        if q.unit is None:
            return None
        allowed = {q.unit} | _UNIT_ALSO.get(q.unit, set())
        if any(c.unit in allowed for c in same):
            return None
        # Wrong only against the same value in another unit of the same kind ("3 miles" when
        # the context says "3 km"); a bare "3" in the context may well be the same 3 km.
        kind = _KINDS.get(q.unit)
        # An amount is not measured against a position ("3-year-old" against "the third day"); a
        # position is, against either ("third week" where the context has "third day" or "3 years").
        if kind is not None and any(_KINDS.get(c.unit or "") == kind and (q.ordinal or not c.ordinal) for c in same):
            return "unsupported_unit"
        return None
