"""The kind of each name of a context (a person, a place, an organisation, a work, an event), read from evidence.

"Benjamin Halfpenny's club plays its home matches where?" - "Super League." names something the
context mentions, in a sentence holding the question's words, and of the wrong kind: a league is
no place, and the context never says "the Super League is a league". A reader knows the kind
from the name itself and from how the context writes it; :func:`name_kinds` reads the same, by
rule, and keeps a kind only where the evidence is one-sided:

- the name's last word (:data:`KIND_WORDS`: "Gyeonggi Province", "Super League", "Nobel Prize",
  "Husky Stadium"), or a word of that table the context calls it ("Lindenhurst is a village",
  "the band Hole", :mod:`.answer_types`);
- a person: "(born ...)" or "he/she" opening the next sentence (:mod:`.answer_types`), a doer the
  context calls it ("an American rapper"), a title of
  address right before it ("Dr", "President"), a verb of speech or of a life right after it
  ("said", "was born", "died"), "who" after it between commas, or its family ("X's wife");
- a place: "born / located / based / headquartered in X", "near X", "the city / state of X";
- a work: the context writes it alone in quotes (:mod:`.works`).

Two kinds read for one name leave it unknown. The kind asked is read from the question's head
(:func:`.questions.question_head`), else from the first word of the table in its "what / which"
phrase, whose verb no table tells from a noun ("what airline took over", "what 4 time Golden Globe
winner stars in"); an event word there only as the phrase's last, since it mostly modifies ("what
post-war area"). :func:`misfit` says whether a short answer's name
is of a kind the question cannot ask for: a "who" question (or one asking for a person by a noun
of a doer: "which 1925 Nobel Physics Prize recipient") answered by a place, event or work; a
"where" question by a person, an organisation without a site, an event or a work; "which city /
team / film / award" by another kind; and only while another name of the context, neither the
answer's nor the question's, is of the kind asked for.

What it cannot see: a name whose kind the context never shows ("United States" written without
"in"; a team named by its city), a kind the question asks for by a noun outside the table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from truthlens.detector.facts.names import Name, find_names
from truthlens.detector.facts.short_answers.answer_types import PERSON, descriptions, whole_names
from truthlens.detector.facts.short_answers.works import WORK_NOUNS, work_names
from truthlens.detector.text import is_stop_word, stem

PLACE, SITE, BODY, ORG, EVENT, WORK = "place", "site", "body", "organisation", "event", "work"
# The words that say a name's kind when they end it ("Ulster County") or when the context calls
# the name by them ("a village"), and a question asks for the kind by ("which city"). One table:
# the kind of a name is the kind of word English closes such names with. A site is a building or
# ground (an answer to "where", not to "which city"); a body is an organisation with a site (a
# university answers "where" and "which organisation"). Words that close names of two kinds are left
# out ("Olympic Games", "Rockstar Games"; "English Channel", "Travel Channel"; "Soviet Union").
KIND_WORDS: dict[str, frozenset[str]] = {k: frozenset(stem(w) for w in v.split()) for k, v in {
    PLACE: "city town village county province district region river lake mountain mountains island islands sea "
           "ocean bay valley state country suburb peninsula desert coast canyon forest gulf strait creek harbor "
           "harbour territory township borough prefecture municipality neighborhood neighbourhood continent nation "
           "capital hills",
    SITE: "stadium arena airport park street avenue road square bridge station tower castle palace temple mosque "
          "base hotel zoo prison",
    BODY: "university college school academy institute hospital museum library church cathedral",
    ORG: "league club fc company corporation corp inc ltd llc party council records airlines airline airways "
         "association society commission committee federation foundation agency organization organisation group "
         "band team network studios entertainment investments holdings bank government ministry department army "
         "navy orchestra label firm",
    EVENT: "prize award awards cup championship championships festival war olympics tournament medal "
           "trophy battle revolution election",
}.items()}
_KIND_OF = {w: k for k, words in KIND_WORDS.items() for w in words}
# Words a question asks a kind by that close names of other kinds too ("Penn State", "Big Country").
_ASKED_ONLY = frozenset(stem(w) for w in "state country nation capital base".split())
# A work asked for by its genre ("which 1995 crime thriller": no doer).
_WORKS = WORK_NOUNS | {stem(w) for w in "thriller comedy drama".split()}
# Nouns of people without a doer's ending (the family words are those "X's wife" reads too).
_FAMILY = "wife husband son daughter father mother brother sister widow"
_PEOPLE = frozenset(stem(w) for w in f"{_FAMILY} person man woman star child".split())
_TITLE = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|Sir|Dame|President|Senator|Governor|King|Queen|Prince|Princess|Lord|Lady|"
                    r"Judge|Professor|Prof|Rev|Pope)\.?\s+$")  # (not "St": "St Kilda" is a suburb)
_PERSON_AFTER = re.compile(r"(?:'s|’s)\s+(?:" + _FAMILY.replace(" ", "|") + r"|birth)\b"
                           r"|\s+(?:said|says|told|stated|married|was\s+born|died|retired)\b|,\s+who\b")
_PLACE_BEFORE = re.compile(r"\b(?:(?:born|located|based|situated|headquartered|headquarted|raised|lives|lived)\s+in|"
                           r"near|(?:city|town|village|state|province|county|region|island)\s+of)\s+(?:the\s+)?$",
                           re.IGNORECASE)
_AGENT = re.compile(r"\bby\s+(?:[a-z][\w-]*\s+){0,2}$")  # ("by physicists Alan Sokal")
_VERB_BEFORE = re.compile(r"\b([a-z]+(?:er|or)s)\s+(?:the\s+)?$")
_OF = re.compile(r"\b([A-Z][a-z]+)\s+of\s")
_WHICH_NOUN = re.compile(r"\b(?:which|what)\s+(?!(?:was|is|were|are|did|does|has|had|of)\b)(?:[\w-]+\s+){0,3}?"
                         r"([a-z]+)\s+(?:who|that|which|was|is|were|did|does|has|had)\b", re.IGNORECASE)
# The words a "what / which" phrase runs over before its verb: "what two term Governor of", "what
# 9,500 seat arena is" (up to six words, none a stop word; a comma, "of" or the verb ends it).
# ("which" after a preposition or a comma is a relative: "through which U.S. Route 50 runs")
_WHAT_PHRASE = re.compile(r"(?:\bwhat|(?<!\bthrough\s)(?<!\bin\s)(?<!\bof\s)(?<!\bby\s)(?<!,\s)\bwhich)\s+"
                          r"((?:[\w'’,.-]+\s+){0,5}[\w'’-]+)", re.IGNORECASE)
_COUNTS = frozenset("two three four five six seven eight nine ten".split())
_WHERE = re.compile(r"\bwhere\b", re.IGNORECASE)
_WHO = re.compile(r"^\s*(?:who|whom)\b|\bwhom\b|\bby\s+who\b", re.IGNORECASE)
_DOER = ("er", "or", "ist", "ian", "ess", "ent", "ant")  # a noun of a doer: "composer", "recipient"
# Adjectives shaped like a doer's noun ("a former club", "the upper house").
_LIKE_DOERS = frozenset(stem(w) for w in "former other upper lower inner outer later super under over after premier "
                        "major minor junior senior superior interior".split())
WHO, WHERE = "who", "where"
# What each kind asked for cannot be answered by (a person asked by "who" may be an organisation:
# "who distributed the show", or a newspaper, "described by whom"; one asked by a noun of a doer may
# not; a work answering "who" is :mod:`.works`' to judge).
_NOT = {WHO: {PLACE, SITE, EVENT}, PERSON: {PLACE, SITE, EVENT, WORK, ORG, BODY},
        WHERE: {PERSON, ORG, EVENT, WORK}, PLACE: {PERSON, ORG, EVENT, WORK, SITE, BODY},
        SITE: {PERSON, ORG, EVENT, WORK}, BODY: {PERSON, PLACE, EVENT, WORK},
        ORG: {PERSON, PLACE, SITE, EVENT, WORK}, EVENT: {PERSON, PLACE, SITE, ORG, BODY, WORK},
        WORK: {PERSON, PLACE, SITE, ORG, BODY, EVENT}}
_FITS = {WHO: {PERSON}, PERSON: {PERSON}, WHERE: {PLACE, SITE, BODY}}


def name_kinds(passages: Sequence[str], lower_words: frozenset[str]) -> dict[frozenset[str], str]:
    """Per name of ``passages`` (its words), its kind where the evidence names one kind only, else "" (module note)."""
    seen: dict[frozenset[str], set[str]] = {}
    quoted = work_names(passages, lower_words)
    for passage in passages:
        found = whole_names(passage, [n for n in find_names(passage, lower_words, skip_sentence_starts=False)
                                      if n.words])
        called = descriptions(passage, found)
        for n in found:
            key = frozenset(n.words)
            kinds = seen.setdefault(key, set())
            if len(n.words) > 1:  # its last word, and a first one before "of" ("City of Tea Tree Gully")
                of = _before_of(passage, n)  # (a doer "of": "Member of Parliament", "Professor of Law")
                kinds |= {_KIND_OF[w] for w in (stem(n.words[-1]), of) if w in _KIND_OF and w not in _ASKED_ONLY}
                kinds |= {PERSON} if of.endswith(_DOER[:4]) and len(of) > 4 and of not in _KIND_OF else set()
            # (what is written before "by" is the deed's object, not the name: "a film directed by X")
            agent = _AGENT.search(passage, max(0, n.start - 40), n.start)
            said = set() if agent else {w.lstrip("=") for w in called.get(key, ())}
            # (a noun before the name that another word follows is no description of it: "the film
            # stars Patricia Neal, Cloris Leachman")
            window = passage[max(0, n.start - 40):n.start].lower()
            said = {w for w in said if not re.search(rf"\b{re.escape(w)}\w*\s+[a-z]", window)}
            kinds |= {_KIND_OF[w] for w in said if w in _KIND_OF}
            if said & _WORKS or key in quoted:
                kinds.add(WORK)
            # A doer the context calls it ("an American rapper, record producer": a person, and with
            # "record" read as a label, of no one kind).
            doers = {w for w in said if w.endswith(_DOER[:4]) and len(w) > 4 and w not in _KIND_OF
                     and w not in _WORKS and w not in _LIKE_DOERS}
            if verb := _VERB_BEFORE.search(passage, max(0, n.start - 30), n.start):
                doers.discard(stem(verb.group(1).lower()))  # (a verb: "It borders Gangwon Province")
            if (PERSON in said or doers or _TITLE.search(passage, max(0, n.start - 20), n.start)
                    or _PERSON_AFTER.match(passage, n.end)):
                kinds.add(PERSON)
            if _PLACE_BEFORE.search(passage, max(0, n.start - 40), n.start):
                kinds.add(PLACE)
    return {k: _one(v) or "" for k, v in seen.items()}


def _one(kinds: set[str]) -> str | None:
    """The one kind of ``kinds``, None when there are none or more."""
    return next(iter(kinds)) if len(kinds) == 1 else None


def _before_of(text: str, name: Name) -> str:
    """The stem of a name's word that "of" follows inside it ("City of ...", "Regional Government of ..."), else ""."""
    m = _OF.search(text, name.start, name.end)
    return stem(m.group(1).lower()) if m else ""


