"""Typed fact values: each renders in several equivalent surface forms and can be corrupted.

A passage and an answer render the same value independently, so a supported answer often
words it differently from the passage ("1,200 km" vs "1200 kilometres"); that teaches the
detector that a paraphrase is not a hallucination. ``corrupt`` returns a value that
contradicts the original in one way (a number, a unit, a date, an entity, a polarity),
together with the kind of hallucination it makes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Literal, Protocol

HallucinationKind = Literal[
    "number", "unit", "date", "entity", "negation", "relation", "conflation", "unsupported", "unanswerable"
]

_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)
_SMALL = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")


class Value(Protocol):
    def render(self, rng: random.Random) -> str: ...

    def corrupt(self, rng: random.Random) -> tuple[Value, HallucinationKind]: ...


def _fmt_number(amount: float, decimals: int, rng: random.Random, *, words: bool = True) -> str:
    if decimals == 0:
        n = round(amount)
        if words and 0 <= n < len(_SMALL) and rng.random() < 0.4:
            return _SMALL[n]
        if n >= 1000 and rng.random() < 0.7:
            return f"{n:,}"
        return str(n)
    return f"{amount:.{decimals}f}"


def _changed_amount(amount: float, decimals: int, rng: random.Random, low: float, high: float) -> float:
    """A clearly different amount in the same range (never equal once rounded)."""
    step = 10.0 ** -decimals
    for _ in range(50):
        r = rng.random()
        if r < 0.4:
            new = amount * rng.uniform(1.25, 3.0) ** rng.choice((-1, 1))
        elif r < 0.7:
            digits = list(f"{amount:.{decimals}f}")
            positions = [i for i, ch in enumerate(digits) if ch.isdigit()]
            i = rng.choice(positions)
            digits[i] = rng.choice([d for d in "0123456789" if d != digits[i]])
            new = float("".join(digits))
        else:
            new = rng.uniform(low, high)
        new = round(new / step) * step
        if low <= new <= high and abs(new - amount) >= max(step, abs(amount) * 0.05):
            return new
    return round((amount + max(step, abs(amount) * 0.5)) / step) * step


@dataclass(frozen=True, slots=True)
class Unit:
    """Surface forms of one unit; ``swaps`` are units that would make the figure wrong."""

    forms: tuple[str, ...]
    swaps: tuple[tuple[str, ...], ...] = ()
    prefix: bool = False  # "$5" rather than "5 dollars"
    space: bool = True


@dataclass(frozen=True, slots=True)
class Quantity:
    amount: float
    unit: Unit
    decimals: int
    low: float
    high: float

    def render(self, rng: random.Random) -> str:
        number = _fmt_number(self.amount, self.decimals, rng, words=not self.unit.prefix)
        form = rng.choice(self.unit.forms)
        if not form:
            return number
        if self.unit.prefix:
            return f"{form}{number}"
        if form in ("%", "°C", "°F") or not self.unit.space:
            return f"{number}{form}"
        return f"{number} {form}"

    def corrupt(self, rng: random.Random) -> tuple[Value, HallucinationKind]:
        if self.unit.swaps and rng.random() < 0.3:
            forms = rng.choice(self.unit.swaps)
            return replace(self, unit=Unit(forms, (), self.unit.prefix, self.unit.space)), "unit"
        return replace(self, amount=_changed_amount(self.amount, self.decimals, rng, self.low, self.high)), "number"


@dataclass(frozen=True, slots=True)
class Money:
    """An amount in millions (or plain units when ``millions`` is false)."""

    amount: float
    currency: tuple[str, str, str]  # symbol, code, words ("$", "USD", "US dollars")
    millions: bool
    low: float
    high: float

    def render(self, rng: random.Random) -> str:
        number = f"{self.amount:.1f}" if self.millions else _fmt_number(self.amount, 0, rng, words=False)
        scale = " million" if self.millions else ""
        symbol, code, words = self.currency
        style = rng.randrange(3)
        if style == 0 and symbol:
            return f"{symbol}{number}{scale}"
        if style == 1:
            return f"{code} {number}{scale}"
        return f"{number}{scale} {words}"

    def corrupt(self, rng: random.Random) -> tuple[Value, HallucinationKind]:
        if rng.random() < 0.2:
            scale_word = not self.millions
            # "million" appearing or vanishing changes the figure by orders of magnitude
            return replace(self, millions=scale_word, amount=round(self.amount, 1 if scale_word else 0)), "number"
        decimals = 1 if self.millions else 0
        return replace(self, amount=_changed_amount(self.amount, decimals, rng, self.low, self.high)), "number"


@dataclass(frozen=True, slots=True)
class Date:
    year: int
    month: int
    day: int

    def render(self, rng: random.Random) -> str:
        month = _MONTHS[self.month - 1]
        style = rng.randrange(5)
        if style == 0:
            return f"{month} {self.day}, {self.year}"
        if style == 1:
            return f"{self.day} {month} {self.year}"
        if style == 2:
            return f"{self.year}-{self.month:02d}-{self.day:02d}"
        if style == 3:
            return f"{month[:3]} {self.day}, {self.year}" if month != "May" else f"May {self.day}, {self.year}"
        return f"the {self.day}{_ordinal(self.day)} of {month} {self.year}"

    def corrupt(self, rng: random.Random) -> tuple[Value, HallucinationKind]:
        which = rng.randrange(3)
        if which == 0:
            return replace(self, year=self.year + rng.choice((-1, 1)) * rng.randint(1, 30)), "date"
        if which == 1:
            return replace(self, month=rng.choice([m for m in range(1, 13) if m != self.month])), "date"
        return replace(self, day=rng.choice([d for d in range(1, 29) if d != self.day])), "date"


def _ordinal(n: int) -> str:
    if 10 <= n % 100 <= 20:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


@dataclass(frozen=True, slots=True)
class Year:
    year: int

    def render(self, rng: random.Random) -> str:
        return str(self.year)

    def corrupt(self, rng: random.Random) -> tuple[Value, HallucinationKind]:
        return Year(self.year + rng.choice((-1, 1)) * rng.randint(1, 40)), "date"


@dataclass(frozen=True, slots=True)
class Version:
    parts: tuple[int, int, int]

    def render(self, rng: random.Random) -> str:
        text = ".".join(map(str, self.parts))
        return f"v{text}" if rng.random() < 0.2 else text

    def corrupt(self, rng: random.Random) -> tuple[Value, HallucinationKind]:
        parts = list(self.parts)
        i = rng.randrange(3)
        parts[i] = parts[i] + rng.randint(1, 4)
        return Version((parts[0], parts[1], parts[2])), "number"


@dataclass(frozen=True, slots=True)
class Choice:
    """One of a pool of names; each name may have aliases that mean the same thing."""

    pool: tuple[tuple[str, ...], ...]
    index: int
    kind: HallucinationKind = "entity"

    def render(self, rng: random.Random) -> str:
        return rng.choice(self.pool[self.index])

    def corrupt(self, rng: random.Random) -> tuple[Value, HallucinationKind]:
        other = rng.choice([i for i in range(len(self.pool)) if i != self.index])
        return replace(self, index=other), self.kind

    def same(self, other: Value) -> bool:
        return isinstance(other, Choice) and other.pool is self.pool and other.index == self.index


def make_choice(pool: tuple[tuple[str, ...], ...], rng: random.Random, kind: HallucinationKind = "entity") -> Choice:
    return Choice(pool, rng.randrange(len(pool)), kind)


def same_value(a: Value, b: Value) -> bool:
    """Equal facts (distractor entities must not share the main entity's value)."""
    if isinstance(a, Choice):
        return a.same(b)
    return a == b
