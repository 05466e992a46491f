"""Names spelled out beside their initials: "the Centers for Disease Control and Prevention (CDC)".

An answer often spells out what its context abbreviates and writes the initials in brackets
after it. Where the initials are the spelled-out name's and the context states them, the name is
as supported as they are; :func:`supported_spellings` gives the answer's stretches so read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from truthlens.detector.facts.names import CONNECTORS, TOKEN, KnownNames, Name

# Initials in brackets after what they stand for: "(CDC)", "(NICs)".
_BRACKETED = re.compile(r"\((?P<acronym>[A-Z][A-Z&]{1,9})(?P<plural>s?)\)")
_EXPANSION_WORDS = 12  # words read back from the bracket


def spelled_out(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, initials)``: capitalised words (with connectors and "and" inside) right before
    bracketed initials that are theirs, read back from the bracket as far as the initials reach
    (connectors may give a letter or not: "Head of Household (HOH)", "Office of Fair Trading
    (OFT)"); a last "and ..." past the initials' end is part of the name ("Centers for Disease
    Control and Prevention (CDC)")."""
    out = []
    for m in _BRACKETED.finditer(text):
        letters = m.group("acronym").replace("&", "").lower()
        run: list[re.Match[str]] = []
        tokens = list(TOKEN.finditer(text, max(0, m.start() - 20 * _EXPANSION_WORDS), m.start()))
        end = m.start()
        for tok in reversed(tokens[-_EXPANSION_WORDS:]):
            word = tok.group(0)
            if text[tok.end():end].strip() not in ("", "&") or not (
                    _capitalised(word) or word.lower() in CONNECTORS or word.lower() in ("and", "for")):
                break
            run.insert(0, tok)
            end = tok.start()
        words = [t.group(0) for t in run]
        for first in range(len(words)):
            if _capitalised(words[first]) and _initials(letters, words[first:]):
                out.append((run[first].start(), run[-1].end(), m.group("acronym") + m.group("plural")))
                break
    return out


def _initials(letters: str, words: Sequence[str]) -> bool:
    """Whether ``letters`` are the initials of ``words``: every capitalised word gives the next
    letter, a lower-case one may; words left over after the last letter must open with "and"."""
    if not letters:
        return not words or words[0] == "and"
    if not words:
        return False
    word = words[0]
    gives = word[0].lower() == letters[0] and _initials(letters[1:], words[1:])
    return gives or (not _capitalised(word) and _initials(letters, words[1:]))


def _capitalised(word: str) -> bool:
    return word[0].isupper()


def supported_spellings(text: str, known: KnownNames) -> list[tuple[int, int]]:
    """The stretches of ``text`` that spell out bracketed initials the context (``known``) states."""
    out = []
    for start, end, acronym in spelled_out(text):
        word = acronym.lower()
        if known.supports(Name(0, len(acronym), (word,), word)):
            out.append((start, end))
    return out
