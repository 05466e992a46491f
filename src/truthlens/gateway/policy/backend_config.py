"""The ``detector:`` and ``models:`` sections of a config → the detector's settings (its backend,
batching, size limits, remote server, LLM detector and confirmer) and the named model endpoints
that modes and LLM backends call. Every error names its key path."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from truthlens.detector.types import (
    AGGREGATIONS,
    CHUNK_AGGREGATIONS,
    ConfirmSettings,
    DetectorSettings,
    LlmSettings,
    RemoteSettings,
)
from truthlens.llm import DEFAULT_MAX_REPLY_BYTES
from truthlens.llm import Endpoint as ModelEndpoint
from truthlens.llm_wire import ROLE_MAX_TOKENS, STRUCTURED_CHOICES
from truthlens.options import ConfigError, Section

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# Keys of the detector section that only an encoder (backend onnx or remote) reads.
_ENCODER_KEYS = (
    "model", "provider", "token_threshold", "aggregation", "min_span_length", "min_span_confidence",
    "intra_op_threads", "answer_overlap_tokens", "chunk_aggregation", "evidence_checks", "role_checks",
)
# Size limits and concurrency of a generative detector (backend llm, detector.confirm): a chat
# model's context window is far smaller than what the encoder chunks through.
LLM_MAX_ANSWER_CHARS = 50_000
LLM_MAX_CONTEXT_CHARS = 200_000
LLM_MAX_IN_FLIGHT = 16


def parse_detector(s: Section, base_dir: Path | None, models: Mapping[str, ModelEndpoint]) -> DetectorSettings:
    s.allow(
        *_ENCODER_KEYS, "backend", "batching", "max_answer_chars", "max_context_chars", "remote", "llm", "confirm",
    )
    d = DetectorSettings()
    backend = s.choice("backend", d.backend, ("onnx", "remote", "llm"))
    if backend == "llm":
        return _parse_llm_detector(s, models)
    if "llm" in s:
        raise ConfigError(s.key("llm"), f"only used by backend 'llm' (backend is {backend!r})")
    model = s.string("model", "builtin")
    model_dir: str | None = None
    if model != "builtin":
        p = Path(model).expanduser()
        if not p.is_absolute() and base_dir is not None:
            p = base_dir / p
        model_dir = str(p)
    batching = s.section("batching")
    batching.allow("max_batch_size", "max_wait_ms", "max_queue", "max_in_flight")
    return DetectorSettings(
        model_dir=model_dir,
        backend=backend,
        provider=s.choice("provider", d.provider, ("auto", "cpu", "cuda")),
        # Absent (or null): the model's calibrated threshold (src/truthlens/detector/manifest.py; 0.30
        # for the shipped model), so the reference shows no fixed default for it.
        token_threshold=s.optional_number("token_threshold", lo=0.0, hi=1.0),
        # Absent: the model's calibrated decision, like the token threshold.
        aggregation=s.choice("aggregation", "noisy_or", AGGREGATIONS) if "aggregation" in s else None,
        min_span_length=s.optional_integer("min_span_length", lo=1),
        min_span_confidence=s.number("min_span_confidence", d.min_span_confidence, lo=0.0, hi=1.0),
        max_batch_size=batching.integer("max_batch_size", d.max_batch_size, lo=1, hi=1024),
        max_wait_ms=batching.number("max_wait_ms", d.max_wait_ms, lo=0.0, hi=10_000.0),
        max_queue=batching.integer("max_queue", d.max_queue, lo=1),
        intra_op_threads=s.integer("intra_op_threads", d.intra_op_threads, lo=0),
        max_answer_chars=s.integer("max_answer_chars", d.max_answer_chars, lo=1),
        max_context_chars=s.integer("max_context_chars", d.max_context_chars, lo=1),
        answer_overlap_tokens=s.integer("answer_overlap_tokens", d.answer_overlap_tokens, lo=0),
        chunk_aggregation=s.choice("chunk_aggregation", d.chunk_aggregation, CHUNK_AGGREGATIONS),
        evidence_checks=s.boolean("evidence_checks", d.evidence_checks),
        role_checks=s.boolean("role_checks", True) if "role_checks" in s else None,
        # Remote round trips overlap; in-process on CPU two runs with half the cores each beat
        # one with all of them (src/truthlens/detector/backends/onnx.py).
        max_in_flight=batching.integer("max_in_flight", 4 if backend == "remote" else 2, lo=1, hi=256),
        remote=_parse_remote(s, backend),
        confirm=_parse_confirm(s, models),
    )


def _parse_llm_detector(s: Section, models: Mapping[str, ModelEndpoint]) -> DetectorSettings:
    """``backend: llm``: the ``llm`` section (model, max_tokens), size limits, calls in flight."""
    for key in (*_ENCODER_KEYS, "remote"):
        if key in s:
            raise ConfigError(s.key(key), "not used by backend 'llm' (it has no encoder model): remove it")
    if "confirm" in s:
        raise ConfigError(s.key("confirm"), "confirms an encoder's spans; backend 'llm' is already generative")
    if "llm" not in s:
        raise ConfigError(s.key("llm"), "backend 'llm' needs this section (model: an entry of the models section)")
    batching = s.section("batching")
    batching.allow("max_in_flight", hint="backend 'llm' takes only max_in_flight")
    llm = s.section("llm")
    llm.allow("model", "max_tokens")
    return DetectorSettings(
        backend="llm",
        max_answer_chars=s.integer("max_answer_chars", LLM_MAX_ANSWER_CHARS, lo=1),
        max_context_chars=s.integer("max_context_chars", LLM_MAX_CONTEXT_CHARS, lo=1),
        max_in_flight=batching.integer("max_in_flight", LLM_MAX_IN_FLIGHT, lo=1, hi=1024),
        llm=_llm_settings(llm, models, role="detect"),
    )


def _parse_confirm(detector: Section, models: Mapping[str, ModelEndpoint]) -> ConfirmSettings | None:
    """``detector.confirm``: the cascade's generative confirmer, used by routes with ``confirm: true``."""
    if "confirm" not in detector:
        return None
    c = detector.section("confirm")
    c.allow("backend", "model", "when", "max_tokens", "max_answer_chars", "max_context_chars", "max_in_flight")
    c.choice("backend", "llm", ("llm",))
    return ConfirmSettings(
        when=c.choice("when", "flagged", ("flagged",)),
        detector=DetectorSettings(
            backend="llm",
            max_answer_chars=c.integer("max_answer_chars", LLM_MAX_ANSWER_CHARS, lo=1),
            max_context_chars=c.integer("max_context_chars", LLM_MAX_CONTEXT_CHARS, lo=1),
            max_in_flight=c.integer("max_in_flight", LLM_MAX_IN_FLIGHT, lo=1, hi=1024),
            llm=_llm_settings(c, models, role="confirm"),
        ),
    )


