"""What a context calls each of its names: the words a short answer's type is judged by.

"What southern California based band covered Godzilla?" asks for a band; an answer naming
someone the context calls "a Canadian singer" names the wrong kind of thing, whatever sentence
it shares with the question's words. A reader knows what the context calls each name from how it
writes it; :func:`descriptions` reads the same, by rule, for every name of the context:

- the name's own last word ("Ulster County", "Southern Methodist University", "Travel Channel"),
  marked :data:`OWN` (a name the context says nothing else of has no known type);
- a copula after it: "Lindenhurst is a village in Suffolk County" (the words after "is a" up to
  the first function word or punctuation: "village"), through a bracket between ("Robert
  Sheehan (born 1988) is an Irish actor");
- an apposition after it: "Fighting Gravity, an American band,";
- the lower-case words right before it: "the band Hole", "directed by John Carney", "poet
  Langston Hughes", and for a list those before its first item ("starring Denzel Washington,
  John Lithgow and Lindsay Wagner": "starring" for each; "artists such as Lee DeWyze, Katelyn
  Tarver": "artists" for each);
- "(born ...)" after it marks a person;
- a sentence opening on what its pronoun is ("A naval communications officer, he ...") describes
  the name the sentence before it opens on.

The words are stems (:func:`truthlens.detector.text.stem`), compared with the stems of what the
question asks for (:func:`.questions.question_focus`). No dictionary of types: a question asking for
a "singer" is met by a name the context calls "an American singer-songwriter" and by nothing
it calls otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from truthlens.detector.facts.names import Name
from truthlens.detector.text import STOP_WORDS, stem

PERSON = "#person"  # the mark of a name written with "(born ...)" after it
OWN = "="  # the mark of a name's own last word ("=county" for "Ulster County"): what it says of itself
# "is a", "was an", "are the", "is one of the" after the name, a closing quote and a bracket before it allowed.
_COPULA = re.compile(r"[\"”'’]?\s*(?:\([^()]*\)\s*)?,?\s*(?:is|was|are|were)\s+(?:also\s+|now\s+|still\s+)?"
                     r"(?:a|an|the|one\s+of\s+the)\s+(?P<d>[^.;:()\"]{1,80})", re.IGNORECASE)
_APPOSITION = re.compile(r"[\"”'’]?\s*,\s+(?:a|an|the)\s+(?P<d>[^,.;:()\"]{1,60})[,.;)]", re.IGNORECASE)
_BORN = re.compile(r"\s*\((?:[^()]*;\s*)?(?:born|née|nee|b\.)\s|\s*\([^()]*\b1\d{3}\s*[-–]\s*(?:\d|[a-z]+\s+\d)",
                   re.IGNORECASE)
# A sentence going on about a person: "He ...", "Her ..." right after the sentence that names them.
_PRONOUN_NEXT = re.compile(r"[^.!?]{0,400}?[.!?]\s*(?:He|She|His|Her)\b")
# Up to three lower-case words right before a name ("the band", "directed by", "poet"), a comma
# or an opening quote between allowed ("Award winner, Bob Stoops"; 'the 1987 album "The Joshua Tree"').
_BEFORE = re.compile(r"((?:\b[a-z][\w'/-]*\s+){0,2}\b[a-z][\w'/-]*)(?:,?\s+[\"“']?|\s*[\"“'])$")
# "such as", "including", "like": a list head's noun is written before these ("artists such as").
_LIST_INTRO = frozenset({"such", "as", "including", "like", "namely", "among", "them"})
_DETERMINERS = frozenset({"the", "a", "an"})
_AGENT = frozenset({"by"})  # "directed by": the role of the name after it
_LIST_GAP = re.compile(r"\s*(?:,\s*(?:and\s+|or\s+)?|and\s+|or\s+|&\s*)")
# A sentence opening on what its pronoun subject is: "A naval communications officer, he ...".
_PRONOUN_APPOSITION = re.compile(r"(?:^|(?<=[.!?]\s))\s*(?:A|An|The)\s+(?P<d>[^,.;:()\"]{1,60}),\s+"
                                 r"(?:he|she|they|it)\b")
_DESCRIPTION_WORDS = 8
_SPLIT = re.compile(r"[\w'’-]+")


_NICKNAME_GAP = re.compile(r"\s*[\"“”]\s*")
_POST_NOMINAL = re.compile(r",?\s*[A-Z]{2,4}\b")  # "Michael Levitt FRS", "Georg Solti, KBE"
# A capitalised word right before a lower-case noun modifies it ("a Spanish striker", "French erotic film").
_MODIFIES = re.compile(r"\s+[a-z][\w-]*")


def whole_names(text: str, names: Iterable[Name]) -> list[Name]:
    """``names`` of ``text`` with a quoted nickname joined to the name around it ('John "Jack"
    Roland Redman' is one person, not three names) and letters after a name joined to it ("Michael
    Levitt, FRS")."""
    out: list[Name] = []
    for n in sorted(names, key=lambda n: n.start):
        if out and (_NICKNAME_GAP.fullmatch(text, out[-1].end, n.start)
                    or _POST_NOMINAL.fullmatch(text, out[-1].end, n.end)):
            last = out.pop()
            n = Name(last.start, n.end, last.words + n.words, f"{last.phrase} {n.phrase}")
        out.append(n)
    return out


def descriptions(text: str, names: Iterable[Name]) -> dict[frozenset[str], frozenset[str]]:
    """Per name of ``text`` (its words), the stems ``text`` calls it by (module note)."""
    found = whole_names(text, names)
    out: dict[frozenset[str], set[str]] = {}
    before_of: list[set[str]] = []
    for i, n in enumerate(found):
        if len(n.words) == 1 and (m := _MODIFIES.match(text, n.end)) and m.group(0).strip() not in STOP_WORDS:
            before_of.append(set())
            continue  # (an adjective, not a name)
        said = out.setdefault(frozenset(n.words), set())
        if len(n.words) > 1 and not n.words[-1].endswith("s"):  # ("United States" is no state)
            said.add(OWN + stem(n.words[-1]))
        for pattern in (_COPULA, _APPOSITION):
            if m := pattern.match(text, n.end):
                said |= _leading_words(m.group("d"))
        if _BORN.match(text, n.end) or (_starts(text, n.start) and _PRONOUN_NEXT.match(text, n.end)):
            said.add(PERSON)
        before = _before(text, n.start)
        # An item of a list ("starring A, B and C") shares what is written before the list's first item.
        if i and not before and _LIST_GAP.fullmatch(text, found[i - 1].end, n.start):
            before = before_of[i - 1]
        before_of.append(before)
        said |= before
    for m in _PRONOUN_APPOSITION.finditer(text):
        # (it speaks of the name the sentence before opens on)
        subjects = [n for n in found if n.start < m.start() and _starts(text, n.start)]
        if subjects:
            out.setdefault(frozenset(subjects[-1].words), set()).update(_leading_words(m.group("d")))
    return {k: frozenset(v) for k, v in out.items()}


def root(word_stem: str) -> str:
    """A stem without the ending of its doer or deed: "director" and "directed" are one role, as are
    "writer" / "written", "founder" / "founded", "actor" / "actress" / "acted"."""
    for end in ("ress", "or", "er", "ed", "ion", "e"):
        if word_stem.endswith(end) and len(word_stem) - len(end) >= (3 if end in ("or", "ed", "ress") else 4):
            return word_stem[: -len(end)]
    return word_stem


def _starts(text: str, start: int) -> bool:
    """Whether a sentence starts at ``start`` (the name is what it is about)."""
    before = text[:start].rstrip()
    return not before or before[-1] in ".!?"


def _before(text: str, start: int) -> set[str]:
    """Stems of the lower-case content words right before ``start`` ("the band", "directed by",
    "artists such as"), back to the first other function word ("a party in India": none)."""
    m = _BEFORE.search(text, max(0, start - 60), start)
    if m is None or m.end() != start:
        return set()
    words = [w.lower() for w in _SPLIT.findall(m.group(1))]
    while words and words[-1] in _DETERMINERS:
        words.pop()
    kept: list[str] = []
    for w in reversed(words):
        if w in STOP_WORDS and not (w in _AGENT or (w in _LIST_INTRO and set(kept) <= _LIST_INTRO)):
            break
        kept.append(w)
    return {stem(p) for w in kept if w not in STOP_WORDS and w not in _LIST_INTRO for p in w.split("/") if p}


def _leading_words(description: str) -> set[str]:
    """Stems of a description's words up to its first function word but "and" ("American band",
    not "from ..."; "German inventor, physicist and Nobel laureate")."""
    out: set[str] = set()
    for w in _SPLIT.findall(description)[:_DESCRIPTION_WORDS]:
        w = w.lower()
        if w in STOP_WORDS and w not in ("and", "or"):
            break
        out |= {stem(p) for part in w.split("/") for p in part.split("-") if p and not p.isdigit()}
    return out
