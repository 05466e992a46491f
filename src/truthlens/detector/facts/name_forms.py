"""How a name stands: written another way for the same thing, or modifying a noun.

The clause and role checks compare an answer's name with the one a context clause has in its
place. Some of those pairs are one thing written two ways: a country and its adjective, an
acronym and its words (:func:`spelled_initials`), or a description the context itself gives
the name ("the Egyptian television network CBC"); a name joined to another at a possessive is
not one thing's full name. And a name modifying the noun after it ("the Denver native", "an
American woman") describes someone rather than naming who acts. All are read here, by rule.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from truthlens.detector.facts.names import PASSIVE_AGENT, same_entity
from truthlens.detector.text import STOP_WORDS, stem, words

ACRONYM = re.compile(r"\b[A-Z]{2,5}\b")
_SLOT_WORD = re.compile(r"[\w'’]+")
_POSSESSIVE = re.compile(r"['’]s\b")
# A name modifying the noun after it ("the Denver native", "a 55-year-old Texas native", "the Aston
# Villa goalkeeper", "an American woman") describes someone rather than acting: after a determiner,
# a possessive or a hyphenated word, and before a lower-case word that is no verb. A verb is read
# by its form: a past tense, a third person "-s" (so a plural noun is read as one too: the rule
# passes over fewer names) or one of the common irregular ones.
_MODIFIER_BEFORE = re.compile(
    r"(?:\b(?:the|a|an|his|her|its|their|our|this|that|these|those|former|fellow)|\w+-[\w-]+|['’]s)\s+$", re.I)
# A preposition, "the" and title words may stand between it and the name ("of the Ms Taylor", "at
# St Albans Crown Court" where the name is read from "Albans").
_AFTER_PREPOSITION = re.compile(
    r"\b((?i:on|in|at|to|from|into|onto|of|for|with|by|near|across))\s+(?:(?i:the)\s+)?(?:[A-Z][\w.'’-]*\s+)*"
    r"(?:[A-Z][\w.'’]*-)?$")  # (a name read from its second part: "An-" before "Noor")
# "of" after a capitalised word is inside a name or a title ("Director of Public Prosecutions",
# "University of"): no preposition of the clause.
_NAME_OF = re.compile(r"[A-Z][\w.'’-]*\s+$")
_TITLES = re.compile(r"(?:[A-Z][\w.'’-]*\s+)+$")  # "Mrs " before "Ginneti"
# The names before "and" or "or" (and a title or first name after it: "on Aspell and Many Clouds").
_COORDINATED = re.compile(r"(?:[A-Z][\w'’.-]*\s+)+(?:and|or)\s+(?:[A-Z][\w'’.-]*\s+)*$")
_NOUN_AFTER = re.compile(r"\s+([a-z][a-z-]*[a-z])\b")
_IRREGULAR_VERBS = frozenset(
    """said told won beat lost made took gave got left led met ran hit put set sent paid kept held became began
    found brought bought built wrote spoke saw went came flew fell rose drove threw shot stood sat sold
    won't can could would should may might must shall do did""".split())


def after_preposition(before: str) -> bool:
    """Whether a name standing after the text ``before`` (its clause up to it) follows a
    preposition: a place or an object ("landed on the Moon"), not the clause's actor; but for the
    agent of a passive verb ("Columbia was flown by Buzz Aldrin" says who flew it,
    :data:`.names.PASSIVE_AGENT`). The second of two names joined by "and" or "or" follows what
    the first does ("her trip to Central and South America")."""
    return preposition_before(before) != ""


def preposition_before(before: str) -> str:
    """The preposition a name standing after ``before`` follows (lower case), or "" (none, or the
    agent's "by" of a passive verb: :func:`after_preposition`)."""
    before = _COORDINATED.sub("", before)
    hit = _AFTER_PREPOSITION.search(before)
    if hit is None or PASSIVE_AGENT.search(_TITLES.sub("", before)):
        return ""
    if hit.group(1).lower() == "of" and _NAME_OF.search(before, 0, hit.start()):
        return ""
    return hit.group(1).lower()


