"""``mode: auto`` — detect cheaply, escalate only when the monitor finds a problem.

Stages: ``lightweight`` (one detection; with ``expert_model`` also a cheap expert answer to
compare) → by the monitor's finding (:mod:`truthlens.modes.escalation.monitor`): clean → stop;
conflict → ``acr``; flagged → ``standard``; then, when the answer is still flagged and
``premium`` options are configured → ``premium``. Each stage is the real mode, loaded through
the registry and run on the answers the previous stage produced.

``Verdict.attributes``: ``escalated_to`` (the last stage that ran: ``lightweight`` when
nothing was escalated) and ``escalation_path`` (every stage, in order), from which the gateway
counts ``truthlens_escalations_total{from_mode,to_mode}``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from truthlens.detector.types import DetectionInput
from truthlens.llm import ChatCall, LLMError
from truthlens.modes import premium, registry, standard
from truthlens.modes.acr import mode as acr_mode
from truthlens.modes.acr.mode import AcrOptions
from truthlens.modes.base import ChoiceVerdict, Exchange, Services, Verdict
from truthlens.modes.escalation.monitor import Assessment, assess
from truthlens.modes.premium import PremiumOptions
from truthlens.modes.standard import StandardOptions
from truthlens.options import OptionContext, Section

NAME = "auto"
REWRITES = True  # every stage it escalates to (standard, acr, premium) rewrites
log = logging.getLogger(__name__)

StageOptions: TypeAlias = StandardOptions | AcrOptions | PremiumOptions


@dataclass(frozen=True, slots=True)
class AutoOptions:
    expert_model: str | None = None  # cheap model whose answer the monitor compares
    expert_threshold: float = 0.4  # MetaRAG's k: cosine below it → escalate
    expert_max_tokens: int = 256
    # The options of each stage's mode, parsed by that mode.
    standard: StandardOptions = field(default_factory=StandardOptions)
    acr: AcrOptions = field(default_factory=AcrOptions)
    premium: PremiumOptions | None = None  # None: premium is not configured, never escalated to


def parse_options(raw: Mapping[str, Any], ctx: OptionContext) -> AutoOptions:
    s = Section(raw, ctx.path)
    s.allow(*(f.name for f in dataclasses.fields(AutoOptions)))
    d = AutoOptions()
    return AutoOptions(
        expert_model=s.model("expert_model", ctx),
        expert_threshold=s.number("expert_threshold", d.expert_threshold, lo=-1.0, hi=1.0),  # a cosine
        expert_max_tokens=s.integer("expert_max_tokens", d.expert_max_tokens, lo=1),
        standard=standard.parse_options(s.section("standard").raw, _stage_context(s, "standard", ctx)),
        acr=acr_mode.parse_options(s.section("acr").raw, _stage_context(s, "acr", ctx)),
        # Premium needs verification models, so it has no defaults to fall back on: absent
        # (or null) means auto never escalates to it.
        premium=(premium.parse_options(s.section("premium").raw, _stage_context(s, "premium", ctx))
                 if s.get("premium") is not None else None),
    )


def _stage_context(s: Section, mode: str, ctx: OptionContext) -> OptionContext:
    return OptionContext(path=s.key(mode), models=ctx.models)


def build() -> AutoMode:
    return AutoMode()


class AutoMode:
    name = NAME

    async def run(self, exchange: Exchange, services: Services) -> Verdict:
        opts = exchange.options_as(AutoOptions)
        q = exchange.query
        with services.tracer.start_as_current_span("truthlens.escalation.monitor") as span:
            detections, expert = await asyncio.gather(
                services.detector.detect_many(
                    [DetectionInput(q.passages, q.question, a) for a in exchange.answers],
                    threshold=exchange.threshold, timeout_s=max(0.001, exchange.remaining_s())),
                self._expert_answer(exchange, services, opts),
            )
            assessments: list[Assessment] = [
                await assess(a, d, q.passages, services.embedder, expert_answer=expert,
                             expert_threshold=opts.expert_threshold)
                for a, d in zip(exchange.answers, detections, strict=True)
            ]
            findings = {a.finding for a in assessments}
            span.set_attribute("truthlens.escalation.findings", sorted(findings))
        verdict = Verdict(mode=NAME, choices=tuple(ChoiceVerdict(i, d) for i, d in enumerate(detections)))
        path = ["lightweight"]
        monitor = {"findings": [a.finding for a in assessments], "why": [a.why for a in assessments],
                   "expert_similarity": [a.expert_similarity for a in assessments]}
        # One stage for the whole response: a conflict in any choice is a conflict of the query.
        escalation: tuple[str, StageOptions] | None
        if "conflict" in findings:
            escalation = ("acr", opts.acr)
        elif "flagged" in findings:
            escalation = ("standard", opts.standard)
        else:
            escalation = None  # clean, or the detector could not run: nothing to escalate on
        errors: dict[str, str] = {}
        stages: dict[str, Any] = {}
        if escalation is not None:
            target, target_options = escalation
            verdict, error = await self._stage(target, target_options, exchange, services, verdict)
            path.append(target)
            stages[target] = dict(verdict.attributes) if error is None else {}
            if error:
                errors[target] = error
            if verdict.status == "detected" and opts.premium is not None:
                verdict, error = await self._stage("premium", opts.premium, exchange, services, verdict)
                path.append("premium")
                stages["premium"] = dict(verdict.attributes) if error is None else {}
                if error:
                    errors["premium"] = error
        attributes: dict[str, Any] = {"escalated_to": path[-1], "escalation_path": path,
                                      "monitor": monitor, "stages": stages}
        if errors:
            attributes["escalation_errors"] = errors
        return dataclasses.replace(verdict, mode=NAME, attributes=attributes)

    async def _expert_answer(self, exchange: Exchange, services: Services,
                             opts: AutoOptions) -> str | None:
        if opts.expert_model is None or services.llm is None:
            return None
        call = ChatCall(model=opts.expert_model, messages=list(exchange.query.messages),
                        role="expert", temperature=0.0, max_tokens=opts.expert_max_tokens)
        try:
            result = await services.llm.chat(call, deadline=exchange.deadline)
        except LLMError as exc:
            log.info("expert model %s failed (%s); monitoring with the detector only",
                     opts.expert_model, exc.reason)
            return None
        return result.choices[0].text

    async def _stage(self, mode: str, options: StageOptions, exchange: Exchange, services: Services,
                     previous: Verdict) -> tuple[Verdict, str | None]:
        """Run ``mode`` on the answers so far; a failing stage keeps the previous verdict."""
        answers = tuple(c.text if c.text is not None else a
                        for c, a in zip(previous.choices, exchange.answers, strict=True))
        module = registry.load_mode_module(mode)
        staged = dataclasses.replace(exchange, mode=mode, options=options, answers=answers)
        with services.tracer.start_as_current_span(f"truthlens.escalation.{mode}"):
            try:
                verdict = await module.build().run(staged, services)
            except Exception as exc:  # a broken stage must not lose the check already made
                log.exception("escalation to %s failed", mode)
                return previous, f"{type(exc).__name__}: {exc}"
        # Keep earlier rewrites of choices the later stage left alone.
        merged = tuple(
            c if c.text is not None else dataclasses.replace(c, text=p.text)
            for c, p in zip(verdict.choices, previous.choices, strict=True)
        )
        headers = {**previous.headers, **verdict.headers}
        return dataclasses.replace(verdict, choices=merged, headers=headers,
                                   iterations=previous.iterations + verdict.iterations), None
