"""The detector behind the :class:`~truthlens.detector.types.Detector` protocol, backend-neutral.

Per check: validate → tokenise and plan rows (in a thread: long inputs take a while; with
``chunk_aggregation: grounded``, the default, one row per answer claim beside the context
most relevant to it, :mod:`truthlens.detector.grounding`) → micro-batched model runs → combine
each answer token's probability across the rows that saw it (grounded: its claim's row;
otherwise chunks by ``chunk_aggregation``, overlapping answer windows by max) → raised inside
answer facts the context never states (``evidence_checks``; the check runs beside the model)
→ spans, each with its reason, and score. Model, queue and time failures come back as
``unavailable``; only bad input raises (:class:`InvalidInput`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from truthlens.detector.batcher import CHECK_DEADLINE, MicroBatcher
from truthlens.detector.chunking import Plan, plan_rows
from truthlens.detector.encoding import EncodedText, ModelRow, TextEncoder
from truthlens.detector.explain import explained
from truthlens.detector.facts import FactCheck, Finding, check_facts
from truthlens.detector.fusion import fused, label
from truthlens.detector.grounding import plan_grounded
from truthlens.detector.manifest import ModelManifest
from truthlens.detector.relevance import LexicalRelevance, Relevance
from truthlens.detector.spans import SpanRules, score_answer
from truthlens.detector.types import (
    ChunkAggregation,
    Detection,
    DetectionInput,
    DetectorError,
    DetectorSettings,
    InvalidInput,
)
from truthlens.detector.validation import validate, validate_threshold
from truthlens.detector.verdict import Verdict, signals_for, support_scores

log = logging.getLogger(__name__)

RunRows = Callable[[Sequence[ModelRow]], Sequence[np.ndarray]]


@dataclass(frozen=True, slots=True)
class _Prepared:
    answer: EncodedText
    plan: Plan | None  # None: nothing to score (empty answer)


@dataclass(frozen=True, slots=True)
class TokenScores:
    """P(hallucinated) of each answer token, with its id and char offsets in the answer."""

    ids: np.ndarray
    offsets: np.ndarray
    probs: np.ndarray
    rows: int  # model rows that were run (0: empty answer)


class DetectorEngine:
    """Async, concurrency-safe detector over a row runner (e.g. an ONNX session)."""

    def __init__(
        self,
        settings: DetectorSettings,
        manifest: ModelManifest,
        encoder: TextEncoder,
        run_rows: RunRows,
        *,
        provider: str,
        relevance: Relevance | None = None,
        lone_rows_take_all: bool = False,
    ) -> None:
        self.settings = settings
        self.manifest = manifest
        self.provider = provider
        self._encoder = encoder
        # How "grounded" rows pick context for each claim (the backend passes the embedder's;
        # without one, word overlap).
        self.relevance: Relevance = relevance if relevance is not None else LexicalRelevance()
        self._rules = SpanRules(
            token_threshold=(
                settings.token_threshold if settings.token_threshold is not None else manifest.token_threshold
            ),
            aggregation=settings.aggregation if settings.aggregation is not None else manifest.aggregation,
            min_span_length=(
                settings.min_span_length if settings.min_span_length is not None else manifest.min_span_length
            ),
            min_span_confidence=settings.min_span_confidence,
        )
        self._batcher: MicroBatcher[ModelRow, np.ndarray] = MicroBatcher(
            run_rows,
            lambda row: row.length,
            max_batch_size=settings.max_batch_size,
            max_wait_s=settings.max_wait_ms / 1000.0,
            max_queue=settings.max_queue,
            max_in_flight=settings.max_in_flight,
            # A row run alone may use every core (the ONNX CPU runner's second session).
            lone_takes_all=lone_rows_take_all,
        )

    @property
    def token_threshold(self) -> float:
        """The threshold in force: the configured one, else the model's calibrated one."""
        return self._rules.token_threshold

    @property
    def role_checks(self) -> bool:
        """Whether the fact check looks for names in another role: configured, else the model's choice."""
        configured = self.settings.role_checks
        return configured if configured is not None else self.manifest.role_checks

    @property
    def verdict(self) -> Verdict | None:
        """The learned verdict that scores answers, or None (the span rule's score decides)."""
        return self.manifest.verdict if self.settings.learned_verdict else None

    @property
    def rules(self) -> SpanRules:
        """How token probabilities become spans and a score: configured, else the model's own."""
        return self._rules

    @property
    def batcher(self) -> MicroBatcher[ModelRow, np.ndarray]:
        return self._batcher

    @property
    def queue_depth(self) -> int:
        return self._batcher.queue_depth

    async def detect(self, item: DetectionInput, *, threshold: float, timeout_s: float | None = None) -> Detection:
        started = time.perf_counter()
        validate(item, self.settings)
        validate_threshold(threshold)

        def elapsed() -> float:
            return (time.perf_counter() - started) * 1000.0

        try:
            async with asyncio.timeout(timeout_s) as budget:
                # A remote model call is capped by this check's budget (src/truthlens/detector/batcher.py).
                deadline = CHECK_DEADLINE.set(budget.when())
                try:
                    # The support score (an embedder pass) runs beside the model and the fact check.
                    (scores, findings), support = await asyncio.gather(self._fused_scores(item), self._support(item))
                finally:
                    CHECK_DEADLINE.reset(deadline)
        except TimeoutError:
            return Detection.unavailable("timeout", elapsed())
        except InvalidInput:
            raise
        except DetectorError as exc:
            # Model failures are logged where they happen; overload is counted by the caller.
            log.debug("detector check unavailable (%s): %s", exc.reason, exc)
            return Detection.unavailable(exc.reason, elapsed())
        except Exception:  # a bug must not turn into "clean" nor kill the caller's stream
            log.exception("detector check failed")
            return Detection.unavailable("internal_error", elapsed())
        if scores.rows == 0:
            # Nothing to check: an answer without tokens cannot hold a hallucination.
            return Detection(status="clean", score=0.0, latency_ms=elapsed())
        score, spans = score_answer(scores.probs, scores.offsets, item.answer, self._rules)
        if self.verdict is not None:
            score = self.verdict.score(signals_for(item, scores.probs, scores.offsets, findings, support))
        detected = score >= threshold
        # A clean answer shows no spans: a weak span the verdict outweighed reads as a warning
        # the gateway did not give (and on the dev parts the spans of flagged answers alone
        # match the human spans better, training/README.md).
        spans = (await explained(label(spans, findings, scores.probs, scores.offsets), findings, item)
                 if detected else ())
        return Detection(
            status="detected" if detected else "clean",
            score=score,
            spans=spans,
            latency_ms=elapsed(),
            chunks=scores.rows,
            answer_tokens=len(scores.probs),
        )

    async def fused_token_scores(self, item: DetectionInput) -> tuple[TokenScores, tuple[Finding, ...]]:
        """What :meth:`detect` turns into spans (for calibration and evaluation): each answer
        token's probability, raised inside the facts the context never states, and those facts.
        Unlike :meth:`detect`, failures raise :class:`DetectorError`."""
        validate(item, self.settings)
        return await self._fused_scores(item)

    async def _fused_scores(self, item: DetectionInput) -> tuple[TokenScores, tuple[Finding, ...]]:
        # The fact check runs beside the model (a thread: regexes over a long context).
        scores, facts = await asyncio.gather(self._score_tokens(item), self._check_facts(item))
        return replace(scores, probs=fused(scores.probs, scores.offsets, facts)), facts.findings

    async def _support(self, item: DetectionInput) -> tuple[float, float] | None:
        # The embedder pass costs about as much as the model on a short new context: only a
        # verdict that reads its result pays for it.
        return await self.support(item) if self.verdict is not None and self.verdict.uses_support else None

    async def support(self, item: DetectionInput) -> tuple[float, float] | None:
        """How well the answer's sentences are supported under the sentence embedder (the
        verdict's support features); None without an embedder or when it fails."""
        encoder = getattr(self.relevance, "encoder", None)
        if encoder is None or not item.answer.strip():
            return None
        try:
            return await asyncio.to_thread(support_scores, item.answer, item.context, encoder)
        except Exception:  # a signal, not the check: without it the verdict uses its mean
            log.warning("detector: the support score failed; the verdict goes without it", exc_info=True)
            return None

    async def _check_facts(self, item: DetectionInput) -> FactCheck:
        if not self.settings.evidence_checks or not item.answer.strip():
            return FactCheck((), ())
        try:
            return await asyncio.to_thread(
                check_facts, item.answer, item.context, item.question, roles=self.role_checks
            )
        except Exception:  # the check only adds evidence: without it the model's verdict stands
            log.exception("fact check failed; using the model's verdict alone")
            return FactCheck((), ())

    async def token_scores(self, item: DetectionInput) -> TokenScores:
        """Per-answer-token probabilities (for evaluation and benchmarks). Unlike
        :meth:`detect`, failures raise :class:`DetectorError`."""
        validate(item, self.settings)
        return await self._score_tokens(item)

    async def _score_tokens(self, item: DetectionInput) -> TokenScores:
        prepared = await asyncio.to_thread(self._prepare, item)
        if prepared.plan is None:
            return TokenScores(prepared.answer.ids, prepared.answer.offsets, np.zeros(0, dtype=np.float32), 0)
        # Grounded claims that pick the same context share one row: run each distinct row once.
        distinct, index = distinct_rows(prepared.plan.rows)
        run = await self._batcher.submit(distinct)
        outputs = [run[i] for i in index]
        probs = aggregate(len(prepared.answer), prepared.plan, outputs, self.settings.chunk_aggregation)
        return TokenScores(prepared.answer.ids, prepared.answer.offsets, probs, len(prepared.plan.rows))

    async def detect_many(
        self, items: Sequence[DetectionInput], *, threshold: float, timeout_s: float | None = None
    ) -> list[Detection]:
        for item in items:  # refuse the whole call before any work starts
            validate(item, self.settings)
        return list(await asyncio.gather(*(self.detect(i, threshold=threshold, timeout_s=timeout_s) for i in items)))

    async def close(self) -> None:
        await self._batcher.close()

    def _prepare(self, item: DetectionInput) -> _Prepared:
        answer = self._encoder.encode(item.answer)
        if len(answer) == 0:
            return _Prepared(answer=answer, plan=None)
        if self.settings.chunk_aggregation == "grounded":
            plan = plan_grounded(
                self._encoder,
                list(item.context),
                item.question,
                item.answer,
                answer,
                self.relevance,
                max_length=self.manifest.max_length,
                answer_overlap_tokens=self.settings.answer_overlap_tokens,
            )
            return _Prepared(answer=answer, plan=plan)
        plan = plan_rows(
            self._encoder,
            list(item.context),
            item.question,
            answer,
            max_length=self.manifest.max_length,
            answer_overlap_tokens=self.settings.answer_overlap_tokens,
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
