"""The answer's verdict: small logistic models over signals the check already has.

The token classifier says *where* an answer may be unsupported; whether the answer as a whole
is, is a second question. A hand-picked rule (noisy-OR of flagged tokens) grows with answer
length and flags most long faithful summaries. The verdict instead weighs, per answer:

- the fused token probabilities: the highest, the best span's mean, the share of answer
  tokens over the token threshold, and the noisy-OR score the spans give;
- the fact check's findings by kind (numbers and dates, units, names, names in another role,
  relations stated the other way round), and besides the terms the answer moved from the
  context clause it restates and a record's yes/no fields stated the other way round
  (:attr:`truthlens.detector.facts.Finding.check`: weighed on their own), and the moves whose
  answer clause restates its context clause closely (:data:`CLOSE_FIT`: a clause copied with one
  term changed, where a loose fit is more often a summary merging two sentences);
- how well the answer's *weakest* sentence is supported: the cosine between each answer
  sentence and its best context sentence under the shipped sentence embedder (the one the
  grounded planner already loads), whose minimum and mean over the sentences are features
  a model may use (the shipped one does not: see below);
- the share of the answer's content words the context never uses (overall and in its most
  novel sentence): a record verbalised with an invented attribute, a summary with an added claim;
- the answer's length, and the task's shape: passages with a question, one article to
  summarise, or a structured record (:func:`truthlens.detector.prompt.read_task`: read from the
  context's structure and whether the request asks about its content, not from the wording).

One logistic regression per task shape (the signals mean different things over a record than
over passages; standardised; weights fitted on development data by ``training/verdict.py`` and
stored in the model's ``manifest.json`` under ``verdict``) gives log-odds. Each model is fitted
on its own mix of sets, so those log-odds mean different odds per task; the served score is
their map to P(hallucinated) on one scale for every task (:mod:`truthlens.detector.calibration.probability`,
``verdict.probability`` in the manifest, fitted by ``training/calibrate_tasks.py``): monotone,
so answers rank within a task as the log-odds do. Each model also keeps the operating point
chosen when it was fitted (``shift``: at most a quarter of faithful answers flagged), for reference.

Inference is numpy: a dot product of about twenty numbers. The support features cost one
embedder pass over the answer's sentences and each one's shortlist of context sentences
(cached per text, so a repeated context is embedded once): on a short context the embedder
has not seen, about as much as the model itself. A model that does not list them skips that
pass (:attr:`Verdict.uses_support`); the shipped one leaves them out, because on the
development data they added nothing (training/README.md). Without an embedder the support
features take their training mean, so they neither raise nor lower the verdict.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from truthlens.detector.calibration.probability import TaskProbability
from truthlens.detector.facts import Finding
from truthlens.detector.prompt import Shape, read_task
from truthlens.detector.relevance import SentenceEncoder, content_terms, lexical_overlap
from truthlens.detector.spans import SpanRules, score_answer
from truthlens.detector.types import DetectionInput

FEATURES: tuple[str, ...] = (
    "peak",
    "span_mean",
    "flagged_share",
    "noisy_or",
    "spans",
    "numbers_dates",
    "units",
    "names",
    "roles",
    "relations",
    "moved",
    "fields",
    "close_moves",
    "support_min",
    "support_mean",
    "novel_share",
    "novel_sentence",
    "log_tokens",
    "log_sentences",
)
# A term moved into (or a name put in another role in) a context clause the answer clause restates
# this closely (the share of its content words that clause holds, :attr:`Finding.fit`) is a
# mix-up of that clause, not a summary merging two sentences: counted apart (``close_moves``).
CLOSE_FIT = 0.75
# The features that need the embedder pass. A fitted model may leave them out (the shipped one
# does: on the development data they added nothing, training/README.md), and then no answer
# pays for that pass.
SUPPORT_FEATURES: tuple[str, ...] = ("support_min", "support_mean")
# Context sentences embedded per answer sentence, picked by word overlap (the rest cannot be
# its best support in practice); bounds the embedder's work on a long context.
SUPPORT_SHORTLIST = 6
MAX_SUPPORT_SENTENCES = 24  # answer sentences judged; a longer answer's tail is merged in
_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+[\"'”’)\]]*|\n|$)")


def sentences(text: str) -> list[str]:
    """Sentences (or lines) of ``text`` with at least two words, stripped."""
    out = [m.group(0).strip() for m in _SENTENCE.finditer(text)]
    return [s for s in out if len(s.split()) >= 2]


def support_scores(
    answer: str, context: Sequence[str], encoder: SentenceEncoder | None
) -> tuple[float, float] | None:
    """(min, mean) over the answer's sentences of the cosine to its best context sentence,
    or ``None`` without an embedder (or sentences to compare)."""
    if encoder is None:
        return None
    claims = sentences(answer)
    if len(claims) > MAX_SUPPORT_SENTENCES:
        claims = [*claims[: MAX_SUPPORT_SENTENCES - 1], " ".join(claims[MAX_SUPPORT_SENTENCES - 1 :])]
    pieces = [s for passage in context for s in sentences(passage)]
    if not claims or not pieces:
        return None
    overlap = lexical_overlap(claims, pieces)
    keep = min(SUPPORT_SHORTLIST, len(pieces))
    chosen = np.argsort(-overlap, axis=1, kind="stable")[:, :keep]
    wanted = sorted({int(i) for i in chosen.ravel()})
    vectors = np.asarray(encoder.embed_sync([*claims, *(pieces[i] for i in wanted)]), dtype=np.float32)
    at = {piece: row for row, piece in enumerate(wanted)}
    claim_vectors, piece_vectors = vectors[: len(claims)], vectors[len(claims) :]
    best = [
        float(max(claim_vectors[c] @ piece_vectors[at[int(p)]] for p in chosen[c])) for c in range(len(claims))
    ]
    return min(best), float(np.mean(best))


def _terms(text: str) -> set[str]:
    # "restaurants" meets "restaurant": a plural is the same content word here.
    return {t[:-1] if len(t) > 4 and t.endswith("s") and not t.endswith("ss") else t for t in content_terms(text)}


def known_terms(context: Sequence[str], question: str) -> frozenset[str]:
    """The content words and numbers the context and question use (records' keys split apart)."""
    text = "\n".join([*context, question])
    return frozenset(_terms(re.sub(r"(?<=[a-z])(?=[A-Z])|_", " ", text)))


def novelty(answer: str, known: frozenset[str]) -> tuple[float, float]:
    """The share of the answer's content words the context never uses, over the whole answer
    and in its most novel sentence (0 when nothing is known: the feature then says nothing)."""
    if not known:
        return 0.0, 0.0
    words = _terms(answer)
    share = len(words - known) / len(words) if words else 0.0
    per_sentence = [len(t - known) / len(t) for t in map(_terms, sentences(answer)) if len(t) >= 3]
    return share, max(per_sentence, default=share)


@dataclass(frozen=True, slots=True)
class Signals:
    """Everything the verdict reads of one checked answer."""

    probs: np.ndarray  # fused token probabilities
    offsets: np.ndarray
    findings: Sequence[Finding]
    answer: str
    shape: Shape
    support: tuple[float, float] | None
    known: frozenset[str] = frozenset()  # the context's and question's content terms (:func:`known_terms`)


def features(s: Signals, rules: SpanRules) -> dict[str, float]:
    """The verdict's inputs for one answer (names as in :data:`FEATURES`; support may be NaN)."""
    probs = s.probs.astype(np.float64)
    n = len(probs)
    noisy_or, spans = score_answer(s.probs, s.offsets, s.answer, replace(rules, aggregation="noisy_or"))
    span_mean, _ = score_answer(s.probs, s.offsets, s.answer, replace(rules, aggregation="span_mean"))
    # Every finding counts under its reason; the clause check's (a term moved from the clause
    # the answer restates) and the record check's count again under their own features, so a fit
    # can weigh them apart from the generic reasons they share with the other checks (a model
    # fitted before they existed reads the same values it was fitted on).
    kinds = [f.reason for f in s.findings]
    peak = float(probs.max()) if n else 0.0
    support = s.support if s.support is not None else (math.nan, math.nan)
    novel_share, novel_sentence = novelty(s.answer, s.known)
    n_sentences = len(sentences(s.answer))
    return {
        "peak": peak,
        "span_mean": span_mean,
        "flagged_share": float((probs > rules.token_threshold).mean()) if n else 0.0,
        "noisy_or": noisy_or,
        "spans": math.log1p(len(spans)),
        "numbers_dates": math.log1p(sum(k in ("unsupported_number", "unsupported_date") for k in kinds)),
        "units": math.log1p(sum(k == "unsupported_unit" for k in kinds)),
        "names": math.log1p(sum(k == "unsupported_entity" for k in kinds)),
        "roles": math.log1p(sum(k == "misattributed_entity" for k in kinds)),
        "relations": math.log1p(sum(k == "contradicted_relation" for k in kinds)),
        "moved": math.log1p(sum(f.check == "clause" for f in s.findings)),
        "fields": math.log1p(sum(f.check == "record" for f in s.findings)),
        "close_moves": math.log1p(sum(f.check in ("clause", "role") and f.fit >= CLOSE_FIT for f in s.findings)),
        "support_min": support[0],
        "support_mean": support[1],
        "novel_share": novel_share,
        "novel_sentence": novel_sentence,
        "log_tokens": math.log1p(n),
        "log_sentences": math.log1p(n_sentences),
    }


@dataclass(frozen=True, slots=True)
class VerdictModel:
    """Standardised logistic regression; ``shift`` moves the log-odds so that 0.5 is the
    operating point chosen when it was fitted (the served score is the task's probability map
    instead: :attr:`Verdict.probability`)."""

    names: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    shift: float

    def log_odds(self, values: Mapping[str, float]) -> float:
        x = np.array([values[n] for n in self.names], dtype=np.float64)
        x = np.where(np.isnan(x), self.mean, x)  # a missing signal counts as its training mean
        return float(((x - self.mean) / self.scale) @ self.weights + self.bias)

    def probability(self, values: Mapping[str, float]) -> float:
        """Calibrated P(hallucinated) (on the development data it was fitted on)."""
        return _sigmoid(self.log_odds(values))

    def score(self, values: Mapping[str, float]) -> float:
        """The served score: ≥ 0.5 exactly at and above the chosen operating point."""
        return _sigmoid(self.log_odds(values) - self.shift)

    def to_json(self) -> dict[str, Any]:
        return {
            "features": list(self.names),
            "mean": [round(float(v), 6) for v in self.mean],
            "scale": [round(float(v), 6) for v in self.scale],
            "weights": [round(float(v), 6) for v in self.weights],
            "bias": round(self.bias, 6),
            "shift": round(self.shift, 6),
        }

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> VerdictModel:
        """Parse a manifest's ``verdict`` object; raises ``ValueError`` naming the bad field."""
        names = raw.get("features")
        if not isinstance(names, list) or not names or any(n not in FEATURES for n in names):
            raise ValueError(f"'features' must list known features ({', '.join(FEATURES)})")
        arrays = {}
        for key in ("mean", "scale", "weights"):
            value = raw.get(key)
            if not isinstance(value, list) or len(value) != len(names) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value
            ):
                raise ValueError(f"{key!r} must list one finite number per feature")
            arrays[key] = np.asarray(value, dtype=np.float64)
        if np.any(arrays["scale"] <= 0):
            raise ValueError("'scale' must be positive")
        numbers = {}
        for key in ("bias", "shift"):
            value = raw.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{key!r} must be a finite number")
            numbers[key] = float(value)
        return VerdictModel(
            tuple(names), arrays["mean"], arrays["scale"], arrays["weights"], numbers["bias"], numbers["shift"]
        )


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


