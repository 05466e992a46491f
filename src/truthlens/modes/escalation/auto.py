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
from dataclasses import dataclass
from typing import Any

from truthlens.modes import registry
from truthlens.modes.base import (
    ChoiceVerdict,
    ConfigError,
    Exchange,
    OptionContext,
    Services,
    Verdict,
)
from truthlens.detector.types import DetectionInput
from truthlens.modes.escalation.monitor import Assessment, assess
from truthlens.llm import ChatCall, LLMError
from truthlens.options import check_keys, read_model

NAME = "auto"
log = logging.getLogger(__name__)

_STAGE_MODES = ("standard", "acr", "premium")


@dataclass(frozen=True, slots=True)
class AutoOptions:
    expert_model: str | None = None  # cheap model whose answer the monitor compares
    expert_threshold: float = 0.4  # MetaRAG's k: cosine below it → escalate
    expert_max_tokens: int = 256
    standard: Any = None  # parsed options of each stage's mode
    acr: Any = None
    premium: Any = None  # None: premium is not configured, never escalated to


def parse_options(raw: Mapping[str, Any], ctx: OptionContext) -> AutoOptions:
    check_keys(raw, {f.name for f in dataclasses.fields(AutoOptions)}, ctx)
    values: dict[str, Any] = {}
    expert = read_model(raw, "expert_model", ctx)
    if expert is not None:
        values["expert_model"] = expert
    k = raw.get("expert_threshold", 0.4)
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not -1.0 <= k <= 1.0:
        raise ConfigError(f"{ctx.path}.expert_threshold", f"expected a cosine in [-1, 1], got {k!r}")
    values["expert_threshold"] = float(k)
    tokens = raw.get("expert_max_tokens", 256)
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        raise ConfigError(f"{ctx.path}.expert_max_tokens", f"expected a positive integer, got {tokens!r}")
    values["expert_max_tokens"] = tokens
    for mode in _STAGE_MODES:
        sub = raw.get(mode, {} if mode != "premium" else None)
        if sub is None:
            continue
        if not isinstance(sub, Mapping):
            raise ConfigError(f"{ctx.path}.{mode}", "must be a mapping of that mode's options")
        sub_ctx = OptionContext(path=f"{ctx.path}.{mode}", models=ctx.models)
        try:
            module = registry.load_mode_module(mode)
        except ImportError as exc:
            raise ConfigError(f"{ctx.path}.{mode}", f"mode {mode!r} is not available: {exc}") from None
        values[mode] = module.parse_options(sub, sub_ctx)
    return AutoOptions(**values)


def build() -> AutoMode:
    return AutoMode()


class AutoMode:
    name = NAME

    async def run(self, exchange: Exchange, services: Services) -> Verdict:
        opts = exchange.options if isinstance(exchange.options, AutoOptions) else AutoOptions()
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
        if "conflict" in findings:
            target: str | None = "acr"
        elif "flagged" in findings:
            target = "standard"
        else:
            target = None  # clean, or the detector could not run: nothing to escalate on
        errors: dict[str, str] = {}
        stages: dict[str, Any] = {}
        if target is not None:
            verdict, error = await self._stage(target, getattr(opts, target), exchange, services, verdict)
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

    async def _stage(self, mode: str, options: Any, exchange: Exchange, services: Services,
                     previous: Verdict) -> tuple[Verdict, str | None]:
        """Run ``mode`` on the answers so far; a failing stage keeps the previous verdict."""
        answers = tuple(c.text if c.text is not None else a
                        for c, a in zip(previous.choices, exchange.answers, strict=True))
        module = registry.load_mode_module(mode)
        if options is None:
            options = module.parse_options({}, OptionContext(path=f"auto.{mode}", models=frozenset()))
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