def asked_kind(question: str, head: Iterable[str]) -> str | None:
    """The kind ``question`` asks for: by its head noun (stems, :func:`.questions.question_head`) when the
    table holds it or it is a work or a doer's noun, else by "where" / "who"; None when not read."""
    if re.match(r"\s*where\b", question, re.IGNORECASE):
        return WHERE
    # (the head read by the focus rule, then the last word of a "which ..." phrase closed by a relative
    # or a verb: "formed by which British politician who rose")
    phrase = [stem(m.group(1).lower()) for m in _WHICH_NOUN.finditer(question) if not is_stop_word(m.group(1))]
    for h in (*head, *phrase[:1]):
        if kind := _kind_of_noun(h, question):
            return kind
    # (else the first noun of a kind in the "what" phrase: "what 4 time Golden Globe winner stars
    # in", "what American nonsectarian university awards", whose verb no table tells from a noun)
    phrase = _what_phrase(question)
    for n, h in enumerate(phrase):
        kind = _kind_of_noun(h, question, doers=("er", "or"))  # (not "-ian": "nonsectarian")
        if kind and (kind != EVENT or n == len(phrase) - 1):  # (an event word modifies: "what war area")
            return kind
    if _WHO.match(question):  # ("Who founded the University where ...": a relative "where")
        return WHO
    if _WHERE.search(question):
        return WHERE
    return WHO if _WHO.search(question) else None


