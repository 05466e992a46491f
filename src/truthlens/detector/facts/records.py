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
    "deliver"/"delivery")."""
    return all(k in stems or any(len(k) >= 5 and len(s) >= 5 and (s.startswith(k[:5]) and k.startswith(s[:5]))
                                 for s in stems) for k in key)


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
    for n, (start, end) in enumerate(spans):
        words = list(WORD.finditer(answer, start, end))
        said = {stem(m.group(0)) for m in words}
        leans = bool(short) and n == 0  # "No." / "Yes, ..." answering the question's field
        if leans:
            said |= {stem(m.group(0)) for m in WORD.finditer(question)}
        said_no = leans and short is not None and short.group(1).lower() == "no"
        for field in (f for f in fields if _names(said, f.key)):
            hits = [m for m in words if _near(m.group(0), field.key)]
            # Polarity of the clause, cut at every comma: "on the street, with no lot" denies the lot only.
            denied = is_negated(answer[short.end() if leans and short else start:end]) or said_no  # "No, ... not": once
            if denied != field.value:
                continue  # said as the record says it
            if hits:
                out.append(Contradiction(hits[0].start(), hits[-1].end(), answer[hits[0].start():hits[-1].end()],
                                         field))
            elif leans and short:
                out.append(Contradiction(short.start(1), short.end(1), short.group(1), field))
    return tuple(out)


def _near(word: str, key: frozenset[str]) -> frozenset[str]:
    """The key stems ``word`` stands for."""
    return frozenset(k for k in key if _names({stem(word)}, frozenset({k})))
