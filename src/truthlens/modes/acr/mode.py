"""``mode: acr`` — resolve a context–memory conflict by fusing internal and external answers.

Flow per exchange: detect the upstream answer, and in parallel build A_int (question only)
and A_ext (passages only) with the E-Agent. No conflict — A_int and A_ext agree, or the
detector finds the upstream answer clean and it agrees with A_int — returns the upstream
answer unchanged (source ``agreement``). Otherwise the K-Agent loop writes a fused answer,
which replaces the choices it disagrees with and is re-detected against the context.
A failed or late agent never fails the exchange: the verdict is then the upstream answer's
detection, with the reason in the attributes.

The fused answer may move away from the context, toward the model's memory: that is ACR's
point when a context is stale or wrong, and a surprise on a route that treats its context as
the truth. ``prefer: context`` gives those routes RAG semantics: an answer the detector finds
supported by the context stands (source ``context`` when the model's memory disagrees), a
flagged one is replaced by the context's own answer (A_ext), and no fusion runs. Either way
``x-truthlens-acr-context`` says whether the final answer is still supported by the context
(``kept``) or not (``departed``), and a replacement is the answer to the question alone: the
attributes say which share of the answer's words the replacement kept (``words_kept``): other
claims of the answer, right or wrong, are not carried over.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from truthlens.detector.types import Detection, DetectionInput
from truthlens.llm import LLMError
from truthlens.modes.acr.e_agent import (
    BAD_LOGPROBS,
    AgentError,
    Candidate,
    EAgent,
    ExternalCandidate,
    SamplingSettings,
)
from truthlens.modes.acr.equivalence import AnswerMatcher
from truthlens.modes.acr.fusion import fusion_weight
from truthlens.modes.acr.k_agent import EvidenceSource, KAgent, Resolution
from truthlens.modes.acr.prompts import extract_answer
from truthlens.modes.base import ChoiceVerdict, Exchange, Services, Verdict
from truthlens.options import OptionContext, Section

log = logging.getLogger(__name__)

NAME = "acr"
REWRITES = True  # the fused answer replaces the choices it disagrees with
Source = Literal["internal", "external", "fused", "agreement", "context"]
# fusion: ACR as published, the context weighed against the model's memory; context: the
# context wins (RAG semantics), the memory is only reported.
Prefer = Literal["fusion", "context"]
WEIGHT_HEADER = "x-truthlens-acr-weight"
SOURCE_HEADER = "x-truthlens-acr-source"
_WORD = re.compile(r"\w{4,}")
CONTEXT_HEADER = "x-truthlens-acr-context"  # kept | departed: is the final answer supported by the context


@dataclass(frozen=True, slots=True)
class AcrOptions:
    model: str | None = None  # answers the agents' prompts; None: the query's model
    samples: int = 3  # M (§5.6: M = 3)
    temperature: float = 0.5  # §5.6, Fig. 7 optimum
    top_p: float = 0.8
    max_tokens: int = 256
    cluster_threshold: float = 0.85  # cosine for "same answer" (guarded, see equivalence.py)
    theta: float = 0.05  # uncertainty zone |I_c − I_s| ≤ θ
    max_rounds: int = 2
    max_passages: int = 8
    max_triples: int = 24
    retriever_url: str | None = None
    retriever_timeout_s: float = 5.0
    # Default fusion: a route picks acr (or auto) to resolve context-memory conflicts, which
    # a context-always-wins rule would make a no-op; routes that want RAG semantics say context.
    prefer: Prefer = "fusion"


def parse_options(raw: Mapping[str, Any], ctx: OptionContext) -> AcrOptions:
    s = Section(raw, ctx.path)
    s.allow(*(f.name for f in dataclasses.fields(AcrOptions)))
    d = AcrOptions()
    return AcrOptions(
        model=s.model("model", ctx),
        samples=s.integer("samples", d.samples, lo=2, hi=16),  # calibration needs M >= 2
        temperature=s.number("temperature", d.temperature, lo=0.0, hi=2.0),
        top_p=s.number("top_p", d.top_p, lo=1e-6, hi=1.0),
        max_tokens=s.integer("max_tokens", d.max_tokens, lo=1, hi=32_768),
        cluster_threshold=s.number("cluster_threshold", d.cluster_threshold, lo=0.0, hi=1.0),
        theta=s.number("theta", d.theta, lo=0.0, hi=10.0),
        max_rounds=s.integer("max_rounds", d.max_rounds, lo=1, hi=8),
        max_passages=s.integer("max_passages", d.max_passages, lo=1, hi=256),
        max_triples=s.integer("max_triples", d.max_triples, lo=1, hi=256),
        retriever_url=s.optional_http_url("retriever_url"),
        retriever_timeout_s=s.number("retriever_timeout_s", d.retriever_timeout_s, lo=0.01, hi=600.0),
        prefer=s.choice("prefer", d.prefer, ("fusion", "context")),
    )


def build() -> AcrMode:
    return AcrMode()


@dataclass(frozen=True, slots=True)
class _Outcome:
    verdict_texts: tuple[str | None, ...]
    source: Source
    weight: float
    internal: Candidate
    external: ExternalCandidate | None
    resolution: Resolution | None
    calls: int
    prefer: Prefer = "fusion"


class AcrMode:
    name = NAME

    async def run(self, exchange: Exchange, services: Services) -> Verdict:
        opts = exchange.options_as(AcrOptions)
        answers = exchange.answers
        if not answers:
            return Verdict(mode=NAME, choices=())
        with services.tracer.start_as_current_span("truthlens.acr") as span:
            detect_task = asyncio.create_task(self._detect(exchange, services, answers))
            outcome: _Outcome | None = None
            failure: str | None = None
            fallbacks: set[str] = set()  # filled by the E-Agent's calls, read even when ACR fails
            if services.llm is None or services.embedder is None:
                failure = "acr needs an LLM client and an embedder"
            else:
                # Keep time for re-detecting the fused answer after the agents are done.
                reserve = min(2.0, 0.2 * exchange.remaining_s())
                try:
                    async with asyncio.timeout_at(exchange.deadline - reserve):
                        outcome = await self._resolve(exchange, services, opts, detect_task, fallbacks)
                except TimeoutError:
                    failure = "timeout: the exchange budget ran out before ACR finished"
                except (AgentError, LLMError) as exc:
                    failure = f"{getattr(exc, 'reason', 'error')}: {exc}"
                except Exception as exc:  # a reply that broke ACR's arithmetic: the detector's verdict stands
                    log.exception("acr failed on decision %r; the detector's verdict stands", exchange.decision)
                    failure = f"error: {type(exc).__name__}: {exc}"
            upstream = await detect_task
            if outcome is None:
                span.set_attribute("truthlens.acr.outcome", "incomplete")
                span.set_attribute("truthlens.acr.reason", str(failure))
                return Verdict(
                    mode=NAME,
                    choices=tuple(ChoiceVerdict(i, d) for i, d in enumerate(upstream)),
                    attributes={"acr": {"outcome": "incomplete", "reason": failure,
                                        **_fallback_facts(fallbacks, None)}},
                )
            span.set_attribute("truthlens.acr.source", outcome.source)
            span.set_attribute("truthlens.acr.w", outcome.weight)
            span.set_attribute("truthlens.acr.mu_int", outcome.internal.mu)
            span.set_attribute("truthlens.acr.sigma_int", outcome.internal.sigma)
            if outcome.external is not None:
                span.set_attribute("truthlens.acr.mu_ext", outcome.external.candidate.mu)
                span.set_attribute("truthlens.acr.sigma_ext", outcome.external.candidate.sigma)
            span.set_attribute("truthlens.acr.upstream_calls", outcome.calls)
            return await self._verdict(exchange, services, outcome, upstream, fallbacks)

    async def _detect(self, exchange: Exchange, services: Services,
                      texts: Sequence[str]) -> list[Detection]:
        q = exchange.query
        items = [DetectionInput(q.passages, q.question, t) for t in texts]
        return await services.detector.detect_many(
            items, threshold=exchange.threshold, timeout_s=max(0.001, exchange.remaining_s()))

    async def _resolve(self, exchange: Exchange, services: Services, opts: AcrOptions,
                       detect_task: asyncio.Task[list[Detection]], fallbacks: set[str]) -> _Outcome:
        assert services.llm is not None and services.embedder is not None
        q = exchange.query
        sampling = SamplingSettings(opts.model or q.model, opts.samples, opts.temperature,
                                    opts.top_p, opts.max_tokens)
        matcher = AnswerMatcher(services.embedder, opts.cluster_threshold)
        e_agent = EAgent(services.llm, matcher, sampling, deadline=exchange.deadline,
                         max_passages=opts.max_passages, max_triples=opts.max_triples,
                         tracer=services.tracer)
        e_agent.fallbacks = fallbacks
        k_agent = KAgent(services.llm, matcher, sampling, deadline=exchange.deadline,
                         theta=opts.theta, max_rounds=opts.max_rounds, tracer=services.tracer)
        answers = exchange.answers
        external_task = asyncio.create_task(e_agent.external(q.question, q.passages))
        try:
            internal = await e_agent.internal(q.question)
            detections = await asyncio.shield(detect_task)
            await matcher.warm([internal.answer, *answers])
            if opts.prefer == "context":
                return await self._keep_context(matcher, internal, detections, answers, external_task,
                                                e_agent)
            # Clean against the context AND what the model itself knows: nothing to resolve.
            if all(d.status == "clean" and matcher.same(internal.answer, a)
                   for d, a in zip(detections, answers, strict=True)):
                external_task.cancel()
                weight = fusion_weight(internal.mu, internal.mu, 0.0)
                return _Outcome((None,) * len(answers), "agreement", weight, internal, None, None,
                                e_agent.calls)
            external = await external_task
        finally:
            if not external_task.done():
                external_task.cancel()
            elif not external_task.cancelled():
                external_task.exception()  # mark a failure we no longer need as retrieved
        await matcher.warm([external.candidate.answer])
        if matcher.same(internal.answer, external.candidate.answer):
            # Δu = 0: no counterfactual was run; w then reflects the confidence gap only.
            weight = fusion_weight(internal.mu, external.candidate.mu, 0.0)
            return _Outcome((None,) * len(answers), "agreement", weight, internal, external, None,
                            e_agent.calls)
        evidence = EvidenceSource(opts.retriever_url, exchange.held_back_passages,
                                  timeout_s=opts.retriever_timeout_s, deadline=exchange.deadline,
                                  tracer=services.tracer)
        resolution = await k_agent.resolve(
            q.question, internal, external, q.passages, evidence,
            lambda passages: e_agent.external(q.question, passages))
        final = resolution.answer
        await matcher.warm([final, *answers, extract_answer(final),
                            resolution.external.candidate.answer])
        texts = tuple(None if matcher.same(a, final) else final for a in answers)
        source = _source(matcher, final, internal.answer, resolution.external.candidate.answer)
        return _Outcome(texts, source, resolution.last.weight, internal, resolution.external,
                        resolution, e_agent.calls + k_agent.calls)

    async def _keep_context(self, matcher: AnswerMatcher, internal: Candidate, detections: list[Detection],
                            answers: Sequence[str], external_task: asyncio.Task[ExternalCandidate],
                            e_agent: EAgent) -> _Outcome:
        """``prefer: context``: supported answers stand, flagged ones get the context's answer."""
        flagged = {i for i, d in enumerate(detections) if d.status == "detected"}
        if not flagged:
            external_task.cancel()
            memory_agrees = all(matcher.same(internal.answer, a) for a in answers)
            # No A_ext was built: w reflects the internal confidence only (as for agreement).
            weight = fusion_weight(internal.mu, internal.mu, 0.0)
            return _Outcome((None,) * len(answers), "agreement" if memory_agrees else "context", weight,
                            internal, None, None, e_agent.calls, "context")
        external = await external_task
        context_answer = external.candidate.answer
        await matcher.warm([context_answer])
        texts = tuple(context_answer if i in flagged and not matcher.same(a, context_answer) else None
                      for i, a in enumerate(answers))
        weight = fusion_weight(internal.mu, external.candidate.mu, 0.0)
        return _Outcome(texts, "external", weight, internal, external, None, e_agent.calls, "context")

    async def _verdict(self, exchange: Exchange, services: Services, outcome: _Outcome,
                       upstream: list[Detection], fallbacks: set[str]) -> Verdict:
        rewritten = [i for i, t in enumerate(outcome.verdict_texts) if t is not None]
        fresh = (await self._detect(exchange, services,
                                    [outcome.verdict_texts[i] or "" for i in rewritten])
                 if rewritten else [])
        detections = list(upstream)
        for i, detection in zip(rewritten, fresh, strict=True):
            detections[i] = detection
        choices = tuple(ChoiceVerdict(i, d, outcome.verdict_texts[i],
                                      original=upstream[i] if outcome.verdict_texts[i] is not None else None)
                        for i, d in enumerate(detections))
        # Departed: an answer ACR wrote is not supported by the context (the memory won).
        departed = any(detections[i].status == "detected" for i in rewritten)
        headers = {WEIGHT_HEADER: f"{outcome.weight:.3f}", SOURCE_HEADER: outcome.source,
                   CONTEXT_HEADER: "departed" if departed else "kept"}
        rounds = outcome.resolution.rounds if outcome.resolution else ()
        facts = {**_facts(outcome), **_fallback_facts(fallbacks, outcome.internal.confidence_source)}
        facts["context"] = "departed" if departed else "kept"
        facts["rewrites"] = [
            {"index": i, "words_kept": _words_kept(exchange.answers[i], outcome.verdict_texts[i] or "")}
            for i in rewritten
        ]
        return Verdict(
            mode=NAME,
            choices=choices,
            iterations=len(rounds),
            headers=headers,
            attributes={"acr": facts},
        )


