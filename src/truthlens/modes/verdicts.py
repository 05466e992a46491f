"""Premium mode's claim verdicts: one verifier's JSON verdict on each claim (asked as structured
output, read strictly), a verifier's vote from its verdict and the detector's entailment check,
and the tally of one run's verdict calls — which replies could not be read, which calls failed,
what the LLM client had to work around — that says *why* a run found no consensus.

An unreadable reply is never agreement: every claim it should have judged is ``unknown`` (no
vote), the call is reported (one WARNING line, ``truthlens_llm_calls_total{outcome="unreadable"}``)
and the run's ``x-truthlens-consensus-reason`` says ``unreadable``, not ``disagree``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field

from truthlens.llm import ChatCall, JsonReply, LLMError
from truthlens.modes.base import Services
from truthlens.modes.prompts import VERDICT_SCHEMA, parse_verdicts, verdict_entries, verdict_messages
from truthlens.modes.prompts import Verdict as ClaimVerdict


@dataclass(slots=True)
class Tally:
    """What one run's verdict calls came to (read into the verdict's attributes)."""

    unreadable: list[str] = field(default_factory=list)  # verifiers whose reply was not the verdict JSON
    failed: list[str] = field(default_factory=list)  # "model:reason" of verdict calls that failed
    fallbacks: set[str] = field(default_factory=set)  # what the LLM client worked around


# The current run's tally. A run calls start_tally() first; the tasks it gathers copy its context,
# so they share that one object and never another run's.
_TALLY: ContextVar[Tally] = ContextVar("truthlens_premium_tally")


def start_tally() -> Tally:
    tally = Tally()
    _TALLY.set(tally)
    return tally


def current_tally() -> Tally:
    return _TALLY.get(None) or Tally()


def no_consensus_reason(disputed: bool, tally: Tally) -> str:
    """Why a run has no consensus: ``disagree`` (a claim lost its majority), ``unreadable`` (claims
    had no vote because verdict replies could not be read), ``failed`` (verdict calls failed) or
    ``unverified`` (the verifiers answered ``unknown``)."""
    if disputed:
        return "disagree"
    if tally.unreadable:
        return "unreadable"
    if tally.failed:
        return "failed"
    return "unverified"


async def ask_verdicts(services: Services, question: str, model: str, answer: str, claims: Sequence[str], *,
                       deadline: float) -> tuple[ClaimVerdict, ...]:
    """``model``'s verdict on each claim against its own ``answer``; ``unknown`` for every claim when
    the call fails or the reply is not the requested JSON (both tallied)."""
    unknown: tuple[ClaimVerdict, ...] = parse_verdicts("", len(claims))
    if not claims or services.llm is None:
        return unknown
    call = ChatCall(model=model, messages=verdict_messages(question, answer, claims), role="verdict",
                    temperature=0.0, json_reply=JsonReply("claim_verdicts", VERDICT_SCHEMA))
    tally = current_tally()
    try:
        result = await services.llm.chat(call, deadline=deadline)
    except LLMError as exc:
        tally.failed.append(f"{model}:{exc.reason}")
        return unknown
    tally.fallbacks.update(result.fallbacks)
    text = result.choices[0].text
    if verdict_entries(text) is None:
        services.llm.report_unreadable(model, "verdict", "the reply is not the verdict JSON object")
        tally.unreadable.append(model)
    return parse_verdicts(text, len(claims))


def vote(verdict: ClaimVerdict, entailed: bool | None) -> bool | None:
    """A verifier's vote on a claim from its own verdict and the detector's entailment check."""
    if verdict == "refuted" or entailed is False:
        return False
    if verdict == "supported":
        return True
    return None  # unknown or unreadable: no vote, never agreement
