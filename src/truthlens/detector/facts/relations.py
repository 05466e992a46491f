"""Relations the answer turns around: a reversed comparison, a dropped or added negation.

Every word of "Saturn is larger than Jupiter" or "The drug is approved for children" can occur in
a context that says the opposite ("Jupiter is larger than Saturn", "The drug is not approved for
children"), so a look-up of names and numbers calls them supported. Both are checked by rule:

- **comparisons**: a clause "A ... <comparative> than B" (``larger``, ``more expensive``,
  ``earlier``, …) is put against each context clause comparing the same two things on the same
  scale: the answer reverses it when it keeps the comparative and swaps the sides, or keeps the
  sides and uses the opposite comparative ("smaller" for "larger"). "Jupiter is larger than
  Saturn" and "Saturn is smaller than Jupiter" agree with each other.
- **negation**: an answer clause that restates one context clause almost word for word (at
  least :data:`MIN_NEGATION_WORDS` content words, nearly all of them in that clause and most of
  the clause's in the answer) but with the opposite polarity ("not", "never", "no", "n't").

Sides are matched by their content words; a clause whose sides share words on both pairings is
left alone (unclear which side is which), and so is every looser restatement: a paraphrase is far
more often faithful than not, and the model judges those.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_WORD = re.compile(r"[^\W_][\w'’]*")
_CLAUSE = re.compile(r"[^.!?;\n]+")
# Sub-clauses: cut at commas, colons and the conjunctions that join two statements ("... easily
# but one cannot ..."), so a negation is read in the clause it belongs to.
_SUB_CLAUSE_CUT = re.compile(r"[,;:]|\s(?:but|while|whereas|although|though|yet)\s", re.IGNORECASE)
# Scales: (words meaning "more of it", words meaning "less of it").
_SCALES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    name: (frozenset(up.split()), frozenset(down.split()))
    for name, up, down in (
        ("size", "larger bigger greater", "smaller lesser"),
        ("amount", "more", "less fewer"),
        ("height", "higher taller", "lower shorter"),
        ("length", "longer", "shorter"),
        ("age", "older elder", "younger newer"),
        ("weight", "heavier", "lighter"),
        ("speed", "faster quicker", "slower"),
        ("time", "earlier sooner", "later"),
        ("width", "wider broader", "narrower"),
        ("depth", "deeper", "shallower"),
        ("heat", "hotter warmer", "colder cooler"),
        ("strength", "stronger", "weaker"),
        ("wealth", "richer wealthier", "poorer"),
        ("price", "costlier pricier dearer", "cheaper"),
        ("quality", "better", "worse"),
        ("distance", "farther further", "closer nearer"),
    )
}
_COMPARATIVES = frozenset(w for up, down in _SCALES.values() for w in up | down)
_COMPARISON = re.compile(
    r"\b(?:(?P<adverb>more|less)\s+(?P<adjective>[a-z]+)|(?P<word>" + "|".join(sorted(_COMPARATIVES)) + r"))"
    r"\s+than\s+",
    re.IGNORECASE,
)
_NEGATIONS = frozenset("not never no none nor neither nobody nothing cannot without".split())
_STOP = frozenset(
    """a an the and or of to in on at by for with from as is was are were be been being has have had do does
    did it its this that these those he she they them his her their who which what when where also than
    then there into about after before during over under such only very can could will would may might
    shall should must just so both each all any some one""".split()
)
MIN_NEGATION_WORDS = 3
NEGATION_ANSWER_SHARE = 0.85  # of the answer clause's content words found in the context clause
NEGATION_CONTEXT_SHARE = 0.6  # of the context clause's content words found in the answer clause
SIDE_WORDS = 4  # content words read on each side of a comparison


@dataclass(frozen=True, slots=True)
class Contradiction:
    """``answer[start:end]`` turns a relation the context states around."""

    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True)
class _Comparison:
    scale: str
    up: bool
    left: frozenset[str]
    right: frozenset[str]
    start: int  # the comparative phrase, "larger than"
    end: int


@dataclass(frozen=True, slots=True)
class _Clause:
    words: frozenset[str]
    negated: bool
    start: int
    end: int


def _content(text: str) -> list[str]:
    words = []
    for m in _WORD.finditer(text):
        w = m.group(0).lower().replace("’", "'").removesuffix("'s")
        if w not in _STOP and w not in _NEGATIONS and not w.endswith("n't") and len(w) > 1:
            words.append(w[:-1] if len(w) > 4 and w.endswith("s") and not w.endswith("ss") else w)
    return words


def is_negated(text: str) -> bool:
    """Whether ``text`` says "not" ("never", "no", "n't", …; "not only" is no negation)."""
    words = [m.group(0).lower().replace("’", "'") for m in _WORD.finditer(text)]
    for i, w in enumerate(words):
        if w.endswith("n't") or (w in _NEGATIONS and not (w == "not" and words[i + 1 : i + 2] == ["only"])):
            return True
    return False


def _comparisons(text: str) -> list[_Comparison]:
    out = []
    for clause in _CLAUSE.finditer(text):
        for m in _COMPARISON.finditer(clause.group(0)):
            if m.group("word"):
                word = m.group("word").lower()
                scales = [(n, word in up) for n, (up, down) in _SCALES.items() if word in up | down]
            else:
                scales = [(f"more {m.group('adjective').lower()}", m.group("adverb").lower() == "more")]
            before = _content(re.split(r"[,;:]", clause.group(0)[: m.start()])[-1])[-SIDE_WORDS:]
            after = _content(re.split(r"[,;:]", clause.group(0)[m.end() :])[0])[:SIDE_WORDS]
            if not before or not after:
                continue
            start = clause.start() + m.start()
            end = start + len(m.group(0).rstrip())  # "larger than"
            for scale, up in scales:
                out.append(_Comparison(scale, up, frozenset(before), frozenset(after), start, end))
    return out


def _clauses(text: str) -> list[_Clause]:
    out = []
    for sentence in _CLAUSE.finditer(text):
        at = 0
        sentence_text = sentence.group(0)
        for cut in [*_SUB_CLAUSE_CUT.finditer(sentence_text), None]:
            end = cut.start() if cut is not None else len(sentence_text)
            body, part_start = sentence_text[at:end], at
            at = cut.end() if cut is not None else end
            if body.strip():
                start = sentence.start() + part_start + len(body) - len(body.lstrip())
                out.append(_Clause(frozenset(_content(body)), is_negated(body), start, start + len(body.strip())))
    return out


@dataclass(frozen=True, slots=True)
class ContextRelations:
    """What this check reads of a context, built once per context."""

    comparisons: tuple[_Comparison, ...]
    clauses: tuple[_Clause, ...]


def context_relations(context: Sequence[str]) -> ContextRelations:
    comparisons: list[_Comparison] = []
    clauses: list[_Clause] = []
    for passage in context:
        comparisons.extend(_comparisons(passage))
        clauses.extend(c for c in _clauses(passage) if len(c.words) >= MIN_NEGATION_WORDS)
    return ContextRelations(tuple(comparisons), tuple(clauses))


def contradicted_relations(answer: str, context: Sequence[str] | ContextRelations) -> tuple[Contradiction, ...]:
    """Comparisons the answer reverses and clauses whose negation it flips, in answer order."""
    index = context if isinstance(context, ContextRelations) else context_relations(context)
    found: dict[tuple[int, int], Contradiction] = {}
    for mine in _comparisons(answer):
        for theirs in index.comparisons:
            if theirs.scale != mine.scale:
                continue
            straight = bool(mine.left & theirs.left) and bool(mine.right & theirs.right)
            swapped = bool(mine.left & theirs.right) and bool(mine.right & theirs.left)
            if straight == swapped:
                continue  # unrelated, or sides too alike to tell apart
            if swapped == (mine.up == theirs.up):
                found[(mine.start, mine.end)] = Contradiction(mine.start, mine.end, answer[mine.start : mine.end])
                break
    if index.clauses:
        for clause in _clauses(answer):
            if len(clause.words) < MIN_NEGATION_WORDS:
                continue
            shares = [
                (len(clause.words & c.words) / len(clause.words), len(clause.words & c.words) / len(c.words), c)
                for c in index.clauses
            ]
            mine_share, theirs_share, best = max(shares, key=lambda s: (s[0], s[1]))
            if (mine_share >= NEGATION_ANSWER_SHARE and theirs_share >= NEGATION_CONTEXT_SHARE
                    and best.negated != clause.negated and not any(
                        s[0] >= NEGATION_ANSWER_SHARE and s[1] >= NEGATION_CONTEXT_SHARE
                        and s[2].negated == clause.negated for s in shares)):
                span = (clause.start, clause.end)
                if not any(s <= span[0] < e or span[0] <= s < span[1] for s, e in found):
                    found[span] = Contradiction(clause.start, clause.end, answer[clause.start : clause.end])
    return tuple(sorted(found.values(), key=lambda c: c.start))