def _words_kept(before: str, after: str) -> float:
    """Share of ``before``'s distinct words (4+ characters, any case) that ``after`` still has:
    how much of an answer survived being replaced by an answer to the question alone."""
    words = set(_WORD.findall(before.lower()))
    if not words:
        return 1.0
    return round(len(words & set(_WORD.findall(after.lower()))) / len(words), 4)


def _source(matcher: AnswerMatcher, final: str, internal: str, external: str) -> Source:
    core = extract_answer(final)
    like_int = matcher.same(core, internal) or matcher.same(final, internal)
    like_ext = matcher.same(core, external) or matcher.same(final, external)
    if like_int and not like_ext:
        return "internal"
    if like_ext and not like_int:
        return "external"
    return "fused"


def _fallback_facts(fallbacks: set[str], confidence_source: str | None) -> dict[str, Any]:
    """What the model server did not support, and where the confidences came from because of it."""
    facts: dict[str, Any] = {"fallbacks": sorted(fallbacks)}
    if confidence_source is not None:
        facts["confidence_source"] = confidence_source
        if confidence_source == "agreement":
            facts["confidence_reason"] = (
                "the model server returned no log-probs: confidence is the share of samples that agree"
                if "no_logprobs" in fallbacks else
                "the model server returned log-probs out of range (NaN, infinite or above 0): confidence is the "
                "share of samples that agree" if BAD_LOGPROBS in fallbacks else
                "some samples came back without log-probs")
    return facts


