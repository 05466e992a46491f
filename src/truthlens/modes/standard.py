"""Standard mode: detector-guided self-refinement (TruthLens proposal §3.2, §5.4).

R₀ is the upstream's answer. While the latest score is at or above the convergence threshold,
the same model (or ``refine_model``) is asked to revise the best answer so far with a prompt
that lists the flagged spans and their confidences next to the context and the question
(:mod:`truthlens.modes.prompts`); each revision is re-detected. The loop stops on
convergence, after ``max_iterations`` rounds, when the exchange budget runs out, when a
refine call or a detection fails, or when the revision is no answer at all
(:mod:`truthlens.modes.revisions`: the prompt's rules echoed back, the original in quotes, JSON).
The best-scoring revision is shipped only when the re-check passes it (not detected); otherwise
the original goes out with its warning — a still-flagged "improvement" is never ``rewritten``.
Every choice of an ``n > 1`` response is refined independently and concurrently.

This module also holds the detection helpers premium mode shares (:func:`detect_answer`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from truthlens.detector.types import Detection, DetectionInput, DetectorError
from truthlens.llm import ChatCall, LLMError
from truthlens.modes.base import ChoiceVerdict, Exchange, Services, Verdict, lower_score
from truthlens.modes.prompts import REFINE_SYSTEM, refine_messages
from truthlens.modes.revisions import why_not_an_answer
from truthlens.options import OptionContext, Section

NAME = "standard"
REWRITES = True  # a revision the re-check passes replaces the answer


@dataclass(frozen=True, slots=True)
class StandardOptions:
    max_iterations: int = 3
    convergence_threshold: float | None = None  # None: the route's detection threshold
    refine_model: str | None = None  # None: the request's model
    refine_temperature: float | None = 0.0  # None: the backend's default


def parse_options(raw: Mapping[str, Any], ctx: OptionContext) -> StandardOptions:
    s = Section(raw, ctx.path)
    s.allow(*(f.name for f in dataclasses.fields(StandardOptions)))
    d = StandardOptions()
    return StandardOptions(
        max_iterations=s.integer("max_iterations", d.max_iterations, lo=1, hi=10),
        convergence_threshold=s.optional_number("convergence_threshold", d.convergence_threshold, lo=0.0, hi=1.0),
        refine_model=s.model("refine_model", ctx),
        refine_temperature=s.optional_number("refine_temperature", d.refine_temperature, lo=0.0, hi=2.0),
    )


# --- detection shared by the modes ---------------------------------------------------------


async def detect_answer(services: Services, exchange: Exchange, answer: str, *,
                        context: Sequence[str] | None = None, deadline: float | None = None) -> Detection:
    """Detect ``answer`` against the query's passages (or ``context``), never past the deadline.

    Detector failures and bad input come back as ``unavailable`` with the reason: a check that
    did not run is never "clean".
    """
    end = exchange.deadline if deadline is None else min(deadline, exchange.deadline)
    timeout = end - time.monotonic()
    if timeout <= 0:
        return Detection.unavailable("budget")
    item = DetectionInput(
        context=tuple(exchange.query.passages if context is None else context),
        question=exchange.query.question,
        answer=answer,
    )
    try:
        return await services.detector.detect(item, threshold=exchange.threshold, timeout_s=timeout)
    except DetectorError as exc:
        return Detection.unavailable(exc.reason)


def detection_reserve_s(first: Detection) -> float:
    """Time to keep back after a model call so its answer can still be detected."""
    return max(0.05, 2.0 * first.latency_ms / 1000.0)


# --- the mode --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _ChoiceOutcome:
    verdict: ChoiceVerdict
    iterations: int
    stop: str
    scores: tuple[float, ...]  # R₀ then each scored revision


class StandardMode:
    name = NAME

    async def run(self, exchange: Exchange, services: Services) -> Verdict:
        opts = exchange.options_as(StandardOptions)
        outcomes = await asyncio.gather(
            *(self._refine_choice(i, exchange, services, opts) for i in range(len(exchange.answers)))
        )
        return Verdict(
            mode=NAME,
            choices=tuple(o.verdict for o in outcomes),
            iterations=max((o.iterations for o in outcomes), default=0),
            attributes={
                "standard.stop": tuple(o.stop for o in outcomes),
                "standard.scores": tuple(" > ".join(f"{s:.4f}" for s in o.scores) for o in outcomes),
                "standard.refine_model": opts.refine_model or exchange.query.model,
            },
        )

    async def _refine_choice(self, index: int, exchange: Exchange, services: Services,
                             opts: StandardOptions) -> _ChoiceOutcome:
        original = exchange.answers[index]
        first = await detect_answer(services, exchange, original)
        if first.status != "detected" or first.score is None:
            stop = "unavailable" if first.status == "unavailable" else "not_detected"
            return _ChoiceOutcome(ChoiceVerdict(index=index, detection=first), 0, stop,
                                  () if first.score is None else (first.score,))
        if services.llm is None:
            return _ChoiceOutcome(ChoiceVerdict(index=index, detection=first), 0, "no_llm", (first.score,))
        converge_below = exchange.threshold if opts.convergence_threshold is None else opts.convergence_threshold
        if first.score < converge_below:  # flagged, yet already below a looser convergence threshold
            return _ChoiceOutcome(ChoiceVerdict(index=index, detection=first), 0, "converged", (first.score,))
        model = opts.refine_model or exchange.query.model
        reserve = detection_reserve_s(first)
        best_text, best = original, first
        scores: list[float] = [first.score]
        iterations = 0
        stop = "max_iterations"
        for iteration in range(1, opts.max_iterations + 1):
            with services.tracer.start_as_current_span("truthlens.standard.iteration") as span:
                span.set_attribute("truthlens.choice", index)
                span.set_attribute("truthlens.iteration", iteration)
                span.set_attribute("truthlens.refine_model", model)
                outcome, text, detection = await self._one_round(exchange, services, opts, model, best_text, best,
                                                                 reserve)
                span.set_attribute("truthlens.outcome", outcome)
                if detection is not None and detection.score is not None:
                    span.set_attribute("truthlens.score", detection.score)
            if text is None or detection is None:  # no revision came back: budget, error, empty
                stop = outcome
                break
            iterations = iteration
            if detection.score is None:
                stop = "detector_unavailable"
                break
            scores.append(detection.score)
            if lower_score(detection, best):
                best_text, best = text, detection
            if detection.score < converge_below:
                stop = "converged"
                break
        # Only an answer the re-check passes is shipped: a revision that scores lower yet is
        # still flagged is no fix, so the original goes out with its warning.
        if best_text != original and best.status != "clean":
            best_text, best, stop = original, first, f"{stop}:still_flagged"
        rewritten = best_text if best_text != original else None
        return _ChoiceOutcome(ChoiceVerdict(index=index, detection=best, text=rewritten,
                                            original=first if rewritten is not None else None), iterations, stop,
                              tuple(scores))

    async def _one_round(self, exchange: Exchange, services: Services, opts: StandardOptions, model: str,
                         answer: str, detection: Detection, reserve: float) -> tuple[str, str | None, Detection | None]:
        """(outcome, revised text, its detection); text is None when the round produced nothing."""
        assert services.llm is not None
        call_deadline = exchange.deadline - reserve
        if call_deadline <= time.monotonic():
            return "budget", None, None
        sampling = exchange.query.sampling
        max_tokens = sampling.get("max_tokens") or sampling.get("max_completion_tokens")
        call = ChatCall(
            model=model,
            messages=refine_messages(exchange.query.question, exchange.query.passages, answer, detection.spans),
            role="refine",
            temperature=opts.refine_temperature,
            max_tokens=max_tokens if isinstance(max_tokens, int) else None,
        )
        try:
            result = await services.llm.chat(call, deadline=call_deadline)
        except LLMError as exc:
            return ("budget" if exc.reason == "budget" else "refine_error"), None, None
        text = result.choices[0].text.strip()
        if not text:
            services.llm.report_unreadable(model, "refine", "the reply has no text")
            return "empty_refine", None, None
        why = why_not_an_answer(text, original=answer, question=exchange.query.question,
                                passages=exchange.query.passages, instructions=(REFINE_SYSTEM,))
        if why is not None:
            services.llm.report_unreadable(model, "refine", f"the revision is no answer ({why})")
            return f"not_an_answer:{why}", None, None
        revised = await detect_answer(services, exchange, text)
        return ("scored" if revised.score is not None else "detector_unavailable"), text, revised


def build() -> StandardMode:
    return StandardMode()
