"""Hallucinations planted in real passages: the answer restates passage sentences, then one
claim is changed in a way the passage contradicts, and the changed characters are the label.

Kinds (the ones the synthetic-only model missed most): negation, reversed relation, unit
swap, entity swap between two names of the same passage, changed number or year (often in
one-sentence answers). Faithful answers restate sentences unchanged (a lead-in at most), so
about 40% of the examples teach that a restated fact is supported even among distractor passages.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator, Sequence

from training.corpus import lexical
from training.corpus.builder import Example, LabelSpan
from training.corpus.values import HallucinationKind

Edit = tuple[str, int, int]  # new answer, label start, label end

_NEGATABLE = re.compile(r"\b(is|was|are|were|has been|had been|can|will|does|did)\b(?! not)")
_NEGATED = re.compile(
    r"\b(is|was|are|were|can|will|does|did) not\b|\b(isn't|wasn't|aren't|weren't|can't|won't|doesn't|didn't)\b"
)
_PAIRS = (
    ("before", "after"), ("larger", "smaller"), ("largest", "smallest"), ("increased", "decreased"),
    ("increase", "decrease"), ("won", "lost"), ("first", "last"), ("north", "south"), ("east", "west"),
    ("older", "younger"), ("oldest", "youngest"), ("higher", "lower"), ("highest", "lowest"), ("more", "less"),
    ("earlier", "later"), ("rose", "fell"), ("above", "below"), ("private", "public"), ("male", "female"),
    ("longer", "shorter"), ("longest", "shortest"), ("major", "minor"), ("early", "late"), ("northern", "southern"),
    ("eastern", "western"), ("upper", "lower"), ("inside", "outside"), ("maximum", "minimum"), ("began", "ended"),
    ("opened", "closed"), ("defeated", "lost to"), ("supported", "opposed"), ("accepted", "rejected"),
    ("bought", "sold"), ("joined", "left"), ("wife", "husband"), ("son", "daughter"), ("father", "mother"),
    ("brother", "sister"), ("king", "queen"), ("guilty", "innocent"), ("allowed", "banned"), ("gained", "lost"),
)
_REVERSE = {a: b for a, b in _PAIRS} | {b: a for a, b in _PAIRS}
_RELATION = re.compile(r"\b(" + "|".join(sorted(map(re.escape, _REVERSE), key=len, reverse=True)) + r")\b", re.I)
_UNITS = (
    ("kilometres", "miles"), ("kilometers", "miles"), ("km", "mi"), ("metres", "feet"), ("meters", "feet"),
    ("kilograms", "pounds"), ("kg", "lb"), ("tons", "kilograms"), ("hours", "minutes"), ("days", "weeks"),
    ("years", "months"), ("percent", "percentage points"), ("million", "billion"), ("thousand", "million"),
    ("acres", "hectares"), ("square miles", "square kilometres"), ("inches", "centimetres"), ("mph", "km/h"),
    ("dollars", "euros"), ("pounds", "dollars"), ("°C", "°F"), ("seconds", "minutes"), ("centuries", "decades"),
)
_UNIT_SWAP = {a: b for a, b in _UNITS} | {b: a for a, b in _UNITS if b not in {x for x, _ in _UNITS}}
_UNIT = re.compile(r"(?<=\d )(" + "|".join(sorted(map(re.escape, _UNIT_SWAP), key=len, reverse=True)) + r")\b")
_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?![\d,])|(?<![\w.])\d+(?:\.\d+)?(?![\w.]*\d)")
# Two or more capitalised words (a name), not at a sentence start, e.g. "Jake Gyllenhaal".
PERSON_OR_PLACE = re.compile(r"\b[A-Z][a-z'’]+(?:\s+(?:[A-Z]\.\s*)?[A-Z][a-z'’]+)+\b")
_LEAD_INS = ("", "", "", "", "According to the passage, ", "The context says that ", "Based on the documents, ")


def _put(answer: str, hit: re.Match[str], text: str) -> Edit:
    """``text`` in place of the matched characters, labelled."""
    return answer[: hit.start()] + text + answer[hit.end() :], hit.start(), hit.start() + len(text)


def negate(answer: str, rng: random.Random) -> Edit | None:
    m = list(_NEGATED.finditer(answer))
    if m and rng.random() < 0.35:  # remove an existing negation
        hit = rng.choice(m)
        word = hit.group(1) or {"isn't": "is", "wasn't": "was", "aren't": "are", "weren't": "were", "can't": "can",
                                "won't": "will", "doesn't": "does", "didn't": "did"}[hit.group(2)]
        new = answer[: hit.start()] + word + answer[hit.end() :]
        return new, hit.start(), hit.start() + len(word)
    cands = list(_NEGATABLE.finditer(answer))
    if not cands:
        return None
    hit = rng.choice(cands)
    verb = hit.group(1)
    negated = (
        verb.replace("has been", "has not been").replace("had been", "had not been")
        if "been" in verb
        else verb + " not"
    )
    new = answer[: hit.start()] + negated + answer[hit.end() :]
    return new, hit.start(), hit.start() + len(negated)


def reverse_relation(answer: str, rng: random.Random) -> Edit | None:
    cands = list(_RELATION.finditer(answer))
    if not cands:
        return None
    hit = rng.choice(cands)
    word = hit.group(0)
    other = _REVERSE[word.lower()]
    if word[0].isupper():
        other = other[0].upper() + other[1:]
    return _put(answer, hit, other)


def swap_unit(answer: str, rng: random.Random) -> Edit | None:
    cands = list(_UNIT.finditer(answer))
    if not cands:
        return None
    hit = rng.choice(cands)
    other = _UNIT_SWAP[hit.group(0)]
    return _put(answer, hit, other)


def change_number(answer: str, rng: random.Random) -> Edit | None:
    cands = list(_NUMBER.finditer(answer))
    if not cands:
        return None
    hit = rng.choice(cands)
    text = hit.group(0)
    plain = text.replace(",", "")
    if "." in plain:
        value = float(plain)
        new = f"{value * rng.choice((0.5, 0.8, 1.25, 1.5, 2.0)):.{len(plain.split('.')[1])}f}"
    else:
        value = int(plain)
        if 1500 <= value <= 2100:  # a year: a near but wrong one
            new_value = value + rng.choice((-1, 1)) * rng.randint(1, 15)
        elif value < 10:
            new_value = rng.choice([v for v in range(0, 13) if v != value])
        else:
            new_value = max(1, round(value * rng.choice((0.5, 0.7, 0.8, 1.2, 1.3, 1.5, 2.0, 3.0))))
        if new_value == value:
            new_value = value + 1
        new = f"{new_value:,}" if "," in text else str(new_value)
    if new == text:
        return None
    return _put(answer, hit, new)


def swap_entity(answer: str, passages: Sequence[str], rng: random.Random) -> Edit | None:
    """Put another name from the same passages in place of one the answer states."""
    in_answer = [m for m in PERSON_OR_PLACE.finditer(answer)]
    pool = sorted({m.group(0) for p in passages for m in PERSON_OR_PLACE.finditer(p)})
    if not in_answer or len(pool) < 2:
        return None
    hit = rng.choice(in_answer)
    name = hit.group(0)
    others = [n for n in pool if n not in answer and not set(n.split()) & set(name.split())]
    if not others:
        return None
    other = rng.choice(others)
    return _put(answer, hit, other)


_KINDS: tuple[tuple[HallucinationKind, float], ...] = (
    ("negation", 0.22), ("relation", 0.18), ("entity", 0.22), ("number", 0.26), ("unit", 0.12),
)


def perturb(answer: str, passages: Sequence[str], kind: HallucinationKind, rng: random.Random) -> Edit | None:
    edits: dict[str, Callable[[], Edit | None]] = {
        "negation": lambda: negate(answer, rng),
        "relation": lambda: reverse_relation(answer, rng),
        "unit": lambda: swap_unit(answer, rng),
        "number": lambda: change_number(answer, rng),
        "entity": lambda: swap_entity(answer, passages, rng),
    }
    return edits[kind]()


def examples_from_passages(
    passages: Sequence[tuple[str, str, str]], rng: random.Random, *, faithful_rate: float = 0.4, distractors: int = 3
) -> Iterator[Example]:
    """One example per ``(id, passage, question)``: restate one or two of its sentences,
    planting one contradiction in most; other passages of the list serve as distractors."""
    for ident, passage, question in passages:
        sents = [s for s in lexical.sentences(passage) if 5 <= len(s.split()) <= 45]
        if not sents:
            continue
        k = rng.randrange(len(sents))
        take = sents[k : k + (2 if rng.random() < 0.3 else 1)]
        body = " ".join(take)
        lead = rng.choice(_LEAD_INS)
        if lead:
            body = body[0].lower() + body[1:] if body[:2].istitle() and not PERSON_OR_PLACE.match(body) else body
        answer = lead + body
        context = [passage] + [passages[rng.randrange(len(passages))][1] for _ in range(rng.randint(0, distractors))]
        rng.shuffle(context)
        if rng.random() < faithful_rate:
            yield Example(f"{ident}-faithful", "train", "real_passage", tuple(context), question, answer, ())
            continue
        kinds = [k for k, _ in _KINDS]
        weights = [w for _, w in _KINDS]
        for kind in rng.choices(kinds, weights, k=3) + kinds:  # weighted first choice, then any that applies
            edit = perturb(answer, [passage], kind, rng)
            if edit is not None:
                new, start, end = edit
                yield Example(
                    f"{ident}-{kind}",
                    "train",
                    "real_passage",
                    tuple(context),
                    question,
                    new,
                    (LabelSpan(start, end, kind),),
                )
                break
