"""Structured contexts: a JSON business record verbalised faithfully, or with one planted error.

RAGTruth's data-to-text task gives the model a JSON record (hours per day, yes/no attributes,
star rating, reviews) and asks for an overview; the first detector never saw JSON and was at
chance there. Besides RAGTruth's own labelled responses, this writes restatements of the
train-fold records: each fact verbalised in one of several phrasings, and in error examples one
fact contradicted in a way only the record's structure shows (another day's hours, an attribute
the record sets to false, a rating or city of another record).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from training.corpus.builder import Example, LabelSpan

_ATTRIBUTE_PHRASES = {
    "RestaurantsReservations": "takes reservations",
    "OutdoorSeating": "offers outdoor seating",
    "RestaurantsTakeOut": "offers takeout",
    "RestaurantsDelivery": "offers delivery",
    "RestaurantsGoodForGroups": "is good for groups",
    "GoodForKids": "is good for kids",
    "BusinessAcceptsCreditCards": "accepts credit cards",
    "WheelchairAccessible": "is wheelchair accessible",
    "HasTV": "has a TV",
    "DogsAllowed": "allows dogs",
    "BikeParking": "has bike parking",
    "Caters": "offers catering",
}


def _clock(value: str) -> str:
    """'17:0' → '17:00' (the records drop a trailing zero)."""
    hour, _, minute = value.partition(":")
    return f"{int(hour):02d}:{int(minute or 0):02d}"


def _hours(span: str) -> tuple[str, str]:
    opens, _, closes = span.partition("-")
    return _clock(opens), _clock(closes)


def facts(record: Mapping[str, Any], rng: random.Random) -> list[tuple[str, list[tuple[str, str]]]]:
    """Faithful sentences, each with the (right, wrong) alternatives an error may put in it."""
    name = str(record.get("name") or "The business")
    out: list[tuple[str, list[tuple[str, str]]]] = []
    city, state = str(record.get("city") or ""), str(record.get("state") or "")
    if city:
        where = f"{city}, {state}" if state else city
        address = str(record.get("address") or "")
        lead = f"{name} is located at {address} in {where}." if address else f"{name} is located in {where}."
        out.append((lead, [(city, rng.choice(("San Diego", "Goleta", "Tucson", "Reno", "Boise")))]))
    stars = record.get("business_stars")
    if isinstance(stars, (int, float)):
        wrong = f"{max(1.0, min(5.0, float(stars) + rng.choice((-1.5, -1.0, 1.0, 0.5)))):g}"
        out.append((f"It has an average rating of {float(stars):g} stars.", [(f"{float(stars):g}", wrong)]))
    hours = record.get("hours")
    if isinstance(hours, dict) and hours:
        days = list(hours)
        day = rng.choice(days)
        opens, closes = _hours(str(hours[day]))
        sentence = f"On {day} it is open from {opens} to {closes}."
        others = [d for d in ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
                  if d not in hours]
        alternatives = [(closes, f"{(int(closes[:2]) + rng.choice((1, 2, 3))) % 24:02d}:00")]
        if others:
            alternatives.append((day, rng.choice(others)))  # open on a day the record lists no hours for
        out.append((sentence, alternatives))
    attributes = record.get("attributes")
    if isinstance(attributes, dict):
        for key, phrase in _ATTRIBUTE_PHRASES.items():
            value = attributes.get(key)
            if value is True:
                out.append((f"{name} {phrase}.", [(phrase, _negated(phrase))]))
            elif value is False:
                out.append((f"{name} {_negated(phrase)}.", [(_negated(phrase), phrase)]))
    categories = str(record.get("categories") or "")
    if categories:
        kinds = [c.strip() for c in categories.split(",") if c.strip()][:3]
        out.append((f"It is listed under {', '.join(kinds)}.", []))
    return out


def _negated(phrase: str) -> str:
    verb, _, rest = phrase.partition(" ")
    if verb == "is":
        return f"is not {rest}"
    if verb == "has":
        return f"does not have {rest}"
    return f"does not {verb.removesuffix('s')} {rest}".replace("offer ", "offer ").replace("accept ", "accept ")


def examples(records: Sequence[tuple[str, Mapping[str, Any]]], rng: random.Random, *, per_record: int = 3,
             question: str) -> Iterator[Example]:
    for ident, record in records:
        context = (json.dumps(record, ensure_ascii=False, indent=1),)
        for n in range(per_record):
            sentences = facts(record, rng)
            rng.shuffle(sentences)
            chosen = sentences[: rng.randint(2, 5)]
            texts = [s for s, _ in chosen]
            erring = [i for i, (_, alts) in enumerate(chosen) if alts]
            if rng.random() < 0.5 or not erring:
                answer = " ".join(texts)
                yield Example(f"{ident}-{n}-faithful", "train", "record_faithful", context, question, answer, ())
                continue
            i = rng.choice(erring)
            right, wrong = rng.choice(chosen[i][1])
            at = texts[i].find(right)
            if at < 0:
                continue
            texts[i] = texts[i][:at] + wrong + texts[i][at + len(right):]
            offset = sum(len(t) + 1 for t in texts[:i]) + at
            yield Example(
                f"{ident}-{n}-error", "train", "record_error", context, question, " ".join(texts),
                (LabelSpan(offset, offset + len(wrong), "entity"),),
            )
