"""OpenTelemetry tracing and Prometheus metrics. Every metric name lives in this module.

Tracing exports only when the standard environment asks for it (``OTEL_TRACES_EXPORTER``,
or ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` for OTLP):
otherwise spans are created for in-process use and nothing touches the network. The provider
is this process's own and is never installed globally: its tracer (:attr:`Telemetry.tracer`)
reaches the modes and the LLM client through :class:`truthlens.modes.base.Services`, so the gateway's
tracing does not depend on, or change, what the rest of the process does with the global API.

Latency observations made inside a sampled span carry its trace and span id as an exemplar;
Prometheus sees them when it scrapes the OpenMetrics format (``Accept:
application/openmetrics-text``). ``prometheus_client`` drops exemplars in multi-process mode.

Labels are bounded: every label value comes from the code or the config, never from a client
(a client-chosen model name would grow a series per name for the life of the process). Model
names are labelled through :meth:`Telemetry.model_call_recorder`, which keeps the config's
``models:`` names and writes anything else as ``other``.

Worker processes: when ``PROMETHEUS_MULTIPROC_DIR`` is set *before* ``prometheus_client`` is
first imported, every process writes its samples there and :func:`start_metrics_server` in
the parent serves the aggregate. The parent calls :func:`mark_process_dead` for each worker
that exits (its live gauges then drop out).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest
from prometheus_client import multiprocess as prom_multiprocess

from truthlens.detector.types import DetectorHooks
from truthlens.gateway.core.errors import normalize_reason
from truthlens.gateway.core.llm_metrics import LlmMetrics, LlmRecorders
from truthlens.gateway.core.trace_export import span_exporters
from truthlens.tracing import capture_content

if TYPE_CHECKING:
    from truthlens.gateway.core.probes import Check, Feedback
    from truthlens.modes.base import Verdict

log = logging.getLogger(__name__)

SERVICE_NAME = "truthlens-extproc"

SCORE_BUCKETS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)
# From a 5 ms detection to a two-minute refinement loop.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
ITERATION_BUCKETS = (0, 1, 2, 3, 4, 5, 6, 8, 10)

_PROPAGATOR = TraceContextTextMapPropagator()

# The ext_proc message kinds, in the order Envoy sends them: the phase label's values.
EXT_PROC_PHASES = (
    "request_headers", "request_body", "request_trailers", "response_headers", "response_body", "response_trailers",
)

# The label of every value outside a configured set.
OTHER_LABEL = "other"


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or os.environ.get("prometheus_multiproc_dir")


def mark_process_dead(pid: int) -> None:
    """Forget an exited worker's live gauges (multi-process mode only)."""
    if multiprocess_dir():
        prom_multiprocess.mark_process_dead(pid)


