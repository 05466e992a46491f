"""Plain data and the one interface shared by every detector backend and every caller."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from opentelemetry import trace

from truthlens.tracing import NO_TRACER

if TYPE_CHECKING:
    from truthlens.llm import Endpoint

Status = Literal["clean", "detected", "unavailable"]
Aggregation = Literal["noisy_or", "max_span", "span_mean"]
AGGREGATIONS: tuple[Aggregation, ...] = ("noisy_or", "max_span", "span_mean")
# What the detector's fact check found missing from the context (src/truthlens/detector/facts/),
# and what flagged a span: the model alone, or such a fact inside it.
FactReason = Literal[
    "unsupported_number", "unsupported_unit", "unsupported_date", "unsupported_entity", "misattributed_entity",
    "contradicted_relation",
]
# "llm": a generative detector on a chat endpoint quoted it (backend "llm"); "confirmed_llm": the
# encoder flagged it and the cascade's generative confirmer quoted it too (detector.confirm).
SpanReason = Literal["model", FactReason, "llm", "confirmed_llm"]
# How one answer token's probabilities from different context chunks combine: "max" flags a
# token any chunk flags (LettuceDetect's choice; a claim whose evidence sits in one chunk is
# unsupported in all the others, so long contexts flag correct answers); "min" keeps a token
# any chunk supports (misses grow with the number of chunks); "best" reads every token from
# the chunk that supports the answer window best (lowest mean probability). "grounded" (the
# default) judges each answer sentence once, beside the context pieces most relevant to it
# (src/truthlens/detector/grounding.py): a passage that never mentions a claim is not in its row, a
# contradiction in the passage that does is; when the whole context fits, all four are the same.
ChunkAggregation = Literal["grounded", "max", "min", "best"]
CHUNK_AGGREGATIONS: tuple[ChunkAggregation, ...] = ("grounded", "max", "min", "best")


class DetectorError(Exception):
    """The detector could not produce a verdict; ``reason`` is a short metric-safe label."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class InvalidInput(DetectorError):
    """The caller's input cannot be checked (wrong types, over the size limit)."""

    def __init__(self, message: str) -> None:
        super().__init__("invalid_input", message)


class Overloaded(DetectorError):
    """The bounded queue is full: the caller should fail open/closed per its policy."""

    def __init__(self, message: str) -> None:
        super().__init__("overloaded", message)


@dataclass(frozen=True, slots=True)
class DetectionInput:
    """One grounded answer to check: passages in order, the question, the answer."""

    context: Sequence[str]
    question: str
    answer: str


@dataclass(frozen=True, slots=True)
class Span:
    """A run of hallucinated answer characters: ``answer[start:end] == text``.

    ``reason`` says what flagged it: ``"model"`` (the token classifier alone) or the fact check's
    reason for a fact inside it the context never states (``"unsupported_number"``,
    ``"unsupported_unit"``, ``"unsupported_date"``, ``"unsupported_entity"``), or a name the
    context gives in another role (``"misattributed_entity"``), or a comparison it reverses or a
    negation it flips (``"contradicted_relation"``); ``"llm"`` when a generative
    detector quoted it, ``"confirmed_llm"`` when the encoder flagged it and the cascade's
    generative confirmer agreed.

    Where to look (:mod:`truthlens.detector.explain`; ``None`` where there is nothing to say):
    ``fact`` is the answer's value the fact check could not find (``"1925"``, ``"Buzz Aldrin"``;
    ``None`` for a span only the model flagged), ``passage`` the index of the context passage
    closest to the span's claim, ``evidence`` that passage's sentence saying most about the claim,
    and ``context_fact`` the value of the same kind that sentence states instead (``"1889"``,
    ``"Michael Collins"``)."""

    start: int
    end: int
    text: str
    prob: float
    reason: SpanReason = "model"
    fact: str | None = None
    passage: int | None = None
    evidence: str | None = None
    context_fact: str | None = None


@dataclass(frozen=True, slots=True)
class Detection:
    """The verdict on one answer.

    ``status`` is never ``"clean"`` unless the model actually ran over the whole answer;
    ``score`` is ``None`` exactly when ``status == "unavailable"`` (then ``reason`` says why).
    """

    status: Status
    score: float | None
    spans: tuple[Span, ...] = ()
    latency_ms: float = 0.0
    reason: str | None = None
    chunks: int = 0
    answer_tokens: int = 0

    @property
    def detected(self) -> bool:
        return self.status == "detected"

    @staticmethod
    def unavailable(reason: str, latency_ms: float = 0.0) -> Detection:
        return Detection(status="unavailable", score=None, reason=reason, latency_ms=latency_ms)


@dataclass(frozen=True, slots=True)
class RemoteSettings:
    """Where ``backend: remote`` sends model rows: an Open Inference Protocol (KServe v2) gRPC
    server (Triton, KServe, any v2 server) hosting the same model as the local ``model`` dir,
    which still supplies the tokenizer and manifest (src/truthlens/detector/backends/remote.py)."""

    url: str = "127.0.0.1:8001"  # host:port of the server's gRPC endpoint
    model_name: str = "truthlens_detector"
    model_version: str = ""  # "": the server's choice (Triton: the latest)
    timeout_ms: float = 2000.0  # deadline of one batch call; keep it under the routes' detection_ms
    channels: int = 2  # HTTP/2 connections, round-robin (one saturates near a few thousand rows/s)
    health_interval_s: float = 2.0  # how often /v2/health/ready and model readiness are polled
    tls: bool = False


