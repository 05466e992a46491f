"""Numbers an answer writes that state no fact to look up in the context.

A number may point into the prompt or the answer's own list ("Passage 2", "steps 7 and 8"),
measure the reply ("in 63 words"), give the size of the set a question compares ("the larger of
the two"), the scale of a star rating ("3.5 out of 5 stars"), or count the answer's own mentions
("One reviewer ... Another reviewer ... A third reviewer"). :mod:`.numbers` reads such a number
but does not check it. Each test takes the text and the number's ``start``/``end``.
"""

from __future__ import annotations

import re

from truthlens.detector.text import WORD, stem

# A number right after these points into the prompt or the answer's own list ("Passage 2",
# "steps 7 and 8"), and one before "words" measures the reply ("in 63 words"): not facts.
_REFERENCE_BEFORE = re.compile(
    r"\b(?:passages?|steps?|documents?|paragraphs?)\s*#?\s*(?:\d+\s*(?:,|and|&|or|to|-)\s*)*$", re.IGNORECASE
)
_REPLY_LENGTH_AFTER = re.compile(r"\s*-?\s*words?\b", re.IGNORECASE)
# "the larger of the two", "between the three": the size of the set the question compares.
_SET_BEFORE = re.compile(r"\b(?:of|between|among)\s+(?:the|these|those|them)?\s*$", re.IGNORECASE)
_SET_AFTER = re.compile(r"\s*(?:[.,;:!?)]|$)")


def set_size(text: str, start: int, end: int) -> bool:
    return _SET_BEFORE.search(text, max(0, start - 24), start) is not None and _SET_AFTER.match(text, end) is not None


# The scale of a star rating, "3.5 out of 5 stars", "3.5 stars out of 5": a convention of the
# rating, no fact of the thing rated ("7 out of 10 jurors" is checked).
_STARS_OUT_OF = re.compile(r"\bstars?\s+out\s+of\s+\Z", re.IGNORECASE)
_OUT_OF = re.compile(r"\bout\s+of\s+\Z", re.IGNORECASE)
_STARS_AFTER = re.compile(r"\s*-?\s*stars?\b", re.IGNORECASE)
# "A third reviewer": an ordinal after "a" and before a noun the answer has already used counts the
# answer's own mentions ("One reviewer ... Another reviewer ... A third reviewer").
_INDEFINITE_BEFORE = re.compile(r"\ban?\s+\Z", re.IGNORECASE)
_NEXT_WORD = re.compile(r"\s+([^\W\d_]+)")


def rating_scale(text: str, start: int, end: int) -> bool:
    before = max(0, start - 24)
    return (_STARS_OUT_OF.search(text, before, start) is not None
            or (_OUT_OF.search(text, before, start) is not None and _STARS_AFTER.match(text, end) is not None))


def own_count(text: str, start: int, end: int) -> bool:
    if _INDEFINITE_BEFORE.search(text, max(0, start - 4), start) is None:
        return False
    noun = _NEXT_WORD.match(text, end)
    return noun is not None and stem(noun.group(1)) in {stem(w) for w in WORD.findall(text, 0, start)}


def points_elsewhere(text: str, start: int, end: int) -> bool:
    return (_REFERENCE_BEFORE.search(text, max(0, start - 48), start) is not None
            or _REPLY_LENGTH_AFTER.match(text, end) is not None)
