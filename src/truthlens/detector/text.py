"""How the detector reads plain text: sentences, clauses, words, stop words and word forms, in one place.

The fact check (:mod:`truthlens.detector.facts`) and the explanations (:mod:`.explain`) compare an
answer's words with the context's; they must agree on what a sentence, a clause and a word are,
or one rule's "same sentence" is another's two. Everything here is a regular expression or a
small word list (no language model), and works on character offsets so that a finding can point
at the answer's own characters.

- :func:`sentences`: sentence spans. A full stop ends a sentence unless it ends an abbreviation
  ("Dr.", "U.S.", "e.g.", an initial "J.") or sits inside a number ("3.5"); a line break always
  ends one; an inline numbered list ("1. Rome 2. Paris 3. Berlin" on one line) is one sentence
  per item, each without its marker.
- :func:`clauses`: sentence spans cut at ``;``, ``:``, commas before a new statement and the
  conjunctions that join two statements ("but", "while", "whereas", "although", "though",
  "yet").
- :func:`stem`: one form per word: lower case, possessive and plural dropped ("cities" →
  "city", "Australia's" → "australia"), verb endings dropped ("landed" → "land"), irregular past
  forms to their verb ("flew" → "fly").
- :func:`content_words`: the stems of the words that say something (no stop words, numbers or
  one- and two-letter words).
- :func:`is_negated`: whether a clause says "not" (``never``, ``no``, ``n't``, …; "not only" is
  no negation).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

WORD = re.compile(r"[^\W\d_][\w'’]*")

STOP_WORDS = frozenset(
    """a an the and or but nor of to in on at by for with from as is was are were be been being has have had
    do does did it its this that these those he she they them his her their we us our you your i me my who whom
    whose which what when where why how while whereas although though also not no so than then there here into
    onto over under about after before during between both each all any some such only own same other very can
    could will would may might shall should must just one two three according based passage passages provided
    context around approximately roughly nearly almost per more less""".split()
)
NEGATIONS = frozenset("not never no none nor neither nobody nothing cannot without".split())

# Past forms that share no stem with their verb: "flew" / "flown" must meet "fly" (and each other).
_IRREGULAR = {
    form: base
    for base, forms in {
        "fly": "flew flown flies", "lead": "led leads", "win": "won wins", "lose": "lost loses",
        "build": "built builds", "buy": "bought buys", "sell": "sold sells", "make": "made makes",
        "take": "took taken takes", "give": "gave given gives", "write": "wrote written writes",
        "drive": "drove driven drives", "ride": "rode ridden rides", "begin": "began begun begins",
        "become": "became becomes", "come": "came comes", "go": "went gone goes", "see": "saw seen sees",
        "hold": "held holds", "find": "found finds", "found": "founded founds", "teach": "taught teaches",
        "think": "thought thinks", "bring": "brought brings", "catch": "caught catches", "fight": "fought fights",
        "send": "sent sends", "spend": "spent spends", "leave": "left leaves", "meet": "met meets",
        "pay": "paid pays", "say": "said says", "tell": "told tells", "keep": "kept keeps", "sit": "sat sits",
        "stand": "stood stands", "run": "ran runs", "swim": "swam swum swims", "sing": "sang sung sings",
        "speak": "spoke spoken speaks", "steal": "stole stolen steals", "choose": "chose chosen chooses",
        "break": "broke broken breaks", "fall": "fell fallen falls", "grow": "grew grown grows",
        "know": "knew known knows", "throw": "threw thrown throws", "draw": "drew drawn draws",
        "shoot": "shot shoots", "strike": "struck strikes", "beat": "beaten beats", "bear": "bore born bears",
        "rise": "rose risen rises", "eat": "ate eaten eats", "hit": "hits", "wear": "wore worn wears",
    }.items()
    for form in forms.split()
}

# A full stop that ends no sentence: after a title, an abbreviation or an initial.
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st mt ft no vs etc inc ltd co corp dept gen gov sen rep col lt capt sgt jan feb "
    "mar apr jun jul aug sep sept oct nov dec approx est fig al".split()
)
_END = re.compile(r"[.!?]+[\"'’”)\]]*(?=\s+|$)|\n+")
# An inline list item's marker: "1." or "2)" after the start or a sentence end, before a word.
_LIST_MARKER = re.compile(r"(?:^|(?<=\s))\(?\d{1,2}[.)]\s+(?=\S)")
_CLAUSE_CUT = re.compile(
    r"\s*[;:]\s+|,\s+(?=(?:and|but|while|whereas|although|though|yet|so)\b)|\s+(?:but|while|whereas|although|"
    r"though|yet)\s+"
    # "founded in 1920 and moved to Boston in 1955": "and" before a verb starts a new statement.
    # Not in a list of participles ("co-written, co-produced and directed by").
    r"|(?<!ed)\s+and\s+(?=(?:then\s+|later\s+|also\s+)?(?:was|were|is|are|has|have|had|will|would|can|"
    r"[a-z]+ed\b(?!\s+by\b)))",
    re.IGNORECASE,
)


def sentences(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` character spans of the sentences of ``text``, spaces and list markers
    outside them."""
    out: list[tuple[int, int]] = []
    for piece_start, piece_end in _list_items(text):
        start = piece_start
        for m in _END.finditer(text, piece_start, piece_end):
            if m.group(0).startswith(".") and not _ends_sentence(text, m.start()):
                continue
            s, e = _trim(text, start, m.start() if m.group(0).startswith("\n") else m.end())
            if s < e:
                out.append((s, e))
            start = m.end()
        s, e = _trim(text, start, piece_end)
        if s < e:
            out.append((s, e))
    return out