def _facts(outcome: _Outcome) -> dict[str, Any]:
    def r(x: float) -> float:
        return round(float(x), 4)

    facts: dict[str, Any] = {
        "outcome": ("resolved" if outcome.resolution else "agreement" if outcome.source == "agreement"
                    else "context_preferred"),
        "source": outcome.source,
        "prefer": outcome.prefer,
        "weight": r(outcome.weight),
        "internal": {"answer": outcome.internal.answer, "mu": r(outcome.internal.mu),
                     "sigma": r(outcome.internal.sigma), "support": r(outcome.internal.support)},
        "upstream_calls": outcome.calls,
    }
    if outcome.external is not None:
        c = outcome.external.candidate
        facts["external"] = {"answer": c.answer, "mu": r(c.mu), "sigma": r(c.sigma),
                             "support": r(c.support),
                             "triples_kept": len(outcome.external.triples_kept)}
    if outcome.resolution is not None:
        facts["stop_reason"] = outcome.resolution.stop_reason
        facts["rounds"] = [
            {"round": x.index, "w": r(x.weight), "i_c": r(x.i_c), "i_s": r(x.i_s),
             "delta_u_before": r(x.delta_u_before),
             "delta_u": None if x.delta_u_after is None else r(x.delta_u_after),
             "in_zone": x.in_zone, "evidence_added": x.evidence_added}
            for x in outcome.resolution.rounds
        ]
    return facts
