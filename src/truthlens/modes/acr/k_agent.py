"""ACR K-Agent (§4.2–4.3): counterfactual stability, the fusion weight and the evidence loop.

Round t: (I_c, I_s) from the two calibrated candidates (eq. 20); w_t from (μ_int, μ_ext,
Δu_{t−1}) (eq. 18–19; ``w`` weighs the INTERNAL answer, see :mod:`truthlens.modes.acr.fusion`); the
query's model writes y_t from both candidates and their weights; Δu_t is y_t's counterfactual
instability. In the uncertainty zone |I_c − I_s| ≤ θ with Δu_t < Δu_{t−1}, more evidence is
fetched (retriever endpoint, else passages gating held back) and the external candidate is
rebuilt; otherwise, or at ``max_rounds``, y_t is the answer.

Δu_0 is the instability of the EXTERNAL candidate A_ext. Eq. 18 adds ξ·Δu to the internal
weight, so Δu must measure how fragile the evidence-grounded answer is (§4.2.1: it guards
against "local abnormal evidence"); measured on the upstream's answer instead, a model that
ignored a correct context would be rewarded with more internal weight.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import aiohttp
from opentelemetry import trace

from truthlens.llm import ChatCall, LLMError
from truthlens.modes.acr import prompts
from truthlens.modes.acr.e_agent import Candidate, ExternalCandidate, SamplingSettings
from truthlens.modes.acr.equivalence import AnswerMatcher
from truthlens.modes.acr.fusion import (
    conflict_information,
    fusion_weight,
    in_uncertainty_zone,
    stability,
)
from truthlens.tracing import NO_TRACER, inject_trace_context

if TYPE_CHECKING:
    from truthlens.llm import LLMClient

RebuildExternal = Callable[[Sequence[str]], Awaitable[ExternalCandidate]]


@dataclass(frozen=True, slots=True)
class Round:
    index: int
    mu_int: float
    sigma_int: float
    mu_ext: float
    sigma_ext: float
    i_c: float
    i_s: float
    weight: float  # of the internal answer
    delta_u_before: float
    delta_u_after: float | None  # None: not measured (no further round was possible)
    in_zone: bool
    answer: str
    evidence_added: int = 0


@dataclass(frozen=True, slots=True)
class Resolution:
    answer: str
    rounds: tuple[Round, ...]
    external: ExternalCandidate
    stop_reason: str  # settled | no_more_evidence | max_rounds

    @property
    def last(self) -> Round:
        return self.rounds[-1]


class EvidenceSource:
    """More passages on request: the retriever endpoint first, else the held-back passages.

    Retriever protocol: ``POST retriever_url`` with ``{"query": str, "exclude": [str]}`` →
    ``{"passages": [str]}``. A failing retriever counts as "no more evidence", never as a crash.
    Each request is a client span whose ``traceparent`` it carries.
    """

    def __init__(self, retriever_url: str | None, held_back: Sequence[str], *,
                 timeout_s: float, deadline: float, tracer: trace.Tracer = NO_TRACER) -> None:
        self._url = retriever_url
        self._tracer = tracer
        self._held_back = list(held_back)
        self._timeout_s = timeout_s
        self._deadline = deadline
        self.last_error: str | None = None

    async def more(self, query: str, have: Sequence[str]) -> list[str]:
        known = set(have)
        if self._url is not None:
            fetched = [p for p in await self._retrieve(query, list(have)) if p not in known]
            if fetched:
                return fetched
        fresh = [p for p in self._held_back if p not in known]
        self._held_back = []  # held-back passages are offered once
        return fresh

    async def _retrieve(self, query: str, exclude: list[str]) -> list[str]:
        timeout = min(self._timeout_s, max(0.0, self._deadline - time.monotonic()))
        if timeout <= 0:
            return []
        with self._tracer.start_as_current_span(
            "truthlens.acr.retrieve", kind=trace.SpanKind.CLIENT,
            attributes={"http.request.method": "POST", "url.full": str(self._url)},
        ) as span:
            earlier = self.last_error
            passages = await self._post(query, exclude, timeout, span)
            if self.last_error is not earlier and self.last_error is not None:
                span.set_status(trace.Status(trace.StatusCode.ERROR, self.last_error))
            span.set_attribute("truthlens.acr.passages_returned", len(passages))
            return passages

    async def _post(self, query: str, exclude: list[str], timeout: float, span: trace.Span) -> list[str]:
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as s,
                s.post(str(self._url), json={"query": query, "exclude": exclude},
                       headers=inject_trace_context({})) as r,
            ):
                span.set_attribute("http.response.status_code", r.status)
                if r.status != 200:
                    self.last_error = f"retriever HTTP {r.status}"
                    return []
                payload = await r.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            self.last_error = f"retriever: {type(exc).__name__}: {exc}"
            return []
        passages = payload.get("passages") if isinstance(payload, dict) else None
        if not isinstance(passages, list):
            self.last_error = "retriever: reply has no 'passages' list"
            return []
        return [p for p in passages if isinstance(p, str) and p.strip()]


class KAgent:
    def __init__(self, llm: LLMClient, matcher: AnswerMatcher, sampling: SamplingSettings, *,
                 deadline: float, theta: float, max_rounds: int, tracer: trace.Tracer = NO_TRACER) -> None:
        self._llm = llm
        self._matcher = matcher
        self._sampling = sampling
        self._deadline = deadline
        self._theta = theta
        self._max_rounds = max_rounds
        self._tracer = tracer
        self.calls = 0

    async def _ask(self, role: str, messages: list[dict[str, str]]) -> str:
        self.calls += 1
        call = ChatCall(model=self._sampling.model, messages=messages, role=role,
                        temperature=0.0, max_tokens=self._sampling.max_tokens)
        result = await self._llm.chat(call, deadline=self._deadline)
        return result.choices[0].text.strip()

    async def instability(self, question: str, answer: str) -> float | None:
        """Δu of ``answer`` (eq. 8, 17); None when no counterfactual could be built or answered."""
        with self._tracer.start_as_current_span("truthlens.acr.k_agent.stability") as span:
            reply = await self._ask("acr_perturb", prompts.perturb_messages(question, answer))
            premises = list(prompts.parse_perturbations(reply).values())
            span.set_attribute("truthlens.acr.perturbations", len(premises))
            if not premises:
                return None
            replies = await asyncio.gather(
                *(self._ask("acr_counterfactual", prompts.counterfactual_answer_messages(question, p))
                  for p in premises),
                return_exceptions=True,
            )
            answers = []
            for item in replies:
                if isinstance(item, LLMError):
                    continue
                if isinstance(item, BaseException):
                    raise item
                answers.append(prompts.extract_answer(item))
            if not answers:
                return None
            core = prompts.extract_answer(answer)
            await self._matcher.warm([core, *answers])
            delta_u = stability(core, answers, self._matcher.same)
            span.set_attribute("truthlens.acr.delta_u", delta_u)
            return delta_u

    async def fuse(self, question: str, internal: str, external: str, weight: float) -> str:
        with self._tracer.start_as_current_span("truthlens.acr.k_agent.fuse") as span:
            span.set_attribute("truthlens.acr.w", weight)
            return await self._ask("acr_fuse",
                                   prompts.fusion_messages(question, internal, external, weight))

    async def resolve(
        self,
        question: str,
        internal: Candidate,
        external: ExternalCandidate,
        passages: Sequence[str],
        evidence: EvidenceSource,
        rebuild_external: RebuildExternal,
    ) -> Resolution:
        # Unknown stability (no usable counterfactuals) is treated as maximal instability:
        # it must not look like a stable answer.
        delta_prev = await self.instability(question, external.candidate.answer)
        delta_prev = 1.0 if delta_prev is None else delta_prev
        rounds: list[Round] = []
        have = list(passages)
        stop = "max_rounds"
        for index in range(1, self._max_rounds + 1):
            c_int, c_ext = internal, external.candidate
            with self._tracer.start_as_current_span("truthlens.acr.k_agent.round") as span:
                i_c, i_s = conflict_information(c_int.mu, c_int.sigma, c_ext.mu, c_ext.sigma)
                weight = fusion_weight(c_int.mu, c_ext.mu, delta_prev)
                answer = await self.fuse(question, c_int.answer, c_ext.answer, weight)
                zone = in_uncertainty_zone(i_c, i_s, self._theta)
                # Δu_t only matters when another round is possible: outside the zone, or in the
                # last round, the loop ends whatever it is, so its calls are saved.
                could_continue = zone and index < self._max_rounds
                delta_now = await self.instability(question, answer) if could_continue else None
                for key, value in (("round", index), ("mu_int", c_int.mu), ("sigma_int", c_int.sigma),
                                   ("mu_ext", c_ext.mu), ("sigma_ext", c_ext.sigma), ("i_c", i_c),
                                   ("i_s", i_s), ("w", weight), ("delta_u_prev", delta_prev),
                                   ("in_zone", zone)):
                    span.set_attribute(f"truthlens.acr.{key}", value)
                if delta_now is not None:
                    span.set_attribute("truthlens.acr.delta_u", delta_now)
                added: list[str] = []
                improving = delta_now is not None and delta_now < delta_prev
                if improving:
                    added = await evidence.more(question, have)
                    span.set_attribute("truthlens.acr.evidence_added", len(added))
                rounds.append(Round(index, c_int.mu, c_int.sigma, c_ext.mu, c_ext.sigma, i_c, i_s,
                                    weight, delta_prev, delta_now, zone, answer, len(added)))
            if not improving:
                stop = "settled" if index < self._max_rounds or not zone else "max_rounds"
                break
            if not added:
                stop = "no_more_evidence"
                break
            have.extend(added)
            external = await rebuild_external(have)
            delta_prev = delta_now if delta_now is not None else delta_prev
        return Resolution(rounds[-1].answer, tuple(rounds), external, stop)
