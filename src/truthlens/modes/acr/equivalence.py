"""Are two answers the same answer? Semantic clustering for the ACR agents.

Sentence embeddings alone cannot decide this: all-MiniLM-L6-v2 scores "The Eiffel Tower was
completed in 1889." against "...in 1887." at 0.92 and "...is Sydney." against "...is
Canberra." at 0.88. So the cosine test is guarded: answers whose numbers or capitalised names
disagree are different, and a short answer whose content words all appear in the other
(e.g. "Canberra" vs "The capital of Australia is Canberra.") is the same.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from truthlens.detector.text import STOP_WORDS
from truthlens.modes.base import Embedder

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# The stop words (detector/text.py), and the words an answer wraps itself in ("Yes, the final answer is ...").
_STOP = STOP_WORDS | {"yes", "answer", "final"}


def _numbers(text: str) -> frozenset[str]:
    return frozenset(n.replace(",", "") for n in _NUMBER.findall(text))


def _names(text: str) -> frozenset[str]:
    return frozenset(
        w.lower() for w in _WORD.findall(text) if w[0].isupper() and w.lower() not in _STOP
    )


def _content(text: str) -> frozenset[str]:
    return frozenset(w for w in (x.lower() for x in _WORD.findall(text)) if w not in _STOP)


def _nested(a: frozenset[str], b: frozenset[str]) -> bool:
    return a <= b or b <= a


def facts_disagree(a: str, b: str) -> bool:
    """Both name numbers (or capitalised names) and neither set contains the other."""
    na, nb = _numbers(a), _numbers(b)
    if na and nb and not _nested(na, nb):
        return True
    ea, eb = _names(a), _names(b)
    return bool(ea and eb and not _nested(ea, eb))


class AnswerMatcher:
    """Answer equivalence with embeddings cached per text.

    ``await warm(texts)`` embeds what is new; ``same(a, b)`` is then synchronous, as
    :func:`truthlens.modes.acr.fusion.stability` wants it.
    """

    def __init__(self, embedder: Embedder, threshold: float) -> None:
        self._embedder = embedder
        self._threshold = threshold
        self._vectors: dict[str, np.ndarray] = {}

    async def warm(self, texts: Sequence[str]) -> None:
        new = sorted({t for t in texts if t not in self._vectors})
        if not new:
            return
        vectors = np.asarray(await self._embedder.embed(new), dtype=np.float32)
        for text, vector in zip(new, vectors, strict=True):
            self._vectors[text] = vector

    def cosine(self, a: str, b: str) -> float:
        return float(np.dot(self._vectors[a], self._vectors[b]))

    def same(self, a: str, b: str) -> bool:
        if a.strip().lower() == b.strip().lower():
            return True
        if facts_disagree(a, b):
            return False
        ca, cb = _content(a), _content(b)
        if ca and cb and _nested(ca, cb):
            return True
        return self.cosine(a, b) >= self._threshold

    async def clusters(self, texts: Sequence[str]) -> list[list[int]]:
        """Greedy clustering: each text joins the first cluster whose first member it matches."""
        await self.warm(texts)
        groups: list[list[int]] = []
        for i, text in enumerate(texts):
            for group in groups:
                if self.same(texts[group[0]], text):
                    group.append(i)
                    break
            else:
                groups.append([i])
        return groups
