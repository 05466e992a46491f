"""Yes/no fields of a JSON record said the other way round: "They deliver." over ``"RestaurantsDelivery": false``.

A RAG application that describes a record (a business listing, a product sheet) passes it as
JSON. Its true/false fields say what is and is not offered, and an answer that states one the
other way round uses only words the record has, so no look-up sees it. :func:`contradicted_fields`
reads every passage that parses as JSON, collects its boolean fields (``true``/``false``, or the
strings ``"True"``/``"False"``) with the words of their key and of the key above it
(``BusinessParking.lot``: "business parking lot"), and for each answer clause that names all the
words of a field's own key (stems, "deliver" meets "Delivery"; "restaurants" and "business"
dropped as the record's own subject) compares the clause's polarity with the field: a negated
clause over a true field, or a plain one over a false field, is flagged on the key's words. A
short "Yes"/"No" answer is read with its question ("Do they deliver?" → "No."). The most
field is judged apart: "It offers take-out and delivery" over a false delivery field flags
"delivery". The record's opening hours are compared with the days and times the answer gives
(:mod:`.hours`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from truthlens.detector.facts.hours import Hours, contradicted_hours, opening_hours
from truthlens.detector.text import WORD, clauses, is_negated, stem

_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_SUBJECT = frozenset({"restaurant", "business", "good", "for", "has", "is", "accept"})
_YES_NO = re.compile(r"^\s*(yes|no)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Field:
    key: frozenset[str]  # stems of the field's own key, the record's subject words left out
    value: bool


class RecordFields(tuple[Field, ...]):
    """The boolean fields of a context's records, and the opening hours of the first that has them."""

    hours: Hours | None

    def __new__(cls, fields: Sequence[Field], hours: Hours | None = None) -> RecordFields:
        made = super().__new__(cls, fields)
        made.hours = hours
        return made


@dataclass(frozen=True, slots=True)
class Contradiction:
    """``answer[start:end]`` (a field's words, or days and times) says the other way round what the
    record's field (None: its opening hours) says."""

    start: int
    end: int
    text: str
    field: Field | None


def _stems(key: str) -> set[str]:
    return {stem(w) for w in _CAMEL.findall(key.replace("_", " ").replace("-", " ")) if len(w) > 1}


def _fields(node: object, parent: str = "") -> Iterator[Field]:
    if isinstance(node, dict):
        for key, value in node.items():
            own = _stems(str(key)) - _SUBJECT
            truth = value if isinstance(value, bool) else {"true": True, "false": False}.get(str(value).lower())
            if truth is not None and own and not isinstance(value, dict | list):
                yield Field(frozenset(own), truth)
            yield from _fields(value, str(key))
    elif isinstance(node, list):
        for item in node:
            yield from _fields(item, parent)


def record_fields(context: Sequence[str]) -> tuple[Field, ...]:
    """The boolean fields of every passage that is a JSON object or list (a :class:`RecordFields`,
    with the opening hours of the first record that gives them)."""
    out: list[Field] = []
    hours: Hours | None = None
    for passage in context:
        text = passage.strip()
        if not text.startswith(("{", "[")):
            continue
        try:
            record = json.loads(text)
        except ValueError:
            continue
        out.extend(_fields(record))
        hours = hours or opening_hours(record)
    return RecordFields(out, hours)


def _names(stems: set[str], key: frozenset[str]) -> bool:
    """Whether every key stem is among ``stems`` (a shared start of five letters counts:
    "deliver"/"delivery"; but not the noun an adjective in -y is made of: "tourists" are not a
    "touristy" ambience, nor a "trend" "trendy"; nouns in -ry, "delivery", "bakery", meet their verb)."""
    return all(k in stems or any(len(k) >= 5 and len(s) >= 5 and (s.startswith(k[:5]) and k.startswith(s[:5]))
                                 and not (k.endswith("y") and not k.endswith("ry") and s == k[:-1]) for s in stems)
               for k in key)