def is_modifier(text: str, start: int, end: int) -> bool:
    """Whether the name ``text[start:end]`` modifies the noun after it (:data:`_MODIFIER_BEFORE`)."""
    if not _MODIFIER_BEFORE.search(text, 0, start):
        return False
    after = _NOUN_AFTER.match(text, end)
    return after is not None and is_noun(after.group(1))


def is_noun(word: str) -> bool:
    """Whether the lower-case ``word`` may be a noun a name modifies: no stop word, and no verb by
    its form (:data:`_IRREGULAR_VERBS`, a past tense, a third person or plural "-s")."""
    return not (word in STOP_WORDS or word in _IRREGULAR_VERBS or word.endswith(("ed", "s")))


def spelled_initials(context: Sequence[str]) -> dict[str, frozenset[str]]:
    """The initials of the context's runs of two to five words (neither end a stop word), each
    with the stems of those words: "cfo" -> {"chief", "financial", "offic"}, so an abbreviation
    the context spells out is read as its words."""
    spelled: dict[str, set[str]] = {}
    for passage in context:
        run = [m.group(0) for m in words(passage)]
        for i in range(len(run)):
            for n in range(2, 6):
                part = run[i:i + n]
                if len(part) == n and not any(w.lower() in STOP_WORDS for w in (part[0], part[-1])):
                    spelled.setdefault("".join(w[0] for w in part).lower(), set()).update(map(stem, part))
    return {k: frozenset(v) for k, v in spelled.items()}


def is_joined(name: str) -> bool:
    """Whether the name ``name`` (its characters) is two joined at a possessive ("Turkey's Kurdish
    minority", "Atletico Madrid's La Liga"): not one thing's full name."""
    return _POSSESSIVE.search(name) is not None


def written_otherwise(text: str, term: str, theirs: str) -> bool:
    """Whether the context's name ``theirs`` is the answer's ``term`` written another way
    (:func:`same_entity`: "Australian" for "Australia", "Power of Veto" for "POV"), or an acronym
    whose words the answer clause ``text`` spells out ("Las Vegas Grand Prix" for "LVGP"): a
    summary spells out what its article abbreviates, and that is no term moved in; or the one
    shortened word by word ("Man United" for "Manchester United")."""
    return same_entity(term, theirs) or _spells_out(text, theirs) or _shortened(term, theirs)


def _shortened(a: str, b: str) -> bool:
    """Whether one name is the other with words cut short, word for word: each word of the one
    opens the other's word at its place, three letters at least ("Man United" / "Manchester
    United"; "Kim" does not open "Khloe")."""
    x, y = a.lower().split(), b.lower().split()
    if len(x) != len(y) or x == y:
        return False
    return all(len(min(u, v, key=len)) >= 3 and (u.startswith(v) or v.startswith(u)) for u, v in zip(x, y, strict=True))


def described(clauses: Sequence[str], term: str, theirs: str) -> bool:
    """Whether the context (its ``clauses``) writes the answer's name ``term`` as a description of
    its name ``theirs``, before it in one noun phrase ("the Egyptian television network CBC"): the
    answer that says "Egyptian television" where a clause has "CBC television" uses it."""
    pattern = re.compile(rf"\b{re.escape(term)}((?:\s+[a-z][\w-]*){{1,3}})\s+{re.escape(theirs)}\b")
    return any(all(is_noun(w) for w in m.group(1).split())
               for c in clauses for m in pattern.finditer(c))


def _spells_out(text: str, acronym: str) -> bool:
    """Whether ``text`` has a run of words whose initials are ``acronym`` (two to five capitals)."""
    if not ACRONYM.fullmatch(acronym):
        return False
    run = [w[0].lower() for w in _SLOT_WORD.findall(text)]
    letters = acronym.lower()
    return any("".join(run[i:i + len(letters)]) == letters for i in range(len(run) - len(letters) + 1))
