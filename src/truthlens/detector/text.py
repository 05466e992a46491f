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
from functools import lru_cache

WORD = re.compile(r"[^\W\d_][\w'’]*")

STOP_WORDS = frozenset(
    """a an the and or but nor of to in on at by for with from as is was are were be been being has have had
    do does did it its this that these those he she they them his her their we us our you your i me my who whom
    whose which what when where why how while whereas although though also not no so than then there here into
    onto over under about after before during between both each all any some such only own same other very can
    could will would may might shall should must just one two three according based passage passages provided
    context around approximately roughly nearly almost per more less""".split()
)
# The stop words and the rarer pronoun and auxiliary forms, for reading what a request names
# (:func:`terms`). The fact check's content words keep the list above, the one its rules were
# measured with (with these too, the roles check read one more name as misattributed on the dev parts).
FUNCTION_WORDS = STOP_WORDS | frozenset(
    "am if him himself herself itself themselves myself yourself ours yours hers theirs mine doing having done let"
    .split()
)
# What follows the apostrophe of a contraction whose head is a stop word ("I'll", "you've",
# "they're", "it's", "I'd", "I'm"; "don't" and the other "n't" forms are negations).
_CONTRACTION_TAILS = frozenset("ll ve re s d m".split())
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
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

# Lower-case words that end with a full stop without ending a sentence (compared without it): titles,
# abbreviations, months. Dotted ones ("u.s", "e.g", "a.m") and initials need no entry (:func:`_owns_full_stop`).
ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st mt ft vs etc cf al approx est inc ltd co corp dept univ gen gov sen rep col
    lt capt sgt jan feb mar apr jun jul aug sep sept oct nov dec ph.d b.sc m.sc""".split()
)
# Abbreviations only before a number ("No. 5", "Vol. 2", "p. 14", "ca. 1500"); elsewhere the
# word ends a sentence like any other ("The answer is no. It ...", "Santa Barbara, CA. The ...").
NUMBER_ABBREVIATIONS = frozenset("no nos vol vols p pp fig figs eq eqs ch sec op art ca".split())
TERMINATORS = ".!?…"
CJK_TERMINATORS = "。！？"  # end a sentence where they stand (CJK text puts no space after them)
CLOSERS = "\"'”’)]*_"  # closing quotes, brackets and markdown emphasis after a stop belong to its sentence
UNDECIDED = -1  # :func:`sentence_end` on a text still growing: the characters that decide are not here yet
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
_STOP = re.compile(r"[.!?…]+|[。！？]|\n+")


def sentence_end(
    text: str, stop: int, start: int = 0, *, limit: int | None = None, final: bool = True, cautious: bool = False
) -> int | None:
    """Whether the terminator at ``text[stop]`` (in the sentence that began at ``start``) ends a
    sentence: the sentence's end (after its closing quotes and brackets), None when it does not,
    :data:`UNDECIDED` when ``final`` is false (``text`` is a stream's text so far) and the
    characters that tell have not arrived. ``limit``: where the text (a list item, a line) ends.
    ``cautious``: no lower-case word opens a sentence (a stream, where a cut too early is final).

    A stop ends a sentence when white space follows it, then no lower-case word that continues it
    (:func:`_goes_on`: "Married... with Children", "\"Who won?\" she asked", "3 oz. cups"), and
    a full stop does not end the word before it: an abbreviation ("Dr.", "Inc.", "No. 5"),
    dotted letters ("U.S.", "e.g.", "a.m."), an initial ("J. K. Rowling"), a list item's number
    ("1." opening a line, a sentence or a list after a colon; "2." of "1. Rome 2. Paris").
    "3.14", "example.com" and "e.g.," have no space after the stop."""
    n = len(text) if limit is None else limit
    if text[stop] in CJK_TERMINATORS:
        return stop + 1
    j = stop + 1
    while j < n and text[j] in TERMINATORS + CLOSERS:
        j += 1
    if j >= n:
        return j if final or limit is not None else UNDECIDED
    if not text[j].isspace():
        return None
    k = j
    while k < n and text[k] in " \t":
        k += 1
    if k >= n:
        return j if final or limit is not None else UNDECIDED
    following = text[k]
    if (following.islower() and _goes_on(text, start, stop, j, cautious)) or (
            text[stop] == "." and _owns_full_stop(text, start, stop, following)):
        return None
    return j


def _goes_on(text: str, start: int, stop: int, after: int, cautious: bool) -> bool:
    """Whether a lower-case word after the stop at ``text[stop]`` (its closers end at ``after``)
    continues the sentence: after an ellipsis ("Married... with Children"), a quoted "?" or "!"
    ("\"Who won?\" she asked") and a short word's full stop (an unlisted abbreviation: "3 oz.
    cups"). After any other word it opens a sentence written without its capital ("the food was
    great. the staff ..."; "Hi! when ..."), unless ``cautious``: then any lower-case word goes on."""
    if cautious or text[stop] == "…" or text.startswith("..", stop) or text[stop - 1:stop + 1] == ".." \
            or text[after - 1] in CLOSERS:
        return True
    if text[stop] != ".":
        return False
    word_start = stop
    while word_start > start and text[word_start - 1].isalpha():
        word_start -= 1
    return 0 < stop - word_start <= 2


def _owns_full_stop(text: str, start: int, dot: int, following: str) -> bool:
    """The full stop at ``text[dot]`` belongs to the word before it (:func:`sentence_end`)."""
    word_start = dot
    while word_start > start and not text[word_start - 1].isspace() and text[word_start - 1] not in "([\"'“‘":
        word_start -= 1
    bare = text[word_start:dot].lower().strip("*_")
    if not bare:
        return False
    if bare in ABBREVIATIONS or (bare in NUMBER_ABBREVIATIONS and following.isdigit()):
        return True
    if all(len(part) == 1 and part.isalpha() for part in bare.split(".")):
        return True  # an initial ("J. Smith") or dotted letters ("U.S.", "e.g.", "a.m.")
    if bare.isdigit() and len(bare) <= 3:  # a list item's number
        line_start = text.rfind("\n", 0, word_start) + 1
        before = text[max(start, line_start):word_start].rstrip()
        if not before or before.endswith(":"):
            return True  # "1." opening a line, a sentence or a list ("The steps: 1. Mix ...")
        previous = re.compile(rf"(?<!\S)\(?{int(bare) - 1}[.)]\s")
        return int(bare) > 1 and previous.search(text, line_start, word_start) is not None
    return False


def sentences(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` character spans of the sentences of ``text``, spaces and list markers
    outside them: cut where :func:`sentence_end` says, at every line break and before each marker
    of a numbered list (:func:`list_markers`)."""
    out: list[tuple[int, int]] = []
    for piece_start, piece_end in _list_items(text):
        start = piece_start
        for m in _STOP.finditer(text, piece_start, piece_end):
            if m.start() < start:
                continue  # closers or terminators already read into the last sentence
            if m.group(0)[0] == "\n":
                end, after = m.start(), m.end()
            else:
                found = sentence_end(text, m.start(), start, limit=piece_end)
                if found is None:
                    continue
                end = after = found
            s, e = _trim(text, start, end)
            if s < e:
                out.append((s, e))
            start = after
        s, e = _trim(text, start, piece_end)
        if s < e:
            out.append((s, e))
    return out


def sentence_starts(text: str) -> list[int]:
    """Where each sentence of ``text`` (:func:`sentences`) begins, a list item's marker with the
    sentence after it; 0 first, whatever ``text`` opens with."""
    starts = [s for s, _ in sentences(text)]
    for marker_start, marker_end in list_markers(text):
        starts = [marker_start if s >= marker_end and not text[marker_end:s].strip() else s for s in starts]
    return sorted({0, *(s for s in starts if 0 < s < len(text))})


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


@lru_cache(maxsize=1 << 16)  # a context repeats its words; stems are asked for per word
def stem(word: str) -> str:
    """One form per word: lower case, no possessive, no plural or verb ending, irregular past forms
    as their verb ("flew" → "fly", "cities" → "city", "landed" → "land")."""
    w = word.lower().replace("’", "'")
    w = w.removesuffix("'s").strip("'")
    if w in _IRREGULAR:  # its verb, then cut as the verb itself is ("wrote" and "write" meet)
        w = _IRREGULAR[w]
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


def is_stop_word(word: str, stop_words: frozenset[str] = STOP_WORDS) -> bool:
    """Whether ``word`` (lower case) says nothing of its own: one of ``stop_words``, a negation
    word, a negated auxiliary ("don't") or a stop word's contraction ("I'll", "they're")."""
    w = word.replace("’", "'")
    if w in stop_words or w in NEGATIONS or w.endswith("n't"):
        return True
    head, apostrophe, tail = w.partition("'")
    return bool(apostrophe) and head in stop_words and tail in _CONTRACTION_TAILS


def content_words(text: str, start: int = 0, end: int | None = None) -> set[str]:
    """The stems of ``text[start:end]``'s content words (no stop words, no numbers, three letters
    or more)."""
    out = set()
    for m in words(text, start, end):
        w = m.group(0).lower()
        if len(w) > 2 and not is_stop_word(w):
            out.add(stem(w))
    return out


def terms(text: str) -> set[str]:
    """:func:`content_words` of two letters or more (no :data:`FUNCTION_WORDS`), and the numbers,
    without their thousands separators ("4,120" → "4120"): what a request or a passage names."""
    out = {m.group(0).replace(",", "") for m in NUMBER.finditer(text)}
    for m in words(text):
        w = m.group(0).lower()
        if len(w) > 1 and not is_stop_word(w, FUNCTION_WORDS):
            out.add(stem(w))
    return out


def is_negated(text: str) -> bool:
    """Whether ``text`` says "not" ("never", "no", "n't", …; "not only" is no negation)."""
    found = [m.group(0).lower().replace("’", "'") for m in WORD.finditer(text)]
    for i, w in enumerate(found):
        if w.endswith("n't") or (w in NEGATIONS and not (w == "not" and found[i + 1 : i + 2] == ["only"])):
            return True
    return False
