"""What a question asks for: its focus (the role or attribute asked), its head (the one word naming
the kind of thing asked), titles and their abbreviations read as one, and the shapes that make a
focus unreadable (two questions joined) or a choice (options named).

"Who is the CFO?" asks for "chief financial"; "which top Italian fighter ace flew ..." for an
"ace"; "Who directed ..." for "directed"; "... owned and operated by whom?" for "owned operated".
:mod:`.focus` judges a short answer by what the context says of that focus; :mod:`.name_kinds`
reads the kind of thing the head asks for.

1. the focus is read from the question's shape: the words after "who is the" / "which" /
   "what" (up to a stop word, at most :data:`FOCUS_WORDS`), the verb phrase after "who" ("Who
   directed"), or the words before a closing "by whom?" / "where?";
2. titles and their abbreviations are one: "CEO" = "chief executive", "Dr" = "doctor", "VP" =
   "vice president", and any run of words whose initials the context uses ("NCPO") (table
   :data:`TITLES`; the context's initials are passed in as ``spelled``).
"""

from __future__ import annotations

import re

from truthlens.detector.facts.names import find_names
from truthlens.detector.text import STOP_WORDS, WORD, stem

# Titles and the words they stand for (a generic "officer" left out: "chief executive" is the
# CEO). The context's own initials are added per context.
TITLES: dict[str, str] = {
    "ceo": "chief executive", "cfo": "chief financial", "coo": "chief operating", "cto": "chief technology",
    "cio": "chief information", "cmo": "chief marketing", "cso": "chief security", "cpo": "chief product",
    "vp": "vice president", "svp": "senior vice president", "evp": "executive vice president",
    "pm": "prime minister", "gm": "general manager", "mp": "member parliament", "ag": "attorney general",
    "md": "managing director", "ed": "executive director", "da": "district attorney", "dr": "doctor",
    "prof": "professor", "gen": "general", "sen": "senator", "rep": "representative", "gov": "governor",
    "lt": "lieutenant", "col": "colonel", "capt": "captain", "cpt": "captain", "sgt": "sergeant",
    "supt": "superintendent", "pres": "president", "sec": "secretary", "secy": "secretary", "adm": "admiral",
    "maj": "major", "chairman": "chair", "chairwoman": "chair", "chairperson": "chair", "cos": "chief staff",
    "sg": "secretary general", "ambassador": "ambassador", "amb": "ambassador", "atty": "attorney",
    "asst": "assistant", "dir": "director", "mgr": "manager", "pr": "public relations",
}
TITLE_STEMS = frozenset(stem(w) for t in TITLES.values() for w in t.split())  # a focus that is a title
_WHO_IS = re.compile(r"^\s*(?:who|what|which)\s+(?:is|was|are|were|has\s+been|had\s+been)\s+(?:the\s+|a\s+|an\s+)?"
                     r"(?P<focus>.+?)\s*\??\s*$", re.IGNORECASE)
_WHICH = re.compile(r"\b(?:which|what)\s+(?:of\s+the\s+|one\s+of\s+the\s+)?(?P<focus>[^?]+)", re.IGNORECASE)
# A second question joined on ("Who designed it and where is it?"; ", who" is as often a relative clause).
SECOND_ASK = re.compile(r"\b(?:and|or)\s+(?:who|whom|what|where|when|how)\b", re.IGNORECASE)
_WHO_VERB = re.compile(r"^\s*who\s+(?P<focus>[^?]+)", re.IGNORECASE)
_BY_WHOM = re.compile(r"(?P<focus>[^?]+?)\s+(?:by\s+whom|by\s+who|where|when)\s*\??\s*$", re.IGNORECASE)
# A choice closing the question: "..., Pablo Trapero or Aleksander Ford?" (the last option names something).
# Or one opening it: "Between the two American bands The Gaslight Anthem and Squirrel Nut Zippers, which ...?"
CHOICE = re.compile(r"\bor\s+(?P<b>(?:the\s+)?[A-Z\"“'][^?]{0,80}?)\s*\?\s*$"
                    r"|^\s*(?:[Bb]etween|[Oo]f)\s+[^,?]*?[A-Z][^,?]*\s+and\s+(?:the\s+)?[A-Z\"“'][^,?]*,\s*(?:[Ww]hich|[Ww]ho|[Ww]hat)\b")
# A yes/no question ("Is Mourinho afraid ...?", "Did the board approve it?"): it asks for no name.
YES_NO = re.compile(r"^\s*(?:is|are|was|were|do|does|did|has|have|had|can|could|will|would|should|may|might|must)\b",
                    re.IGNORECASE)
