"""The cheap monitor of ``mode: auto``: classify a checked answer as clean, conflict or flagged.

MetaRAG (seed 002) monitors an answer by its embedding similarity to a cheap expert model's
answer (below k = 0.4 → evaluate) and plans by failure type: knowledge conflict → conflict
resolution, faulty reasoning → refinement. Here the detector's spans are the main signal and
the expert comparison is optional:

* ``conflict`` — a flagged span names numbers or capitalised names that the passage sentence
  closest to it states differently (the answer contradicts the context, or the context is
  wrong), or the expert disagrees with the answer (cosine < k);
* ``flagged`` — the detector flags spans with no such contradiction (unsupported content);
* ``clean`` — neither;
* ``unavailable`` — the detector did not run, so nothing can be said.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from truthlens.detector.text import sentences
from truthlens.detector.types import Detection, Span
from truthlens.modes.acr.equivalence import facts_disagree
from truthlens.modes.base import Embedder

Finding = Literal["clean", "conflict", "flagged", "unavailable"]
_SENTENCE_MATCH = 0.5  # cosine above which a passage sentence speaks about the span's sentence


@dataclass(frozen=True, slots=True)
class Assessment:
    finding: Finding
    contradicted_spans: tuple[str, ...] = ()  # span texts that contradict a passage sentence
    expert_similarity: float | None = None
    why: str = ""


def _sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in sentences(text)]


def _sentence_around(answer: str, span: Span) -> str:
    """The answer's sentences that the span touches (the detector's sentences, text.sentences)."""
    touched = [(s, e) for s, e in sentences(answer) if s < span.end and span.start < e]
    return answer[touched[0][0]:touched[-1][1]] if touched else answer[span.start:span.end].strip()


async def contradicted_spans(
    answer: str, detection: Detection, passages: Sequence[str], embedder: Embedder
) -> list[str]:
    """Flagged spans whose sentence disagrees on numbers/names with its closest passage sentence."""
    candidates = [s for s in detection.spans if s.text.strip()]
    passage_sentences = [s for p in passages for s in _sentences(p)]
    if not candidates or not passage_sentences:
        return []
    around = [_sentence_around(answer, s) for s in candidates]
    vectors = np.asarray(await embedder.embed([*around, *passage_sentences]), dtype=np.float32)
    sims = vectors[: len(around)] @ vectors[len(around):].T
    out: list[str] = []
    for k, span in enumerate(candidates):
        best = int(np.argmax(sims[k]))
        if sims[k, best] >= _SENTENCE_MATCH and facts_disagree(around[k], passage_sentences[best]):
            out.append(span.text)
    return out


async def assess(
    answer: str,
    detection: Detection,
    passages: Sequence[str],
    embedder: Embedder | None,
    *,
    expert_answer: str | None = None,
    expert_threshold: float = 0.4,
) -> Assessment:
    if detection.status == "unavailable":
        return Assessment("unavailable", why=f"detector unavailable: {detection.reason}")
    similarity: float | None = None
    if expert_answer is not None and embedder is not None:
        v = np.asarray(await embedder.embed([answer, expert_answer]), dtype=np.float32)
        similarity = float(v[0] @ v[1])
        if similarity < expert_threshold:
            return Assessment("conflict", (), similarity,
                              f"expert answer disagrees (cosine {similarity:.3f} < {expert_threshold})")
    if not detection.detected:
        return Assessment("clean", (), similarity, "detector clean")
    contradicted = (await contradicted_spans(answer, detection, passages, embedder)
                    if embedder is not None else [])
    if contradicted:
        return Assessment("conflict", tuple(contradicted), similarity,
                          "flagged spans state numbers or names differently from the passages")
    return Assessment("flagged", (), similarity, "flagged spans without a contradicting passage")