class _Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.detections = Counter(
            "truthlens_detections_total", "Checked exchanges by outcome",
            ["decision", "mode", "detected"], registry=registry,
        )
        self.score = Histogram(
            "truthlens_score", "Hallucination score of checked exchanges",
            ["decision", "mode"], buckets=SCORE_BUCKETS, registry=registry,
        )
        self.latency = Histogram(
            "truthlens_latency_seconds", "Processing latency by mode and operation",
            ["mode", "operation"], buckets=LATENCY_BUCKETS, registry=registry,
        )
        self.iterations = Histogram(
            "truthlens_iterations", "Refinement iterations per checked exchange",
            ["decision", "mode"], buckets=ITERATION_BUCKETS, registry=registry,
        )
        self.models_used = Counter(
            "truthlens_models_used_total", "Calls to models by role", ["model", "role"], registry=registry,
        )
        self.errors = Counter(
            "truthlens_errors_total", "Checks that could not run, by reason (see truthlens.gateway.core.errors)",
            ["reason"], registry=registry,
        )
        self.actions = Counter(
            "truthlens_actions_total",
            "What was done to answers routes wanted checked (none, warned, blocked, rewritten)",
            ["decision", "action"], registry=registry,
        )
        self.skipped = Counter(
            "truthlens_skipped_total", "Exchanges a route did not check by design, by reason (no_context)",
            ["decision", "reason"], registry=registry,
        )
        self.config_reloads = Counter(
            "truthlens_config_reloads_total", "Configuration reloads by result", ["result"], registry=registry,
        )
        self.streams_active = Gauge(
            "truthlens_streams_active", "ext_proc streams in progress",
            registry=registry, multiprocess_mode="livesum",
        )
        self.queue_depth = Gauge(
            "truthlens_detector_queue_depth", "Detection requests waiting for the model",
            registry=registry, multiprocess_mode="livesum",
        )
        self.backend_ready = Gauge(
            "truthlens_detector_backend_ready",
            "1 while the detector can answer (remote backend: its inference server and model are ready; "
            "in-process: loaded), else 0",
            registry=registry, multiprocess_mode="liveall",
        )
        self.messages = Counter(
            "truthlens_extproc_messages_total",
            "ext_proc messages received from Envoy, by phase (request_headers, request_body, ...)",
            ["phase"], registry=registry,
        )
        self.escalations = Counter(
            "truthlens_escalations_total", "Escalations from a cheap mode to an expensive one",
            ["from_mode", "to_mode"], registry=registry,
        )
        self.confirmations = Counter(
            "truthlens_confirmations_total",
            "Flagged answers the cascade's generative confirmer judged, by outcome (confirmed, cleared, "
            "facts_stand, or why it could not: timeout, bad_output, error, invalid_input, not_loaded)",
            ["decision", "outcome"], registry=registry,
        )
        self.llm = LlmMetrics(registry)  # truthlens_llm_calls_total, truthlens_llm_fallbacks_total
        # Labels bounded by the config: its domain names (or none) and each adaptive route's arms.
        self.domains = Counter("truthlens_domains_total", "Classified requests by domain (none: no domain close "
                               "enough)", ["domain"], registry=registry)
        self.arm_picks = Counter("truthlens_adaptive_picks_total", "Arms (modes) an adaptive route chose",
                                 ["decision", "domain", "arm"], registry=registry)
        self.arm_means = Gauge("truthlens_adaptive_posterior_mean", "Posterior mean of each arm's success "
                               "(no negative feedback)", ["decision", "domain", "arm"], registry=registry,
                               multiprocess_mode="max")
        self.feedback = Counter("truthlens_feedback_total", "POST /v1/feedback and silences by outcome (good, bad, "
                                "silence, unknown, expired, repeated, wrong_route, unavailable)", ["outcome"],
                                registry=registry)
        self.dropped_quotes = Counter(
            "truthlens_llm_detector_dropped_quotes_total",
            "Quotes a generative detector gave that the answer does not contain (dropped, never spans)",
            ["role"], registry=registry,
        )


