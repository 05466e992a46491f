"""Score answers once the way serving does, then judge them under any decision rule.

Shared by the calibration sweep (``training/calibrate.py``, dev folds) and the quality bench
(``bench/detector_quality.py``, evaluation folds): each answer's fused token probabilities
(model over grounded rows, raised inside unsupported facts, lowered inside reformatted values)
are computed once through :meth:`DetectorEngine.fused_token_scores`; a decision (span rules and
a response threshold) then turns them into the verdict and spans ``detect`` would return —
:func:`truthlens.detector.spans.score_answer` is the same function serving calls.

Metrics of the "hallucinated" class: example precision/recall/F1, balanced accuracy (the mean
of the recalls of both classes: the sets are not balanced), AUROC of a threshold-free ranking
signal (the learned verdict's score where the model has one, else the answer's highest fused
token probability) and character-level span F1 where spans
are labelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from training.corpus import halueval, ragtruth
from training.evaluate import auroc, prf
from truthlens.detector.engine import DetectorEngine
from truthlens.detector.facts import Finding
from truthlens.detector.spans import SpanRules, score_answer
from truthlens.detector.types import DetectionInput, Span
from truthlens.detector.verdict import Verdict, signals_for

BLOCK = 16  # answers in flight at once (the engine's micro-batcher fills batches from them)


@dataclass(frozen=True, slots=True)
class Case:
    item: DetectionInput
    hallucinated: bool
    labels: tuple[tuple[int, int], ...] = ()  # character spans, where the data set has them


def ragtruth_cases(task: ragtruth.Task, folds: tuple[ragtruth.Fold, ...], root: Path) -> list[Case]:
    """RAGTruth responses of ``folds`` as cases, with their human-labelled spans."""
    return [
        Case(DetectionInput(r.context, r.question, r.answer), r.hallucinated, r.spans)
        for r in ragtruth.responses(task, folds, root)
    ]


def halueval_cases(task: halueval.Task, folds: tuple[halueval.Fold, ...], root: Path, items: int) -> list[Case]:
    """The first ``items`` HaluEval items of ``folds``, each as its right and its hallucinated answer."""
    pairs = list(halueval.eval_pairs(task, folds, root))[: items * 2]
    return [Case(DetectionInput(ctx, q, a), h) for ctx, q, a, h in pairs]


@dataclass(frozen=True, slots=True)
class Scored:
    case: Case
    probs: np.ndarray
    offsets: np.ndarray
    findings: tuple[Finding, ...] = ()  # what the fact check found (already fused into probs)
    support: tuple[float, float] | None = None  # the verdict's support score, where it has one

    @property
    def peak(self) -> float:
        return float(self.probs.max()) if len(self.probs) else 0.0


async def score_cases(engine: DetectorEngine, cases: Sequence[Case]) -> list[Scored]:
    async def one(case: Case) -> Scored:
        (scores, findings), support = await asyncio.gather(
            engine.fused_token_scores(case.item),
            engine.support(case.item) if engine.verdict is not None else _nothing(),
        )
        return Scored(case, scores.probs, scores.offsets, findings, support)

    out: list[Scored] = []
    for i in range(0, len(cases), BLOCK):
        out.extend(await asyncio.gather(*(one(c) for c in cases[i : i + BLOCK])))
    return out


async def _nothing() -> None:
    return None


@dataclass(frozen=True, slots=True)
class Decision:
    """How token probabilities become a verdict: span rules plus the route's response threshold,
    and the model's learned verdict where it has one (then it gives the score, as in serving)."""

    rules: SpanRules
    threshold: float
    verdict: Verdict | None = None

    def judge(self, s: Scored) -> tuple[bool, tuple[Span, ...]]:
        if len(s.probs) == 0:
            return False, ()
        score, spans = score_answer(s.probs, s.offsets, s.case.item.answer, self.rules)
        if self.verdict is not None:
            score = self.verdict_score(s)
        flagged = score >= self.threshold
        return flagged, spans if flagged else ()  # as serving: a clean answer shows no spans

    def verdict_score(self, s: Scored) -> float:
        assert self.verdict is not None
        return self.verdict.score(signals_for(s.case.item, s.probs, s.offsets, s.findings, s.support))

    def ranking(self, s: Scored) -> float:
        """The threshold-free signal AUROC is computed from: the verdict's score, else the
        answer's highest fused token probability."""
        return self.verdict_score(s) if self.verdict is not None and len(s.probs) else s.peak


@dataclass(frozen=True, slots=True)
class Metrics:
    n: int
    positives: int
    precision: float
    recall: float
    f1: float
    balanced_accuracy: float
    accuracy: float
    false_alarms: float  # share of faithful answers flagged
    auroc: float
    span_f1: float | None


def metrics(scored: Sequence[Scored], decision: Decision) -> Metrics:
    return verdict_metrics(
        [s.case for s in scored], [decision.judge(s) for s in scored], [decision.ranking(s) for s in scored]
    )


def verdict_metrics(
    cases: Sequence[Case], verdicts: Sequence[tuple[bool, Sequence[Span]]], ranking: Sequence[float]
) -> Metrics:
    """Metrics of any detector's verdicts (flagged, spans) on ``cases``; ``ranking`` is the
    threshold-free signal AUROC is computed from (a token classifier's peak probability, or a
    verdict's score)."""
    truth = [c.hallucinated for c in cases]
    flagged = [v for v, _ in verdicts]
    tp = sum(f and t for f, t in zip(flagged, truth, strict=True))
    fp = sum(f and not t for f, t in zip(flagged, truth, strict=True))
    positives = sum(truth)
    negatives = len(truth) - positives
    precision, recall, f1 = prf(tp, fp, positives - tp)
    tnr = (negatives - fp) / negatives if negatives else 0.0
    span = None
    if any(c.labels for c in cases):
        stp = sfp = sfn = 0
        for case, (_, spans) in zip(cases, verdicts, strict=True):
            if case.hallucinated and not case.labels:
                continue  # hallucinated without span labels (HaluEval): no character truth
            gold = {i for a, b in case.labels for i in range(a, b)}
            pred = {i for sp in spans for i in range(sp.start, sp.end)}
            stp, sfp, sfn = stp + len(gold & pred), sfp + len(pred - gold), sfn + len(gold - pred)
        span = prf(stp, sfp, sfn)[2]
    return Metrics(
        n=len(cases),
        positives=positives,
        precision=precision,
        recall=recall,
        f1=f1,
        balanced_accuracy=(recall + tnr) / 2 if positives and negatives else (recall if positives else tnr),
        accuracy=sum(f == t for f, t in zip(flagged, truth, strict=True)) / len(truth) if truth else 0.0,
        false_alarms=fp / negatives if negatives else 0.0,
        auroc=auroc(ranking, truth),
        span_f1=span,
    )