@dataclass(frozen=True, slots=True)
class LlmSettings:
    """Where ``backend: llm`` (or the cascade's confirmer) asks for unsupported spans: a chat
    model of the config's ``models:`` section, under a strict JSON schema
    (src/truthlens/detector/backends/llm.py)."""

    model: str  # the ``models:`` entry (metric label, endpoint)
    endpoint: Endpoint  # that entry, copied at load: detector settings change only on restart
    role: str = "detect"  # why the call is made (``truthlens_models_used_total{role}``): detect | confirm
    max_tokens: int = 1024  # room for the JSON reply; a reply cut short is malformed, never clean


# When the cascade asks its confirmer: "flagged" (the only choice) sends only answers the
# encoder flagged, so a clean answer costs nothing more than the encoder.
ConfirmWhen = Literal["flagged"]


@dataclass(frozen=True, slots=True)
class ConfirmSettings:
    """``detector.confirm``: a generative detector that confirms or clears the encoder's spans
    on routes that opt in (``confirm: true``; src/truthlens/detector/backends/cascade.py)."""

    detector: DetectorSettings  # backend "llm", with its own size limits and concurrency
    when: ConfirmWhen = "flagged"


@dataclass(frozen=True, slots=True)
class DetectorHooks:
    """What the process hands every backend: its tracer and the call counters. Backends that
    make no calls of their own (onnx, remote) ignore them; ``llm`` traces and counts each chat
    call with them and reports quotes it had to drop (not in the answer)."""

    tracer: trace.Tracer = NO_TRACER
    on_model_call: Callable[[str, str], None] | None = None  # (model, role), as LLMClient's on_call
    on_dropped_quotes: Callable[[str, int], None] | None = None  # (role, how many)
    on_llm_outcome: Callable[[str, str, str], None] | None = None  # (model, role, outcome), as LLMClient's
    on_llm_fallback: Callable[[str, str], None] | None = None  # (model, fallback), as LLMClient's


@dataclass(frozen=True, slots=True)
class DetectorSettings:
    """Start-up settings of a detector backend (validated by the config loader)."""

    model_dir: str | None = None  # None: the shipped default model
    backend: str = "onnx"
    provider: Literal["auto", "cpu", "cuda"] = "auto"
    # Per-token probability above which a token is hallucinated. None: the model's own
    # calibrated threshold (manifest ``calibration.token_threshold``), 0.5 if it has none.
    token_threshold: float | None = None
    # How spans become the answer's score, and the shortest span (characters) that counts. None:
    # the model's calibrated choice (manifest ``calibration``), else noisy_or / 1.
    aggregation: Aggregation | None = None
    chunk_aggregation: ChunkAggregation = "grounded"
    min_span_length: int | None = None
    min_span_confidence: float = 0.0
    max_batch_size: int = 8
    max_wait_ms: float = 2.0
    max_queue: int = 256
    intra_op_threads: int = 0  # 0: onnxruntime's default
    max_answer_chars: int = 200_000
    max_context_chars: int = 2_000_000
    answer_overlap_tokens: int = 32
    # Check the answer's numbers, dates and names against the context by rule and raise the
    # model's probability where one is missing (src/truthlens/detector/facts/, fusion.py).
    evidence_checks: bool = True
    # With evidence checks: also flag a name the context gives in another role
    # (src/truthlens/detector/facts/roles.py). None: the model's calibrated choice.
    role_checks: bool | None = None
    # The answer's score from the model's learned verdict (its manifest's ``verdict``,
    # src/truthlens/detector/verdict.py) rather than from the span rule alone; a model without
    # one always uses the span rule.
    learned_verdict: bool = True
    # Batches run at once (``batching.max_in_flight``): 1 for an in-process session; more for
    # a remote server, so round trips overlap and its own dynamic batcher sees the load.
    max_in_flight: int = 1
    remote: RemoteSettings | None = None  # required by backend "remote"
    llm: LlmSettings | None = None  # required by backend "llm"
    confirm: ConfirmSettings | None = None  # the cascade's second stage (encoder backends only)
    extra: dict[str, object] = field(default_factory=dict)


class Detector(Protocol):
    """Every backend: async, safe to call from many concurrent streams."""

    async def detect(
        self,
        item: DetectionInput,
        *,
        threshold: float,
        timeout_s: float | None = None,
    ) -> Detection:
        """Check one answer. Never raises for model or queue failures: those come back as
        ``Detection.unavailable(reason)``. Raises :class:`InvalidInput` for bad input."""
        ...

    async def detect_many(
        self,
        items: Sequence[DetectionInput],
        *,
        threshold: float,
        timeout_s: float | None = None,
    ) -> list[Detection]:
        """Check several answers concurrently (they may share one batch)."""
        ...

    async def close(self) -> None: ...
