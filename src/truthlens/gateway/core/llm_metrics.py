"""The counters of model calls: how each ended (``truthlens_llm_calls_total``) and what was worked
around because a server lacks a feature (``truthlens_llm_fallbacks_total``), with the hooks an
:class:`truthlens.llm.LLMClient` counts through. Every label is bounded: a model the ``models:``
section does not name, and a role, outcome or fallback outside the known sets, count as ``other``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter

from truthlens.llm_wire import ROLE_MAX_TOKENS

OTHER = "other"
ROLES = frozenset(ROLE_MAX_TOKENS)
# ok, an LLMError reason, cancelled (the caller gave up), unreadable (the caller could not use the reply).
OUTCOMES = frozenset({"ok", "timeout", "budget", "connect", "http_4xx", "http_5xx", "bad_response", "too_large",
                      "unknown_model", "cancelled", "unreadable"})
FALLBACKS = frozenset({"structured:json_object", "structured:prompt", "sequential_samples", "no_logprobs"})


@dataclass(frozen=True, slots=True)
class LlmRecorders:
    """The counting hooks of one LLM client (its ``on_call``, ``on_outcome``, ``on_fallback``)."""

    on_call: Callable[[str, str], None]  # (model, role)
    on_outcome: Callable[[str, str, str], None]  # (model, role, outcome)
    on_fallback: Callable[[str, str], None]  # (model, fallback)


def _label(value: str, allowed: frozenset[str]) -> str:
    return value if value in allowed else OTHER


class LlmMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.calls = Counter(
            "truthlens_llm_calls_total",
            "Calls to models by how they ended: ok, a failure (timeout, budget, connect, http_4xx, http_5xx, "
            "bad_response, too_large, unknown_model), cancelled, or unreadable (a reply the caller could not use)",
            ["model", "role", "outcome"], registry=registry,
        )
        self.fallbacks = Counter(
            "truthlens_llm_fallbacks_total",
            "Work-arounds for what a model server does not support (structured:json_object, structured:prompt, "
            "sequential_samples, no_logprobs)",
            ["model", "fallback"], registry=registry,
        )

    def recorders(self, model_names: Iterable[str], on_call: Callable[[str, str], None]) -> LlmRecorders:
        known = frozenset(model_names)

        def outcome(model: str, role: str, what: str) -> None:
            self.calls.labels(_label(model, known), _label(role, ROLES), _label(what, OUTCOMES)).inc()

        def fallback(model: str, what: str) -> None:
            self.fallbacks.labels(_label(model, known), _label(what, FALLBACKS)).inc()

        return LlmRecorders(on_call, outcome, fallback)