@dataclass(frozen=True, slots=True)
class Verdict:
    """One fitted model per task shape, with the token rules its features were computed under
    (the ones it was fitted with, whatever span rules a deployment configures for the spans it
    shows)."""

    models: Mapping[Shape, VerdictModel]
    rules: SpanRules
    probability: Mapping[Shape, TaskProbability]  # log-odds -> P(hallucinated), per task shape

    @property
    def uses_support(self) -> bool:
        """Whether any model reads the support features (else the embedder pass is skipped)."""
        return any(name in SUPPORT_FEATURES for model in self.models.values() for name in model.names)

    def log_odds(self, s: Signals) -> float:
        """The task model's log-odds (what the probability map reads)."""
        return self.models[s.shape].log_odds(features(s, self.rules))

    def score(self, s: Signals) -> float:
        """The served score: P(hallucinated) on the scale every task shares."""
        return self.probability[s.shape](self.log_odds(s))


def signals_for(
    item: DetectionInput,
    probs: np.ndarray,
    offsets: np.ndarray,
    findings: Sequence[Finding],
    support: tuple[float, float] | None,
) -> Signals:
    """What the verdict reads of one checked answer (serving and the benches build it the same way):
    the task's shape and question as :func:`read_task` reads them, whatever the instruction's wording."""
    task = read_task(item.context, item.question)
    return Signals(
        probs, offsets, findings, item.answer, task.shape, support, known_terms(item.context, task.question),
    )