def _llm_settings(s: Section, models: Mapping[str, ModelEndpoint], *, role: str) -> LlmSettings:
    """``model`` (an entry of ``models:``, exactly: its endpoint is copied) and ``max_tokens``."""
    model = s.string("model")
    if model not in models:
        known = ", ".join(sorted(models)) or "none"
        raise ConfigError(s.key("model"), f"must name an entry of the models section, got {model!r} (entries: {known})")
    return LlmSettings(model=model, endpoint=models[model], role=role,
                       max_tokens=s.integer("max_tokens", 1024, lo=1, hi=65_536))


def _parse_remote(detector: Section, backend: str) -> RemoteSettings | None:
    """``detector.remote``: required by ``backend: remote``, refused for any other backend."""
    if "remote" not in detector:
        if backend == "remote":
            raise ConfigError(detector.key("remote"), "backend 'remote' needs this section (url, model_name)")
        return None
    if backend != "remote":
        raise ConfigError(detector.key("remote"), f"only used by backend 'remote' (backend is {backend!r})")
    r = detector.section("remote")
    r.allow("url", "model_name", "model_version", "timeout_ms", "channels", "health_interval_s", "tls")
    d = RemoteSettings()
    url = r.string("url")
    host, _, port = url.rpartition(":")
    if "://" in url or not host or not port.isdigit():
        raise ConfigError(r.key("url"), f"must be host:port of the server's gRPC endpoint, got {url!r}")
    version = r.get("model_version", d.model_version,
                    schema={"type": ["string", "integer"], "default": d.model_version})
    if isinstance(version, int) and not isinstance(version, bool):
        version = str(version)  # YAML reads `model_version: 1` as a number
    if not isinstance(version, str):
        raise ConfigError(r.key("model_version"), f"must be a string or integer, got {version!r}")
    return RemoteSettings(
        url=url,
        model_name=r.string("model_name", d.model_name) or d.model_name,
        model_version=version,
        timeout_ms=r.number("timeout_ms", d.timeout_ms, positive=True),
        channels=r.integer("channels", d.channels, lo=1, hi=64),
        health_interval_s=r.number("health_interval_s", d.health_interval_s, positive=True),
        tls=r.boolean("tls", d.tls),
    )


