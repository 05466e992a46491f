"""What a policy mode is given and what it returns: plain, typed data and one protocol.

Modes import this module, :mod:`truthlens.options` (to parse their options),
:mod:`truthlens.detector.types` and :mod:`truthlens.llm` only; they never see protobufs,
HTTP bodies or the gateway's stream state.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from opentelemetry import trace

from truthlens.detector.types import Detection, Detector, Status
from truthlens.tracing import NO_TRACER

if TYPE_CHECKING:
    from truthlens.llm import LLMClient

OptionsT = TypeVar("OptionsT")


@dataclass(frozen=True, slots=True)
class GroundedQuery:
    """The client's request as a mode needs it."""

    model: str
    question: str
    passages: tuple[str, ...]
    # The chat messages as forwarded upstream (a context extension field already stripped).
    messages: tuple[Mapping[str, Any], ...]
    # Sampling parameters the client sent (temperature, top_p, max_tokens, ...), for re-asks.
    sampling: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Exchange:
    """One checked HTTP exchange: the query, the upstream's answers and the route's settings."""

    decision: str
    mode: str
    threshold: float
    options: Any  # the mode's own validated options object (from its parse_options)
    query: GroundedQuery
    answers: tuple[str, ...]  # message content of each choice, by choice index
    deadline: float  # time.monotonic() by which run() must return
    # Passages evidence gating kept out of ``query`` (best first); a mode that
    # wants more evidence (ACR) may bring them back before asking a retriever.
    held_back_passages: tuple[str, ...] = ()

    def remaining_s(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def options_as(self, kind: type[OptionsT]) -> OptionsT:
        """``options`` as the mode's own options type.

        Options reach a mode only through its ``parse_options``; any other object is a
        programming error, and running with defaults instead would hide it, so it raises.
        """
        if not isinstance(self.options, kind):
            raise TypeError(f"mode {self.mode!r} needs {kind.__name__}, got {type(self.options).__name__}; "
                            "build options with the mode's parse_options")
        return self.options


@dataclass(frozen=True, slots=True)
class ChoiceVerdict:
    """The outcome for one choice: the detection of its final text, and the text if rewritten."""

    index: int
    detection: Detection
    text: str | None = None  # None: the upstream's content stands
    # When rewritten: the detection of the upstream's own answer (its score stays visible).
    original: Detection | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a mode decided. The gateway turns it into headers, body rewrites and metrics."""

    mode: str
    choices: tuple[ChoiceVerdict, ...]
    iterations: int = 0
    # Extra response headers (full names, e.g. "x-truthlens-acr-weight"); values are ASCII.
    headers: Mapping[str, str] = field(default_factory=dict)
    # Extra facts for the exchange span and the client's JSON details field.
    attributes: Mapping[str, Any] = field(default_factory=dict)
    # The mode refuses to answer (e.g. require_consensus with abstain): the gateway
    # replaces every choice's content with ``abstain_message``.
    abstain_message: str | None = None

    @property
    def status(self) -> Status:
        statuses = {c.detection.status for c in self.choices}
        if "detected" in statuses:
            return "detected"
        if "unavailable" in statuses or not statuses:
            return "unavailable"
        return "clean"

    @property
    def score(self) -> float | None:
        scores = [c.detection.score for c in self.choices if c.detection.score is not None]
        return max(scores) if scores else None

    @property
    def rewritten(self) -> bool:
        return self.abstain_message is not None or any(c.text is not None for c in self.choices)


class Embedder(Protocol):
    """Sentence embeddings (L2-normalised rows) for gating, clustering and similarity."""

    async def embed(self, texts: list[str]) -> Any:  # numpy.ndarray of shape (len(texts), dim)
        ...


@dataclass(frozen=True, slots=True)
class Services:
    """Shared, long-lived collaborators a mode may use. Absent ones are ``None``.

    ``tracer`` comes from the gateway's own tracer provider: modes start their spans with it
    (never with a process-global tracer), so their steps land in the exchange's trace."""

    detector: Detector
    llm: LLMClient | None = None
    embedder: Embedder | None = None
    tracer: trace.Tracer = NO_TRACER
    # The cascade's second stage (detector.confirm): the gateway wraps ``detector`` with it on
    # routes that opt in (confirm: true); modes only ever see the wrapped detector.
    confirmer: Detector | None = None


class Mode(Protocol):
    """A policy mode. ``run`` must return by ``exchange.deadline`` and never raise for
    upstream or detector failures: degrade to the best verdict it has."""

    name: str

    async def run(self, exchange: Exchange, services: Services) -> Verdict: ...


def lower_score(candidate: Detection, incumbent: Detection) -> bool:
    """Whether ``candidate`` is the better-grounded answer: a strictly lower score wins; an
    unscored candidate never replaces anything (shared by the modes that keep the best answer)."""
    if candidate.score is None:
        return False
    return incumbent.score is None or candidate.score < incumbent.score
