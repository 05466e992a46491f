"""Plain data and the one interface shared by every detector backend and every caller."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

Status = Literal["clean", "detected", "unavailable"]
Aggregation = Literal["noisy_or", "max_span"]
# How one answer token's probabilities from different context chunks combine: "max" flags a
# token any chunk flags (LettuceDetect's choice; a claim whose evidence sits in one chunk is
# unsupported in all the others, so long contexts flag correct answers); "min" keeps a token
# any chunk supports (misses grow with the number of chunks); "best" reads every token from
# the chunk that supports the answer window best (lowest mean probability).
ChunkAggregation = Literal["max", "min", "best"]


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
    """A run of hallucinated answer characters: ``answer[start:end] == text``."""

    start: int
    end: int
    text: str
    prob: float


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
class DetectorSettings:
    """Start-up settings of a detector backend (validated by the config loader)."""

    model_dir: str | None = None  # None: the shipped default model
    backend: str = "onnx"
    provider: Literal["auto", "cpu", "cuda"] = "auto"
    token_threshold: float = 0.5
    aggregation: Aggregation = "noisy_or"
    chunk_aggregation: ChunkAggregation = "max"
    min_span_length: int = 1  # characters
    min_span_confidence: float = 0.0
    max_batch_size: int = 8
    max_wait_ms: float = 2.0
    max_queue: int = 256
    intra_op_threads: int = 0  # 0: onnxruntime's default
    max_answer_chars: int = 200_000
    max_context_chars: int = 2_000_000
    answer_overlap_tokens: int = 32
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
