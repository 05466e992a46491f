"""ACR E-Agent (§4.1): the internal and the external candidate answer, each with c = [μ, σ].

Internal: the question WITHOUT context through four prompt templates × M samples, clustered
by meaning; the largest cluster wins and in it the sample with the best mean log-prob.
External: (subject, relation, object) triples extracted from the de-duplicated passages,
verified against the question, voted, and an answer written from the kept triples only.

Black-box adaptation of the confidence samples (eq. 10–11). A chat API cannot score a given
text, only report the log-probs of what it sampled. Sample i has sequence confidence
c_i = exp(mean token log-prob). If it landed in the chosen answer's cluster, c_i is its
probability for that answer; otherwise the model put c_i on another answer, so at most
1 − c_i remains for the chosen one. Those per-sample estimates feed :func:`calibrate`, so an
answer the model gives rarely, or hesitantly, gets a low μ and a wide σ. When the endpoint
returns no log-probs, cluster membership alone is used (0.9 inside, 0.1 outside).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from opentelemetry import trace

from truthlens.llm import ChatCall, ChatChoice, LLMError
from truthlens.modes.acr import prompts
from truthlens.modes.acr.calibration import calibrate
from truthlens.modes.acr.equivalence import AnswerMatcher
from truthlens.modes.acr.prompts import INTERNAL_TEMPLATES, Triple
from truthlens.tracing import NO_TRACER

if TYPE_CHECKING:
    from truthlens.llm import LLMClient

log = logging.getLogger(__name__)
# A reply whose log-probs are no log-probabilities (NaN, infinite, above 0): read as a reply
# without log-probs (its confidence comes from agreement), named in the verdict's fallbacks.
BAD_LOGPROBS = "bad_logprobs"

_AGREEMENT_IN, _AGREEMENT_OUT = 0.9, 0.1


class AgentError(Exception):
    """An agent could not produce its candidate; ``reason`` is a short metric-safe label."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class SamplingSettings:
    model: str  # the model that answers the agents' prompts
    samples: int  # M
    temperature: float
    top_p: float
    max_tokens: int


@dataclass(frozen=True, slots=True)
class Sample:
    source: str  # template name, or "external"
    text: str  # the whole reply
    answer: str  # its final 'Answer:' line
    confidence: float | None  # exp(mean token log-prob); None without log-probs


@dataclass(frozen=True, slots=True)
class Candidate:
    answer: str
    mu: float
    sigma: float
    support: float  # share of samples in the chosen cluster
    samples: int
    confidence_source: Literal["logprobs", "agreement"]


@dataclass(frozen=True, slots=True)
class ExternalCandidate:
    candidate: Candidate
    passages_used: int
    triples_extracted: int
    triples_kept: tuple[Triple, ...]


def select_candidate(samples: Sequence[Sample], clusters: Sequence[Sequence[int]]) -> Candidate:
    """Largest cluster (ties: higher mean confidence), best-confidence member, calibrated c."""
    if len(samples) < 2:
        raise AgentError("too_few_samples", f"need >= 2 samples to calibrate, got {len(samples)}")

    def conf(i: int) -> float:
        c = samples[i].confidence
        return c if c is not None else 0.0

    def rank(group: Sequence[int]) -> tuple[int, float]:
        return len(group), sum(conf(i) for i in group) / len(group)

    chosen = max(clusters, key=rank)
    best = max(chosen, key=conf)
    members = set(chosen)
    with_logprobs = all(s.confidence is not None for s in samples)
    estimates: list[float] = []
    for i, sample in enumerate(samples):
        if with_logprobs:
            c = float(sample.confidence)  # type: ignore[arg-type]
            estimates.append(c if i in members else 1.0 - c)
        else:
            estimates.append(_AGREEMENT_IN if i in members else _AGREEMENT_OUT)
    mu, sigma = calibrate(estimates)
    return Candidate(
        answer=samples[best].answer,
        mu=mu,
        sigma=sigma,
        support=len(chosen) / len(samples),
        samples=len(samples),
        confidence_source="logprobs" if with_logprobs else "agreement",
    )


