"""What an answer's sentence says its numbers are about (:class:`Claim`: the sentence's content
words and names), the words a context sentence shares with it (:func:`topic_words`), and the
character ranges a long context's values take (:class:`Ranges`). The number checks of
:mod:`~truthlens.detector.facts.numbers` accept an approximate value only for a context number
that speaks of the same thing."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Protocol

from truthlens.detector.text import STOP_WORDS, stem


class _Located(Protocol):
    """A value found in a text: where it starts and ends."""

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


_TOPIC_WORD = re.compile(r"[^\W\d_]{3,}")
_TOPIC_STOP = STOP_WORDS | {"over", "under"}
SENTENCE_END = re.compile(r"[.!?]\s+|\n+")


@dataclass(frozen=True, slots=True)
class Claim:
    """What an answer's sentence says a number of it is about: its :func:`topic_words` and, of
    those, the names (words it capitalises past the sentence's first)."""

    words: frozenset[str]
    names: frozenset[str]

    @staticmethod
    def around(text: str, q: _Located) -> Claim:
        """The claim of the sentence (or line) of ``text`` holding ``q``, its own words left out."""
        first = max((m.end() for m in SENTENCE_END.finditer(text, 0, q.start)), default=0)
        after = SENTENCE_END.search(text, q.end)
        sentence = text[first : after.start() if after else len(text)]
        own = topic_words(text[q.start : q.end])
        capitalised = " ".join(m.group(0) for m in _TOPIC_WORD.finditer(sentence)
                               if m.group(0)[0].isupper() and m.start() > 0)
        return Claim(topic_words(sentence) - own, topic_words(capitalised) - own)


def topic_words(text: str) -> frozenset[str]:
    """The content words of ``text`` that say what its numbers are about (plural "s" dropped)."""
    out = set()
    for m in _TOPIC_WORD.finditer(text.lower()):
        w = m.group(0)
        if w not in _TOPIC_STOP:
            out.add(stem(w))
    return frozenset(out)


class Ranges:
    """Non-overlapping character ranges, for overlap look-ups in O(log n) on long contexts."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []

    def add(self, start: int, end: int) -> None:
        i = bisect.bisect_left(self._starts, start)
        self._starts.insert(i, start)
        self._ends.insert(i, end)

    def overlaps(self, start: int, end: int) -> bool:
        # Sorted, non-overlapping: only the last range starting before ``end`` can overlap.
        i = bisect.bisect_left(self._starts, end) - 1
        return i >= 0 and self._ends[i] > start


