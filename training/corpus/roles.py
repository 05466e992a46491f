"""Errors that need roles and relations, and faithful restatements in other formats, planted in
real passages.

A model that learned "a word the context lacks is a hallucination" misses every error built
only from the context's own words, and flags every faithful reformatting. Both are here:

- **role swap**: two names of one restated sentence change places ("Aldrin stayed in orbit
  while Armstrong and Collins landed");
- **value of something else**: a name, number or year the passage gives for another thing in
  place of the right one ("Sydney" for the capital when the passage names Sydney as the largest
  city) — every word is in the context, only the relation is wrong;
- **modality**: an obligation, prohibition or restriction turned into its opposite ("must" →
  "may", "only" dropped), plus the reversed comparatives and negations of :mod:`perturb`;
- **faithful format**: the same sentence with numbers, dates and percentages written another
  way ("1,280" / "1280", "14 March 1879" / "March 14, 1879", "12%" / "12 percent") and clauses
  joined differently — labelled supported.

Answers restate one to three sentences of a passage (several passages from different places in
a multi-paragraph answer), with at most one planted error, so the error's neighbours teach that
restated facts are supported.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence

from training.corpus import lexical, perturb
from training.corpus.builder import Example, LabelSpan
from training.corpus.perturb import PERSON_OR_PLACE

Edit = tuple[str, int, int]
_NUMBER = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\d,])|(?<![\w.,])\d{4,}(?![\w.,]*\d)")
_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")
_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December"
)
_DMY = re.compile(rf"\b(\d{{1,2}}) ({_MONTHS}) (\d{{4}})\b")
_MDY = re.compile(rf"\b({_MONTHS}) (\d{{1,2}}), (\d{{4}})\b")
_PERCENT = re.compile(r"\b(\d+(?:\.\d+)?)(%| percent\b)")
_MODAL = (
    ("must", "may"), ("must not", "may"), ("required", "optional"), ("prohibited", "permitted"),
    ("always", "sometimes"), ("never", "sometimes"), ("cannot", "can"), ("mandatory", "voluntary"),
    ("only", ""), ("at least", "at most"), ("all", "some"), ("forbidden", "allowed"),
)
_MODAL_MAP = dict(_MODAL)
_MODAL_WORD = re.compile(r"\b(" + "|".join(sorted(map(re.escape, _MODAL_MAP), key=len, reverse=True)) + r")\b")


def swap_roles(answer: str, rng: random.Random) -> Edit | None:
    """Two different names of the answer change places; the label covers both."""
    names = list(PERSON_OR_PLACE.finditer(answer))
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :] if a.group(0) != b.group(0)]
    pairs = [(a, b) for a, b in pairs if not set(a.group(0).split()) & set(b.group(0).split())]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    new = answer[: a.start()] + b.group(0) + answer[a.end() : b.start()] + a.group(0) + answer[b.end() :]
    # Both swapped names are wrong now; one span from the first to the end of the second would
    # also mark the correct words between them, so the label is the first name (the second is
    # the same error seen again, and the serving spans are per run of tokens anyway).
    return new, a.start(), a.start() + len(b.group(0))


def value_of_other(answer: str, passage: str, rng: random.Random) -> Edit | None:
    """A number or name the passage states elsewhere, in place of the one the sentence states."""
    numbers = [m for m in _NUMBER.finditer(answer)] + [m for m in _YEAR.finditer(answer)]
    names = list(PERSON_OR_PLACE.finditer(answer))
    passage_numbers = sorted(
        {m.group(0) for m in _NUMBER.finditer(passage)} | {m.group(0) for m in _YEAR.finditer(passage)}
    )
    passage_names = sorted({m.group(0) for m in PERSON_OR_PLACE.finditer(passage)})
    options: list[tuple[re.Match[str], list[str]]] = []
    for m in numbers:
        others = [n for n in passage_numbers if n != m.group(0) and n not in answer]
        if others:
            options.append((m, others))
    for m in names:
        others = [n for n in passage_names if n not in answer and not set(n.split()) & set(m.group(0).split())]
        if others:
            options.append((m, others))
    if not options:
        return None
    hit, others = rng.choice(options)
    text = rng.choice(others)
    return answer[: hit.start()] + text + answer[hit.end() :], hit.start(), hit.start() + len(text)


def flip_modality(answer: str, rng: random.Random) -> Edit | None:
    hits = list(_MODAL_WORD.finditer(answer))
    if not hits:
        return None
    hit = rng.choice(hits)
    word = hit.group(0)
    other = _MODAL_MAP[word]
    if not other:  # a dropped restriction: label the word the restriction applied to
        rest = answer[hit.end() :].lstrip()
        new = answer[: hit.start()] + rest
        following = re.match(r"\S+", rest)
        end = hit.start() + (following.end() if following else 0)
        return (new, hit.start(), end) if end > hit.start() else None
    return answer[: hit.start()] + other + answer[hit.end() :], hit.start(), hit.start() + len(other)


def reformat(answer: str, rng: random.Random) -> str:
    """The same facts written in other formats: thousands separators, date order, percent."""
    out = _NUMBER.sub(lambda m: _renumber(m.group(0), rng), answer)
    out = _DMY.sub(lambda m: f"{m.group(2)} {m.group(1)}, {m.group(3)}" if rng.random() < 0.8 else m.group(0), out)
    out = _MDY.sub(lambda m: f"{m.group(2)} {m.group(1)} {m.group(3)}" if rng.random() < 0.8 else m.group(0), out)
    return _PERCENT.sub(lambda m: m.group(1) + (" percent" if m.group(2) == "%" else "%"), out)


def _renumber(text: str, rng: random.Random) -> str:
    if rng.random() < 0.2:
        return text
    if "," in text:
        return text.replace(",", "")
    if len(text) == 4 and 1500 <= int(text) <= 2100:
        return text  # a year is never written 1,998
    return f"{int(text):,}"


_EDITS = ("roles", "other_value", "modality", "negation", "relation", "number", "entity")


def planted_error(answer: str, passage: str, rng: random.Random) -> tuple[Edit, str] | None:
    """One error of a kind that applies to ``answer`` (role and relation kinds first)."""
    kinds = list(_EDITS)
    rng.shuffle(kinds)
    kinds.sort(key=lambda k: k not in ("roles", "other_value", "modality"))
    for kind in kinds:
        if kind == "roles":
            edit = swap_roles(answer, rng)
        elif kind == "other_value":
            edit = value_of_other(answer, passage, rng)
        elif kind == "modality":
            edit = flip_modality(answer, rng)
        else:
            edit = perturb.perturb(answer, [passage], kind, rng)  # type: ignore[arg-type]
        if edit is not None:
            return edit, kind
    return None


def examples(
    passages: Sequence[tuple[str, str, str]],
    rng: random.Random,
    *,
    faithful_rate: float = 0.45,
    distractors: int = 2,
    twins: bool = False,
) -> Iterator[Example]:
    """One example per ``(id, passage, question)``: one to three restated sentences (reformatted
    in faithful examples), at most one planted error; other passages serve as distractors.

    With ``twins`` each error also comes with its faithful twin: the same sentences over the same
    context, unchanged. Without the pair a swapped subject ("X is an Australian actor") teaches
    that the subject of a short sentence is the error; with it, only checking it against the
    context separates the two. The twins draw nothing from ``rng``, so the other examples stay
    the same."""
    for ident, passage, question in passages:
        sents = [s for s in lexical.sentences(passage) if 6 <= len(s.split()) <= 45]
        if not sents:
            continue
        k = rng.randrange(len(sents))
        take = sents[k : k + rng.choice((1, 1, 2, 3))]
        context = [passage] + [passages[rng.randrange(len(passages))][1] for _ in range(rng.randint(0, distractors))]
        rng.shuffle(context)
        if rng.random() < faithful_rate:
            answer = " ".join(reformat(s, rng) for s in take)
            yield Example(f"{ident}-faithful", "train", "roles_faithful", tuple(context), question, answer, ())
            continue
        target = rng.randrange(len(take))
        planted = planted_error(take[target], passage, rng)
        if planted is None:
            continue
        (new, start, end), kind = planted
        before = " ".join(take[:target])
        offset = len(before) + (1 if before else 0)
        answer = " ".join([*take[:target], new, *take[target + 1 :]])
        if twins:
            yield Example(f"{ident}-twin", "train", "roles_twin", tuple(context), question, " ".join(take), ())
        yield Example(
            f"{ident}-{kind}",
            "train",
            "roles_error",
            tuple(context),
            question,
            answer,
            (LabelSpan(offset + start, offset + end, "entity" if kind in ("roles", "other_value") else "relation"),),
        )