def _readable_logprobs(choice: ChatChoice) -> bool:
    """Whether the choice's log-probs (if any) are log-probabilities: finite, at most 0."""
    return all(math.isfinite(lp) and lp <= 0.0 for lp in choice.token_logprobs or ())


class EAgent:
    """Builds the two candidates for one exchange."""

    def __init__(
        self,
        llm: LLMClient,
        matcher: AnswerMatcher,
        sampling: SamplingSettings,
        *,
        deadline: float,
        max_passages: int,
        max_triples: int,
        tracer: trace.Tracer = NO_TRACER,
    ) -> None:
        self._llm = llm
        self._matcher = matcher
        self._sampling = sampling
        self._deadline = deadline
        self._max_passages = max_passages
        self._max_triples = max_triples
        self._tracer = tracer
        self.calls = 0
        # What the LLM client worked around for these calls (no log-probs, n ignored, ...): the
        # verdict names them, and they explain a confidence taken from agreement.
        self.fallbacks: set[str] = set()

    async def _chat(self, call: ChatCall) -> list[Sample]:
        self.calls += 1
        result = await self._llm.chat(call, deadline=self._deadline)
        self.fallbacks.update(result.fallbacks)
        bad = [c for c in result.choices if not _readable_logprobs(c)]
        if bad:
            self.fallbacks.add(BAD_LOGPROBS)
            log.warning("acr: model %r (%s) returned log-probs out of range (NaN, infinite or above 0) in %d of %d "
                        "samples; they count as samples without log-probs", call.model, call.role, len(bad),
                        len(result.choices))
        return [
            Sample(call.role, c.text, prompts.extract_answer(c.text), c.confidence if _readable_logprobs(c) else None)
            for c in result.choices
        ]

    def _sampled(self, role: str, messages: list[dict[str, str]]) -> ChatCall:
        s = self._sampling
        return ChatCall(model=s.model, messages=messages, role=role, n=s.samples,
                        temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_tokens,
                        logprobs=True)

    def _greedy(self, role: str, messages: list[dict[str, str]]) -> ChatCall:
        return ChatCall(model=self._sampling.model, messages=messages, role=role,
                        temperature=0.0, max_tokens=self._sampling.max_tokens)

    async def _select(self, samples: list[Sample]) -> Candidate:
        clusters = await self._matcher.clusters([s.answer for s in samples])
        return select_candidate(samples, clusters)

    # -- internal ------------------------------------------------------------------------

    async def internal(self, question: str) -> Candidate:
        with self._tracer.start_as_current_span("truthlens.acr.e_agent.internal") as span:
            calls = [self._sampled("acr_internal", prompts.internal_messages(t, question))
                     for t in INTERNAL_TEMPLATES]
            results = await asyncio.gather(*(self._chat(c) for c in calls), return_exceptions=True)
            samples: list[Sample] = []
            failures: list[BaseException] = []
            for result in results:
                if isinstance(result, BaseException):
                    failures.append(result)
                else:
                    samples.extend(s for s in result if s.answer)
            _reraise_unexpected(failures)
            if len(samples) < 2:
                raise _no_samples("internal", failures)
            candidate = await self._select(samples)
            _record(span, candidate, templates_failed=len(failures))
            return candidate

    # -- external ------------------------------------------------------------------------

    async def external(self, question: str, passages: Sequence[str]) -> ExternalCandidate:
        with self._tracer.start_as_current_span("truthlens.acr.e_agent.external") as span:
            unique = await self._dedupe(passages)
            extracted = await asyncio.gather(
                *(self._chat(self._greedy("acr_extract", prompts.triples_messages(p, question)))
                  for p in unique),
                return_exceptions=True,
            )
            votes: Counter[tuple[str, str, str]] = Counter()
            first_seen: dict[tuple[str, str, str], Triple] = {}
            failures = [r for r in extracted if isinstance(r, BaseException)]
            _reraise_unexpected(failures)
            for result in extracted:
                if isinstance(result, BaseException):
                    continue
                # One vote per passage: a passage repeating a triple does not outvote others.
                keys_here: set[tuple[str, str, str]] = set()
                for triple in prompts.parse_triples(result[0].text if result else ""):
                    keys_here.add(triple.key())
                    first_seen.setdefault(triple.key(), triple)
                votes.update(keys_here)
            if not votes:
                raise AgentError("no_triples", "no fact triples could be extracted from the passages")
            ranked = [first_seen[k] for k, _ in votes.most_common(self._max_triples)]
            verdict_samples = await self._chat(
                self._greedy("acr_verify", prompts.verify_messages(question, ranked)))
            verdicts = prompts.parse_verdicts(verdict_samples[0].text if verdict_samples else "",
                                              len(ranked))
            kept = _vote([t for t, ok in zip(ranked, verdicts, strict=True) if ok], votes)
            if not kept:
                raise AgentError("no_verified_triples", "no extracted triple matches the question")
            samples = await self._chat(self._sampled(
                "acr_external", prompts.external_answer_messages(question, kept)))
            samples = [s for s in samples if s.answer]
            if len(samples) < 2:
                raise AgentError("too_few_samples", "the external answer call returned < 2 samples")
            candidate = await self._select(samples)
            span.set_attribute("truthlens.acr.passages", len(unique))
            span.set_attribute("truthlens.acr.triples_extracted", len(votes))
            span.set_attribute("truthlens.acr.triples_kept", len(kept))
            _record(span, candidate)
            return ExternalCandidate(candidate, len(unique), len(votes), tuple(kept))

    async def _dedupe(self, passages: Sequence[str]) -> list[str]:
        """Drop empty, verbatim and near-verbatim repeats (cosine ≥ 0.97), keep order."""
        seen: set[str] = set()
        distinct: list[str] = []
        for passage in passages:
            key = " ".join(passage.lower().split())
            if key and key not in seen:
                seen.add(key)
                distinct.append(passage)
        if len(distinct) > 1:
            await self._matcher.warm(distinct)
            kept: list[str] = []
            for passage in distinct:
                if all(self._matcher.cosine(passage, k) < 0.97 for k in kept):
                    kept.append(passage)
            distinct = kept
        return distinct[: self._max_passages]


