"""Premium mode: cross-model consensus with segment replacement (TruthLens §3.3, §5.5; Finch-Zk).

1. The verification models answer the same request in parallel (same messages; the query's
   passages are added, quoted, as a user message when the forwarded messages do not carry them).
2. Each answer is split into claim segments (:mod:`truthlens.modes.claims`).
3. Every segment of the primary answer is checked against every verifier's answer by
   entailment, from two sides. Each verifier states, in a strict JSON verdict per claim, whether
   its own answer asserts the claim (``supported``), contradicts or denies it (``refuted``) or
   neither (``unknown``): an answer that quotes a claim only to reject it shares the claim's
   words yet refutes it, which no word-level check can tell. The hallucination DETECTOR is the
   second side: the verifier's answer is the passage, the segment is the answer, supported iff
   its score is below the route threshold. A token classifier trained to flag unsupported answer
   spans reacts to a changed number, date, name or a dropped "not" inside an otherwise identical
   sentence; embedding similarity does not — "built in 1889" and "built in 1887" embed almost
   identically, as do a claim and its negation. A verifier votes for a claim only when its
   verdict says ``supported`` and the detector does not find the claim unsupported; against it
   when the verdict says ``refuted`` or the detector finds it unsupported; otherwise (no
   verdict, an unreadable one, ``unknown``) it does not vote — never agreement.
4. Votes over models (the primary counts as one vote for itself); more than half keeps a
   segment. An inconsistent segment is replaced by the aligned segment (highest token overlap)
   of the most reliable disagreeing verifier, where reliability is how well that model's whole
   answer is grounded in the context per the detector; with no aligned segment it is removed.
5. An optional judge model synthesises the final answer from the agreed claims and the
   disputed versions (called only when there was a dispute: with full agreement the primary
   answer already is the synthesis).
6. The final answer is re-detected against the context; it replaces the upstream's answer only
   when it scores better and the re-check passes it (a still-flagged hybrid is not shipped).
   ``require_consensus`` turns a claim without any majority into a warning (the choice stays
   detected) or an abstention. A claim no verifier voted on (every verdict about it unreadable or
   ``unknown``, and the detector not against it) is kept, but it has no consensus:
   ``x-truthlens-consensus`` is never ``true`` on the primary's word alone.
7. With ``max_iterations > 1``, a choice still detected after a round goes another round: the
   verifiers see the current answer and its disputed claims, answer again (the critique step
   of multi-agent debate), and steps 3-6 repeat against their new answers.

A verifier that fails is counted and named in the attributes; if all fail, the mode falls
back to lightweight behaviour (detect and report, no rewrite). A reply that is no answer
(:mod:`truthlens.modes.revisions`: no claim at all, such as "OK" or a JSON verdict object, or an
echo of the prompt) counts as a failed verifier, a judge's such synthesis as a failed judge, and
a final text that is none is never shipped: the primary goes out with its warning.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from truthlens.detector.types import Detection, DetectionInput, DetectorError
from truthlens.llm import ChatCall, LLMError
from truthlens.modes.base import ChoiceVerdict, Exchange, Services, Verdict, lower_score
from truthlens.modes.claims import Segment, align, rebuild, segment
from truthlens.modes.prompts import Verdict as ClaimVerdict
from truthlens.modes.prompts import (
    debate_messages,
    judge_messages,
    with_context,
)
from truthlens.modes.revisions import why_not_an_answer
from truthlens.modes.standard import detect_answer
from truthlens.modes.verdicts import ask_verdicts, current_tally, no_consensus_reason, start_tally, vote
from truthlens.options import OptionContext, Section

NAME = "premium"
REWRITES = True  # inconsistent claims are replaced; require_consensus may abstain

DEFAULT_ABSTAIN = (
    "I can't give a reliable answer to this: the models consulted disagree on facts that the "
    "provided context does not settle."
)
# Share of the remaining budget the verifiers may use; the rest is for detections and the judge.
_VERIFY_SHARE = 0.6
# Share of the remaining budget the verifiers' claim verdicts may use (the judge comes after).
_VERDICT_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class PremiumOptions:
    verification_models: tuple[str, ...]
    judge_model: str | None = None
    require_consensus: bool = False
    on_no_consensus: Literal["warn", "abstain"] = "warn"
    abstain_message: str = DEFAULT_ABSTAIN
    verify_temperature: float | None = 0.0
    always_verify: bool = True  # False: skip the cross-check when every primary answer is clean
    # Consensus rounds. Rounds after the first run only for choices still detected: the
    # verifiers see the current answer and its disputed claims and answer again (the critique
    # step of multi-agent debate, proposal §5.5.2).
    max_iterations: int = 1


def parse_options(raw: Mapping[str, Any], ctx: OptionContext) -> PremiumOptions:
    s = Section(raw, ctx.path)
    s.allow(*(f.name for f in dataclasses.fields(PremiumOptions)))
    # verification_models has no default, so the other options' defaults come from an instance built with it.
    d = PremiumOptions(verification_models=s.model_list("verification_models", ctx))
    return PremiumOptions(
        verification_models=d.verification_models,
        judge_model=s.model("judge_model", ctx),
        require_consensus=s.boolean("require_consensus", d.require_consensus),
        on_no_consensus=s.choice("on_no_consensus", d.on_no_consensus, ("warn", "abstain")),
        abstain_message=s.string("abstain_message", d.abstain_message),
        verify_temperature=s.optional_number("verify_temperature", d.verify_temperature, lo=0.0, hi=2.0),
        always_verify=s.boolean("always_verify", d.always_verify),
        max_iterations=s.integer("max_iterations", d.max_iterations, lo=1, hi=10),
    )


@dataclass(frozen=True, slots=True)
class _Verifier:
    model: str
    text: str
    segments: tuple[Segment, ...]
    score: float | None  # whole answer against the context; None: unavailable


@dataclass(frozen=True, slots=True)
class _CrossCheck:
    text: str  # the hybrid (or the judge's synthesis)
    segments: int
    replaced: int
    removed: int
    unverified: int  # segments no verifier verdict was available for
    consensus: bool  # every claim has a verifier's vote and a majority (the primary's or the replacement's)
    judge: str  # "not_needed" | "none" | "ok" | "failed:<reason>"
    disputed: tuple[str, ...]  # the primary's claims without a majority


@dataclass(frozen=True, slots=True)
class _Choice:
    """One choice between rounds: its best text so far and that text's detection."""

    text: str
    detection: Detection
    check: _CrossCheck | None  # the latest cross-check of this choice


