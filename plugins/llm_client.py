"""One capability: ask an OpenAI-compatible chat endpoint and get typed choices back."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


class LLMError(Exception):
    """A call failed for good (after retries). ``reason`` is a short metric-safe label:
    ``timeout``, ``connect``, ``http_5xx``, ``http_4xx``, ``bad_response``, ``budget``, ``unknown_model``."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class ChatCall:
    model: str
    messages: Sequence[Mapping[str, Any]]
    role: str  # why the call is made: refine, verify, judge, acr_internal, ... (metrics label)
    n: int = 1
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    logprobs: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)  # passed through into the JSON body


@dataclass(frozen=True, slots=True)
class ChatChoice:
    text: str
    token_logprobs: tuple[float, ...] | None = None  # one per generated token, when asked
    finish_reason: str | None = None

    @property
    def mean_logprob(self) -> float | None:
        if not self.token_logprobs:
            return None
        return sum(self.token_logprobs) / len(self.token_logprobs)

    @property
    def confidence(self) -> float | None:
        """exp(mean token log-prob): the sequence confidence of ACR eq. 10."""
        mean = self.mean_logprob
        return None if mean is None else math.exp(mean)


@dataclass(frozen=True, slots=True)
class ChatResult:
    model: str
    choices: tuple[ChatChoice, ...]
    latency_s: float