def _vote(verified: Sequence[Triple], votes: Counter[tuple[str, str, str]]) -> list[Triple]:
    """Per (subject, relation), keep the object(s) with the most passage votes."""
    best: dict[tuple[str, str], int] = {}
    for triple in verified:
        s, r, _ = triple.key()
        best[(s, r)] = max(best.get((s, r), 0), votes[triple.key()])
    return [t for t in verified if votes[t.key()] == best[t.key()[:2]]]


def _reraise_unexpected(failures: Sequence[BaseException]) -> None:
    # Upstream failures degrade the agent; anything else is a bug and must surface.
    for failure in failures:
        if not isinstance(failure, (LLMError, AgentError)):
            raise failure


def _no_samples(which: str, failures: Sequence[BaseException]) -> AgentError:
    reasons = sorted({getattr(f, "reason", type(f).__name__) for f in failures})
    detail = f" (upstream: {', '.join(reasons)})" if reasons else ""
    return AgentError("too_few_samples", f"{which} candidate: fewer than 2 usable samples{detail}")


def _record(span: trace.Span, candidate: Candidate, **extra: int) -> None:
    span.set_attribute("truthlens.acr.mu", candidate.mu)
    span.set_attribute("truthlens.acr.sigma", candidate.sigma)
    span.set_attribute("truthlens.acr.support", candidate.support)
    span.set_attribute("truthlens.acr.samples", candidate.samples)
    span.set_attribute("truthlens.acr.confidence_source", candidate.confidence_source)
    for key, value in extra.items():
        span.set_attribute(f"truthlens.acr.{key}", value)

