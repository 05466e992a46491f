"""One model's answer-token scores: tokenise, plan rows, run them micro-batched, combine.

:class:`TokenScorer` is the per-model half of the detector: its tokenizer, its window
(``max_length``) and its batcher. The engine owns one; an ensemble model directory
(:mod:`truthlens.detector.scoring.ensemble`) gives it one more per member, each reading the same answer in
its own tokenizer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from truthlens.detector.batcher import MicroBatcher
from truthlens.detector.chunking import Plan, plan_rows
from truthlens.detector.encoding import EncodedText, ModelRow, TextEncoder
from truthlens.detector.grounding import plan_grounded
from truthlens.detector.relevance import Relevance
from truthlens.detector.types import ChunkAggregation, DetectionInput, DetectorSettings

RunRows = Callable[[Sequence[ModelRow]], Sequence[np.ndarray]]


@dataclass(frozen=True, slots=True)
class TokenScores:
    """P(hallucinated) of each answer token, with its id and char offsets in the answer."""

    ids: np.ndarray
    offsets: np.ndarray
    probs: np.ndarray
    rows: int  # model rows that were run, each distinct row once (0: empty answer)


@dataclass(frozen=True, slots=True)
class _Prepared:
    answer: EncodedText
    plan: Plan | None  # None: nothing to score (empty answer)


class TokenScorer:
    """Scores an answer's tokens with one model: ``run_rows`` behind a :class:`MicroBatcher`."""

    def __init__(
        self,
        settings: DetectorSettings,
        encoder: TextEncoder,
        run_rows: RunRows,
        *,
        max_length: int,
        lone_rows_take_all: bool = False,
    ) -> None:
        self._settings = settings
        self._encoder = encoder
        self._max_length = max_length
        self.batcher: MicroBatcher[ModelRow, np.ndarray] = MicroBatcher(
            run_rows,
            lambda row: row.length,
            max_batch_size=settings.max_batch_size,
            max_wait_s=settings.max_wait_ms / 1000.0,
            max_queue=settings.max_queue,
            max_in_flight=settings.max_in_flight,
            # A row run alone may use every core (the ONNX CPU runner's second session).
            lone_takes_all=lone_rows_take_all,
        )

    async def score(self, item: DetectionInput, relevance: Relevance) -> TokenScores:
        """Each answer token's probability under this model (``relevance``: how grounded rows pick
        each claim's context; the engine's, which a caller may swap after start-up)."""
        prepared = await asyncio.to_thread(self._prepare, item, relevance)
        if prepared.plan is None:
            return TokenScores(prepared.answer.ids, prepared.answer.offsets, np.zeros(0, dtype=np.float32), 0)
        # Grounded claims that pick the same context share one row: run each distinct row once.
        distinct, index = distinct_rows(prepared.plan.rows)
        run = await self.batcher.submit(distinct)
        outputs = [run[i] for i in index]
        probs = aggregate(len(prepared.answer), prepared.plan, outputs, self._settings.chunk_aggregation)
        return TokenScores(prepared.answer.ids, prepared.answer.offsets, probs, len(distinct))

    async def close(self) -> None:
        await self.batcher.close()

    def _prepare(self, item: DetectionInput, relevance: Relevance) -> _Prepared:
        answer = self._encoder.encode(item.answer)
        if len(answer) == 0:
            return _Prepared(answer=answer, plan=None)
        if self._settings.chunk_aggregation == "grounded":
            plan = plan_grounded(
                self._encoder,
                list(item.context),
                item.question,
                item.answer,
                answer,
                relevance,
                max_length=self._max_length,
                answer_overlap_tokens=self._settings.answer_overlap_tokens,
            )
            return _Prepared(answer=answer, plan=plan)
        plan = plan_rows(
            self._encoder,
            list(item.context),
            item.question,
            answer,
            max_length=self._max_length,
            answer_overlap_tokens=self._settings.answer_overlap_tokens,
        )
        return _Prepared(answer=answer, plan=plan)


def distinct_rows(rows: Sequence[ModelRow]) -> tuple[list[ModelRow], list[int]]:
    """The distinct rows among ``rows`` (first occurrence order) and, for each row, the index
    of its distinct row. Equal rows give equal outputs (each row's run is independent of the
    others), so a repeated row is run once."""
    distinct: list[ModelRow] = []
    seen: dict[tuple[bytes, bytes, int], int] = {}
    index: list[int] = []
    for row in rows:
        key = (row.ids.tobytes(), row.type_ids.tobytes(), row.answer_start)
        at = seen.setdefault(key, len(distinct))
        if at == len(distinct):
            distinct.append(row)
        index.append(at)
    return distinct, index


def aggregate(n_tokens: int, plan: Plan, outputs: Sequence[np.ndarray], across_chunks: ChunkAggregation) -> np.ndarray:
    """Each answer token's probability: combined over the context chunks beside its answer
    window (``across_chunks``), then the max over the overlapping windows that scored it.
    A grounded plan reads each token from the one row that holds its claim's context."""
    probs = np.zeros(n_tokens, dtype=np.float32)
    if plan.scored:
        for output, window, claim in zip(outputs, plan.windows, plan.scored, strict=True):
            view = probs[claim.start : claim.end]
            np.maximum(view, output[claim.start - window.start : claim.end - window.start], out=view)
        return probs
    for first in range(0, len(outputs), plan.chunks):
        window = plan.windows[first]
        per_chunk = np.stack(outputs[first : first + plan.chunks])
        if across_chunks in ("max", "grounded"):  # grounded: one chunk here (the context fits)
            combined = per_chunk.max(axis=0)
        elif across_chunks == "min":
            combined = per_chunk.min(axis=0)
        else:
            combined = per_chunk[int(np.argmin(per_chunk.mean(axis=1)))]
        view = probs[window.start : window.end]
        np.maximum(view, combined, out=view)
    return probs
