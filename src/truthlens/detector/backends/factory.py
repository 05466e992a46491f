"""``create_detector(settings)``: backend name → backend module, imported only when named."""

from __future__ import annotations

import importlib
from typing import Protocol, cast

from truthlens.detector.types import AGGREGATIONS, CHUNK_AGGREGATIONS, Detector, DetectorHooks, DetectorSettings

_BACKENDS: dict[str, str] = {
    "onnx": "truthlens.detector.backends.onnx",
    "remote": "truthlens.detector.backends.remote",  # an Open Inference Protocol (v2) server
    "llm": "truthlens.detector.backends.llm",  # a generative span detector on a chat endpoint
}
# Backends whose spans come from a token classifier: the ones a generative confirmer can follow.
ENCODER_BACKENDS = ("onnx", "remote")


class BackendModule(Protocol):
    def load(self, settings: DetectorSettings, hooks: DetectorHooks | None = None) -> Detector: ...


def backend_names() -> tuple[str, ...]:
    return tuple(_BACKENDS)


def create_detector(settings: DetectorSettings, hooks: DetectorHooks | None = None) -> Detector:
    """Build the detector ``settings.backend`` names (``hooks``: the process's tracer and
    counters, for backends that make calls of their own). Raises ``ValueError`` for bad
    settings and :class:`~truthlens.detector.types.DetectorError` when the model cannot be loaded."""
    check_settings(settings)
    module = cast(BackendModule, importlib.import_module(_BACKENDS[settings.backend]))
    return module.load(settings, hooks)


def create_confirmer(settings: DetectorSettings, hooks: DetectorHooks | None = None) -> Detector | None:
    """The cascade's confirmer ``settings.confirm`` describes, or None without one."""
    if settings.confirm is None:
        return None
    return create_detector(settings.confirm.detector, hooks)


def check_settings(settings: DetectorSettings) -> None:
    """Reject settings no backend can honour, naming the field."""
    problems = []
    if settings.backend not in _BACKENDS:
        problems.append(f"backend {settings.backend!r} is unknown (known: {', '.join(_BACKENDS)})")
    if settings.provider not in ("auto", "cpu", "cuda"):
        problems.append(f"provider {settings.provider!r} is not auto, cpu or cuda")
    if settings.aggregation is not None and settings.aggregation not in AGGREGATIONS:
        problems.append(f"aggregation {settings.aggregation!r} is not one of {', '.join(AGGREGATIONS)}")
    if settings.chunk_aggregation not in CHUNK_AGGREGATIONS:
        problems.append(
            f"chunk_aggregation {settings.chunk_aggregation!r} is not one of {', '.join(CHUNK_AGGREGATIONS)}"
        )
    if settings.token_threshold is not None and not 0.0 < settings.token_threshold < 1.0:
        problems.append(f"token_threshold {settings.token_threshold} is not in (0, 1)")
    if not 0.0 <= settings.min_span_confidence <= 1.0:
        problems.append(f"min_span_confidence {settings.min_span_confidence} is not in [0, 1]")
    for name in ("min_span_length", "answer_overlap_tokens", "intra_op_threads"):
        value = getattr(settings, name)
        if value is not None and value < 0:
            problems.append(f"{name} must be >= 0")
    for name in ("max_batch_size", "max_queue", "max_answer_chars", "max_context_chars"):
        if getattr(settings, name) < 1:
            problems.append(f"{name} must be >= 1")
    if settings.max_wait_ms < 0:
        problems.append("max_wait_ms must be >= 0")
    evidence_checks: object = settings.evidence_checks  # typed bool, but read from YAML
    if not isinstance(evidence_checks, bool):
        problems.append(f"evidence_checks {evidence_checks!r} is not true or false")
    if settings.max_in_flight < 1:
        problems.append("max_in_flight must be >= 1")
    if settings.backend == "remote":
        problems.extend(_remote_problems(settings))
    if settings.backend == "llm":
        problems.extend(_llm_problems(settings))
    if settings.confirm is not None:
        if settings.backend not in ENCODER_BACKENDS:
            problems.append(f"confirm follows an encoder backend ({', '.join(ENCODER_BACKENDS)}), "
                            f"not {settings.backend!r}")
        if settings.confirm.detector.backend != "llm":
            problems.append(f"confirm.backend {settings.confirm.detector.backend!r} is not 'llm'")
    if problems:
        raise ValueError("invalid detector settings: " + "; ".join(problems))


def _remote_problems(settings: DetectorSettings) -> list[str]:
    remote = settings.remote
    if remote is None:
        return ["backend 'remote' needs remote settings (url, model_name)"]
    problems = []
    host, _, port = remote.url.rpartition(":")
    if not host or not port.isdigit():
        problems.append(f"remote.url {remote.url!r} is not host:port")
    if not remote.model_name:
        problems.append("remote.model_name is empty")
    if remote.timeout_ms <= 0:
        problems.append("remote.timeout_ms must be > 0")
    if remote.channels < 1:
        problems.append("remote.channels must be >= 1")
    if remote.health_interval_s <= 0:
        problems.append("remote.health_interval_s must be > 0")
    return problems


def _llm_problems(settings: DetectorSettings) -> list[str]:
    llm = settings.llm
    if llm is None:
        return ["backend 'llm' needs llm settings (model)"]
    problems = []
    if not llm.model:
        problems.append("llm.model is empty")
    if llm.max_tokens < 1:
        problems.append("llm.max_tokens must be >= 1")
    return problems
