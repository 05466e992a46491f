"""Word-level helpers shared by the real-text corpus builders: words with offsets, stems, novelty.

"Novel" means a content word of the answer whose stem appears nowhere in the evidence
(passages + question). HaluEval labels whole answers; novelty is how this recipe turns a
whole-answer label into character spans: the words a reader could not find in the evidence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’.\-]*[A-Za-z0-9]|[A-Za-z0-9]")
# Sentence ends, including HaluEval's glued paragraphs ("...century.First for Women").
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"”’)]?\s+(?=[\"“(A-Z0-9])|(?<=[a-z0-9][.!?])(?=[A-Z][a-z])")

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having he
    her here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not
    now of off on once only or other our ours out over own same she should so some such than that the their theirs
    them themselves then there these they this those through to too under until up very was we were what when
    where which while who whom why will with would you your yours yes yeah well one ones many much may might must
    shall us okay oh sure like really think know get got go going make made said says say""".split()
)


@dataclass(frozen=True, slots=True)
class Word:
    text: str
    start: int
    end: int

    @property
    def stem(self) -> str:
        return stem(self.text)


def words(text: str) -> list[Word]:
    return [Word(m.group(0), m.start(), m.end()) for m in _WORD.finditer(text)]


def stem(word: str) -> str:
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    w = w.strip(".'-")
    if w.isdigit() or len(w) <= 4:
        return w
    for suffix in ("ing", "ed", "es", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            return w[: -len(suffix)]
    return w


def vocabulary(texts: Iterable[str]) -> frozenset[str]:
    return frozenset(w.stem for t in texts for w in words(t))


def is_content(word: Word) -> bool:
    return word.text.lower() not in STOPWORDS and word.stem not in STOPWORDS


def novel_spans(answer: str, evidence: Iterable[str], *, max_gap_words: int = 2) -> list[tuple[int, int]]:
    """Character spans of the answer's content words missing from the evidence; novel words
    separated by at most ``max_gap_words`` other words form one span."""
    vocab = vocabulary(evidence)
    ws = words(answer)
    return runs(ws, [i for i, w in enumerate(ws) if is_content(w) and w.stem not in vocab], max_gap_words)


def runs(ws: list[Word], flagged: list[int], max_gap_words: int) -> list[tuple[int, int]]:
    """Character spans of the flagged words (indices into ``ws``, ascending); words separated
    by at most ``max_gap_words`` unflagged ones form one span."""
    spans: list[tuple[int, int]] = []
    last = -10
    for i in flagged:
        if spans and i - last - 1 <= max_gap_words:
            spans[-1] = (spans[-1][0], ws[i].end)
        else:
            spans.append((ws[i].start, ws[i].end))
        last = i
    return spans


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def overlap(a: frozenset[str], text: str) -> int:
    """Content-word stems of ``text`` also in ``a`` (a cheap relevance score)."""
    return sum(1 for w in words(text) if is_content(w) and w.stem in a)