def parse_models(s: Section) -> dict[str, ModelEndpoint]:
    models: dict[str, ModelEndpoint] = {}
    for name in s.raw:
        if not isinstance(name, str) or not name:
            raise ConfigError(s.key(str(name)), "a model name must be a non-empty string")
        m = s.entry(name)
        if "api_key" in m:
            # The message never repeats the value: it may be a real secret.
            raise ConfigError(
                m.key("api_key"),
                "keys do not belong in the config file; set api_key_env to the NAME of an environment variable",
            )
        m.allow("base_url", "api_key_env", "timeout_s", "max_retries", "served_model", "max_reply_bytes",
                "max_tokens", "structured_output", "stream", "sampling")
        base_url = m.http_url("base_url")
        env = m.optional_string("api_key_env")
        if env is not None and not _ENV_NAME.match(env):
            raise ConfigError(
                m.key("api_key_env"),
                "must be the name of an environment variable (letters, digits, _), not a key",
            )
        models[name] = ModelEndpoint(
            base_url=base_url.rstrip("/"),
            api_key_env=env,
            timeout_s=m.number("timeout_s", 30.0, positive=True),
            max_retries=m.integer("max_retries", 2, lo=0, hi=10),
            served_model=m.optional_string("served_model"),
            # A judge's or re-ask's reply is held whole before it is parsed: bound it (1 KiB to 256 MiB).
            max_reply_bytes=m.integer("max_reply_bytes", DEFAULT_MAX_REPLY_BYTES, lo=1024, hi=256 << 20),
            max_tokens=tuple(_model_max_tokens(m).items()),
            structured_output=m.choice("structured_output", "auto", STRUCTURED_CHOICES),
            stream=m.boolean("stream", True),
            sampling=tuple(_model_sampling(m).items()),
        )
    return models


def _model_sampling(m: Section) -> dict[str, float]:
    """``sampling``: what a call to the model takes where the call sets none."""
    if "sampling" not in m:
        return {}
    s = m.section("sampling")
    s.allow("temperature", "top_p", "seed")
    out: dict[str, float] = {}
    if "temperature" in s:
        out["temperature"] = s.number("temperature", 1.0, lo=0.0, hi=2.0)
    if "top_p" in s:
        out["top_p"] = s.number("top_p", 1.0, lo=0.0, hi=1.0)
    if "seed" in s:
        out["seed"] = s.integer("seed", 0, lo=0)
    return out


def _model_max_tokens(m: Section) -> dict[str, int]:
    """``max_tokens``: one bound for every call to the model, or one per role (``default`` for
    the roles not named): ``{verdict: 256, judge: 1024, default: 512}``."""
    if "max_tokens" not in m:
        return {}
    if not isinstance(m.get("max_tokens"), Mapping):
        return {"default": m.integer("max_tokens", 512, lo=1, hi=65_536)}
    per_role = m.section("max_tokens")
    per_role.allow(*ROLE_MAX_TOKENS, "default")
    return {role: per_role.integer(role, 512, lo=1, hi=65_536) for role in per_role.raw}


# Keys of a hallucination section that the gateway itself reads; every other key of a
# decision's configuration belongs to its mode.
