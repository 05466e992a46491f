"""Who did what: an answer clause aligned with the context clause it restates, and the term it moved.

The commonest error of a RAG answer uses only what the context states, put in the wrong place: the
founding year given as the year of a later move, the number of employees given as the number of
offices, a lake's depth given to its neighbour, "before" where the context says "after". Every
term of such a clause is in the context, so a look-up calls it supported; a reader finds the
context clause the answer restates and sees another term in its place. :func:`moved_terms` does
the same, by rule:

1. the answer and the context are cut into clauses (:func:`truthlens.detector.text.clauses`);
2. the key terms of an answer clause are its names (``Lake Superior``), numbers (``12``) and
   years (``1998``); what it says of them is its other content words (stemmed, no stop words);
3. a clause whose key terms all occur together in one context clause that fits it (step 4's
   share, and a word besides its names' own) is supported as a whole;
4. else the context clause that shares most of what it says (at least two words and half of
   them; of clauses that tie, the one holding most of its terms' words, or each of them when
   each term is in one) is the clause it restates. Each name of that clause stands for one of
   the answer's, one to one (:func:`.name_pairs.paired`: a sibling sharing a word is another
   name, a name the clause gives twice is not given by the answer's one); a term of the answer
   that this clause lacks, while it holds another term of the same kind the answer lacks
   (another name, number or year) in the same place (the same content word before or after it,
   :func:`.names.place`, or a number counting the same thing: "300 offices" for "12 offices"),
   and that another context clause states, was moved there and is flagged on its characters
   (:attr:`Moved.fit`: how much of the answer clause that clause holds). A name the clause gives
   in another form is none moved: the acronym the article uses for the name the summary spells
   out ("POV" / "Power of Veto"), a country for its adjective (:func:`.names.same_entity`),
   a description the context gives that name ("Egyptian television" where the clause has "CBC
   television" and another "the Egyptian television network CBC"), another part of one full
   name ("Hardin" for "Cameron", of "Cameron Hardin"), and the full name of the clause's surname
   ("Kevin Pietersen" for "Pietersen", :func:`.name_pairs.in_full`). Nor is a name in another
   role: after a preposition where the answer's is not, or after another one ("her trip to South
   America" for "President Park", "from Santos" for "at Lyon"; :func:`.name_pairs.other_role`).
   Where every name of the answer clause was moved (or, not held, is a place or an object after
   a preposition) and they name two or more, the clause restates another fact with words the two
   share (a summary merging sentences), not a mix-up: its names are left alone;
5. on the same alignment, a word the answer turns into its opposite ("after" for "before",
   "decreased" for "increased", "closed" for "open") where the context clause has the opposite
   and not the word, beside the same words, is a reversed relation (:mod:`.opposites`: "A after
   B" for "B before A" is the same relation).

An abbreviation the context spells out ("CFO": "chief financial officer") is read as those
words. A short clause ("The CFO is John Park.") needs no same place; a short answer ("John
Park.") is read with its question's words when the question names nothing of its own (a
question that does often hops over two facts, and its answer is in neither clause alone). A term
not in the context at all is left to the look-ups of :mod:`.numbers` and :mod:`.names` (one
wrong fact is one finding), and so is a number that look-up passes over as no claim: one
citing the prompt ("(Passage 2)") or numbering a list item. What it cannot see: a clause
sharing fewer than two content words with the one it restates ("Acme moved to Boston in
1920."), a term moved between clauses that share no words, and paraphrases (the model's job).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from truthlens.detector.facts.name_forms import (
    ACRONYM,
    after_preposition,
    described,
    is_joined,
    spelled_initials,
    written_otherwise,
)
from truthlens.detector.facts.name_pairs import (
    POSSESSIVE,
    Term,
    in_full,
    lacks_name,
    other_role,
    paired,
    same_or_opening,
)
from truthlens.detector.facts.names import find_names, lower_case_words, place, same_place
from truthlens.detector.facts.numbers import find_quantities
from truthlens.detector.facts.opposites import OPPOSITES, reversed_word
from truthlens.detector.facts.roles import is_short_answer
from truthlens.detector.facts.short_answers.focus import FocusIndex, focus_index, off_focus_names
from truthlens.detector.text import clauses, content_words, stem

_NUMBER = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\d,]*\d)|(?<![\w.,])\d+(?:\.\d+)?(?![\w.]*\d)")
_YEAR = re.compile(r"1[0-9]\d\d|20\d\d")
# What a number counts: the next word, past a unit word or "of the" ("12 offices", "3 million
# people", "20 of the charges").
_COUNTED = re.compile(r"(?:\s*%|\s+(?:per\s*cent|percent|million|billion|thousand|hundred|of|the|more|new|other|"
                      r"different|full|separate)\b)*\s+([^\W\d_]{3,})")
MIN_SHARED = 2
SHORT_CLAUSE_WORDS = 1  # content words at most, besides its terms, of a clause read with its question
_WORD = re.compile(r"[^\W\d_]+")
# Between two names that are one: a space, or a capitalised word ("Prime Minister David Cameron").
_ONE_NAME_GAP = re.compile(r"\s+(?:[A-Z][\w.]*\s+)?")


@dataclass(frozen=True, slots=True)
class Moved:
    """``answer[start:end]`` is a term (``kind``: "name", "number", "year") or a relation word
    ("relation") the context states of another clause; ``instead`` is what the aligned context
    clause has in its place."""

    start: int
    end: int
    text: str
    kind: str
    instead: str
    # The share of the answer clause's content words the context clause it restates holds (1.0:
    # that clause word for word, but for the moved term): how closely the answer restates the
    # clause it moved the term into (0.0 where no clause was aligned: a short answer's focus).
    fit: float = 0.0


@dataclass(frozen=True, slots=True)
class _Clause:
    text: str
    start: int  # where ``text`` starts in its passage (or the answer)
    words: frozenset[str]  # stems of its content words, its names' words left out
    plain: frozenset[str]  # every word, lower case (for opposites and name words)
    terms: tuple[Term, ...]


@dataclass(frozen=True, slots=True)
class ContextClauses:
    """What the clause check reads of a context, built once per context."""

    clauses: tuple[_Clause, ...]
    lower_words: frozenset[str]
    # Initials of the context's runs of two to five words, and the stems of those words:
    # "cfo" -> {"chief", "financial", "offic"}.
    spelled: dict[str, frozenset[str]]
    focus: FocusIndex  # its sentences, as the focus check of a short answer reads them
    # The words of each name it gives, but two joined at a possessive (:func:`.name_forms.is_joined`).
    names: frozenset[frozenset[str]] = frozenset()


def _terms(text: str, start: int, end: int, lower: frozenset[str], *, skip_starts: bool) -> list[Term]:
    part = text[start:end]
    out = [Term("name", frozenset(n.words), start + n.start, start + n.end)
           for n in find_names(part, lower, skip_sentence_starts=skip_starts, tails=True) if n.words]
    for m in _NUMBER.finditer(part):
        digits = m.group(0).replace(",", "")
        kind = "year" if _YEAR.fullmatch(digits) else "number"
        counted = _COUNTED.match(part, m.end())
        counts = stem(counted.group(1)) if counted and kind == "number" else ""
        out.append(Term(kind, frozenset({digits}), start + m.start(), start + m.end(), counts))
    return out


def _clause(text: str, start: int, end: int, lower: frozenset[str], *, answer: bool) -> _Clause:
    terms = _terms(text, start, end, lower, skip_starts=answer)
    name_words = {w for t in terms if t.kind == "name" for w in t.key}
    words = frozenset(w for w in content_words(text, start, end) if w not in name_words)
    plain = frozenset(m.group(0).lower() for m in _WORD.finditer(text, start, end))
    return _Clause(text[start:end], start, words, plain, tuple(terms))


def context_clauses(context: Sequence[str]) -> ContextClauses:
    lower = lower_case_words("\n".join(context))
    found = [_clause(passage, a, b, lower, answer=False) for passage in context for a, b in clauses(passage)]
    initials = spelled_initials(context)
    names = frozenset(t.key for c in found for t in c.terms
                      if t.kind == "name" and not is_joined(c.text[t.start - c.start:t.end - c.start]))
    return ContextClauses(tuple(found), lower, initials, focus_index(context, initials), names)


def _holds(terms: Sequence[Term], term: Term) -> bool:
    """Whether ``terms`` state ``term``: a name with all of its words, or the same number of the
    same thing (a number that says what it counts on one side only matches on its value)."""
    return any(t.kind == term.kind and term.key <= t.key and _same_counted(t, term) for t in terms)


def _holds_apart(terms: Sequence[Term], clause_terms: Sequence[Term], term: Term) -> bool:
    """:func:`_holds`, where a longer name of the context clause that another of the answer
    clause's names ``terms`` gives in full is that name's, not ``term``'s: "Mr Scott" beside
    "Walter Scott" in "Walter Scott was shot in North Charleston, Mr Scott." is not stated by
    the context clause's one "Walter Scott" (each of its names restates one of the answer's)."""
    if term.kind != "name":
        return _holds(clause_terms, term)
    for t in clause_terms:
        if t.kind != "name" or not term.key <= t.key:
            continue
        if term.key == t.key:
            return True
        given = sum(1 for o in clause_terms if o.kind == "name" and o.key == t.key)
        if given > sum(1 for o in terms if o != term and o.kind == "name" and o.key == t.key):
            return True
    return False


def _same_counted(a: Term, b: Term) -> bool:
    return not (a.counts and b.counts) or a.counts == b.counts


def _in_place_of(term: Term, theirs: Term) -> bool:
    """Whether ``theirs`` may be what ``term`` took the place of: the same kind, and for a number
    one that counts the same thing."""
    return theirs.kind == term.kind and (term.kind != "number" or theirs.counts == term.counts or not term.counts)


def moved_terms(answer: str, context: Sequence[str] | ContextClauses, question: str = "") -> tuple[Moved, ...]:
    """Terms and relation words of ``answer`` the context states of another clause (module note)."""
    index = context if isinstance(context, ContextClauses) else context_clauses(context)
    if not index.clauses:
        return ()
    lower = index.lower_words | lower_case_words(answer)
    found: dict[tuple[int, int], Moved] = {}
    # The numbers the look-up of numbers checks: not one citing the prompt ("(Passage 2)") or
    # numbering a list item ("2. ..."), which claim nothing.
    claims = [(q.start, q.end) for q in find_quantities(answer) if q.checked]
    for start, end in clauses(answer):
        mine = _clause(answer, start, end, lower, answer=True)
        if not mine.terms and not (mine.plain & OPPOSITES.keys()):
            continue
        said, terms = _spelled_out(mine, answer, index)
        for m in _moved(mine, said, terms, index, answer):
            if m.kind in ("number", "year") and not any(s < m.end and m.start < e for s, e in claims):
                continue
            if not any(s < m.end and m.start < e for s, e in found):
                found[(m.start, m.end)] = m
    if question and is_short_answer(answer):
        # A short answer states the question's focus ("Who is the CFO?" - "Maria Lopez."): :mod:`.short_answers.focus`.
        for o in off_focus_names(answer, question, index.focus):
            if not any(s < o.end and o.start < e for s, e in found):
                found[(o.start, o.end)] = Moved(o.start, o.end, o.text, "name", "")
    return tuple(sorted(found.values(), key=lambda m: m.start))


def _spelled_out(clause: _Clause, text: str, index: ContextClauses) -> tuple[frozenset[str], list[Term]]:
    """What ``clause`` says and its terms, an abbreviation the context spells out ("CFO" for
    "chief financial officer") read as the words it stands for rather than as a name."""
    said = set(clause.words)
    caps = {}
    for m in ACRONYM.finditer(clause.text):
        if spelled := index.spelled.get(m.group(0).lower()):
            caps[m.group(0)] = spelled
            said = (said - {stem(m.group(0))}) | spelled
    terms = [t for t in clause.terms if text[t.start:t.end] not in caps]
    return frozenset(said), terms


def _moved(mine: _Clause, said: frozenset[str], terms: list[Term], index: ContextClauses,
           answer: str) -> list[Moved]:
    """What ``mine`` moved from the context clause it restates (module note, steps 3 to 5)."""
    if not said:
        return []
    shares = [len(said & c.words) for c in index.clauses]
    best = max(shares)
    fits = max(MIN_SHARED, -(-len(said) // 2))
    by_terms = best < fits
    if by_terms:
        # A short clause ("Acme moved to Boston in 1920.") shares too few words with any: its
        # names and counted numbers tie it to the clause it restates, and only a number or year
        # is judged moved on that tie (a name stands in too many clauses: on HaluEval's dev
        # fold, names were flagged in right answers).
        shares = [n + _shared_terms(terms, c) for n, c in zip(shares, index.clauses, strict=True)]
        best = max(shares)
    if best < fits:
        return []
    aligned = [c for c, n in zip(index.clauses, shares, strict=True) if n == best]
    if len(aligned) > 1 and not by_terms and not all(any(_holds(c.terms, t) for c in aligned) for t in terms):
        # Clauses that say as much: the one it restates also has most of its terms' words
        # ("at Incheon Airport in Japan" restates "at Hiroshima Airport in Japan", not "in Japan";
        # "Lake Michigan is 406 m deep" ties "Lake Superior is 406 m" and "Lake Michigan is 281 m").
        # Not where each of its terms is in one of them: a clause merging two ("near the airport,
        # 5 miles from the campus") is judged on both, as is one tied on its terms alone.
        named = {w for t in terms for w in t.key}
        near = [len(named & {w for t in c.terms for w in t.key}) for c in aligned]
        aligned = [c for c, n in zip(aligned, near, strict=True) if n == max(near)]
    fit = min(1.0, len(said & aligned[0].words) / len(said))
    out: list[Moved] = []
    own = [t for t in terms if t in mine.terms]
    # Its terms together in one clause that says what it says: supported as a whole. What it says
    # is more than its names' own words ("Champions League" shares "champion" and "league" with
    # every clause naming it, "United Kingdom" "unit"): two of its other words must be there too.
    told = said - {stem(w) for t in terms if t.kind == "name" for w in t.key}
    together = any(n >= fits and len(told & c.words) >= min(MIN_SHARED, len(told))
                   and all(_holds_apart(terms, c.terms, t) for t in terms)
                   for c, n in zip(index.clauses, shares, strict=True))
    if own and not together:
        # Two context clauses may say it as well ("Lake Michigan is 406 m deep" against "Lake
        # Superior is 406 m deep" and "Lake Michigan is 281 m deep"): a mix-up when each shows a
        # term moved in, flagged on each.
        per_clause = [_one_fact(answer, own, *_moved_in(mine, terms, c, index, answer, fit), by_terms) for c in aligned]
        if all(per_clause):
            out.extend(m for moved in per_clause for m in moved)
    if len(aligned) != 1:
        return out
    (theirs,) = aligned
    for w in sorted(mine.plain & OPPOSITES.keys()):
        flipped = OPPOSITES[w] & theirs.plain
        if not flipped or w in theirs.plain or OPPOSITES[w] & mine.plain:
            continue
        if len((said - {stem(w)}) & theirs.words) < MIN_SHARED:
            continue
        hit = reversed_word(mine.text, w, theirs.text, flipped)
        if hit is not None:
            at = mine.start + hit
            out.append(Moved(at, at + len(w), answer[at:at + len(w)], "relation", sorted(flipped)[0], fit))
    return out


def _one_fact(answer: str, own: Sequence[Term], moved: list[Moved], held: set[Term], by_terms: bool) -> list[Moved]:
    """``moved`` but for its names where every name of the answer clause is among them (or, not
    ``held`` by the clause, is a place or an object after a preposition) and they name two or
    more (a title's words and its holder's, "British Prime Minister David Cameron", name one): a
    mix-up moves a name into a clause that otherwise restates its context clause; a clause none
    of whose names that clause holds restates another fact with words the two share ("British
    Prime Minister David Cameron also sent condolences after Benaud's death" beside "condolences,
    including from Australian Prime Minister Tony Abbott"). A clause tied to its context clause
    by its terms alone (``by_terms``) has no name judged moved."""
    if by_terms:
        return [m for m in moved if m.kind != "name"]
    names = sorted((t for t in own if t.kind == "name"), key=lambda t: t.start)
    spans = {(m.start, m.end) for m in moved if m.kind == "name"}
    if not names or not all((t.start, t.end) in spans or (t not in held and after_preposition(answer[:t.start]))
                            for t in names):
        return moved
    named = 1 + sum(1 for a, b in zip(names, names[1:], strict=False)
                    if not _ONE_NAME_GAP.fullmatch(answer, a.end, b.start))
    return moved if named < 2 else [m for m in moved if m.kind != "name"]


def _shared_terms(terms: Sequence[Term], clause: _Clause) -> int:
    """How many of the answer clause's ``terms`` also tie it to ``clause``: a name it states, or a
    number counting the thing one of its numbers counts ("Acme moved to Boston in 1920" meets
    "moved to Boston in 1955" on "moved" and Boston; "It has 300 offices" meets "12 offices")."""
    return sum(1 for t in terms if (t.kind == "name" and _holds(clause.terms, t)) or (
        t.kind == "number" and t.counts and any(o.kind == "number" and o.counts == t.counts for o in clause.terms)))


def _moved_in(mine: _Clause, terms: list[Term], theirs: _Clause, index: ContextClauses, answer: str,
              fit: float) -> tuple[list[Moved], set[Term]]:
    """The terms of ``mine`` that ``theirs`` (the clause it restates) lacks, each where ``theirs``
    has another term of its kind that the answer lacks and another context clause states it."""
    # A short clause ("The CFO is John Park.") is all slot: its term stands for the aligned one's.
    short = len(mine.words) <= SHORT_CLAUSE_WORDS
    end = mine.start + len(mine.text)
    slots = {t: _slot(answer, mine.start, end, t) for t in terms}
    their_slots = {t: _slot(theirs.text, 0, len(theirs.text), t, theirs.start) for t in theirs.terms}
    # Words written outside its names: a context name among them is there ("the apple" for "Apple").
    loose = mine.plain - {w for t in terms if t.kind == "name" for w in t.key}
    written_words = mine.plain | {w for t in terms if t.kind == "name" for w in t.key}
    openers = {t for t in theirs.terms if not theirs.text[:t.start - theirs.start].strip(" \"'“‘(")}
    surfaces = {t: answer[t.start:t.end] for t in terms} | {t: _surface(theirs, t) for t in theirs.terms}
    held, given = paired(terms, theirs.terms, slots, their_slots, loose, openers, surfaces)
    held |= {t for t in terms if t.kind == "name" and in_full(
        t, terms, [o for o in theirs.terms if same_or_opening(slots[t], their_slots[o])], index.names)}
    out = []
    for term in terms:
        if term not in mine.terms:
            continue  # (a term of the question)
        written = answer[term.start:term.end]
        stated = any(t.kind == term.kind and term.key <= t.key for c in index.clauses for t in c.terms) or (
            term.kind == "name" and _stated_in_parts(written, index.lower_words, index))
        if not stated or (term in held if term.kind == "name" else _holds(theirs.terms, term)):
            continue  # stated there, or nowhere (the look-ups' finding)
        instead = [
            t for t in theirs.terms
            if _in_place_of(term, t)
            and (lacks_name(t, term, given, loose, written_words) if t.kind == "name"
                 else not any(a.key == t.key for a in terms))
            and not (t.kind == "name" and other_role(answer[mine.start:term.start], _before(theirs, t)))
            and not (t.kind == "name" and (written_otherwise(mine.text, written, _surface(theirs, t))
                                           or described([c.text for c in index.clauses], written, _surface(theirs, t))
                                           or (t.key | term.key) in index.names))
            and (short or _same_slot(slots[term], their_slots[t], term, t))
        ]
        if not instead:
            continue
        out.append(Moved(term.start, term.end, written, term.kind, _surface(theirs, instead[0]), fit))
    return out, held


def _before(clause: _Clause, term: Term) -> str:
    """``clause``'s text up to ``term``."""
    return clause.text[:term.start - clause.start]


def _stated_in_parts(written: str, lower: frozenset[str], index: ContextClauses) -> bool:
    """Whether the name ``written`` is two names joined at a possessive, each stated in the context
    ("Atletico Madrid's La Liga", as the look-up of names finds them; one it never gives is the
    look-up's to flag)."""
    parts = POSSESSIVE.split(written)
    if len(parts) < 2:
        return False
    known = [t.key for c in index.clauses for t in c.terms if t.kind == "name"]
    for part in parts:
        words = {w for n in find_names(part, lower, skip_sentence_starts=False) for w in n.words}
        if not words or not any(words <= k for k in known):
            return False
    return True


def _slot(text: str, start: int, end: int, term: Term, offset: int = 0) -> tuple[str, str]:
    """Where ``term`` stands in its clause ``text[start:end]`` (:func:`place`)."""
    return place(text, term.start - offset, term.end - offset, (start, end), past_possessive=True)


def _same_slot(mine: tuple[str, str], theirs: tuple[str, str], term: Term, other: Term) -> bool:
    """Whether ``other`` stands where ``term`` does: the same word before or after it, or, for
    numbers, the same thing counted. A clause names more than the answer keeps ("... by the IRS
    in the United States"); only a term in the moved term's place was replaced by it."""
    if term.kind == "number" and term.counts and term.counts == other.counts:
        return True
    return same_place(mine, theirs)


def _surface(clause: _Clause, term: Term) -> str:
    """The context's own characters of ``term``, one of ``clause``'s."""
    return clause.text[term.start - clause.start:term.end - clause.start]