_DETERMINERS = frozenset("the a an his her its their this these that those".split())
FOCUS_WORDS = 4
SKIP = STOP_WORDS | {"name", "called", "known", "person", "people", "one", "did", "does", "do"}


def title_stems(text: str, spelled: dict[str, frozenset[str]]) -> set[str]:
    """The stems of ``text``'s words, a title or the context's initials read as the words they
    stand for ("CFO": chief, financial; "5 PM" is a time, not a prime minister)."""
    out: set[str] = set()
    for m in WORD.finditer(text):
        w = m.group(0).lower().strip("'’").removesuffix("'s").removesuffix("’s")
        after_number = text[:m.start()].rstrip()[-1:].isdigit()
        if w in TITLES and not after_number:
            out |= {stem(t) for t in TITLES[w].split()}
        elif w in spelled and m.group(0).isupper() and not after_number:
            out |= spelled[w]
        elif w not in SKIP and len(w) > 1:
            out.add(stem(w))
    return out


def question_focus(question: str, spelled: dict[str, frozenset[str]]) -> frozenset[str]:
    """The stems of what ``question`` asks for (steps 1 and 2), empty when its shape is not read."""
    _, picked = _asked(question)
    return frozenset(title_stems(" ".join(picked), spelled)) if picked else frozenset()


def question_head(question: str, spelled: dict[str, frozenset[str]]) -> frozenset[str]:
    """The stems of the one word of the focus that names the kind of thing asked for: the last word
    of the noun phrase after "which" / "what" ("which top Italian fighter ace": "ace"; "what
    southern California based band covered ...": "band", the phrase ending before a word in -ed,
    -ing or -en or "born" that a name, a function word or the end follows, or that a determiner
    follows: "... ace flew the plane"), or the verb of "who directed ..."
    and "... directed by whom?"."""
    pattern, picked = _asked(question)
    if not picked:
        return frozenset()
    if pattern is _BY_WHOM:
        return frozenset(title_stems(picked[-1], spelled))
    if pattern is _WHO_VERB:
        return frozenset(title_stems(picked[0], spelled))
    m = _WHICH.search(question)
    phrase = m.group("focus") if m and pattern is _WHICH else " ".join(picked)
    words = list(re.finditer(r"[\w'’-]+|[^\w\s]", phrase))
    head = ""
    for i, w in enumerate(words):
        text = w.group(0)
        lower = text.lower()
        nxt = words[i + 1].group(0) if i + 1 < len(words) else ""
        if text == "," and head and nxt[:1].islower() and nxt not in SKIP:
            continue  # adjectives listed: "what private, coeducational liberal arts college"
        if not text[0].isalnum() or (lower in SKIP and head and not lower.endswith(("ed", "ing"))):
            break
        participle = lower.endswith(("ed", "ing", "en")) or lower == "born"
        ends = not nxt or nxt[0].isupper() or nxt.lower() in SKIP or not nxt[0].isalnum()
        if head and ((participle and ends) or nxt.lower() in _DETERMINERS):
            break  # a verb: "... band covered Blue Oyster Cult's", "... ace flew the plane"
        if lower not in SKIP and not text[0].isupper():
            head = text
    return frozenset(title_stems(head, spelled)) if head else frozenset(title_stems(picked[-1], spelled))


def _asked(question: str) -> tuple[re.Pattern[str] | None, list[str]]:
    """The question shape read (step 1) and the words it asks for, in order."""
    q = question.strip()
    # ("Who directed the film which ...": the "which" opens a relative clause, the verb is asked)
    for pattern in (_WHO_IS, _BY_WHOM, _WHO_VERB, _WHICH):
        m = pattern.search(q)
        if m is None:
            continue
        picked: list[str] = []
        # The question's own names are what it asks about, not the role it asks for ("Which movie
        # starring Kim Roi-ha"), with the small words inside them ("de la Cueva"); a title it
        # abbreviates is the role ("Who is the ED?").
        inside = [(n.start, n.end) for n in find_names(q, frozenset(), skip_sentence_starts=True)
                  if not set(n.words) <= TITLES.keys()]
        for word in WORD.finditer(q, m.start("focus"), m.end("focus")):
            w = word.group(0)
            if any(a <= word.start() < b for a, b in inside):
                continue
            if w.lower() in SKIP or w.lower() in ("who", "whom", "what", "which", "where", "when"):
                if picked and pattern in (_WHO_IS, _WHICH):
                    break  # (the noun phrase asked for ends; a verb phrase goes on: "stayed in lunar orbit")
                continue
            picked.append(w)
        if pattern is _BY_WHOM:
            picked = picked[-FOCUS_WORDS + 1:]
        picked = picked[:FOCUS_WORDS]
        if picked:
            return pattern, picked
    return None, []