@dataclass(frozen=True, slots=True)
class MetricsServer:
    host: str
    port: int
    _server: Any

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class Telemetry:
    """Spans and metrics for one process. Tests pass their own registry and tracer provider."""

    def __init__(
        self,
        *,
        service_name: str = SERVICE_NAME,
        registry: CollectorRegistry | None = None,
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        own = registry is None
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        if own:  # the default process_* metrics (CPU, memory, open fds, start time) of this process
            ProcessCollector(registry=self.registry)
        self.metrics = _Metrics(self.registry)
        # Bound once: a labels() lookup on every message costs more than the increment.
        self._messages = {phase: self.metrics.messages.labels(phase) for phase in EXT_PROC_PHASES}
        self.tracer_provider = tracer_provider or build_tracer_provider(service_name)
        self.tracer: trace.Tracer = self.tracer_provider.get_tracer("truthlens.extproc")

    # -- spans

    @contextmanager
    def exchange_span(self, traceparent: str | None, tracestate: str | None = None) -> Iterator[trace.Span]:
        """The root span of one HTTP exchange, a child of the client's W3C trace when given."""
        carrier = {}
        if traceparent:
            carrier["traceparent"] = traceparent
            if tracestate:
                carrier["tracestate"] = tracestate
        parent = _PROPAGATOR.extract(carrier)
        with self.tracer.start_as_current_span(
            "truthlens.exchange", context=parent, kind=trace.SpanKind.SERVER
        ) as span:
            yield span

    @contextmanager
    def span(self, name: str, **attrs: Any) -> Iterator[trace.Span]:
        """A child of the current span; ``attrs`` are recorded as ``truthlens.<key>``."""
        qualified = {f"truthlens.{key}": value for key, value in attrs.items()}
        with self.tracer.start_as_current_span(name, attributes=span_attributes(qualified)) as span:
            yield span

    def annotate_exchange(self, span: trace.Span, *, decision: str, model: str, verdict: Verdict,
                          outcome: str) -> None:
        """The exchange span's verdict attributes, and each detected span as a span event: its
        reason and closest passage, its text, fact and evidence only when
        ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is true."""
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "truthlens.decision": decision,
            "truthlens.mode": verdict.mode,
            "truthlens.detected": verdict.status,
            "truthlens.iterations": verdict.iterations,
            "truthlens.span_count": sum(len(c.detection.spans) for c in verdict.choices),
            "truthlens.verdict": outcome,
        }
        if verdict.score is not None:
            attrs["truthlens.score"] = verdict.score
        span.set_attributes(attrs)
        with_text = capture_content()
        for choice in verdict.choices:
            for found in choice.detection.spans:
                event: dict[str, Any] = {
                    "truthlens.choice": choice.index,
                    "truthlens.span.start": found.start,
                    "truthlens.span.end": found.end,
                    "truthlens.span.prob": found.prob,
                    "truthlens.span.reason": found.reason,
                }
                if found.passage is not None:  # an index: no content
                    event["truthlens.span.passage"] = found.passage
                if with_text:
                    event["truthlens.span.text"] = found.text
                    quoted = {"fact": found.fact, "context_fact": found.context_fact, "evidence": found.evidence}
                    event.update({f"truthlens.span.{key}": value for key, value in quoted.items() if value is not None})
                span.add_event("truthlens.detected_span", event)

    # -- metrics

    def record_detection(self, decision: str, mode: str, status: str, score: float | None) -> None:
        detected = {"detected": "true", "clean": "false"}.get(status, "unavailable")
        self.metrics.detections.labels(decision, mode, detected).inc()
        if score is not None:
            self.metrics.score.labels(decision, mode).observe(score)

    def record_latency(self, mode: str, operation: str, seconds: float) -> None:
        self.metrics.latency.labels(mode, operation).observe(seconds, exemplar=trace_exemplar())

    def record_iterations(self, decision: str, mode: str, n: int) -> None:
        self.metrics.iterations.labels(decision, mode).observe(n)

    def record_model_call(self, model: str, role: str) -> None:
        """Count a model call; ``model`` must already be a bounded label (see :meth:`model_call_recorder`)."""
        self.metrics.models_used.labels(model, role).inc()

    def model_call_recorder(self, model_names: Iterable[str]) -> Callable[[str, str], None]:
        """``record_model_call`` for one ``models:`` section: a model it names is its own label,
        any other (e.g. a client's model served by ``default``) is ``other``."""
        known = frozenset(model_names)

        def record(model: str, role: str) -> None:
            self.record_model_call(model if model in known else OTHER_LABEL, role)

        return record

    def llm_recorders(self, model_names: Iterable[str]) -> LlmRecorders:
        """The counting hooks of an LLM client for one ``models:`` section (labels bounded)."""
        return self.metrics.llm.recorders(model_names, self.model_call_recorder(model_names))

    def record_error(self, reason: str) -> None:
        self.metrics.errors.labels(normalize_reason(reason)).inc()

    def record_action(self, decision: str, action: str) -> None:
        """What was done to an answer the route wanted checked: none | warned | blocked | rewritten."""
        self.metrics.actions.labels(decision, action).inc()

    def record_skip(self, decision: str, reason: str) -> None:
        """An exchange the route chose not to check (not a failure: ``truthlens_errors_total``
        counts those)."""
        self.metrics.skipped.labels(decision, normalize_reason(reason)).inc()

    def record_message(self, phase: str) -> None:
        """One ext_proc message of ``phase`` (one of :data:`EXT_PROC_PHASES`) arrived."""
        self._messages[phase].inc()

    def record_config_reload(self, result: str) -> None:
        self.metrics.config_reloads.labels(result).inc()

    def record_escalation(self, from_mode: str, to_mode: str) -> None:
        self.metrics.escalations.labels(from_mode, to_mode).inc()

    def confirmation_recorder(self, decision: str, mode: str) -> Callable[[str, float], None]:
        """Counts each flagged answer the cascade's confirmer judged on ``decision``'s route
        (``truthlens_confirmations_total``) and times the confirmation (operation ``confirm``)."""

        def record(outcome: str, seconds: float) -> None:
            self.metrics.confirmations.labels(decision, outcome).inc()
            self.record_latency(mode, "confirm", seconds)

        return record

    def record_domain(self, domain: str | None) -> None:
        self.metrics.domains.labels(domain or "none").inc()

    def record_arm(self, decision: str, domain: str | None, arm: str, means: Mapping[str, float]) -> None:
        """An adaptive route chose ``arm``; ``means``: every arm's posterior mean as the store had it."""
        self.metrics.arm_picks.labels(decision, domain or "none", arm).inc()
        for name, mean in means.items():
            self.metrics.arm_means.labels(decision, domain or "none", name).set(mean)

    def record_feedback(self, outcome: str) -> None:
        self.metrics.feedback.labels(outcome).inc()

    def record_dropped_quotes(self, role: str, count: int) -> None:
        """A generative detector (``role``: detect | confirm) quoted ``count`` texts the answer lacks."""
        self.metrics.dropped_quotes.labels(role).inc(count)

    def detector_hooks(self, model_names: Iterable[str]) -> DetectorHooks:
        """What backends that make calls of their own trace and count with (see
        :class:`truthlens.detector.types.DetectorHooks`)."""
        recorders = self.llm_recorders(model_names)
        return DetectorHooks(tracer=self.tracer, on_model_call=recorders.on_call,
                             on_dropped_quotes=self.record_dropped_quotes,
                             on_llm_outcome=recorders.on_outcome, on_llm_fallback=recorders.on_fallback)

    def set_queue_depth(self, depth: int) -> None:
        self.metrics.queue_depth.set(depth)

    def set_backend_ready(self, ready: bool) -> None:
        self.metrics.backend_ready.set(1 if ready else 0)

    def stream_opened(self) -> None:
        """An ext_proc stream began (``truthlens_streams_active``); :meth:`stream_closed` exactly
        once when it ends."""
        self.metrics.streams_active.inc()

    def stream_closed(self) -> None:
        self.metrics.streams_active.dec()

    # -- exposition

    def exposition_registry(self) -> CollectorRegistry:
        """What the metrics endpoint serves: every worker's samples in multi-process mode,
        else this process's registry."""
        if multiprocess_dir():
            registry = CollectorRegistry()
            prom_multiprocess.MultiProcessCollector(registry)
            return registry
        return self.registry

    def render_metrics(self) -> bytes:
        return generate_latest(self.exposition_registry())

    def start_metrics_server(self, listen: str, *, ready: Callable[[], bool] | None = None,
                             check: Check | None = None, feedback: Feedback | None = None) -> MetricsServer:
        """Serve ``/metrics``, ``/healthz`` and ``/readyz`` (``ready``: None is always ready) on
        ``listen`` (``host:port``, ``:port`` or ``port``; port 0 picks one); see
        :mod:`truthlens.gateway.core.probes`."""
        from truthlens.gateway.core.probes import start_probe_server

        host, port = parse_listen(listen)
        registry = self.exposition_registry()
        if multiprocess_dir():  # this process's own process_* metrics beside the workers' samples
            ProcessCollector(registry=registry)
        server = start_probe_server(host, port, registry, ready, check, feedback)
        return MetricsServer(host=host, port=server.server_address[1], _server=server)

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()


def trace_exemplar() -> dict[str, str] | None:
    """The current span's ids as exemplar labels; None outside a sampled span."""
    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid or not ctx.trace_flags.sampled:
        return None
    return {"trace_id": format(ctx.trace_id, "032x"), "span_id": format(ctx.span_id, "016x")}


def parse_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep:
        host, port = "0.0.0.0", listen
    host = host.strip("[]") or "0.0.0.0"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"listen address {listen!r}: expected host:port")
    return host, int(port)


def span_attributes(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """OpenTelemetry accepts str/bool/int/float (and sequences of them); None is dropped and
    anything else is written as text."""
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        if value is None:
            continue
        if isinstance(value, (str, bool, int, float)):
            out[key] = value
        elif isinstance(value, (list, tuple)) and all(isinstance(v, (str, bool, int, float)) for v in value):
            out[key] = list(value)
        else:
            out[key] = str(value)
    return out


def build_tracer_provider(service_name: str = SERVICE_NAME) -> TracerProvider:
    """A tracer provider configured by the standard ``OTEL_*`` variables; no exporter (and no
    network) unless they name one."""
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", service_name)})
    provider = TracerProvider(resource=resource)
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return provider
    for exporter in span_exporters():
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider
