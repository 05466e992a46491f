"""Which names of an answer clause and of the context clause it restates stand for each other.

The clause check (:mod:`.clauses`) aligns an answer clause with the context clause it restates
and looks for a name moved in: one the context clause lacks while it has another in its place.
Most names of the two clauses are the same thing, written the same way or not: the same name,
one holding the other's words ("Scott" for "Walter Scott"), the full name of the surname the
clause gives ("Kevin Pietersen" for "Pietersen"). :func:`paired` pairs them one to one;
:func:`lacks_name` tells a context name no answer name stands for; :func:`other_role` tells two
names in other roles (a place or an object after a preposition, a subject).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from truthlens.detector.facts.name_forms import preposition_before
from truthlens.detector.facts.names import same_entity, same_place

POSSESSIVE = re.compile(r"['’]s\s+")
# Prepositions of a place, one standing for another ("in Boston", "at Boston").
_WHERE = frozenset({"in", "at", "on"})
# "by" names who did it far from its verb too ("incorporated on January 3, 1977, by Steve Jobs"):
# the subject's role.
_AGENT = {"by": ""}


@dataclass(frozen=True, slots=True)
class Term:
    kind: str
    key: frozenset[str]  # a name's words, or a number's digits
    start: int
    end: int
    counts: str = ""  # what a number counts: the stem of the content word after it ("12 offices")


def lacks_name(theirs: Term, term: Term, given: set[Term], loose: frozenset[str],
                written: frozenset[str]) -> bool:
    """Whether the answer clause lacks the context clause's name ``theirs`` where its ``term`` may
    stand: no answer name stands for it (:func:`paired`), the answer does not write its words
    outside its names, nor all of them at all unless ``term`` is its sibling (sharing a word:
    "Turin Shroud" for "Holy Shroud" beside "Turin's cathedral"; "Russian capital ..., Russian
    aide" repeated, the one "Russian" of "Moscow ..., Russian aide" gives both)."""
    if theirs in given or theirs.key <= loose:
        return False
    return not theirs.key <= written or bool(theirs.key & term.key)


def same_or_opening(mine: tuple[str, str], theirs: tuple[str, str]) -> bool:
    """:func:`.names.same_place`, or both opening their clause."""
    return same_place(mine, theirs) or (mine[0] == "" and theirs[0] == "")


def in_full(term: Term, mine: Sequence[Term], theirs: Sequence[Term], known: frozenset[frozenset[str]]) -> bool:
    """Whether the answer's name ``term`` is the full name of one the context clause gives in part
    in its place (``theirs``: "Kevin Pietersen signed" for the clause's "Pietersen, ..., signed";
    not "Wigan Athletic" where "Wigan chairman" opens the clause): the context writes it in full elsewhere, and
    no other name of the context holds that part ("Andrea Swift" beside "Taylor Swift" leaves a
    bare "Swift" to either), nor another name of the clause the rest ("Kim, Kanye and Khloe
    Kardashian" gives "Kardashian" to Khloe, not to a "Kim Kardashian"), and no other name of the
    answer clause ``mine`` is that part (the answer's own "Kluivert" is the clause's)."""
    if term.key not in known:
        return False
    names = [t for t in theirs if t.kind == "name"]
    return any(t.key < term.key and all(k <= term.key for k in known if t.key <= k)
               and not any(o is not t and o.key & (term.key - t.key) for o in names)
               and not any(a is not term and a.kind == "name" and t.key <= a.key for a in mine) for t in names)


def paired(mine: Sequence[Term], theirs: Sequence[Term], slots: dict[Term, tuple[str, str]],
            their_slots: dict[Term, tuple[str, str]], loose: frozenset[str],
            openers: set[Term], surfaces: dict[Term, str]) -> tuple[set[Term], set[Term]]:
    """The names of an answer clause and of the context clause it restates that stand for each
    other, one to one: in the same place (the same name, one holding the other's words, one written
    another way: "Power of Veto", "POV"), then anywhere (the same, then "Scott" for "Walter Scott"),
    then a context clause's opener capitalised by position ("DJ Flamezz", "Hired Flamezz"). Context
    names inside a longer answer name are given by it, which is held when made of them ("THAAD
    System") or joining one at a possessive ("Carlo Ancelotti's Real Madrid" for "Madrid")."""
    names = [t for t in mine if t.kind == "name"]
    others = [t for t in theirs if t.kind == "name"]
    held: set[Term] = set()
    given: set[Term] = set()
    for test in range(5):
        for a in names:
            if a in held:
                continue
            for b in others:
                if b in given:
                    continue
                if test == 0:
                    fits = a.key == b.key and same_place(slots[a], their_slots[b])
                elif test == 1:
                    fits = (a.key <= b.key or b.key <= a.key or same_entity(surfaces[a], surfaces[b])) and same_place(
                        slots[a], their_slots[b])
                elif test == 2:
                    fits = a.key == b.key
                elif test == 3:
                    fits = a.key <= b.key
                else:
                    extra = b.key - a.key
                    fits = b in openers and len(extra) == 1 and extra <= loose and bool(a.key & b.key)
                if fits:
                    held.add(a)
                    given.add(b)
                    break
    joined = {b for b in others if any(b.key < a.key for a in names)}
    held |= {a for a in names if a.key <= {w for b in joined if b.key < a.key for w in b.key}
             or (POSSESSIVE.search(surfaces[a]) and any(b.key < a.key for b in joined))}
    return held, given | joined


def other_role(mine: str, theirs: str) -> bool:
    """Whether two names stand in other roles (``mine`` and ``theirs``: their clauses up to each):
    one follows a preposition and the other does not, a place or an object ("her trip to Central
    and South America") where a subject stands ("President Park has condemned ..."), whatever word
    follows both (:func:`.name_forms.after_preposition`); or they follow other prepositions, but
    for those of a place ("a contract at Lyon" is not "a contract from Santos")."""
    a, b = (_AGENT.get(p, p) for p in (preposition_before(mine), preposition_before(theirs)))
    return a != b and not {a, b} <= _WHERE