def contradicted_fields(answer: str, fields: Sequence[Field], question: str = "") -> tuple[Contradiction, ...]:
    """Clauses of ``answer`` that state one of ``fields`` (:func:`record_fields`) the other way round,
    and days and times its opening hours contradict."""
    out: list[Contradiction] = []
    if isinstance(fields, RecordFields) and fields.hours is not None:
        out.extend(Contradiction(w.start, w.end, w.text, None) for w in contradicted_hours(answer, fields.hours))
    if not fields:
        return tuple(out)
    short = _YES_NO.match(answer)
    spans = clauses(answer, fine=True)
    parts = _polarities(answer, spans, short.end() if short else 0)
    for n, (start, end) in enumerate(spans):
        words = list(WORD.finditer(answer, start, end))
        said = {stem(m.group(0)) for m in words}
        leans = bool(short) and n == 0  # "No." / "Yes, ..." answering the question's field
        if leans:
            said |= {stem(m.group(0)) for m in WORD.finditer(question)}
        said_no = leans and short is not None and short.group(1).lower() == "no"
        for field in (f for f in fields if _names(said, f.key)):
            hits = [m for m in words if _near(m.group(0), field.key)]
            # Polarity of the part of the clause the field's words stand in (:func:`_polarities`);
            # "No, ... not" denies once.
            at = hits[0].start() if hits else start
            denied = next((d for a, b, d in parts if a <= at < b), False) or said_no
            if denied != field.value:
                continue  # said as the record says it
            if hits:
                out.append(Contradiction(hits[0].start(), hits[-1].end(), answer[hits[0].start():hits[-1].end()],
                                         field))
            elif leans and short:
                out.append(Contradiction(short.start(1), short.end(1), short.group(1), field))
    return tuple(out)


# Where one clause's polarity gives way to another's: a conjunct opened by its own negation ("casual
# and not trendy", "casual without being trendy") or by a new subject ("no WiFi and it has ...").
_PART_CUT = re.compile(
    r"\s+(?:and|or|but)\s+(?=(?:not|no|never|it|its|they|their|there|he|she|we)\b)|\s+(?=without\b)",
    re.IGNORECASE,
)
# Words that make a comma-separated stretch a statement of its own, not an item of a list.
_STATEMENT = frozenset("it its they their there he she we i you is are was were has have had does do did will "
                       "would can could may".split())
_LIST_END = re.compile(r"^(?:and|or|nor)\b|\s(?:and|or|nor)\s", re.IGNORECASE)
_LIST_ITEM_WORDS = 4


def _polarities(answer: str, spans: Sequence[tuple[int, int]], skip: int) -> list[tuple[int, int, bool]]:
    """``(start, end, negated)`` for the parts of every clause of ``spans`` (clauses cut at every
    comma; text before ``skip``, a leading "Yes"/"No", is read as no negation). A clause is cut
    where :data:`_PART_CUT` opens a conjunct with its own polarity; a lone word set off by commas
    ("does not, however, offer ...") joins the clauses on its two sides; and the items of a list
    that a negation opens ("no valet, garage, or lot parking"; "does not offer WiFi, outdoor
    seating, or reservations") share its polarity: short comma-separated stretches with no subject
    or auxiliary of their own, the last one joined by "and", "or" or "nor"."""
    parts: list[tuple[int, int, bool]] = []
    for start, end in spans:
        at = start
        for cut in [*_PART_CUT.finditer(answer, start, end), None]:
            stop = cut.start() if cut is not None else end
            if at < stop:
                parts.append((at, stop, is_negated(answer[max(at, skip):stop])))
            at = cut.end() if cut is not None else end
    out = list(parts)
    i = 0
    while i < len(parts):
        a, _, negated = parts[i]
        # "It does not, however, offer valet parking": the verb's negation, across the aside.
        if (i + 2 < len(parts) and len(WORD.findall(answer, parts[i + 1][0], parts[i + 1][1])) == 1
                and _comma_between(answer, parts[i][1], parts[i + 1][0])
                and _comma_between(answer, parts[i + 1][1], parts[i + 2][0])):
            if negated:
                out[i + 2] = (out[i + 2][0], out[i + 2][1], True)
        if negated:
            items = []
            j = i + 1
            while j < len(parts) and _comma_between(answer, parts[j - 1][1], parts[j][0]) and _is_item(
                    answer, parts[j][0], parts[j][1]):
                items.append(j)
                if _LIST_END.search(answer[parts[j][0]:parts[j][1]].strip()):
                    for k in items:
                        out[k] = (out[k][0], out[k][1], True)
                    break
                j += 1
        i += 1
    return out


def _comma_between(answer: str, end: int, start: int) -> bool:
    return answer[end:start].strip() == ","


def _is_item(answer: str, start: int, end: int) -> bool:
    """Whether ``answer[start:end]`` may be one item of a list: a few words, none a subject or an
    auxiliary (those make it a statement of its own)."""
    found = [w.lower() for w in WORD.findall(answer, start, end)]
    return 0 < len(found) <= _LIST_ITEM_WORDS + 1 and not _STATEMENT & set(found)


def _near(word: str, key: frozenset[str]) -> frozenset[str]:
    """The key stems ``word`` stands for."""
    return frozenset(k for k in key if _names({stem(word)}, frozenset({k})))