class PremiumMode:
    name = NAME

    async def run(self, exchange: Exchange, services: Services) -> Verdict:
        start_tally()
        opts = exchange.options_as(PremiumOptions)
        verify_deadline = time.monotonic() + _VERIFY_SHARE * exchange.remaining_s()
        request = with_context(exchange.query.messages, exchange.query.passages)
        primaries_task = asyncio.gather(*(detect_answer(services, exchange, a) for a in exchange.answers))
        if opts.always_verify or services.llm is None:
            answers, primaries = await asyncio.gather(
                self._ask_verifiers(exchange, services, opts, request, verify_deadline), primaries_task)
        else:
            primaries = await primaries_task
            if not any(d.detected for d in primaries):
                return self._fallback(primaries, "primary_clean", {})
            answers = await self._ask_verifiers(exchange, services, opts, request, verify_deadline)
        failed = {m: r for m, r in answers.items() if isinstance(r, LLMError)}
        texts = {m: r for m, r in answers.items() if isinstance(r, str)}
        if not texts:
            return self._fallback(primaries, "all_verifiers_failed", failed)
        verifiers = await self._score_verifiers(exchange, services, texts)
        states = list(await asyncio.gather(*(
            self._settle(exchange, services, opts, _Choice(text=a, detection=d, check=None), verifiers)
            for a, d in zip(exchange.answers, primaries, strict=True))))
        rounds = 1
        debate_failures: list[str] = []
        while rounds < opts.max_iterations and exchange.remaining_s() > 0:
            todo = [i for i, st in enumerate(states) if st.detection.detected]
            if not todo:
                break
            rounds += 1
            results = await asyncio.gather(*(self._debate(exchange, services, opts, states[i]) for i in todo))
            for i, (state, round_failed) in zip(todo, results, strict=True):
                states[i] = state
                debate_failures += [f"{m}:{e.reason}@round{rounds}" for m, e in sorted(round_failed.items())]
        return self._verdict(exchange, opts, states, rounds, verifiers, texts, failed, debate_failures, primaries)

    def _verdict(self, exchange: Exchange, opts: PremiumOptions, states: Sequence[_Choice], rounds: int,
                 verifiers: Sequence[_Verifier], texts: Mapping[str, str], failed: Mapping[str, LLMError],
                 debate_failures: Sequence[str], primaries: Sequence[Detection]) -> Verdict:
        checks = [st.check for st in states if st.check is not None]
        consensus = all(c.consensus for c in checks)
        choices = []
        for i, (original, st) in enumerate(zip(exchange.answers, states, strict=True)):
            if st.text != original and (st.detection.status != "clean" or _no_answer(exchange, st.text, original)):
                # A hybrid the re-check still flags, or one that answers nothing, is no fix: the
                # original goes out with its warning.
                st = replace(st, text=original, detection=primaries[i])
            detection = st.detection
            no_majority = st.check is not None and not st.check.consensus
            warn_on_no_majority = opts.require_consensus and opts.on_no_consensus == "warn"
            if warn_on_no_majority and no_majority and detection.status == "clean":
                # The claims have no majority: the answer must carry the warning even if the
                # detector finds the text grounded.
                detection = replace(detection, status="detected", reason="no_consensus")
            text = st.text if st.text != original else None
            choices.append(ChoiceVerdict(index=i, detection=detection, text=text,
                                         original=primaries[i] if text is not None else None))
        abstain = opts.abstain_message if opts.require_consensus and not consensus \
            and opts.on_no_consensus == "abstain" else None
        tally = current_tally()
        headers = {"x-truthlens-consensus": "true" if consensus else "false",
                   "x-truthlens-verifiers": f"{len(texts)}/{len(texts) + len(failed)}"}
        if not consensus:
            headers["x-truthlens-consensus-reason"] = no_consensus_reason(any(c.disputed for c in checks), tally)
        return Verdict(
            mode=NAME,
            choices=tuple(choices),
            iterations=rounds,
            headers=headers,
            attributes={
                "premium.verdicts_unreadable": tuple(sorted(set(tally.unreadable))),
                "premium.verdicts_failed": tuple(sorted(set(tally.failed))),
                "premium.fallbacks": tuple(sorted(tally.fallbacks)),
                "premium.verifiers_ok": tuple(sorted(texts)),
                "premium.verifiers_failed": tuple(f"{m}:{e.reason}" for m, e in sorted(failed.items()))
                + tuple(debate_failures),
                "premium.reliability": tuple(f"{v.model}:{'n/a' if v.score is None else f'{v.score:.4f}'}"
                                             for v in verifiers),
                "premium.segments": tuple(c.segments for c in checks),
                "premium.replaced": tuple(c.replaced for c in checks),
                "premium.removed": tuple(c.removed for c in checks),
                "premium.unverified": tuple(c.unverified for c in checks),
                "premium.judge": tuple(c.judge for c in checks),
                "premium.consensus": consensus,
            },
            abstain_message=abstain,
        )

    async def _settle(self, exchange: Exchange, services: Services, opts: PremiumOptions, state: _Choice,
                      verifiers: Sequence[_Verifier]) -> _Choice:
        """Cross-check the state's text; take the result if the detector scores it better."""
        check = await self._cross_check(exchange, services, opts, state.text, verifiers)
        if check.text != state.text:
            final = await detect_answer(services, exchange, check.text)
            if lower_score(final, state.detection):
                return _Choice(text=check.text, detection=final, check=check)
        return replace(state, check=check)

    async def _debate(self, exchange: Exchange, services: Services, opts: PremiumOptions,
                      state: _Choice) -> tuple[_Choice, dict[str, LLMError]]:
        """A later round: the verifiers see the current answer and its disputed claims, answer
        again, and the answer is cross-checked against their new answers."""
        disputed = state.check.disputed if state.check is not None else ()
        messages = debate_messages(exchange.query.question, exchange.query.passages, state.text, disputed)
        deadline = time.monotonic() + _VERIFY_SHARE * exchange.remaining_s()
        answers = await self._ask_verifiers(exchange, services, opts, messages, deadline)
        failed = {m: r for m, r in answers.items() if isinstance(r, LLMError)}
        texts = {m: r for m, r in answers.items() if isinstance(r, str)}
        if not texts:
            return state, failed
        verifiers = await self._score_verifiers(exchange, services, texts)
        return await self._settle(exchange, services, opts, state, verifiers), failed

    @staticmethod
    def _fallback(primaries: Sequence[Detection], why: str, failed: Mapping[str, LLMError]) -> Verdict:
        """Lightweight behaviour: the primary answers' own detections, nothing rewritten."""
        return Verdict(
            mode=NAME,
            choices=tuple(ChoiceVerdict(index=i, detection=d) for i, d in enumerate(primaries)),
            iterations=0,
            attributes={"premium.fallback": why,
                        "premium.verifiers_failed": tuple(f"{m}:{e.reason}" for m, e in sorted(failed.items()))},
        )

    async def _ask_verifiers(self, exchange: Exchange, services: Services, opts: PremiumOptions,
                             messages: Sequence[Mapping[str, Any]], deadline: float) -> dict[str, str | LLMError]:
        if services.llm is None:
            return {m: LLMError("unknown_model", "no LLM client configured") for m in opts.verification_models}
        llm = services.llm
        max_tokens = exchange.query.sampling.get("max_tokens")

        async def ask(model: str) -> str | LLMError:
            call = ChatCall(model=model, messages=messages, role="verify", temperature=opts.verify_temperature,
                            max_tokens=max_tokens if isinstance(max_tokens, int) else None)
            try:
                result = await llm.chat(call, deadline=deadline)
            except LLMError as exc:
                return exc
            text = result.choices[0].text.strip()
            if not text:
                return LLMError("bad_response", f"{model}: empty answer")
            why = _no_answer(exchange, text, "")
            if why is not None:
                llm.report_unreadable(model, "verify", f"the answer is no answer ({why})")
                return LLMError("not_an_answer", f"{model}: the reply is no answer ({why})")
            return text

        results = await asyncio.gather(*(ask(m) for m in opts.verification_models))
        return dict(zip(opts.verification_models, results, strict=True))

    async def _score_verifiers(self, exchange: Exchange, services: Services,
                               texts: Mapping[str, str]) -> list[_Verifier]:
        detections = await asyncio.gather(*(detect_answer(services, exchange, t) for t in texts.values()))
        verifiers = [_Verifier(model=m, text=t, segments=segment(t), score=d.score)
                     for (m, t), d in zip(texts.items(), detections, strict=True)]
        # Most reliable first: lowest hallucination score; unscored models last.
        return sorted(verifiers, key=lambda v: (v.score is None, v.score or 0.0))

    async def _entailed(self, exchange: Exchange, services: Services,
                        pairs: Sequence[tuple[str, str]]) -> list[bool | None]:
        """For (passage, claim) pairs: supported (True), not (False), or no verdict (None)."""
        if not pairs:
            return []
        items = [DetectionInput(context=(passage,), question=exchange.query.question, answer=claim)
                 for passage, claim in pairs]
        timeout = exchange.remaining_s()
        if timeout <= 0:
            return [None] * len(pairs)
        try:
            detections = await services.detector.detect_many(items, threshold=exchange.threshold, timeout_s=timeout)
        except DetectorError:
            return [None] * len(pairs)
        return [None if d.score is None else d.score < exchange.threshold for d in detections]

    async def _votes(self, exchange: Exchange, services: Services,
                     asks: Sequence[tuple[_Verifier, Sequence[str]]]) -> list[list[bool | None]]:
        """Per (verifier, claims): the verifier's vote on each claim — for (True), against (False),
        none (None). See the module docstring, step 3: entailment decides, not shared words."""
        pairs = [(v.text, claim) for v, claims in asks for claim in claims]
        entailed, verdicts = await asyncio.gather(
            self._entailed(exchange, services, pairs),
            asyncio.gather(*(self._verdicts(exchange, services, v, claims) for v, claims in asks)))
        detector = iter(entailed)
        return [[vote(said, next(detector)) for said in row] for row in verdicts]

    async def _verdicts(self, exchange: Exchange, services: Services, verifier: _Verifier,
                        claims: Sequence[str]) -> tuple[ClaimVerdict, ...]:
        deadline = time.monotonic() + _VERDICT_SHARE * exchange.remaining_s()
        return await ask_verdicts(services, exchange.query.question, verifier.model, verifier.text, claims,
                                  deadline=deadline)

    async def _cross_check(self, exchange: Exchange, services: Services, opts: PremiumOptions,
                           primary: str, verifiers: Sequence[_Verifier]) -> _CrossCheck:
        with services.tracer.start_as_current_span("truthlens.premium.cross_check") as span:
            segs = segment(primary)
            claims = [s.text for s in segs]
            votes = await self._votes(exchange, services, [(v, claims) for v in verifiers])
            replacements: dict[Segment, str | None] = {}
            agreed: list[str] = []
            disputed: list[tuple[Segment, list[tuple[str, str]]]] = []
            used: set[tuple[str, int]] = set()
            pending: list[tuple[Segment, _Verifier, Segment]] = []
            unverified = 0
            for k, seg in enumerate(segs):
                row = [by_verifier[k] for by_verifier in votes]
                known = [(v, ok) for v, ok in zip(verifiers, row, strict=True) if ok is not None]
                if not known:
                    unverified += 1
                if (1 + sum(ok for _, ok in known)) / (1 + len(known)) > 0.5:
                    agreed.append(seg.text)
                    continue
                versions: list[tuple[str, str]] = []
                chosen: tuple[_Verifier, Segment] | None = None
                for v, ok in known:  # most reliable first
                    if ok:
                        continue
                    aligned, _ = align(seg, v.segments)
                    if aligned is None:
                        continue
                    versions.append((v.model, aligned.text))
                    key = (v.model, aligned.start)
                    if chosen is None and key not in used:
                        chosen = (v, aligned)
                        used.add(key)
                disputed.append((seg, versions))
                replacements[seg] = chosen[1].text if chosen else None
                if chosen:
                    pending.append((seg, *chosen))
            # A claim no verifier voted on (every reply about it unreadable, or unknown) has the
            # primary's word alone: that is no consensus, whatever the arithmetic of one vote says.
            consensus = unverified == 0 and await self._replacements_have_majority(
                exchange, services, verifiers, pending, len(segs), disputed)
            hybrid = rebuild(primary, replacements) if replacements else primary
            judge = "not_needed"
            if disputed and opts.judge_model:
                judge, hybrid = await self._judge(exchange, services, opts.judge_model, agreed, disputed, hybrid)
            elif disputed:
                judge = "none"
            removed = sum(1 for r in replacements.values() if r is None)
            span.set_attribute("truthlens.segments", len(segs))
            span.set_attribute("truthlens.replaced", len(replacements) - removed)
            span.set_attribute("truthlens.removed", removed)
            span.set_attribute("truthlens.consensus", consensus)
            return _CrossCheck(text=hybrid or primary, segments=len(segs), replaced=len(replacements) - removed,
                               removed=removed, unverified=unverified, consensus=consensus, judge=judge,
                               disputed=tuple(seg.text for seg, _ in disputed))

    async def _replacements_have_majority(
        self, exchange: Exchange, services: Services, verifiers: Sequence[_Verifier],
        pending: Sequence[tuple[Segment, _Verifier, Segment]], n_segments: int,
        disputed: Sequence[tuple[Segment, list[tuple[str, str]]]],
    ) -> bool:
        """A disputed claim still has consensus when its replacement wins a majority: its source
        votes for it, the other verifiers are asked, the primary (which said otherwise) votes against."""
        if len(pending) < len(disputed):
            return False  # a claim was removed: no version of it won
        owners: dict[str, list[int]] = {v.model: [] for v in verifiers}  # verifier -> pending claims it judges
        for k, (_, source, _) in enumerate(pending):
            for v in verifiers:
                if v.model != source.model:
                    owners[v.model].append(k)
        asks = [(v, [pending[k][2].text for k in owners[v.model]]) for v in verifiers]
        votes = await self._votes(exchange, services, asks)
        for k in range(len(pending)):
            mine = [ok for v, row in zip(verifiers, votes, strict=True)
                    for owner, ok in zip(owners[v.model], row, strict=True) if owner == k and ok is not None]
            # voters: the primary (against), the source (for) and every verifier with a verdict
            if (1 + sum(mine)) / (2 + len(mine)) <= 0.5:
                return False
        return True

    async def _judge(self, exchange: Exchange, services: Services, model: str, agreed: Sequence[str],
                     disputed: Sequence[tuple[Segment, list[tuple[str, str]]]], hybrid: str) -> tuple[str, str]:
        if services.llm is None:
            return "failed:no_llm", hybrid
        messages = judge_messages(exchange.query.question, exchange.query.passages, agreed,
                                  [(seg.text, versions) for seg, versions in disputed])
        # Keep a slice of the budget for the final detection of the synthesis.
        deadline = exchange.deadline - max(0.05, 0.15 * exchange.remaining_s())
        try:
            result = await services.llm.chat(ChatCall(model=model, messages=messages, role="judge", temperature=0.0),
                                             deadline=deadline)
        except LLMError as exc:
            return f"failed:{exc.reason}", hybrid
        text = result.choices[0].text.strip()
        if not text:
            return "failed:empty", hybrid
        why = _no_answer(exchange, text, hybrid)
        if why is not None:
            services.llm.report_unreadable(model, "judge", f"the synthesis is no answer ({why})")
            return f"failed:not_an_answer:{why}", hybrid
        return "ok", text


def _no_answer(exchange: Exchange, text: str, original: str) -> str | None:
    """Why ``text`` answers nothing of the exchange (see :mod:`truthlens.modes.revisions`), or None."""
    return why_not_an_answer(text, original=original, question=exchange.query.question,
                             passages=exchange.query.passages, instructions=())


def build() -> PremiumMode:
    return PremiumMode()