def _kind_of_noun(noun: str, question: str, doers: tuple[str, ...] = _DOER) -> str | None:
    """The kind a question asking for ``noun`` (a stem) asks for, None when the tables do not say."""
    if noun in _KIND_OF:
        return _KIND_OF[noun]
    if noun in _WORKS:
        return WORK
    if (noun.endswith(doers) and len(noun) > 4 or noun in _PEOPLE) and not _WHO.search(question):
        return PERSON
    return None


def _what_phrase(question: str) -> list[str]:
    """Stems of the words after the question's first "what" / "which", up to a stop word or a comma."""
    m = _WHAT_PHRASE.search(question)
    out: list[str] = []
    for word in (m.group(1).split() if m else ()):
        bare = word.strip(",.")
        if not bare or bare[0].isdigit() or bare.lower() in _COUNTS:
            if out:
                break
            continue  # ("what 9,500 seat arena", "what two term Governor")
        if is_stop_word(bare) or not bare[0].isalpha():
            break
        out.append(stem(bare.lower()))
        if word.endswith(","):
            break
    return out


def misfit(kinds: Iterable[tuple[frozenset[str], str]], words: frozenset[str], question: str, head: Iterable[str],
           asked: Iterable[str]) -> bool:
    """Whether the answer's name ``words`` is of a kind ``question`` cannot ask for while another name
    of the context, sharing no word with it nor with the question's names (``asked``), is of the kind
    asked (module note)."""
    wanted = asked_kind(question, head)
    known = dict(kinds)
    # (a part of a longer name of the context is of its kind: "Group Ltd" of "Bet365 Group Ltd")
    mine = known[words] if words in known else _one({kind for key, kind in known.items() if words < key})
    if wanted is None or not mine or mine not in _NOT[wanted]:
        return False
    fits = _FITS.get(wanted, {wanted})
    taken = set(asked) | words
    # A name saying its own kind ("Douala International Airport" for "which airline") needs no other
    # name of the kind asked: the context may call the right one nothing.
    says_so = wanted not in (WHO, WHERE, PERSON) and any(_KIND_OF.get(stem(w)) == mine for w in words)
    return says_so or any(kind in fits and not key & taken for key, kind in known.items())
