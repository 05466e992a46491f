"""Relations the answer turns around: a reversed comparison, a dropped or added negation.

Every word of "Saturn is larger than Jupiter" or "The drug is approved for children" can occur in
a context that says the opposite ("Jupiter is larger than Saturn", "The drug is not approved for
children"), so a look-up of names and numbers calls them supported. Both are checked by rule:

- **comparisons**: a clause "A ... <comparative> than B" (``larger``, ``more expensive``,
  ``earlier``, …) is put against each context clause comparing the same two things on the same
  scale: the answer reverses it when it keeps the comparative and swaps the sides, or keeps the
  sides and uses the opposite comparative ("smaller" for "larger"). "Jupiter is larger than
  Saturn" and "Saturn is smaller than Jupiter" agree with each other. A side ends at the next
  comparison or conjunction ("Saturn is smaller than Jupiter but larger than Uranus" is two
  comparisons). A short answer that leaves the other side to its question ("Saturn is the larger
  of the two." for "Which is larger, Jupiter or Saturn?") is read as its long form: the other
  side is the question's alternative it does not name.
- **superlatives**: "X is the longest river" where the context ranks the same thing on the same
  superlative with another rank ("the second-longest river"), or the other way round.
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

from truthlens.detector.text import NEGATIONS, STOP_WORDS, is_negated, stem

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
# Where a comparison's side ends: punctuation, a conjunction, or the next comparison.
_SIDE_CUT = re.compile(
    r"[,;:]|\b(?:but|while|whereas|although|though|yet)\b|\b(?:" + "|".join(sorted(_COMPARATIVES))
    + r"|more|less)\s+than\b",
    re.IGNORECASE,
)
# A comparative with no "than": its other side is in the question ("Jupiter is the larger (of the two)").
_BARE_COMPARATIVE = re.compile(r"\b(?P<word>" + "|".join(sorted(_COMPARATIVES)) + r")\b(?!\s+than\b)", re.IGNORECASE)
# The question's alternatives: "Which is larger, Jupiter or Saturn?"
_ALTERNATIVES = re.compile(r"(?:^|[,:])\s*(?P<a>[^,:?]+?)\s+or\s+(?P<b>[^,:?]+?)\s*\??\s*$", re.IGNORECASE)
_ORDINALS = {"second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9,
             "tenth": 10, "2nd": 2, "3rd": 3, "4th": 4, "5th": 5, "6th": 6, "7th": 7, "8th": 8, "9th": 9, "10th": 10}
_SUPERLATIVES = (
    "longest largest biggest greatest highest tallest oldest youngest smallest shortest deepest widest fastest "
    "slowest heaviest lightest richest poorest busiest closest nearest farthest furthest hottest coldest strongest "
    "weakest earliest latest best worst cheapest costliest brightest warmest wettest driest"
).split()
_SUPERLATIVE = re.compile(
    r"\b(?:(?P<rank>" + "|".join(_ORDINALS) + r")[\s-]+)?(?P<word>" + "|".join(_SUPERLATIVES)
    + r"|most\s+[a-z]+|least\s+[a-z]+)\b",
    re.IGNORECASE,
)
# Comparatives and negations are what this check reads: neither is a stop word here.
_STOP = STOP_WORDS - {"more", "less", "not", "no", "nor"}
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
class _Superlative:
    word: str  # "longest", "most populous"
    rank: int  # 1 unless an ordinal ranks it ("second-longest": 2)
    subject: frozenset[str]  # content words before it in its clause
    noun: frozenset[str]  # content words after it ("river in the world")
    start: int  # the ranked superlative, "second-longest"
    end: int


@dataclass(frozen=True, slots=True)
class _Clause:
    words: frozenset[str]
    negated: bool
    start: int
    end: int
    # The content words its negations govern (the first after each "not", "never", "n't", "no"):
    # "was not released" denies "released", not the rest of the clause.
    governed: frozenset[str] = frozenset()


def _content(text: str) -> list[str]:
    words = []
    for m in _WORD.finditer(text):
        w = m.group(0).lower().replace("’", "'").removesuffix("'s")
        if w not in _STOP and w not in NEGATIONS and not w.endswith("n't") and len(w) > 1:
            words.append(stem(w))
    return words


def _comparisons(text: str, question: str = "") -> list[_Comparison]:
    out = []
    for clause in _CLAUSE.finditer(text):
        body = clause.group(0)
        for m in _COMPARISON.finditer(body):
            before = _side_before(body, m.start())
            after = _content(_SIDE_CUT.split(body[m.end() :])[0])[:SIDE_WORDS]
            out.extend(_compared(m, before, after, clause.start()))
        if question:
            out.extend(_against_the_alternative(body, clause.start(), question))
    return out


def _side_before(clause: str, at: int) -> list[str]:
    """The content words before a comparison at ``clause[at]``, back to the last cut; where a
    conjunction left its subject out ("..., and the second-longest river"; "but smaller than
    Uranus"), the clause's opening words, its subject."""
    side = _content(_SIDE_CUT.split(clause[:at])[-1])[-SIDE_WORDS:]
    return side or _content(_SIDE_CUT.split(clause)[0])[:SIDE_WORDS]


def _compared(m: re.Match[str], before: list[str], after: list[str], offset: int) -> list[_Comparison]:
    """The comparison ``m`` (a comparative) makes between two sides, on each scale it may mean."""
    if not before or not after:
        return []
    if m.group("word"):
        word = m.group("word").lower()
        scales = [(n, word in up) for n, (up, down) in _SCALES.items() if word in up | down]
    else:
        scales = [(f"more {m.group('adjective').lower()}", m.group("adverb").lower() == "more")]
    start = offset + m.start()
    end = start + len(m.group(0).rstrip())  # "larger than"
    return [_Comparison(scale, up, frozenset(before), frozenset(after), start, end) for scale, up in scales]


def _against_the_alternative(clause: str, offset: int, question: str) -> list[_Comparison]:
    """"Saturn is the larger (of the two)" answering "Which is larger, Jupiter or Saturn?": the
    comparison with the alternative the clause does not name."""
    asked = _ALTERNATIVES.search(question.strip())
    if asked is None:
        return []
    options = [frozenset(_content(asked.group(side))) for side in ("a", "b")]
    out = []
    for m in _BARE_COMPARATIVE.finditer(clause):
        before = _side_before(clause, m.start())
        named = [o for o in options if o & set(before)]
        if len(named) != 1 or not all(options):
            continue
        (other,) = [o for o in options if o is not named[0]]
        out.extend(_compared(m, before, sorted(other), offset))
    return out


def _superlatives(text: str) -> list[_Superlative]:
    out = []
    for clause in _CLAUSE.finditer(text):
        body = clause.group(0)
        for m in _SUPERLATIVE.finditer(body):
            rank = _ORDINALS.get((m.group("rank") or "").lower(), 1)
            subject = _side_before(body, m.start())
            noun = _content(_SIDE_CUT.split(body[m.end() :])[0])[:SIDE_WORDS]
            if subject and noun:
                word = " ".join(m.group("word").lower().split())
                start = clause.start() + m.start()
                out.append(_Superlative(word, rank, frozenset(subject), frozenset(noun), start,
                                        clause.start() + m.end()))
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
                out.append(_Clause(frozenset(_content(body)), is_negated(body), start, start + len(body.strip()),
                                   _governed(body)))
    return out


def _governed(text: str) -> frozenset[str]:
    """The stems of the first content word after each negation in ``text``."""
    out: set[str] = set()
    words = [m.group(0) for m in _WORD.finditer(text)]
    for i, word in enumerate(words):
        w = word.lower().replace("’", "'")
        if w in NEGATIONS or w.endswith("n't"):
            following = next((c for x in words[i + 1 :] for c in _content(x)), None)
            if following is not None:
                out.add(following)
    return frozenset(out)


def _restates_the_negated(mine: _Clause, theirs: _Clause) -> bool:
    """Whether the clause that is negated has the word its negation governs restated by the other:
    "The driver wore a red cap" restates nothing that "the name of the driver who wore a red cap
    was not released" denies. A negation governing no content word counts as restated."""
    negated, other = (theirs, mine) if theirs.negated else (mine, theirs)
    return not negated.governed or bool(negated.governed & other.words)


@dataclass(frozen=True, slots=True)
class ContextRelations:
    """What this check reads of a context, built once per context."""

    comparisons: tuple[_Comparison, ...]
    clauses: tuple[_Clause, ...]
    superlatives: tuple[_Superlative, ...] = ()


def context_relations(context: Sequence[str]) -> ContextRelations:
    comparisons: list[_Comparison] = []
    clauses: list[_Clause] = []
    superlatives: list[_Superlative] = []
    for passage in context:
        comparisons.extend(_comparisons(passage))
        clauses.extend(c for c in _clauses(passage) if len(c.words) >= MIN_NEGATION_WORDS)
        superlatives.extend(_superlatives(passage))
    return ContextRelations(tuple(comparisons), tuple(clauses), tuple(superlatives))


def contradicted_relations(
    answer: str, context: Sequence[str] | ContextRelations, question: str = ""
) -> tuple[Contradiction, ...]:
    """Comparisons the answer reverses, superlatives it ranks otherwise and clauses whose negation
    it flips, in answer order (a comparison left to the ``question`` read with it)."""
    index = context if isinstance(context, ContextRelations) else context_relations(context)
    found: dict[tuple[int, int], Contradiction] = {}
    for sup in _superlatives(answer):
        # The same superlative of the same thing about the same subject, ranked otherwise, and no
        # context mention that ranks it as the answer does.
        same = [t for t in index.superlatives
                if t.word == sup.word and t.subject & sup.subject and t.noun & sup.noun]
        if same and not any(t.rank == sup.rank for t in same):
            found[(sup.start, sup.end)] = Contradiction(sup.start, sup.end, answer[sup.start : sup.end])
    for mine in _comparisons(answer, question):
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
                    and best.negated != clause.negated and _restates_the_negated(clause, best) and not any(
                        s[0] >= NEGATION_ANSWER_SHARE and s[1] >= NEGATION_CONTEXT_SHARE
                        and s[2].negated == clause.negated for s in shares)):
                span = (clause.start, clause.end)
                if not any(s <= span[0] < e or span[0] <= s < span[1] for s, e in found):
                    found[span] = Contradiction(clause.start, clause.end, answer[clause.start : clause.end])
    return tuple(sorted(found.values(), key=lambda c: c.start))