def list_markers(text: str) -> list[tuple[int, int]]:
    """The spans of the markers of ``text``'s numbered lists, inline ("1. Rome 2. Paris") or one
    item a line: markers counting up by one from 1, at least two of them."""
    return [(m.start(), m.end()) for m in _markers(text)]


def _markers(text: str) -> list[re.Match[str]]:
    markers = list(_LIST_MARKER.finditer(text))
    runs: list[list[re.Match[str]]] = []
    for m in markers:
        n = int(re.sub(r"\D", "", m.group(0)))
        if runs and n == int(re.sub(r"\D", "", runs[-1][-1].group(0))) + 1:
            runs[-1].append(m)
        elif n == 1:
            runs.append([m])
    return [m for run in runs if len(run) >= 2 for m in run]


def _list_items(text: str) -> list[tuple[int, int]]:
    """``text`` cut before each list marker (:func:`list_markers`), the markers left out."""
    pieces, at = [], 0
    for m in _markers(text):
        pieces.append((at, m.start()))
        at = m.end()
    pieces.append((at, len(text)))
    return [(a, b) for a, b in pieces if text[a:b].strip()]


def _ends_sentence(text: str, dot: int) -> bool:
    before = re.search(r"(\w+)$", text[:dot])
    if before is None:
        return True
    word = before.group(1)
    if word.lower() in _ABBREVIATIONS or (len(word) == 1 and word.isalpha() and word.isupper()):
        return False  # "Dr. Smith", "J. K. Rowling", "U.S."
    return True


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


# Finer: every comma ends a clause (where a name's role is stated: "X, the pilot, stayed in orbit").
_FINE_CUT = re.compile(
    r"[;:]\s+|,\s+|\s+(?:while|whereas|but|although|though)\s+|"
    r"\s+and\s+(?=(?:is|was|are|were|has|had|have|will|can|did|does)\b)",
    re.IGNORECASE,
)


def clauses(text: str, *, fine: bool = False) -> list[tuple[int, int]]:
    """The ``(start, end)`` spans of the clauses of ``text``'s sentences; ``fine``: cut at every
    comma too (what an explanation quotes around one flagged word)."""
    out: list[tuple[int, int]] = []
    cut_at = _FINE_CUT if fine else _CLAUSE_CUT
    for s, e in sentences(text):
        at = s
        for cut in [*cut_at.finditer(text, s, e), None]:
            stop = cut.start() if cut is not None else e
            a, b = _trim(text, at, stop)
            if a < b:
                out.append((a, b))
            if cut is not None:
                at = cut.end()
    return out


def words(text: str, start: int = 0, end: int | None = None) -> Iterator[re.Match[str]]:
    """The words of ``text[start:end]`` (letters first; digits, apostrophes inside)."""
    return WORD.finditer(text, start, len(text) if end is None else end)


def stem(word: str) -> str:
    """One form per word: lower case, no possessive, no plural or verb ending, irregular past forms
    as their verb ("flew" → "fly", "cities" → "city", "landed" → "land")."""
    w = word.lower().replace("’", "'")
    w = w.removesuffix("'s").strip("'")
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s"):
        if len(w) > len(suffix) + 3 and w.endswith(suffix) and not w.endswith("ss"):
            w = w[: -len(suffix)]
            break
    # "office"/"offices", "love"/"loved", "run"/"running" meet in one form.
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiousl":
        w = w[:-1]
    return w


def content_words(text: str, start: int = 0, end: int | None = None) -> set[str]:
    """The stems of ``text[start:end]``'s content words (no stop words, no numbers, three letters
    or more)."""
    out = set()
    for m in words(text, start, end):
        w = m.group(0).lower()
        if len(w) > 2 and w not in STOP_WORDS and w not in NEGATIONS and not w.endswith("n't"):
            out.add(stem(w))
    return out


def is_negated(text: str) -> bool:
    """Whether ``text`` says "not" ("never", "no", "n't", …; "not only" is no negation)."""
    found = [m.group(0).lower().replace("’", "'") for m in WORD.finditer(text)]
    for i, w in enumerate(found):
        if w.endswith("n't") or (w in NEGATIONS and not (w == "not" and found[i + 1 : i + 2] == ["only"])):
            return True
    return False
